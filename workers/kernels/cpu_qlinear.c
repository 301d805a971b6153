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
 * Up to six rows (a decode step at a small batch, a sequence verifying its drafts) skip the buffer and read
 * the packed weights directly (gemv below): with so few rows, storing and reloading the expansion costs as
 * much as the product.
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

/* Up to SMALL_M rows of x against P adjacent panels, straight from the packed weights (no expanded buffer): a
 * decode step at a small batch, or one sequence verifying its drafts, reads each weight for a few rows only, so
 * the buffer's store and reload would cost as much as the product. Per 32-column group,
 * sum_k x[k] (d q[k] + m) = d sum_k x[k] q[k] + m sum_k x[k]: the inner loop multiplies by the integer q (exact
 * in float32) and the group's d and m are applied once, with xsum[r, g] = row r's sum of x over group g taken
 * once per call. Every output sums its k in order within a group and its groups in order into out, then adds
 * the residual: the same additions whatever R and P, so a row's result does not depend on how many rows share
 * the call (a sequence verifying drafts computes each token exactly as a one-token step would). P panels at
 * once give one and two rows enough independent FMA chains (2 * R * P) to fill both pipes. */
#define GEMV(R, P, B)                                                                                     \
    static void gemv##R##x##P##_##B(const float *x, int64_t K, const uint8_t *qp, int64_t panel_bytes,         \
                              const float *dmp, int64_t panel_dm, const float *xsum, float *out, int64_t N,\
                              const float *res) {                                                         \
        const int bits = B; /* a constant: the 4/8-bit choice leaves the inner loop */                    \
        const int64_t row_bytes = bits == 4 ? 8 : 16, groups = K / GROUP;                                 \
        for (int r = 0; r < R; r++)                                                                       \
            memset(out + r * N, 0, sizeof(float) * PANEL * P);                                            \
        for (int64_t g = 0; g < groups; g++) {                                                            \
            v8 c0[P][R], c1[P][R];                                                                        \
            for (int p = 0; p < P; p++)                                                                   \
                for (int r = 0; r < R; r++) c0[p][r] = c1[p][r] = (v8){0};                                \
            for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k++) {                                       \
                for (int p = 0; p < P; p++) {                                                             \
                    v8 lo, hi;                                                                            \
                    expand_row(qp + p * panel_bytes + k * row_bytes, bits, &lo, &hi);                     \
                    for (int r = 0; r < R; r++) {                                                         \
                        const float xr = x[r * K + k];                                                    \
                        c0[p][r] += xr * lo;                                                              \
                        c1[p][r] += xr * hi;                                                              \
                    }                                                                                     \
                }                                                                                         \
            }                                                                                             \
            for (int p = 0; p < P; p++) {                                                                 \
                const float *dm = dmp + p * panel_dm + g * 2 * PANEL;                                     \
                const v8 d0 = ld(dm), d1 = ld(dm + 8), m0 = ld(dm + 16), m1 = ld(dm + 24);                \
                for (int r = 0; r < R; r++) {                                                             \
                    const float sx = xsum[r * groups + g];                                                \
                    float *o = out + r * N + p * PANEL;                                                   \
                    st(o, ld(o) + (d0 * c0[p][r] + m0 * sx));                                             \
                    st(o + 8, ld(o + 8) + (d1 * c1[p][r] + m1 * sx));                                     \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        if (res)                                                                                          \
            for (int r = 0; r < R; r++)                                                                   \
                for (int p = 0; p < P; p++) {                                                             \
                    float *o = out + r * N + p * PANEL;                                                   \
                    const float *rr = res + r * N + p * PANEL;                                            \
                    st(o, ld(o) + ld(rr));                                                                \
                    st(o + 8, ld(o + 8) + ld(rr + 8));                                                    \
                }                                                                                         \
    }
#define GEMV_BITS(R, P) GEMV(R, P, 4) GEMV(R, P, 8)
GEMV_BITS(1, 4)
GEMV_BITS(1, 1)
GEMV_BITS(2, 2)
GEMV_BITS(2, 1)
GEMV_BITS(3, 1)
GEMV_BITS(4, 1)
GEMV_BITS(5, 1)
GEMV_BITS(6, 1)
#define SMALL_M 6

typedef void (*gemv_fn)(const float *, int64_t, const uint8_t *, int64_t, const float *, int64_t, const float *,
                        float *, int64_t, const float *);
/* By rows: the kernel taking GEMV_PANELS[M] panels a call, and its one-panel twin for a remainder. */
static const int GEMV_PANELS[SMALL_M + 1] = {0, 4, 2, 1, 1, 1, 1};
static const gemv_fn GEMV_WIDE[2][SMALL_M + 1] = {
    {NULL, gemv1x4_4, gemv2x2_4, gemv3x1_4, gemv4x1_4, gemv5x1_4, gemv6x1_4},
    {NULL, gemv1x4_8, gemv2x2_8, gemv3x1_8, gemv4x1_8, gemv5x1_8, gemv6x1_8}};
static const gemv_fn GEMV_ONE[2][SMALL_M + 1] = {
    {NULL, gemv1x1_4, gemv2x1_4, gemv3x1_4, gemv4x1_4, gemv5x1_4, gemv6x1_4},
    {NULL, gemv1x1_8, gemv2x1_8, gemv3x1_8, gemv4x1_8, gemv5x1_8, gemv6x1_8}};

#ifdef __AVX512F__
/* With AVX-512 a panel's 16 outputs are one register, and there are 32 registers: a tile of up to WIDE_ROWS
 * rows expands each weight vector in registers (d * q + m, rounded once, as expand_panel does) and feeds it
 * straight to one FMA per row, with no buffer to store and reload. The expansion costs three vector ops per k
 * against up to 16 FMAs, and every lane sees the same operations in the same order as the 8-wide code
 * (w = d * q + m, then acc += x * w over k), so results are identical bit for bit. */
typedef float v16 __attribute__((vector_size(64)));
#define WIDE_ROWS 16

static inline v16 ld16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

static inline v16 expand16(const uint8_t *qk, int bits) {
    __m512i w;
    if (bits == 4) {
        const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)qk));
        w = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b, _mm256_set1_epi32(15))),
                               _mm256_srli_epi32(b, 4), 1);
    } else {
        w = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)qk));
    }
    return (v16)_mm512_cvtepi32_ps(w);
}

