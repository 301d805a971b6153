/* A decode step through a whole stack of pre-norm decoder layers (RMSNorm, fused q|k|v, rotary, GQA over the
 * paged cache, o-projection + residual, RMSNorm, fused gate|up, SiLU * up, down-projection + residual) in one
 * OpenMP parallel region: the same kernels the layers call one by one, without a return to Python between them
 * and without a fork and join per kernel.
 *
 * Why one region: a kernel per region meant ~270 forks and joins a step at 30 layers. Where the engine has the
 * cores to itself its threads spin between regions and that is cheap; in a server they share the cores with
 * the gateway and Ray, libgomp sleeps them in the kernel between regions (OMP_WAIT_POLICY=passive, or its
 * throttled spin once a process has more OpenMP threads than cores), and every wake-up cost more than the
 * kernel it started: served, both engine threads sat half idle. Here the team is formed once a step and meets
 * at barriers of its own, which spin (yielding the core after a while, so a preempted teammate can run).
 *
 * Per layer, phases separated by a barrier: q|k|v panels; per (token, KV head): rotary of its heads, its k and v
 * into the cache, then its attention (a phase of its own when a sequence has several tokens); o panels; gate|up
 * panels; SiLU * up rows; down panels. Panels, attention items and SiLU rows are claimed from counters, so a
 * thread the OS preempts (the gateway and Ray share these cores) holds up only the item it has. The two RMSNorms
 * need no phase of their own: every thread normalises all rows into a buffer of its own before the matmul that
 * reads them (tokens x hidden, a few microseconds), so a layer meets at six barriers instead of eight, and the
 * values are the same whichever thread computes them.
 *
 * x [T, hidden] is read and overwritten with the stack's output. layers: per layer 10 addresses (input norm,
 * post-attention norm, then q and dm of qkv, o, gate_up, down) and bits: per layer 4 (qkv, o, gate_up, down).
 * Caches [L, KVH, num_blocks, block_size, D]; slots, block_tables and context_lens by token (a sequence's several
 * tokens adjacent, in order). scratch: T * (hidden + qkv + q_size + 3 * inter) floats. */
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_PAUSE() _mm_pause()
#else
#define TG_PAUSE() __asm__ __volatile__("" ::: "memory")
#endif

void tg_rms_row(const float *xr, const float *w, float *o, int64_t dim, float eps);
void tg_silu_row(const float *g, float *o, int64_t inter);
void tg_rotate_head(float *x, const float *c, const float *s, int64_t half);
void tg_attend_item(const float *qs, const float *kbase, const float *vbase, const int64_t *table, int64_t len,
                    int64_t group, int64_t head_dim, int64_t block_size, float scale, float *scores, float *o);
int64_t tg_linear_scratch(int64_t M, int64_t K);
void tg_linear_share(const float *x, int64_t M, int64_t K, const uint8_t *q, const float *dm, int64_t N, int64_t bits,
                     float *out, const float *res, int64_t *next, float *scratch);

#define SPINS_BEFORE_YIELD 4096

/* A sense-reversing barrier: the last thread to arrive flips `sense`; the others spin on it. */
typedef struct {
    int arrived;
    int sense;
} team_barrier;

static void team_wait(team_barrier *b, int threads, int *mine) {
    const int sense = !*mine;
    *mine = sense;
    if (__atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) == threads) {
        __atomic_store_n(&b->arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&b->sense, sense, __ATOMIC_RELEASE);
        return;
    }
    for (unsigned spins = 0; __atomic_load_n(&b->sense, __ATOMIC_ACQUIRE) != sense; spins++) {
        if (spins < SPINS_BEFORE_YIELD)
            TG_PAUSE();
        else
            sched_yield();
    }
}

#define PHASES 7 /* claim counters per layer: q|k|v, rotary and attention items, o, gate|up, SiLU rows, down,
                    * and the attention items again when they run in a phase of their own */

/* Whether some sequence has several tokens in this step (a prompt run as decode tokens, or a last token and its
 * drafts): then every token's K and V must be in the cache before any of them attends, or token t may read its
 * predecessor's slot before the thread writing it has. Such a sequence's tokens are adjacent, each seeing one
 * more token than the last, with the same block table. Different sequences can look alike (a shared prefix
 * block): they only cost the extra barrier. */
static int shares_sequences(int64_t tokens, const int64_t *block_tables, int64_t max_blocks,
                            const int64_t *context_lens) {
    for (int64_t t = 1; t < tokens; t++)
        if (context_lens[t] == context_lens[t - 1] + 1 && block_tables[t * max_blocks] == block_tables[(t - 1) * max_blocks])
            return 1;
    return 0;
}

