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
#if defined(__AVX512F__) || defined(__AVX2__)
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

/* o = xr * rsqrt(mean(xr^2) + eps) * w, one row. */
void tg_rms_row(const float *xr, const float *w, float *o, int64_t dim, float eps) {
    float inv = 1.0f / sqrtf(tg_dot(xr, xr, dim) / (float)dim + eps);
#pragma omp simd
    for (int64_t i = 0; i < dim; i++) o[i] = xr[i] * inv * w[i];
}

/* out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w. Rows of x are x_stride apart; out is dense. */
void tg_rms_norm(const float *x, int64_t x_stride, const float *w, float *out, int64_t rows, int64_t dim,
                 float eps) {
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (int64_t r = 0; r < rows; r++) tg_rms_row(x + r * x_stride, w, out + r * dim, dim, eps);
}

/* o[i] = silu(g[i]) * g[inter + i], one row. */
void tg_silu_row(const float *g, float *o, int64_t inter) {
    const float *u = g + inter;
#pragma omp simd
    for (int64_t i = 0; i < inter; i++) o[i] = g[i] / (1.0f + tg_expf(-g[i])) * u[i];
}

/* out[r, i] = silu(gate_up[r, i]) * gate_up[r, inter + i]. */
void tg_silu_mul(const float *gate_up, float *out, int64_t rows, int64_t inter) {
#pragma omp parallel for schedule(static) if (rows >= 4)
    for (int64_t r = 0; r < rows; r++) tg_silu_row(gate_up + r * 2 * inter, out + r * inter, inter);
}

/* Rotate-half RoPE of one head x [2 * half] in place with its token's cos and sin rows. */
void tg_rotate_head(float *x, const float *c, const float *s, int64_t half) {
#pragma omp simd
    for (int64_t i = 0; i < half; i++) {
        float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c[i] - x2 * s[i];
        x[i + half] = x2 * c[i + half] + x1 * s[i + half];
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
        for (int64_t h = 0; h < heads + kv_heads; h++) tg_rotate_head(row + h * head_dim, c, s, half);
        const float *k = row + heads * head_dim;
        const float *v = k + kv_heads * head_dim;
        for (int64_t h = 0; h < kv_heads; h++) {
            int64_t dst = (h * cache_slots + slots[t]) * head_dim;
            memcpy(k_cache + dst, k + h * head_dim, sizeof(float) * head_dim);
            memcpy(v_cache + dst, v + h * head_dim, sizeof(float) * head_dim);
        }
    }
}

/* Each of `rows` score rows of length len, in place: softmax (max subtracted, exp, normalised). The decode
 * attention paths (AVX-512, AVX2, portable) share it, so they differ only in how the scores and outputs are
 * computed. */