#define TILE16(R, B)                                                                                      \
    static void tile16_##R##_##B(const float *x, int64_t K, const uint8_t *qp, const float *dmp,          \
                                 float *out, int64_t N, const float *res) {                               \
        const int bits = B; /* a constant: the 4/8-bit choice leaves the inner loop */                    \
        const int64_t row_bytes = bits == 4 ? 8 : 16;                                                     \
        v16 a[R];                                                                                         \
        for (int r = 0; r < R; r++) a[r] = (v16){0};                                                      \
        for (int64_t g = 0; g < K / GROUP; g++) {                                                         \
            const v16 d = ld16(dmp + g * 2 * PANEL), m = ld16(dmp + g * 2 * PANEL + 16);                  \
            for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k++) {                                       \
                const v16 w = d * expand16(qp + k * row_bytes, bits) + m;                                 \
                for (int r = 0; r < R; r++) a[r] += x[k * R + r] * w;                                     \
            }                                                                                             \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) a[r] += ld16(res + r * N);                                                           \
            st16(out + r * N, a[r]);                                                                      \
        }                                                                                                 \
    }
#define TILE16_BITS(R) TILE16(R, 4) TILE16(R, 8)
TILE16_BITS(1)
TILE16_BITS(2)
TILE16_BITS(3)
TILE16_BITS(4)
TILE16_BITS(5)
TILE16_BITS(6)
TILE16_BITS(7)
TILE16_BITS(8)
TILE16_BITS(9)
TILE16_BITS(10)
TILE16_BITS(11)
TILE16_BITS(12)
TILE16_BITS(13)
TILE16_BITS(14)
TILE16_BITS(15)
TILE16_BITS(16)

typedef void (*tile_fn)(const float *, int64_t, const uint8_t *, const float *, float *, int64_t, const float *);
#define TILE_ROW(R) {tile16_##R##_4, tile16_##R##_8}
/* From this many tiles of rows on (a prefill: M > 112), a chunk of work is one tile against every panel rather
 * than two panels against every tile. */
#define TILE_CHUNK_TILES 8

/* The same tiles reading panels expanded once into a buffer (w [K][16], the values expand16 gives), for a prefill
 * where each expansion serves every tile of rows: the inner loop is then one load and R FMAs per k. */
