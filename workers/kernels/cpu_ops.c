/* Tollgate's CPU kernels: the per-layer work around the GEMMs, fused so that a decode step is a handful of
 * passes over memory instead of dozens of small PyTorch ops.
 *
 * Plain C with OpenMP, compiled at first use for the machine it runs on (workers/kernels/cpu_build.py) and
 * called through ctypes (workers/kernels/cpu.py). float32 only. Every function takes raw pointers and sizes;
 * the Python side checks shapes, dtypes and contiguity before calling. OpenMP here is the same libgomp that
 * PyTorch loaded, so these kernels share its thread pool.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

/* exp for float, branch-free so that loops calling it vectorize: exp(x) = 2^n * e^r, |r| <= ln2/2, with
 * Cephes' degree-6 polynomial for e^r (about 1 ulp). Inputs below -87.3 flush to 0. */
static inline float tg_expf(float x) {
    const float hi = 88.0f, lo = -87.3365447504019f;
    x = x > hi ? hi : x;
    float underflow = x < lo ? 0.0f : 1.0f;
    x = x < lo ? lo : x;
    float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale * underflow;
}

static inline float tg_dot(const float *a, const float *b, int64_t n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w. Rows of x are x_stride apart; out is dense. */
void tg_rms_norm(const float *x, int64_t x_stride, const float *w, float *out, int64_t rows, int64_t dim,
                 float eps) {
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * x_stride;
        float *o = out + r * dim;
        float inv = 1.0f / sqrtf(tg_dot(xr, xr, dim) / (float)dim + eps);
#pragma omp simd
        for (int64_t i = 0; i < dim; i++) o[i] = xr[i] * inv * w[i];
    }
}

/* out[r, i] = silu(gate_up[r, i]) * gate_up[r, inter + i]. */
void tg_silu_mul(const float *gate_up, float *out, int64_t rows, int64_t inter) {
#pragma omp parallel for schedule(static) if (rows >= 4)
    for (int64_t r = 0; r < rows; r++) {
        const float *g = gate_up + r * 2 * inter;
        const float *u = g + inter;
        float *o = out + r * inter;
#pragma omp simd
        for (int64_t i = 0; i < inter; i++) o[i] = g[i] / (1.0f + tg_expf(-g[i])) * u[i];
    }
}

/* qkv: [T, (H + 2 KVH) * D], rows qkv_stride apart: q heads, k heads, v heads. Rotates the q and k heads in
 * place (rotate-half RoPE with token t's cos/sin rows, [T, D] each) and copies token t's k and v heads into
 * the caches [KVH, cache_slots, D] at flat slot slots[t]. */
void tg_rotary_store_kv(float *qkv, int64_t qkv_stride, const float *cos, const float *sin, const int64_t *slots,
                        float *k_cache, float *v_cache, int64_t tokens, int64_t heads, int64_t kv_heads,
                        int64_t head_dim, int64_t cache_slots) {
    const int64_t half = head_dim / 2;
#pragma omp parallel for schedule(static) if (tokens >= 16)
    for (int64_t t = 0; t < tokens; t++) {
        float *row = qkv + t * qkv_stride;
        const float *c = cos + t * head_dim;
        const float *s = sin + t * head_dim;
        for (int64_t h = 0; h < heads + kv_heads; h++) {
            float *x = row + h * head_dim;
#pragma omp simd
            for (int64_t i = 0; i < half; i++) {
                float x1 = x[i], x2 = x[i + half];
                x[i] = x1 * c[i] - x2 * s[i];
                x[i + half] = x2 * c[i + half] + x1 * s[i + half];
            }
        }
        const float *k = row + heads * head_dim;
        const float *v = k + kv_heads * head_dim;
        for (int64_t h = 0; h < kv_heads; h++) {
            int64_t dst = (h * cache_slots + slots[t]) * head_dim;
            memcpy(k_cache + dst, k + h * head_dim, sizeof(float) * head_dim);
            memcpy(v_cache + dst, v + h * head_dim, sizeof(float) * head_dim);
        }
    }
}

/* Attention of one sequence's query heads of one KV group (G = group heads, rows head_dim apart at qs) over
 * its len cached tokens; scores is scratch of G * len floats; o receives G rows of head_dim. */
typedef struct {
    const float *kbase, *vbase;  /* this KV head's cache: [num_blocks, block_size, head_dim] */
    const int64_t *table;        /* the sequence's block table */
    int64_t len, group, head_dim, block_size;
    float scale;
} attend_args;

static void softmax_rows(float *scores, int64_t rows, int64_t len) {
    for (int64_t g = 0; g < rows; g++) {
        float *sg = scores + g * len;
        float mx = sg[0];
        for (int64_t t = 1; t < len; t++) mx = sg[t] > mx ? sg[t] : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t t = 0; t < len; t++) {
            sg[t] = tg_expf(sg[t] - mx);
            sum += sg[t];
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int64_t t = 0; t < len; t++) sg[t] *= inv;
    }
}