void tg_decoder_stack(float *x, int64_t tokens, int64_t num_layers, const int64_t *layers, const int64_t *bits,
                      int64_t hidden, int64_t inter, int64_t heads, int64_t kv_heads, int64_t head_dim, float eps,
                      const float *cos, const float *sin, const int64_t *slots, float *k_cache, float *v_cache,
                      int64_t num_blocks, int64_t block_size, const int64_t *block_tables, int64_t max_blocks,
                      const int64_t *context_lens, float scale, float *scratch) {
    const int64_t q_size = heads * head_dim, qkv_w = (heads + 2 * kv_heads) * head_dim, group = heads / kv_heads;
    const int64_t cache_slots = num_blocks * block_size, layer_cache = kv_heads * cache_slots * head_dim;
    const int64_t half = head_dim / 2, items = tokens * kv_heads;
    float *mid = scratch, *qkv = mid + tokens * hidden, *attn = qkv + tokens * qkv_w;
    float *gate_up = attn + tokens * q_size, *act = gate_up + tokens * 2 * inter;
    int64_t max_len = 1, widest = hidden > inter ? hidden : inter;
    for (int64_t t = 0; t < tokens; t++) max_len = context_lens[t] > max_len ? context_lens[t] : max_len;
    const int apart = shares_sequences(tokens, block_tables, max_blocks, context_lens);
    widest = widest > q_size ? widest : q_size;
    int64_t *counters = (int64_t *)calloc((size_t)(num_layers * PHASES), sizeof(int64_t));
    team_barrier barrier = {0, 0};
#pragma omp parallel
    {
        const int threads = omp_get_num_threads();
        int sense = 0;
        float *mine = (float *)malloc(sizeof(float) * tg_linear_scratch(tokens, widest));
        float *scores = (float *)malloc(sizeof(float) * group * max_len);
        float *h = (float *)malloc(sizeof(float) * tokens * hidden); /* this thread's normalised rows */
        for (int64_t l = 0; l < num_layers; l++) {
            const int64_t *p = layers + l * 10, *b = bits + l * 4;
            int64_t *next = counters + l * PHASES;
            float *kc = k_cache + l * layer_cache, *vc = v_cache + l * layer_cache;
            for (int64_t t = 0; t < tokens; t++) tg_rms_row(x + t * hidden, (const float *)p[0], h + t * hidden, hidden, eps);
            tg_linear_share(h, tokens, hidden, (const uint8_t *)p[2], (const float *)p[3], qkv_w, b[0], qkv, NULL,
                            &next[0], mine);
            team_wait(&barrier, threads, &sense);
            for (int64_t i = __atomic_fetch_add(&next[1], 1, __ATOMIC_RELAXED); i < items;
                 i = __atomic_fetch_add(&next[1], 1, __ATOMIC_RELAXED)) {
                const int64_t t = i / kv_heads, kh = i % kv_heads;
                float *row = qkv + t * qkv_w;
                const float *c = cos + t * head_dim, *s = sin + t * head_dim;
                float *qs = row + kh * group * head_dim, *k = row + q_size + kh * head_dim;
                const float *v = row + q_size + kv_heads * head_dim + kh * head_dim;
                for (int64_t g = 0; g < group; g++) tg_rotate_head(qs + g * head_dim, c, s, half);
                tg_rotate_head(k, c, s, half);
                const int64_t dst = (kh * cache_slots + slots[t]) * head_dim;
                memcpy(kc + dst, k, sizeof(float) * head_dim);
                memcpy(vc + dst, v, sizeof(float) * head_dim);
                if (!apart)
                    tg_attend_item(qs, kc + kh * cache_slots * head_dim, vc + kh * cache_slots * head_dim,
                                   block_tables + t * max_blocks, context_lens[t], group, head_dim, block_size,
                                   scale, scores, attn + (t * heads + kh * group) * head_dim);
            }
            team_wait(&barrier, threads, &sense);
            if (apart) {
                for (int64_t i = __atomic_fetch_add(&next[6], 1, __ATOMIC_RELAXED); i < items;
                     i = __atomic_fetch_add(&next[6], 1, __ATOMIC_RELAXED)) {
                    const int64_t t = i / kv_heads, kh = i % kv_heads;
                    tg_attend_item(qkv + t * qkv_w + kh * group * head_dim, kc + kh * cache_slots * head_dim,
                                   vc + kh * cache_slots * head_dim, block_tables + t * max_blocks, context_lens[t],
                                   group, head_dim, block_size, scale, scores, attn + (t * heads + kh * group) * head_dim);
                }
                team_wait(&barrier, threads, &sense);
            }
            tg_linear_share(attn, tokens, q_size, (const uint8_t *)p[4], (const float *)p[5], hidden, b[1], mid, x,
                            &next[2], mine);
            team_wait(&barrier, threads, &sense);
            for (int64_t t = 0; t < tokens; t++) tg_rms_row(mid + t * hidden, (const float *)p[1], h + t * hidden, hidden, eps);
            tg_linear_share(h, tokens, hidden, (const uint8_t *)p[6], (const float *)p[7], 2 * inter, b[2], gate_up,
                            NULL, &next[3], mine);
            team_wait(&barrier, threads, &sense);
            for (int64_t t = __atomic_fetch_add(&next[4], 1, __ATOMIC_RELAXED); t < tokens;
                 t = __atomic_fetch_add(&next[4], 1, __ATOMIC_RELAXED))
                tg_silu_row(gate_up + t * 2 * inter, act + t * inter, inter);
            team_wait(&barrier, threads, &sense);
            tg_linear_share(act, tokens, inter, (const uint8_t *)p[8], (const float *)p[9], hidden, b[3], x, mid,
                            &next[5], mine);
            team_wait(&barrier, threads, &sense);
        }
        free(h);
        free(scores);
        free(mine);
    }
    free(counters);
}