#define BTILE16(R)                                                                                        \
    static void btile16_##R(const float *x, int64_t K, const float *w, float *out, int64_t N,             \
                            const float *res) {                                                           \
        v16 a[R];                                                                                         \
        for (int r = 0; r < R; r++) a[r] = (v16){0};                                                      \
        for (int64_t k = 0; k < K; k++) {                                                                 \
            const v16 wk = ld16(w + k * PANEL);                                                           \
            for (int r = 0; r < R; r++) a[r] += x[k * R + r] * wk;                                        \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) a[r] += ld16(res + r * N);                                                           \
            st16(out + r * N, a[r]);                                                                      \
        }                                                                                                 \
    }
BTILE16(1) BTILE16(2) BTILE16(3) BTILE16(4) BTILE16(5) BTILE16(6) BTILE16(7) BTILE16(8)
BTILE16(9) BTILE16(10) BTILE16(11) BTILE16(12) BTILE16(13) BTILE16(14)

/* Two panels at once (32 outputs, up to MANY_ROWS rows: 2 x 14 accumulators, two weight vectors and a broadcast in
 * the 32 registers): R + 2 loads feed 2R FMAs, where one panel's R + 1 loads feed only R. */
#define MANY_ROWS 14
#define BTILE2(R)                                                                                         \
    static void btile2_##R(const float *x, int64_t K, const float *w0, const float *w1, float *out,       \
                           int64_t N, const float *res) {                                                 \
        v16 a[R], b[R];                                                                                   \
        for (int r = 0; r < R; r++) a[r] = b[r] = (v16){0};                                               \
        for (int64_t k = 0; k < K; k++) {                                                                 \
            const v16 u = ld16(w0 + k * PANEL), v = ld16(w1 + k * PANEL);                                 \
            for (int r = 0; r < R; r++) {                                                                 \
                const float xr = x[k * R + r];                                                            \
                a[r] += xr * u;                                                                           \
                b[r] += xr * v;                                                                           \
            }                                                                                             \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) {                                                                                    \
                a[r] += ld16(res + r * N);                                                                \
                b[r] += ld16(res + r * N + PANEL);                                                        \
            }                                                                                             \
            st16(out + r * N, a[r]);                                                                      \
            st16(out + r * N + PANEL, b[r]);                                                              \
        }                                                                                                 \
    }
BTILE2(1) BTILE2(2) BTILE2(3) BTILE2(4) BTILE2(5) BTILE2(6) BTILE2(7)
BTILE2(8) BTILE2(9) BTILE2(10) BTILE2(11) BTILE2(12) BTILE2(13) BTILE2(14)

typedef void (*btile2_fn)(const float *, int64_t, const float *, const float *, float *, int64_t, const float *);
static const btile2_fn BTILES2[MANY_ROWS + 1] = {
    NULL,      btile2_1,  btile2_2,  btile2_3,  btile2_4,  btile2_5,  btile2_6, btile2_7,
    btile2_8,  btile2_9,  btile2_10, btile2_11, btile2_12, btile2_13, btile2_14};

typedef void (*btile_fn)(const float *, int64_t, const float *, float *, int64_t, const float *);
static const btile_fn BTILES16[MANY_ROWS + 1] = {  /* a last odd panel: one panel, the same row tiles */
    NULL,        btile16_1,  btile16_2,  btile16_3,  btile16_4,  btile16_5,  btile16_6,  btile16_7,  btile16_8,
    btile16_9,   btile16_10, btile16_11, btile16_12, btile16_13, btile16_14};

static void expand16_panel(const uint8_t *qp, const float *dmp, int64_t K, int bits, float *w) {
    const int64_t row_bytes = bits == 4 ? 8 : 16;
    for (int64_t g = 0; g < K / GROUP; g++) {
        const v16 d = ld16(dmp + g * 2 * PANEL), m = ld16(dmp + g * 2 * PANEL + 16);
        for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k++)
            st16(w + k * PANEL, d * expand16(qp + k * row_bytes, bits) + m);
    }
}

/* The first row of tile t when M rows are split into `tiles` tiles as evenly as WIDE_ROWS allows: each tile
 * takes the rows left divided by the tiles left, so the larger tiles come last. */
