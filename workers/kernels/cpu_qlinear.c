/* y = x @ W.T (+ residual) with W kept in GGUF-style blocks: w = d * q + m for each row and 32-column group.
 *
 * The weight is read in its compressed form (4 or 8 bits a weight plus two floats a group instead of 32 bits),
 * which is what a decode step on a CPU is short of: memory bandwidth. Layout (workers/model/block_quant.py
 * packs it): rows in panels of 16; for each panel and column k, the 16 rows' q values are adjacent
 * (4 bits: 8 bytes, row j in the low nibble and row j + 8 in the high one; 8 bits: 16 signed bytes); dm holds
 * each panel's d[16] then m[16] for every 32-column group.
 *
 * A thread expands one panel at a time into a float buffer (L1/L2 resident) and runs every row of x against
 * it, in tiles of 6 rows x 16 outputs held in registers, so the expansion is paid once per panel whatever
 * the batch. The expanded values are exact: d comes from float16 (11 significant bits) and |q| < 256, so d * q
 * is exact in float32 and d * q + m rounds once, as the reference dequantization does. Arithmetic is float32.
 * One or two rows (a decode step at batch 1 or 2) skip the buffer and read the packed weights directly
 * (gemv below): with so few rows, storing and reloading the expansion costs as much as the product.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#define PANEL 16
#define GROUP 32

typedef float v8 __attribute__((vector_size(32)));

static inline v8 ld(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st(float *p, v8 v) { memcpy(p, &v, sizeof v); }

static inline void expand_row(const uint8_t *qk, int bits, v8 *lo, v8 *hi) {
#ifdef __AVX2__
    if (bits == 4) {
        __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)qk));
        *lo = (v8)_mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(15)));
        *hi = (v8)_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
    } else {
        *lo = (v8)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)qk)));
        *hi = (v8)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(qk + 8))));
    }
#else
    for (int j = 0; j < 8; j++) {
        if (bits == 4) {
            (*lo)[j] = (float)(qk[j] & 15);
            (*hi)[j] = (float)(qk[j] >> 4);
        } else {
            (*lo)[j] = (float)(int8_t)qk[j];
            (*hi)[j] = (float)(int8_t)qk[j + 8];
        }
    }
#endif
}

/* One panel [K x 16] of weights, expanded to float32, k-major. */
static void expand_panel(const uint8_t *qp, const float *dmp, int64_t K, int bits, float *buf) {
    const int64_t row_bytes = bits == 4 ? 8 : 16;
    for (int64_t g = 0; g < K / GROUP; g++) {
        const float *dm = dmp + g * 2 * PANEL;
        const v8 d0 = ld(dm), d1 = ld(dm + 8), m0 = ld(dm + 16), m1 = ld(dm + 24);
        for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k++) {
            v8 lo, hi;
            expand_row(qp + k * row_bytes, bits, &lo, &hi);
            st(buf + k * PANEL, d0 * lo + m0);
            st(buf + k * PANEL + 8, d1 * hi + m1);
        }
    }
}

/* R rows of x against one expanded panel: out[r, 0:16] = x[r, :] @ buf (+ res[r, 0:16]). */
#define TILE(R)                                                                                           \
    static inline void tile##R(const float *x, int64_t K, const float *buf, float *out, int64_t N,       \
                               const float *res) {                                                        \
        v8 a0[R], a1[R];                                                                                  \
        for (int r = 0; r < R; r++) a0[r] = a1[r] = (v8){0};                                              \
        for (int64_t k = 0; k < K; k++) {                                                                 \
            const v8 w0 = ld(buf + k * PANEL), w1 = ld(buf + k * PANEL + 8);                              \
            for (int r = 0; r < R; r++) {                                                                 \
                const float xr = x[r * K + k];                                                            \
                a0[r] += xr * w0;                                                                         \
                a1[r] += xr * w1;                                                                         \
            }                                                                                             \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) {                                                                                    \
                a0[r] += ld(res + r * N);                                                                 \
                a1[r] += ld(res + r * N + 8);                                                             \
            }                                                                                             \
            st(out + r * N, a0[r]);                                                                       \
            st(out + r * N + 8, a1[r]);                                                                   \
        }                                                                                                 \
    }
TILE(1)
TILE(2)
TILE(3)
TILE(4)
TILE(5)
TILE(6)

/* One or two rows of x against one panel, straight from the packed weights (no expanded buffer): a decode
 * step at batch 1 or 2 reads each weight once, so the buffer's store and reload would cost as much as the
 * product. Per 32-column group, sum_k x[k] * (d * q[k] + m) = d * sum_k x[k] * q[k] + m * sum_k x[k]: the inner
 * loop multiplies by the integer q (exact in float32) and the group's scale and minimum are applied once,
 * with xsum[r, g] = sum of row r's x over group g computed once per call. The k loop runs S interleaved
 * partial sums (S * 2 * R chains keep both FMA pipes busy), added pairwise at the group's end. All float32;
 * the additions are ordered differently from the tiled path's, within float32 rounding of it. */
