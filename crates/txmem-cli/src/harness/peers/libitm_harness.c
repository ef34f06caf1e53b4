/* libitm harness for `txmem bench`: the micro, bank and intset workloads of
 * crates/txmem-cli/src/harness/suites/, written with GCC's
 * __transaction_atomic and compiled with `gcc -O2 -fgnu-tm -pthread`.
 * Same data layout and algorithms as the Rust word workloads.
 *
 * usage: harness micro ARRAY TX | bank ACCOUNTS AUDIT% |
 *                intset KIND SIZE RANGE UPDATE% SEED
 *        THREADS DURATION_MS WARMUP_MS SEED SABOTAGE(0|1)
 * prints one line: "ok ops=N attempts=N elapsed_ns=N" (exit 0)
 *               or "fail MESSAGE" (exit 3); bad usage exits 2.
 *
 * Threads run from start to stop; the main thread samples the per-thread
 * operation counters after the warm-up and at the end, so the warm-up is
 * excluded from the measurement without a second phase. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t word;
#define NIL UINT64_MAX
#define MAX_LEVEL 8
#define MAX_TX 128

enum wl { MICRO, BANK, INTSET };
enum kind { LIST, HASH, ORDERED };

static enum wl workload;
static enum kind kind;
static size_t array_len, tx_size, accounts, audit_pct;
static size_t set_size, range, update_pct, buckets, stride;
static uint64_t set_seed;
static word *W;
static atomic_int stop;

/* Per-thread counters, padded; written by the owner, sampled by main. */
struct counters {
    _Atomic uint64_t ops, attempts;
    int64_t delta;
    uint64_t bad;
    uint64_t seed;
    char pad[64];
} __attribute__((aligned(64)));
static struct counters *C;

static __thread uint64_t t_attempts;
/* Not instrumented, so the count survives the attempt's rollback. */
__attribute__((transaction_pure)) static void count_attempt(void) { t_attempts++; }