static inline int64_t tile_start(int64_t M, int64_t tiles, int64_t t) {
    int64_t r0 = 0;
    for (int64_t i = 0; i < t; i++) r0 += (M - r0) / (tiles - i);
    return r0;
}
static const tile_fn TILES16[WIDE_ROWS + 1][2] = {
    {NULL, NULL},  TILE_ROW(1),  TILE_ROW(2),  TILE_ROW(3),  TILE_ROW(4),  TILE_ROW(5),
    TILE_ROW(6),   TILE_ROW(7),  TILE_ROW(8),  TILE_ROW(9),  TILE_ROW(10), TILE_ROW(11),
    TILE_ROW(12),  TILE_ROW(13), TILE_ROW(14), TILE_ROW(15), TILE_ROW(16)};

#endif

/* Work is handed out in chunks of panels claimed from a shared counter, so a thread that the OS preempts holds
 * up at most the chunk it has: every other chunk goes to whichever thread is running. */
static inline int64_t claim(int64_t *next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

/* ---- int8 activations (opt-in: EngineConfig.int8_activations) ------------------------------------------------
 * With AVX-512 VNNI and VBMI, `bits | I8_ACT` asks for x quantized per row and 32-column group to int8 (as
 * llama.cpp's Q8_0 activations: xq = round(x / dx), dx = max |x| / 127) and multiplied by the weights' integer q
 * with vpdpbusd, 64 multiply-adds an instruction against 16 for a float32 FMA:
 *   sum_k x[k] (d q[k] + m) ~ d dx sum_k q[k] xq[k] + m sum_k x[k]
 * where sum_k x[k] is the exact float sum (the same xsum the gemv kernels take). Only x's rounding differs from
 * the float32 path (a relative error of about 1 / 254 per value). A Q8 weight's signed q goes in as q + 128
 * (its sign bit flipped, an unsigned byte) and 128 sum_k xq[k] comes off the integer sum. A row's result does not
 * depend on which rows share the call, or on the thread computing it. */
#define I8_ACT 256
#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
#define TG_INT8 1
#define I8_ROWS 8 /* rows a tile holds: 8 int32 sums + 8 float outputs in registers */

/* x rows [M, K] -> xq (int8, row-major), per row and group: dx (the scale), xs (sum of x), sq (sum of xq). */
static void i8_quantize(const float *x, int64_t M, int64_t K, int8_t *xq, float *dx, float *xs, int32_t *sq) {
    const int64_t groups = K / GROUP;
    for (int64_t r = 0; r < M; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float *xr = x + r * K + g * GROUP;
            const __m512 a = _mm512_loadu_ps(xr), b = _mm512_loadu_ps(xr + 16);
            const float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
            const float d = mx / 127.0f, id = mx > 0.0f ? 127.0f / mx : 0.0f;
            float sum = 0.0f;
            for (int k = 0; k < GROUP; k++) sum += xr[k];
            const __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(id)));
            const __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, _mm512_set1_ps(id)));
            _mm_storeu_si128((__m128i *)(xq + r * K + g * GROUP), _mm512_cvtsepi32_epi8(qa));
            _mm_storeu_si128((__m128i *)(xq + r * K + g * GROUP + 16), _mm512_cvtsepi32_epi8(qb));
            dx[r * groups + g] = d;
            xs[r * groups + g] = sum;
            sq[r * groups + g] = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
        }
}

/* Four k of a panel's 16 rows as vpdpbusd's unsigned operand: lane j holds row j's bytes for k0..k0+3. 4 bits: the
 * 32 bytes of 4 k (row j's nibble in byte j % 8, low for j < 8) split into low and high nibbles, then gathered by
 * one byte permutation; 8 bits: the 64 bytes of 4 k (row j at byte j) gathered, sign bits flipped. */