static void attend_generic(const attend_args *a, const float *qs, float *scores, float *o) {
    const int64_t len = a->len, group = a->group, D = a->head_dim, bs = a->block_size;
    for (int64_t t0 = 0; t0 < len; t0 += bs) {
        const float *kb = a->kbase + a->table[t0 / bs] * bs * D;
        const int64_t m = len - t0 < bs ? len - t0 : bs;
        for (int64_t j = 0; j < m; j++)
            for (int64_t g = 0; g < group; g++)
                scores[g * len + t0 + j] = tg_dot(qs + g * D, kb + j * D, D) * a->scale;
    }
    softmax_rows(scores, group, len);
    memset(o, 0, sizeof(float) * group * D);
    for (int64_t t0 = 0; t0 < len; t0 += bs) {
        const float *vb = a->vbase + a->table[t0 / bs] * bs * D;
        const int64_t m = len - t0 < bs ? len - t0 : bs;
        for (int64_t j = 0; j < m; j++)
            for (int64_t g = 0; g < group; g++) {
                const float p = scores[g * len + t0 + j];
                float *og = o + g * D;
#pragma omp simd
                for (int64_t d = 0; d < D; d++) og[d] += p * vb[j * D + d];
            }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
/* Eight dot products at once: eight independent FMA chains, then one transposing reduction. */
static inline __m256 hsum8(const __m256 *a) {
    const __m256 s01 = _mm256_hadd_ps(a[0], a[1]), s23 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 s45 = _mm256_hadd_ps(a[4], a[5]), s67 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

/* head_dim a multiple of 64: keys eight at a time, values with eight accumulators per 64 dims. */
static void attend_avx2(const attend_args *a, const float *qs, float *scores, float *o) {
    const int64_t len = a->len, group = a->group, D = a->head_dim, bs = a->block_size;
    const __m256 scale = _mm256_set1_ps(a->scale);
    for (int64_t t0 = 0; t0 < len; t0 += bs) {
        const float *kb = a->kbase + a->table[t0 / bs] * bs * D;
        const int64_t m = len - t0 < bs ? len - t0 : bs;
        /* Each block is its own page, where hardware prefetchers stop: fetch the next one ahead. */
        const float *next = t0 + bs < len ? a->kbase + a->table[t0 / bs + 1] * bs * D : NULL;
        int64_t j = 0;
        for (; j + 8 <= m; j += 8) {
            if (next)
                for (int64_t l = 0; l < 8 * D; l += 16) __builtin_prefetch(next + j * D + l);
            for (int64_t g = 0; g < group; g++) {
                __m256 acc[8];
                for (int u = 0; u < 8; u++) acc[u] = _mm256_setzero_ps();
                for (int64_t c = 0; c < D; c += 8) {
                    const __m256 qv = _mm256_loadu_ps(qs + g * D + c);
                    for (int u = 0; u < 8; u++)
                        acc[u] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kb + (j + u) * D + c), acc[u]);
                }
                _mm256_storeu_ps(scores + g * len + t0 + j, _mm256_mul_ps(hsum8(acc), scale));
            }
        }
        for (; j < m; j++)
            for (int64_t g = 0; g < group; g++)
                scores[g * len + t0 + j] = tg_dot(qs + g * D, kb + j * D, D) * a->scale;
    }
    softmax_rows(scores, group, len);
    for (int64_t g = 0; g < group; g++)
        for (int64_t c0 = 0; c0 < D; c0 += 64) {
            __m256 acc[8];
            for (int u = 0; u < 8; u++) acc[u] = _mm256_setzero_ps();
            for (int64_t t0 = 0; t0 < len; t0 += bs) {
                const float *vb = a->vbase + a->table[t0 / bs] * bs * D + c0;
                const int64_t m = len - t0 < bs ? len - t0 : bs;
                const float *next = t0 + bs < len ? a->vbase + a->table[t0 / bs + 1] * bs * D + c0 : NULL;
                for (int64_t j = 0; j < m; j++) {
                    if (next)
                        for (int64_t l = 0; l < 64; l += 16) __builtin_prefetch(next + j * D + l);
                    const __m256 p = _mm256_broadcast_ss(scores + g * len + t0 + j);
                    for (int u = 0; u < 8; u++)
                        acc[u] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vb + j * D + 8 * u), acc[u]);
                }
            }
            for (int u = 0; u < 8; u++) _mm256_storeu_ps(o + g * D + c0 + 8 * u, acc[u]);
        }
}
#endif

/* One query token per sequence against its paged context. q: [n, H, D] with rows q_stride apart; caches
 * [KVH, num_blocks, block_size, D]; block_tables [n, max_blocks]; context_lens [n]; out [n, H, D] dense.
 * The G = H / KVH query heads of a group read each key and value row straight from its block: no gather,
 * no padding. Work items are (sequence, KV head) pairs. */
void tg_paged_decode_attention(const float *q, int64_t q_stride, const float *k_cache, const float *v_cache,
                               const int64_t *block_tables, int64_t max_blocks, const int64_t *context_lens,
                               float *out, int64_t n, int64_t heads, int64_t kv_heads, int64_t head_dim,
                               int64_t num_blocks, int64_t block_size, float scale) {
    const int64_t group = heads / kv_heads;
    int64_t max_len = 1;
    for (int64_t s = 0; s < n; s++) max_len = context_lens[s] > max_len ? context_lens[s] : max_len;
#pragma omp parallel
    {
        float *scores = (float *)malloc(sizeof(float) * group * max_len);
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int64_t s = 0; s < n; s++) {
            for (int64_t kh = 0; kh < kv_heads; kh++) {
                const attend_args a = {
                    .kbase = k_cache + kh * num_blocks * block_size * head_dim,
                    .vbase = v_cache + kh * num_blocks * block_size * head_dim,
                    .table = block_tables + s * max_blocks,
                    .len = context_lens[s], .group = group, .head_dim = head_dim, .block_size = block_size,
                    .scale = scale,
                };
                const float *qs = q + s * q_stride + kh * group * head_dim;
                float *o = out + (s * heads + kh * group) * head_dim;
#if defined(__AVX2__) && defined(__FMA__)
                if (head_dim % 64 == 0) {
                    attend_avx2(&a, qs, scores, o);
                    continue;
                }
#endif
                attend_generic(&a, qs, scores, o);
            }
        }
        free(scores);
    }
}