static inline uint64_t next_rand(uint64_t *s) {
    /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static inline uint64_t below(uint64_t *s, uint64_t n) { return next_rand(s) % n; }

static size_t level_of(size_t key) {
    uint64_t h = ((uint64_t)key + 1) * 0x9E3779B97F4A7C15ULL >> 32;
    size_t tz = h == 0 ? 64 : (size_t)__builtin_ctzll(h);
    size_t l = tz / 2;
    return 1 + (l < MAX_LEVEL - 1 ? l : MAX_LEVEL - 1);
}

/* ---- intset: sorted chains in an arena of next links (node k = key k) ---- */

/* Follows links from `start` while keys are below `key`; -1 on a link that
 * does not strictly increase (impossible under libitm's opaque methods, but
 * kept identical to the Rust body). */
__attribute__((transaction_safe))
static int find(size_t base, size_t start, size_t key, size_t *pred_out, word *succ_out) {
    size_t pred = start;
    word cur = W[base + pred];
    while (cur != NIL) {
        size_t c = (size_t)cur;
        if (c >= range || (pred < range && c <= pred)) return -1;
        if (c >= key) break;
        pred = c;
        cur = W[base + pred];
    }
    *pred_out = pred;
    *succ_out = cur;
    return 0;
}

/* op: 0 contains, 1 insert, 2 remove. Returns 1 if present/changed, 0 if
 * not, -1 on an inconsistent state. */
__attribute__((transaction_safe))
static int chain_op(size_t head_word, int op, size_t key) {
    size_t pred; word succ;
    if (find(0, head_word, key, &pred, &succ) < 0) return -1;
    int present = succ == (word)key;
    if (op == 0) return present;
    if (op == 1) {
        if (present) return 0;
        W[key] = succ;
        W[pred] = key;
        return 1;
    }
    if (!present) return 0;
    W[pred] = W[key];
    return 1;
}

__attribute__((transaction_safe))
static int skip_op(int op, size_t key) {
    size_t preds[MAX_LEVEL]; word succs[MAX_LEVEL];
    size_t pred = range;
    for (int l = MAX_LEVEL - 1; l >= 0; l--) {
        if (find((size_t)l * stride, pred, key, &preds[l], &succs[l]) < 0) return -1;
        pred = preds[l];
    }
    int present = succs[0] == (word)key;
    size_t h = level_of(key);
    if (op == 0) return present;
    if (op == 1) {
        if (present) return 0;
        for (size_t l = 0; l < h; l++) {
            W[l * stride + key] = succs[l];
            W[l * stride + preds[l]] = key;
        }
        return 1;
    }
    if (!present) return 0;
    for (size_t l = 0; l < h; l++) {
        if (succs[l] != (word)key) return -1;
        W[l * stride + preds[l]] = W[l * stride + key];
    }
    return 1;
}

static void link_sorted(size_t base, size_t head_word, const size_t *keys, size_t n) {
    size_t link = head_word;
    for (size_t i = 0; i < n; i++) { W[link] = keys[i]; link = base + keys[i]; }
    W[link] = NIL;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void intset_init(void) {
    size_t *all = malloc(range * sizeof *all);
    for (size_t i = 0; i < range; i++) all[i] = i;
    uint64_t s = set_seed | 1;
    for (size_t i = range - 1; i > 0; i--) {
        size_t j = below(&s, i + 1);
        size_t t = all[i]; all[i] = all[j]; all[j] = t;
    }
    qsort(all, set_size, sizeof *all, cmp_size);
    size_t words = kind == LIST ? range + 1 : kind == HASH ? range + buckets : stride * MAX_LEVEL;
    W = malloc(words * sizeof *W);
    for (size_t i = 0; i < words; i++) W[i] = NIL;
    size_t *tmp = malloc(set_size * sizeof *tmp);
    if (kind == LIST) {
        link_sorted(0, range, all, set_size);
    } else if (kind == HASH) {
        for (size_t b = 0; b < buckets; b++) {
            size_t n = 0;
            for (size_t i = 0; i < set_size; i++) if (all[i] % buckets == b) tmp[n++] = all[i];
            link_sorted(0, range + b, tmp, n);
        }
    } else {
        for (size_t l = 0; l < MAX_LEVEL; l++) {
            size_t n = 0;
            for (size_t i = 0; i < set_size; i++) if (level_of(all[i]) > l) tmp[n++] = all[i];
            link_sorted(l * stride, l * stride + range, tmp, n);
        }
    }
    free(tmp);
    free(all);
}

/* Counts a chain's keys; -1 if unsorted, out of range or in the wrong bucket. */
static long check_chain(size_t head_word, size_t base, long bucket) {
    long n = 0; long prev = -1;
    for (word cur = W[head_word]; cur != NIL; cur = W[base + cur]) {
        if (cur >= range || (long)cur <= prev) return -1;
        if (bucket >= 0 && (long)(cur % buckets) != bucket) return -1;
        prev = (long)cur;
        if (++n > (long)range) return -1;
    }
    return n;
}

static int intset_verify(int64_t delta, char *msg, size_t cap) {
    long count = 0;
    if (kind == LIST) count = check_chain(range, 0, -1);
    else if (kind == HASH) {
        for (size_t b = 0; b < buckets && count >= 0; b++) {
            long n = check_chain(range + b, 0, (long)b);
            count = n < 0 ? -1 : count + n;
        }
    } else {
        count = check_chain(range, 0, -1);
        for (size_t l = 1; l < MAX_LEVEL && count >= 0; l++) {
            long want = 0;
            for (word k = W[range]; k != NIL; k = W[k]) if (level_of(k) > l) want++;
            if (check_chain(l * stride + range, l * stride, -1) != want) count = -1;
        }
    }
    if (count < 0) { snprintf(msg, cap, "set structure corrupt"); return -1; }
    int64_t expected = (int64_t)set_size + delta;
    if (count != expected) {
        snprintf(msg, cap, "set holds %ld keys, expected %lld", count, (long long)expected);
        return -1;
    }
    return 0;
}

/* ---- one operation per workload ---- */

static inline void op_micro(struct counters *c) {
    size_t idx[MAX_TX];
    for (size_t j = 0; j < tx_size; j++) idx[j] = below(&c->seed, array_len);
    word seen = 0;
    __transaction_atomic {
        count_attempt();
        seen = 0;
        for (size_t j = 0; j < tx_size; j++) {
            word v = W[idx[j]];
            if (j & 1) W[idx[j]] = v + 1; else seen ^= v;
        }
    }
    __asm__ volatile("" : : "r"(seen));
    c->delta += (int64_t)(tx_size / 2);
}

static inline void op_bank(struct counters *c) {
    if (below(&c->seed, 100) < audit_pct) {
        int64_t total = 0;
        __transaction_atomic {
            count_attempt();
            total = 0;
            for (size_t i = 0; i < accounts; i++) total += (int64_t)W[i];
        }
        if (total != 1000 * (int64_t)accounts) c->bad++;
    } else {
        size_t from = below(&c->seed, accounts);
        size_t to = below(&c->seed, accounts - 1);
        if (to >= from) to++;
        int64_t amount = 1 + (int64_t)below(&c->seed, 10);
        __transaction_atomic {
            count_attempt();
            W[from] = (word)((int64_t)W[from] - amount);
            W[to] = (word)((int64_t)W[to] + amount);
        }
    }
}

static inline void op_intset(struct counters *c) {
    size_t key = below(&c->seed, range);
    int op = 0;
    if (below(&c->seed, 100) < update_pct) op = (next_rand(&c->seed) >> 63) ? 1 : 2;
    int r;
    __transaction_atomic {
        count_attempt();
        if (kind == ORDERED) r = skip_op(op, key);
        else r = chain_op(kind == LIST ? range : range + key % buckets, op, key);
    }
    if (r < 0) c->bad++;
    else if (r == 1 && op == 1) c->delta++;
    else if (r == 1 && op == 2) c->delta--;
}

static void *worker(void *arg) {
    struct counters *c = arg;
    uint64_t ops = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        switch (workload) {
        case MICRO: op_micro(c); break;
        case BANK: op_bank(c); break;
        case INTSET: op_intset(c); break;
        }
        ops++;
        atomic_store_explicit(&c->ops, ops, memory_order_relaxed);
        atomic_store_explicit(&c->attempts, t_attempts, memory_order_relaxed);
    }
    return NULL;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void sleep_ms(uint64_t ms) {
    struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0) {}
}

static void sum(size_t n, uint64_t *ops, uint64_t *attempts) {
    *ops = *attempts = 0;
    for (size_t i = 0; i < n; i++) {
        *ops += atomic_load_explicit(&C[i].ops, memory_order_relaxed);
        *attempts += atomic_load_explicit(&C[i].attempts, memory_order_relaxed);
    }
}

static int usage(void) {
    fprintf(stderr, "usage: harness micro ARRAY TX | bank ACCOUNTS AUDIT%% | "
                    "intset list|hash|ordered SIZE RANGE UPDATE%% SEED "
                    "THREADS DURATION_MS WARMUP_MS SEED SABOTAGE\n");
    return 2;
}

int main(int argc, char **argv) {
    int a = 1;
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "micro") && argc == 9) {
        workload = MICRO; array_len = strtoull(argv[2], 0, 10); tx_size = strtoull(argv[3], 0, 10); a = 4;
        if (tx_size > MAX_TX || array_len == 0) return usage();
    } else if (!strcmp(argv[1], "bank") && argc == 9) {
        workload = BANK; accounts = strtoull(argv[2], 0, 10); audit_pct = strtoull(argv[3], 0, 10); a = 4;
        if (accounts < 2) return usage();
    } else if (!strcmp(argv[1], "intset") && argc == 12) {
        workload = INTSET;
        if (!strcmp(argv[2], "list")) kind = LIST;
        else if (!strcmp(argv[2], "hash")) kind = HASH;
        else if (!strcmp(argv[2], "ordered")) kind = ORDERED;
        else return usage();
        set_size = strtoull(argv[3], 0, 10); range = strtoull(argv[4], 0, 10);
        update_pct = strtoull(argv[5], 0, 10); set_seed = strtoull(argv[6], 0, 10); a = 7;
        buckets = set_size; stride = range + 1;
        if (set_size == 0 || set_size > range) return usage();
    } else return usage();
    size_t threads = strtoull(argv[a], 0, 10);
    uint64_t duration_ms = strtoull(argv[a + 1], 0, 10), warmup_ms = strtoull(argv[a + 2], 0, 10);
    uint64_t seed = strtoull(argv[a + 3], 0, 10);
    int sabotage = atoi(argv[a + 4]);
    if (threads == 0 || duration_ms == 0) return usage();

    if (workload == MICRO) W = calloc(array_len, sizeof *W);
    else if (workload == BANK) { W = malloc(accounts * sizeof *W); for (size_t i = 0; i < accounts; i++) W[i] = 1000; }
    else intset_init();

    C = aligned_alloc(64, threads * sizeof *C);
    memset(C, 0, threads * sizeof *C);
    pthread_t *tid = malloc(threads * sizeof *tid);
    for (size_t i = 0; i < threads; i++) {
        C[i].seed = (seed ^ (0x9E3779B97F4A7C15ULL * (i + 1))) | 1;
        pthread_create(&tid[i], NULL, worker, &C[i]);
    }
    sleep_ms(warmup_ms);
    uint64_t ops0, att0, ops1, att1;
    sum(threads, &ops0, &att0);
    uint64_t t0 = now_ns();
    sleep_ms(duration_ms);
    sum(threads, &ops1, &att1);
    /* On a loaded machine no operation may have finished yet: wait for one,
     * so a sample is never an empty zero. */
    while (ops1 == ops0) { sleep_ms(1); sum(threads, &ops1, &att1); }
    uint64_t t1 = now_ns();
    atomic_store(&stop, 1);
    for (size_t i = 0; i < threads; i++) pthread_join(tid[i], NULL);

    int64_t delta = 0; uint64_t bad = 0;
    for (size_t i = 0; i < threads; i++) { delta += C[i].delta; bad += C[i].bad; }
    if (sabotage) {
        if (workload == INTSET) {
            size_t heads = kind == HASH ? buckets : 1;
            for (size_t h = range; h < range + heads; h++)
                if (W[h] != NIL) { W[h] = W[W[h]]; break; }
        } else W[0] += 1;
    }
    char msg[200];
    if (bad) {
        printf("fail %llu operations saw a wrong total or an inconsistent state\n", (unsigned long long)bad);
        return 3;
    }
    if (workload == MICRO) {
        word s = 0;
        for (size_t i = 0; i < array_len; i++) s += W[i];
        if (s != (word)delta) {
            printf("fail array sums to %llu, expected %lld committed increments\n",
                   (unsigned long long)s, (long long)delta);
            return 3;
        }
    } else if (workload == BANK) {
        int64_t s = 0;
        for (size_t i = 0; i < accounts; i++) s += (int64_t)W[i];
        if (s != 1000 * (int64_t)accounts) {
            printf("fail bank total changed: %lld, expected %lld\n", (long long)s, 1000LL * (long long)accounts);
            return 3;
        }
    } else if (intset_verify(delta, msg, sizeof msg) < 0) {
        printf("fail %s\n", msg);
        return 3;
    }
    printf("ok ops=%llu attempts=%llu elapsed_ns=%llu\n", (unsigned long long)(ops1 - ops0),
           (unsigned long long)(att1 - att0), (unsigned long long)(t1 - t0));
    return 0;
}