static inline __m512i i8_weights(const uint8_t *qk, int bits) {
    if (bits == 4) {
        const __m512i idx = _mm512_set_epi8(
            63, 55, 47, 39, 62, 54, 46, 38, 61, 53, 45, 37, 60, 52, 44, 36,
            59, 51, 43, 35, 58, 50, 42, 34, 57, 49, 41, 33, 56, 48, 40, 32,
            31, 23, 15, 7, 30, 22, 14, 6, 29, 21, 13, 5, 28, 20, 12, 4,
            27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1, 24, 16, 8, 0);
        const __m256i b = _mm256_loadu_si256((const __m256i *)qk), lo4 = _mm256_set1_epi8(15);
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b, lo4)),
                                                _mm256_and_si256(_mm256_srli_epi16(b, 4), lo4), 1);
        return _mm512_permutexvar_epi8(idx, both);
    }
    const __m512i idx = _mm512_set_epi8(
        63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12,
        59, 43, 27, 11, 58, 42, 26, 10, 57, 41, 25, 9, 56, 40, 24, 8,
        55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52, 36, 20, 4,
        51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
    const __m512i w = _mm512_xor_si512(_mm512_loadu_si512((const void *)qk), _mm512_set1_epi8((char)0x80));
    return _mm512_permutexvar_epi8(idx, w);
}

/* R rows of quantized x against one panel: out[r, 0:16] = sum over groups (+ res[r, 0:16]). */
#define I8TILE(R, B)                                                                                      \
    static void i8tile_##R##_##B(const int8_t *xq, int64_t K, const float *dx, const float *xs,          \
                                 const int32_t *sq, const uint8_t *qp, const float *dmp, float *out,      \
                                 int64_t N, const float *res) {                                           \
        const int bits = B;                                                                               \
        const int64_t groups = K / GROUP, row_bytes = bits == 4 ? 8 : 16;                                 \
        __m512 o[R];                                                                                      \
        for (int r = 0; r < R; r++) o[r] = _mm512_setzero_ps();                                           \
        for (int64_t g = 0; g < groups; g++) {                                                            \
            __m512i a[R];                                                                                 \
            for (int r = 0; r < R; r++) a[r] = _mm512_setzero_si512();                                    \
            for (int64_t k = g * GROUP; k < (g + 1) * GROUP; k += 4) {                                    \
                const __m512i w = i8_weights(qp + k * row_bytes, bits);                                   \
                for (int r = 0; r < R; r++) {                                                             \
                    int32_t quad;                                                                         \
                    memcpy(&quad, xq + r * K + k, sizeof quad);                                           \
                    a[r] = _mm512_dpbusd_epi32(a[r], w, _mm512_set1_epi32(quad));                         \
                }                                                                                         \
            }                                                                                             \
            const __m512 d = _mm512_loadu_ps(dmp + g * 2 * PANEL), m = _mm512_loadu_ps(dmp + g * 2 * PANEL + 16); \
            for (int r = 0; r < R; r++) {                                                                 \
                if (bits == 8) a[r] = _mm512_sub_epi32(a[r], _mm512_set1_epi32(128 * sq[r * groups + g]));  \
                o[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(dx[r * groups + g])),             \
                                       _mm512_cvtepi32_ps(a[r]), o[r]);                                   \
                o[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(xs[r * groups + g]), o[r]);                      \
            }                                                                                             \
        }                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                     \
            if (res) o[r] = _mm512_add_ps(o[r], _mm512_loadu_ps(res + r * N));                            \
            _mm512_storeu_ps(out + r * N, o[r]);                                                          \
        }                                                                                                 \
    }
#define I8TILE_BITS(R) I8TILE(R, 4) I8TILE(R, 8)
I8TILE_BITS(1) I8TILE_BITS(2) I8TILE_BITS(3) I8TILE_BITS(4)
I8TILE_BITS(5) I8TILE_BITS(6) I8TILE_BITS(7) I8TILE_BITS(8)

typedef void (*i8tile_fn)(const int8_t *, int64_t, const float *, const float *, const int32_t *, const uint8_t *,
                          const float *, float *, int64_t, const float *);
static const i8tile_fn I8TILES[I8_ROWS + 1][2] = {
    {NULL, NULL}, {i8tile_1_4, i8tile_1_8}, {i8tile_2_4, i8tile_2_8}, {i8tile_3_4, i8tile_3_8},
    {i8tile_4_4, i8tile_4_8}, {i8tile_5_4, i8tile_5_8}, {i8tile_6_4, i8tile_6_8}, {i8tile_7_4, i8tile_7_8},
    {i8tile_8_4, i8tile_8_8}};

/* Floats of scratch the int8 path needs at M rows of K: xq (M K bytes), then dx, xs and sq (M K / 32 each). */
static int64_t i8_scratch(int64_t M, int64_t K) { return M * K / 4 + 3 * M * (K / GROUP) + 16; }