#define GEMV(R, S, B)                                                                                     \
    static void gemv##R##_##B(const float *x, int64_t K, const uint8_t *qp, const float *dmp,             \
                              const float *xsum, float *out, int64_t N, const float *res) {               \
        const int bits = B; /* a constant: the 4/8-bit choice leaves the inner loop */                    \
        const int64_t row_bytes = bits == 4 ? 8 : 16, groups = K / GROUP;                                 \
        v8 a0[R], a1[R];                                                                                  \
        for (int r = 0; r < R; r++) a0[r] = a1[r] = (v8){0};                                              \
        for (int64_t g = 0; g < groups; g++) {                                                            \
            v8 c0[S][R], c1[S][R];                                                                        \
            for (int s = 0; s < S; s++)                                                                   \
                for (int r = 0; r < R; r++) c0[s][r] = c1[s][r] = (v8){0};                                \
            for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k += S) {                                    \
                for (int s = 0; s < S; s++) {                                                             \
                    v8 lo, hi;                                                                            \
                    expand_row(qp + (k + s) * row_bytes, bits, &lo, &hi);                                 \
                    for (int r = 0; r < R; r++) {                                                         \
                        const float xr = x[r * K + k + s];                                                \
                        c0[s][r] += xr * lo;                                                              \
                        c1[s][r] += xr * hi;                                                              \
                    }                                                                                     \
                }                                                                                         \
            }                                                                                             \
            const float *dm = dmp + g * 2 * PANEL;                                                        \
            const v8 d0 = ld(dm), d1 = ld(dm + 8), m0 = ld(dm + 16), m1 = ld(dm + 24);                    \
            for (int r = 0; r < R; r++) {                                                                 \
                for (int w = S / 2; w >= 1; w /= 2)                                                       \
                    for (int s = 0; s < w; s++) {                                                         \
                        c0[s][r] += c0[s + w][r];                                                         \
                        c1[s][r] += c1[s + w][r];                                                         \
                    }                                                                                     \
                const float sx = xsum[r * groups + g];                                                    \
                a0[r] += d0 * c0[0][r] + m0 * sx;                                                         \
                a1[r] += d1 * c1[0][r] + m1 * sx;                                                         \
            }                                                                                             \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) {                                                                                    \
                a0[r] += ld(res + r * N);                                                                 \
                a1[r] += ld(res + r * N + 8);                                                             \
            }                                                                                             \
            st(out + r * N, a0[r]);                                                                       \
            st(out + r * N + 8, a1[r]);                                                                   \
        }                                                                                                 \
    }
GEMV(1, 4, 4)
GEMV(1, 4, 8)
GEMV(2, 2, 4)
GEMV(2, 2, 8)

typedef void (*gemv_fn)(const float *, int64_t, const uint8_t *, const float *, const float *, float *, int64_t,
                        const float *);

/* x [M, K] dense; q and dm packed as above for W [N, K]; out [M, N] dense; res NULL or [M, N] dense.
 * N is a multiple of 16 and K of 32 (the packer guarantees it). */
void tg_block_quant_linear(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N,
                           int64_t bits, float *out, const float *res) {
    const int64_t panels = N / PANEL, panel_bytes = K * (bits == 4 ? 8 : 16), panel_dm = (K / GROUP) * 2 * PANEL;
    if (M < 1) return;  /* a step whose rows need no logits calls the head with none */
    if (M <= 2) {
        float *xsum = (float *)malloc(sizeof(float) * M * (K / GROUP));
        for (int64_t i = 0; i < M * (K / GROUP); i++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < GROUP; k++) sum += x[i * GROUP + k];
            xsum[i] = sum;
        }
        const gemv_fn fn = M == 1 ? (bits == 4 ? gemv1_4 : gemv1_8) : (bits == 4 ? gemv2_4 : gemv2_8);
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < panels; p++)
            fn(x, K, q + p * panel_bytes, dm + p * panel_dm, xsum, out + p * PANEL, N, res ? res + p * PANEL : NULL);
        free(xsum);
        return;
    }
#pragma omp parallel
    {
        float *buf = (float *)malloc(sizeof(float) * K * PANEL);
#pragma omp for schedule(static)
        for (int64_t p = 0; p < panels; p++) {
            expand_panel(q + p * panel_bytes, dm + p * panel_dm, K, (int)bits, buf);
            for (int64_t r0 = 0; r0 < M; r0 += 6) {
                const float *xr = x + r0 * K;
                float *o = out + r0 * N + p * PANEL;
                const float *rr = res ? res + r0 * N + p * PANEL : NULL;
                switch (M - r0 < 6 ? M - r0 : 6) {
                case 6: tile6(xr, K, buf, o, N, rr); break;
                case 5: tile5(xr, K, buf, o, N, rr); break;
                case 4: tile4(xr, K, buf, o, N, rr); break;
                case 3: tile3(xr, K, buf, o, N, rr); break;
                case 2: tile2(xr, K, buf, o, N, rr); break;
                default: tile1(xr, K, buf, o, N, rr); break;
                }
            }
        }
        free(buf);
    }
}