static void tg_softmax_rows(float *scores, int64_t rows, int64_t len) {
    for (int64_t g = 0; g < rows; g++) {
        float *sg = scores + g * len;
        float mx = sg[0];
#pragma omp simd reduction(max : mx)
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

#if defined(__AVX512F__) || defined(__AVX2__)
/* Before scoring the block at t0 of a context: the next block's keys into L1, this block's values into L2 for the
 * pass after the softmax (one prefetch a 64-byte line). A block of the paged cache is a few KB at an address of
 * its own, so the hardware prefetcher meets every block cold. */
/* Always inlined: as a call it made the scoring pass ~15 % slower. */
static inline __attribute__((always_inline)) void tg_prefetch_block(const float *kbase, const float *vbase,
                                                                   const int64_t *table, int64_t t0, int64_t len,
                                                                   int64_t block_size, int64_t D) {
    if (t0 + block_size < len) {
        const int64_t next = len - t0 - block_size < block_size ? len - t0 - block_size : block_size;
        const float *k = kbase + table[t0 / block_size + 1] * block_size * D;
        for (int64_t i = 0; i < next * D; i += 16) _mm_prefetch((const char *)(k + i), _MM_HINT_T0);
    }
    const int64_t m = len - t0 < block_size ? len - t0 : block_size;
    const float *v = vbase + table[t0 / block_size] * block_size * D;
    for (int64_t i = 0; i < m * D; i += 16) _mm_prefetch((const char *)(v + i), _MM_HINT_T1);
}

#endif

#ifdef __AVX512F__
/* AVX-512 path of the decode attention below, for head_dim a multiple of 16 up to 128 (one to eight vectors
 * a row). Per query head of a group: the scores come 16 keys at a time, each key's dot product left as a
 * vector of 16 partial sums, and the 16 vectors folded together in one shuffle tree (lane j: key j's score)
 * instead of a horizontal sum per key; the softmax is the scalar path's; each output row stays in registers
 * while a block's value rows add into it. Keys and values are read from memory once for the whole group (the
 * pass over a block runs every head of the group while the block is in L1): the cache, not arithmetic, is
 * what a decode attention waits on. */
typedef float tg_v16 __attribute__((vector_size(64)));

static inline tg_v16 tg_ld16(const float *p) {
    tg_v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* t[j] -> lane j holds the sum of t[j]'s 16 lanes. */
static inline __m512 tg_fold16(const __m512 t[16]) {
    __m512 u[8], w[4], x0, x1;
    for (int i = 0; i < 8; i++)
        u[i] = _mm512_add_ps(_mm512_unpacklo_ps(t[2 * i], t[2 * i + 1]), _mm512_unpackhi_ps(t[2 * i], t[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(u[2 * i]), b = _mm512_castps_pd(u[2 * i + 1]);
        w[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    x0 = _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    x1 = _mm512_add_ps(_mm512_shuffle_f32x4(w[2], w[3], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(w[2], w[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x0, x1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(x0, x1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Scores of one query head against a full run of 16 key rows: the 16 dot products unrolled, so that they are 16
 * independent FMA chains held in registers and folded there (a partial run takes the loop in TG_ATTN). One
 * always-inlined function taking n, called with a constant 16 for full runs, measured 5-10 % slower. */
#define TG_SCORE16(DV)                                                                                    \
    static inline __m512 tg_score16_##DV(const tg_v16 qv[DV], const float *kb) {                         \
        const int64_t D = DV * 16;                                                                        \
        __m512 t[16];                                                                                     \
        _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) {                                           \
            tg_v16 a = (tg_v16){0};                                                                       \
            for (int c = 0; c < DV; c++) a += qv[c] * tg_ld16(kb + j * D + 16 * c);                       \
            t[j] = (__m512)a;                                                                             \
        }                                                                                                 \
        return tg_fold16(t);                                                                              \
    }

/* The value pass for GB query heads of a group at once: each value row is loaded once for the GB heads, and their
 * GB * DV accumulators are independent FMA chains. Every output still sums its keys in order from zero, as a
 * head alone would. */
#define TG_VALUES(DV, GB)                                                                                 \
    static inline void tg_values##DV##_##GB(const float *sg, int64_t len, const float *vbase,             \
                                            const int64_t *table, int64_t block_size, float *o) {         \
        const int64_t D = DV * 16;                                                                        \
        tg_v16 acc[GB][DV];                                                                               \
        for (int g = 0; g < GB; g++)                                                                      \
            for (int c = 0; c < DV; c++) acc[g][c] = (tg_v16){0};                                         \
        for (int64_t t0 = 0; t0 < len; t0 += block_size) {                                                \
            const int64_t m = len - t0 < block_size ? len - t0 : block_size;                              \
            const float *vb = vbase + table[t0 / block_size] * block_size * D;                            \
            for (int64_t j = 0; j < m; j++)                                                               \
                for (int c = 0; c < DV; c++) {                                                            \
                    const tg_v16 v = tg_ld16(vb + j * D + 16 * c);                                        \
                    for (int g = 0; g < GB; g++) acc[g][c] += sg[g * len + t0 + j] * v;                   \
                }                                                                                         \
        }                                                                                                 \
        for (int g = 0; g < GB; g++)                                                                      \
            for (int c = 0; c < DV; c++) memcpy(o + g * D + 16 * c, &acc[g][c], sizeof acc[g][c]);        \
    }

/* Heads a value pass takes at once: GB * DV accumulators, DV value vectors and GB broadcasts fit 32 registers. */
#define TG_VALUE_HEADS(DV) ((DV) <= 6 ? 3 : 2)

#define TG_ATTN(DV)                                                                                       \
    TG_SCORE16(DV)                                                                                        \
    TG_VALUES(DV, 1)                                                                                      \
    TG_VALUES(DV, 2)                                                                                      \
    TG_VALUES(DV, 3)                                                                                      \
    static void tg_attend_group##DV(const float *qs, int64_t group, const float *kbase, const float *vbase, \
                                    const int64_t *table, int64_t len, int64_t block_size, float scale,   \
                                    float *scores, float *o) {                                            \
        const int64_t D = DV * 16;                                                                        \
        for (int64_t t0 = 0; t0 < len; t0 += block_size) {                                                \
            const int64_t m = len - t0 < block_size ? len - t0 : block_size;                              \
            const float *kb = kbase + table[t0 / block_size] * block_size * D;                            \
            tg_prefetch_block(kbase, vbase, table, t0, len, block_size, D);                               \
            for (int64_t j0 = 0; j0 < m; j0 += 16) {                                                      \
                const int64_t n = m - j0 < 16 ? m - j0 : 16;                                              \
                for (int64_t g = 0; g < group; g++) { /* the 16 key rows stay in L1 across the group */   \
                    tg_v16 qv[DV];                                                                        \
                    for (int c = 0; c < DV; c++) qv[c] = tg_ld16(qs + g * D + 16 * c);                    \
                    __m512 folded;                                                                        \
                    if (n == 16) {                                                                        \
                        folded = tg_score16_##DV(qv, kb + j0 * D);                                        \
                    } else {                                                                              \
                        __m512 t[16];                                                                     \
                        for (int j = 0; j < 16; j++) {                                                    \
                            tg_v16 a = (tg_v16){0};                                                       \
                            if (j < n)                                                                    \
                                for (int c = 0; c < DV; c++) a += qv[c] * tg_ld16(kb + (j0 + j) * D + 16 * c); \
                            t[j] = (__m512)a;                                                             \
                        }                                                                                 \
                        folded = tg_fold16(t);                                                            \
                    }                                                                                     \
                    _mm512_mask_storeu_ps(scores + g * len + t0 + j0, (__mmask16)((1u << n) - 1u),        \
                                          _mm512_mul_ps(folded, _mm512_set1_ps(scale)));                  \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        tg_softmax_rows(scores, group, len);                                                              \
        for (int64_t g0 = 0; g0 < group;) {                                                               \
            const int64_t gb = group - g0 < TG_VALUE_HEADS(DV) ? group - g0 : TG_VALUE_HEADS(DV);         \
            const float *sg = scores + g0 * len;                                                          \
            if (gb == 3)                                                                                  \
                tg_values##DV##_3(sg, len, vbase, table, block_size, o + g0 * D);                         \
            else if (gb == 2)                                                                             \
                tg_values##DV##_2(sg, len, vbase, table, block_size, o + g0 * D);                         \
            else                                                                                          \
                tg_values##DV##_1(sg, len, vbase, table, block_size, o + g0 * D);                         \
            g0 += gb;                                                                                     \
        }                                                                                                 \
    }
TG_ATTN(1)
TG_ATTN(2)
TG_ATTN(3)
TG_ATTN(4)
TG_ATTN(5)
TG_ATTN(6)
TG_ATTN(7)
TG_ATTN(8)
typedef void (*tg_attend_fn)(const float *, int64_t, const float *, const float *, const int64_t *, int64_t, int64_t,
                             float, float *, float *);
static const tg_attend_fn TG_ATTEND[9] = {NULL,           tg_attend_group1, tg_attend_group2, tg_attend_group3,
                                          tg_attend_group4, tg_attend_group5, tg_attend_group6, tg_attend_group7,
                                          tg_attend_group8};
#endif

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
/* AVX2 path of the decode attention below, for head_dim a multiple of 8 up to 128: the AVX-512 path's plan with
 * 8-lane vectors. Scores come 8 keys at a time, each key's dot product left as a vector of 8 partial sums and the
 * 8 vectors folded in one horizontal-add tree (lane j: key j's score); each block's key and value rows are read
 * once for the whole GQA group; each output row stays in registers while a block's value rows add into it. The
 * query is read from L1 rather than held in registers (AVX2 has 16 of them). */
typedef float tg_v8 __attribute__((vector_size(32)));

static inline tg_v8 tg_ld8(const float *p) {
    tg_v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* t[j] -> lane j holds the sum of t[j]'s 8 lanes. */
static inline __m256 tg_fold8(const __m256 t[8]) {
    const __m256 a = _mm256_hadd_ps(t[0], t[1]), b = _mm256_hadd_ps(t[2], t[3]);
    const __m256 c = _mm256_hadd_ps(t[4], t[5]), d = _mm256_hadd_ps(t[6], t[7]);
    const __m256 u = _mm256_hadd_ps(a, b), w = _mm256_hadd_ps(c, d); /* per 128-bit half: keys 0-3 | 4-7 */
    return _mm256_add_ps(_mm256_permute2f128_ps(u, w, 0x20), _mm256_permute2f128_ps(u, w, 0x31));
}

#define TG_ATTN8(DV)                                                                                      \
    static void tg_attend8_group##DV(const float *qs, int64_t group, const float *kbase, const float *vbase, \
                                     const int64_t *table, int64_t len, int64_t block_size, float scale,  \
                                     float *scores, float *o) {                                           \
        const int64_t D = DV * 8;                                                                         \
        static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};       \
        for (int64_t t0 = 0; t0 < len; t0 += block_size) {                                                \
            const int64_t m = len - t0 < block_size ? len - t0 : block_size;                              \
            const float *kb = kbase + table[t0 / block_size] * block_size * D;                            \
            tg_prefetch_block(kbase, vbase, table, t0, len, block_size, D);                               \
            for (int64_t j0 = 0; j0 < m; j0 += 8) {                                                       \
                const int64_t n = m - j0 < 8 ? m - j0 : 8;                                                \
                const __m256i mask = _mm256_loadu_si256((const __m256i *)(lanes + 8 - n));                \
                for (int64_t g = 0; g < group; g++) { /* the 8 key rows stay in L1 across the group */    \
                    const float *qg = qs + g * D;                                                         \
                    __m256 t[8];                                                                          \
                    if (n == 8) { /* a full run unrolled: 8 independent chains in registers */           \
                        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {                             \
                            tg_v8 a = (tg_v8){0};                                                         \
                            for (int c = 0; c < DV; c++) a += tg_ld8(qg + 8 * c) * tg_ld8(kb + (j0 + j) * D + 8 * c);\
                            t[j] = (__m256)a;                                                             \
                        }                                                                                 \
                    } else                                                                                \
                        for (int j = 0; j < 8; j++) {                                                     \
                            tg_v8 a = (tg_v8){0};                                                         \
                            if (j < n)                                                                    \
                                for (int c = 0; c < DV; c++) a += tg_ld8(qg + 8 * c) * tg_ld8(kb + (j0 + j) * D + 8 * c);\
                            t[j] = (__m256)a;                                                             \
                        }                                                                                 \
                    _mm256_maskstore_ps(scores + g * len + t0 + j0, mask,                                 \
                                        _mm256_mul_ps(tg_fold8(t), _mm256_set1_ps(scale)));               \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        tg_softmax_rows(scores, group, len);                                                              \
        memset(o, 0, sizeof(float) * group * D);                                                          \
        for (int64_t t0 = 0; t0 < len; t0 += block_size) {                                                \
            const int64_t m = len - t0 < block_size ? len - t0 : block_size;                              \
            const float *vb = vbase + table[t0 / block_size] * block_size * D;                            \
            for (int64_t g = 0; g < group; g++) { /* the block's value rows stay in L1 across the group */\
                const float *sg = scores + g * len + t0;                                                  \
                tg_v8 acc[DV];                                                                            \
                for (int c = 0; c < DV; c++) acc[c] = tg_ld8(o + g * D + 8 * c);                          \
                for (int64_t j = 0; j < m; j++)                                                           \
                    for (int c = 0; c < DV; c++) acc[c] += sg[j] * tg_ld8(vb + j * D + 8 * c);            \
                for (int c = 0; c < DV; c++) memcpy(o + g * D + 8 * c, &acc[c], sizeof acc[c]);          \
            }                                                                                             \
        }                                                                                                 \
    }
TG_ATTN8(1)
TG_ATTN8(2)
TG_ATTN8(3)
TG_ATTN8(4)
TG_ATTN8(5)
TG_ATTN8(6)
TG_ATTN8(7)
TG_ATTN8(8)
TG_ATTN8(9)
TG_ATTN8(10)
TG_ATTN8(11)
TG_ATTN8(12)
TG_ATTN8(13)
TG_ATTN8(14)
TG_ATTN8(15)
TG_ATTN8(16)
typedef void (*tg_attend_fn)(const float *, int64_t, const float *, const float *, const int64_t *, int64_t, int64_t,
                             float, float *, float *);
static const tg_attend_fn TG_ATTEND8[17] = {
    NULL,               tg_attend8_group1,  tg_attend8_group2,  tg_attend8_group3,  tg_attend8_group4,
    tg_attend8_group5,  tg_attend8_group6,  tg_attend8_group7,  tg_attend8_group8,  tg_attend8_group9,
    tg_attend8_group10, tg_attend8_group11, tg_attend8_group12, tg_attend8_group13, tg_attend8_group14,
    tg_attend8_group15, tg_attend8_group16};
#endif

/* Sequence s's query heads of KV group kh against its paged context (len tokens, block table `table`): out
 * [G, D] for the G = H / KVH query heads qs [G, D]. scores: G * len floats of the caller's. Each key and value
 * row is read once for the whole group, straight from its block: no gather, no padding. */
void tg_attend_item(const float *qs, const float *kbase, const float *vbase, const int64_t *table, int64_t len,
                    int64_t group, int64_t head_dim, int64_t block_size, float scale, float *scores, float *o) {
#ifdef __AVX512F__
    if (head_dim % 16 == 0 && head_dim <= 128) {
        TG_ATTEND[head_dim / 16](qs, group, kbase, vbase, table, len, block_size, scale, scores, o);
        return;
    }
#elif defined(__AVX2__) && defined(__FMA__)
    if (head_dim % 8 == 0 && head_dim <= 128) {
        TG_ATTEND8[head_dim / 8](qs, group, kbase, vbase, table, len, block_size, scale, scores, o);
        return;
    }
#endif
    for (int64_t t0 = 0; t0 < len; t0 += block_size) {
        const float *kb = kbase + table[t0 / block_size] * block_size * head_dim;
        const int64_t m = len - t0 < block_size ? len - t0 : block_size;
        for (int64_t j = 0; j < m; j++)
            for (int64_t g = 0; g < group; g++)
                scores[g * len + t0 + j] = tg_dot(qs + g * head_dim, kb + j * head_dim, head_dim) * scale;
    }
    tg_softmax_rows(scores, group, len);
    memset(o, 0, sizeof(float) * group * head_dim);
    for (int64_t t0 = 0; t0 < len; t0 += block_size) {
        const float *vb = vbase + table[t0 / block_size] * block_size * head_dim;
        const int64_t m = len - t0 < block_size ? len - t0 : block_size;
        for (int64_t j = 0; j < m; j++) {
            const float *vr = vb + j * head_dim;
            for (int64_t g = 0; g < group; g++) {
                const float p = scores[g * len + t0 + j];
                float *og = o + g * head_dim;
#pragma omp simd
                for (int64_t d = 0; d < head_dim; d++) og[d] += p * vr[d];
            }
        }
    }
}

/* One query token per sequence against its paged context. q: [n, H, D] with rows q_stride apart; caches
 * [KVH, num_blocks, block_size, D]; block_tables [n, max_blocks]; context_lens [n]; out [n, H, D] dense. */
void tg_paged_decode_attention(const float *q, int64_t q_stride, const float *k_cache, const float *v_cache,
                               const int64_t *block_tables, int64_t max_blocks, const int64_t *context_lens,
                               float *out, int64_t n, int64_t heads, int64_t kv_heads, int64_t head_dim,
                               int64_t num_blocks, int64_t block_size, float scale) {
    const int64_t group = heads / kv_heads, kv_stride = num_blocks * block_size * head_dim;
    int64_t max_len = 1;
    for (int64_t s = 0; s < n; s++) max_len = context_lens[s] > max_len ? context_lens[s] : max_len;
#pragma omp parallel
    {
        float *scores = (float *)malloc(sizeof(float) * group * max_len);
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int64_t s = 0; s < n; s++)
            for (int64_t kh = 0; kh < kv_heads; kh++)
                tg_attend_item(q + s * q_stride + kh * group * head_dim, k_cache + kh * kv_stride,
                               v_cache + kh * kv_stride, block_tables + s * max_blocks, context_lens[s], group,
                               head_dim, block_size, scale, scores, out + (s * heads + kh * group) * head_dim);
        free(scores);
    }
}