/* One thread's share (see tg_linear_share). Up to I8_CHUNK_ROWS rows every thread quantizes all of x (a few
 * microseconds) and claims panels; beyond, a thread claims I8_ROWS rows at a time, quantizes them alone and runs
 * them against every panel (a prefill: x is megabytes, the packed weights stream past from cache). */
#define I8_CHUNK_ROWS 64
static void i8_share(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N, int bits,
                     float *out, const float *res, int64_t *next, float *scratch) {
    const int64_t panels = N / PANEL, panel_bytes = K * (bits == 4 ? 8 : 16), panel_dm = (K / GROUP) * 2 * PANEL;
    const int64_t groups = K / GROUP, b8 = bits == 8;
    if (M > I8_CHUNK_ROWS) {
        const int64_t tiles = (M + I8_ROWS - 1) / I8_ROWS;
        for (int64_t t = claim(next); t < tiles; t = claim(next)) {
            const int64_t r0 = t * I8_ROWS, rows = M - r0 < I8_ROWS ? M - r0 : I8_ROWS;
            int8_t *xq = (int8_t *)scratch;
            float *dx = scratch + rows * K / 4, *xs = dx + rows * groups;
            int32_t *sq = (int32_t *)(xs + rows * groups);
            i8_quantize(x + r0 * K, rows, K, xq, dx, xs, sq);
            for (int64_t p = 0; p < panels; p++)
                I8TILES[rows][b8](xq, K, dx, xs, sq, q + p * panel_bytes, dm + p * panel_dm, out + r0 * N + p * PANEL,
                                  N, res ? res + r0 * N + p * PANEL : NULL);
        }
        return;
    }
    int8_t *xq = (int8_t *)scratch;
    float *dx = scratch + M * K / 4, *xs = dx + M * groups;
    int32_t *sq = (int32_t *)(xs + M * groups);
    i8_quantize(x, M, K, xq, dx, xs, sq);
    const int64_t chunks = (panels + 1) / 2;
    for (int64_t c = claim(next); c < chunks; c = claim(next))
        for (int64_t p = 2 * c; p < 2 * c + 2 && p < panels; p++)
            for (int64_t r0 = 0; r0 < M; r0 += I8_ROWS) {
                const int64_t rows = M - r0 < I8_ROWS ? M - r0 : I8_ROWS;
                I8TILES[rows][b8](xq + r0 * K, K, dx + r0 * groups, xs + r0 * groups, sq + r0 * groups,
                                  q + p * panel_bytes, dm + p * panel_dm, out + r0 * N + p * PANEL, N,
                                  res ? res + r0 * N + p * PANEL : NULL);
            }
}
#endif

/* Whether `bits | I8_ACT` runs int8 activations here (else it runs the float32 path). */
int64_t tg_int8_activations(void) {
#ifdef TG_INT8
    return 1;
#else
    return 0;
#endif
}

/* Floats of scratch one thread needs for tg_linear_share at M rows and K columns. */
int64_t tg_linear_scratch(int64_t M, int64_t K) {
#ifdef __AVX512F__
    const int64_t many = ((M + WIDE_ROWS - 1) / WIDE_ROWS >= TILE_CHUNK_TILES ? WIDE_ROWS : M) * K;
#else
    const int64_t many = M * K;
#endif
    const int64_t small = M * (K / GROUP), panel = K * PANEL + 16;
    int64_t most = small > many ? (small > panel ? small : panel) : (many > panel ? many : panel);
#ifdef TG_INT8
    const int64_t i8 = i8_scratch(M > I8_CHUNK_ROWS ? I8_ROWS : M, K);
    most = i8 > most ? i8 : most;
#endif
    return most;
}

/* One thread's share of out = x @ W.T (+ res): chunks of panels claimed from *next (zero before the first thread
 * starts) until none is left. Every thread of a team calls it with the same arguments but its own scratch
 * (tg_linear_scratch(M, K) floats); a chunk's outputs are the same whichever thread computes them.
 *  - M <= SMALL_M: the gemv kernels straight from the packed weights (xsum: each row's sum per group);
 *  - more rows, AVX-512: tiles of up to WIDE_ROWS rows read from a k-major copy of x; up to TILE_CHUNK_TILES
 *    tiles, a chunk is two panels against every tile, and from there on one tile against every panel;
 *  - more rows, AVX2 only: each panel expanded into the thread's buffer and run against tiles of six rows. */
void tg_linear_share(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N, int64_t bits,
                     float *out, const float *res, int64_t *next, float *scratch) {
    if (M < 1) return;  /* a step whose rows need no logits calls the head with none */
#ifdef TG_INT8
    if (bits & I8_ACT) {
        i8_share(x, M, K, q, dm, N, (int)(bits & ~I8_ACT), out, res, next, scratch);
        return;
    }
#endif
    bits &= ~I8_ACT;
    const int64_t panels = N / PANEL, panel_bytes = K * (bits == 4 ? 8 : 16), panel_dm = (K / GROUP) * 2 * PANEL;
    const int b8 = bits == 8;
    if (M <= SMALL_M) {
        float *xsum = scratch;
        for (int64_t i = 0; i < M * (K / GROUP); i++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < GROUP; k++) sum += x[i * GROUP + k];
            xsum[i] = sum;
        }
        const gemv_fn wide = GEMV_WIDE[b8][M], one = GEMV_ONE[b8][M];
        const int64_t step = GEMV_PANELS[M], chunks = (panels + step - 1) / step;
        for (int64_t c = claim(next); c < chunks; c = claim(next)) {
            const int64_t p0 = c * step;
            if (p0 + step <= panels) {
                wide(x, K, q + p0 * panel_bytes, panel_bytes, dm + p0 * panel_dm, panel_dm, xsum, out + p0 * PANEL,
                     N, res ? res + p0 * PANEL : NULL);
                continue;
            }
            for (int64_t p = p0; p < panels; p++)  /* the last panels, fewer than a wide call takes */
                one(x, K, q + p * panel_bytes, panel_bytes, dm + p * panel_dm, panel_dm, xsum, out + p * PANEL, N,
                    res ? res + p * PANEL : NULL);
        }
        return;
    }
#ifdef __AVX512F__
    /* Tiles of as equal sizes as WIDE_ROWS allows (16 rows: one tile; 20 rows: 10 + 10). A tile reads its rows
     * of x transposed (xt: k-major, its R values for one k adjacent), so its broadcasts come from one pointer at
     * fixed offsets rather than R row pointers. */
    const int64_t tiles = (M + WIDE_ROWS - 1) / WIDE_ROWS, chunks = (panels + 1) / 2;
    float *xt = scratch;
    if (tiles >= TILE_CHUNK_TILES) {
        /* Many rows: a thread claims a tile, transposes its rows alone (WIDE_ROWS x K floats, cache-resident) and
         * runs it against every panel, the packed weights (a few hundred KB) streaming past from cache. Split by
         * panels instead, every thread would transpose all of x (megabytes at a prefill) and read it back from
         * memory once per panel pair. The tiles are the ones below, so every output is computed by the same
         * operations in the same order. */
        for (int64_t t = claim(next); t < tiles; t = claim(next)) {
            const int64_t r0 = tile_start(M, tiles, t), rows = (M - r0) / (tiles - t);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = 0; k < K; k++) xt[k * rows + r] = x[(r0 + r) * K + k];
            for (int64_t p = 0; p < panels; p++)
                TILES16[rows][b8](xt, K, q + p * panel_bytes, dm + p * panel_dm, out + r0 * N + p * PANEL, N,
                                  res ? res + r0 * N + p * PANEL : NULL);
        }
        return;
    }
    for (int64_t t = 0, r0 = 0; t < tiles; t++) {
        const int64_t rows = (M - r0) / (tiles - t);  /* the rest split evenly over the tiles left */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < K; k++) xt[r0 * K + k * rows + r] = x[(r0 + r) * K + k];
        r0 += rows;
    }
    for (int64_t c = claim(next); c < chunks; c = claim(next))
        for (int64_t p = 2 * c; p < 2 * c + 2 && p < panels; p++)
            for (int64_t t = 0, r0 = 0; t < tiles; t++) {
                const int64_t rows = (M - r0) / (tiles - t);
                TILES16[rows][b8](xt + r0 * K, K, q + p * panel_bytes, dm + p * panel_dm, out + r0 * N + p * PANEL,
                                  N, res ? res + r0 * N + p * PANEL : NULL);
                r0 += rows;
            }
#else
    float *buf = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    for (int64_t p = claim(next); p < panels; p = claim(next)) {
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
#endif
}

/* x [M, K] dense; q and dm packed as above for W [N, K]; out [M, N] dense; res NULL or [M, N] dense.
 * N is a multiple of 16 and K of 32 (the packer guarantees it). */
#ifdef __AVX512F__
/* A prefill's many rows (TILE_CHUNK_TILES tiles of 16 or more), in two phases of one parallel region. First the
 * threads transpose x, in tiles of up to MANY_ROWS rows, into one shared k-major copy. Then each claims two panels
 * at a time, expands them once into its buffer (K x 16 floats a panel, cache-resident) and runs every tile against
 * both. Every output sees the operations of the register tiles in the same order (w = d * q + m rounded once, then
 * acc += x * w over k, then the residual), so the values are those of tg_linear_share whatever the tiling. What it
 * saves: the register tiles expand each weight again for every tile of 16 rows, three vector operations against 16
 * FMAs on the same two ports, and load R + 1 values for R FMAs. */
#define PANELS_MANY 2
static int linear_many(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N,
                       int64_t bits, float *out, const float *res) {
    const int64_t tiles = (M + MANY_ROWS - 1) / MANY_ROWS, panels = N / PANEL;
    const int64_t panel_bytes = K * (bits == 4 ? 8 : 16), panel_dm = (K / GROUP) * 2 * PANEL;
    const int64_t chunks = (panels + PANELS_MANY - 1) / PANELS_MANY;
    float *xt = (float *)malloc(sizeof(float) * M * K);
    if (!xt) return 0;
    int64_t next_tile = 0, next_chunk = 0, computed = 0;
#pragma omp parallel
    {
        for (int64_t t = claim(&next_tile); t < tiles; t = claim(&next_tile)) {
            const int64_t r0 = tile_start(M, tiles, t), rows = (M - r0) / (tiles - t);
            float *xtile = xt + r0 * K;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = 0; k < K; k++) xtile[k * rows + r] = x[(r0 + r) * K + k];
        }
        float *w = (float *)aligned_alloc(64, sizeof(float) * PANELS_MANY * K * PANEL);
#pragma omp barrier
        if (w) { /* a thread without its buffer claims nothing: the others take every chunk */
            for (int64_t c = claim(&next_chunk); c < chunks; c = claim(&next_chunk)) {
                const int64_t p0 = c * PANELS_MANY, two = p0 + 1 < panels, col = p0 * PANEL;
                for (int64_t j = 0; j <= two; j++)
                    expand16_panel(q + (p0 + j) * panel_bytes, dm + (p0 + j) * panel_dm, K, (int)bits,
                                   w + j * K * PANEL);
                for (int64_t t = 0, r0 = 0; t < tiles; t++) {
                    const int64_t rows = (M - r0) / (tiles - t);
                    const float *xtile = xt + r0 * K, *rt = res ? res + r0 * N + col : NULL;
                    if (two)
                        BTILES2[rows](xtile, K, w, w + K * PANEL, out + r0 * N + col, N, rt);
                    else
                        BTILES16[rows](xtile, K, w, out + r0 * N + col, N, rt);
                    r0 += rows;
                }
                __atomic_fetch_add(&computed, 1, __ATOMIC_RELAXED);
            }
            free(w);
        }
    }
    free(xt);
    return computed == chunks;
}
#endif

void tg_block_quant_linear(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N,
                           int64_t bits, float *out, const float *res) {
    int64_t next = 0;
    if (M < 1) return;
#ifdef __AVX512F__
    /* Out of memory for the shared copy (or every thread's buffer): the tiles below need none of it. */
    if (!(bits & I8_ACT) && (M + WIDE_ROWS - 1) / WIDE_ROWS >= TILE_CHUNK_TILES &&
        linear_many(x, M, K, q, dm, N, bits, out, res))
        return;
#endif
#pragma omp parallel
    {
        float *scratch = (float *)malloc(sizeof(float) * tg_linear_scratch(M, K));
        tg_linear_share(x, M, K, q, dm, N, bits, out, res, &next, scratch);
        free(scratch);
    }
}
