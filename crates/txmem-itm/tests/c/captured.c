/* Bulk writes (memset, memcpy) into memory the transaction itself allocated, which the
 * runtime may store in place: mixed with barrier writes and reads of the same words before
 * and after, with an inner transaction that is cancelled, and with other threads reading
 * the published blocks. The pointer goes through a function the compiler may not look
 * into, so it cannot see that the block is the transaction's own and instruments every
 * access. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 1000 /* words of 8 bytes: past one copy chunk, and not a multiple of it */
#define THREADS 3
#define ITERS 3000

/* Hands back `p`, and store and load a word, opaquely: the compiler cannot see that the
 * block is the transaction's own, nor forward a store to a load or drop a store that a
 * memset overwrites. */
__attribute__((transaction_safe, noipa)) static long *launder(long *p) { return p; }
__attribute__((transaction_safe, noipa)) static void put(long *p, long v) { *p = v; }
__attribute__((transaction_safe, noipa)) static long get(long *p) { return *p; }
static long *shared[THREADS]; /* published blocks */
static long pattern[SIZE];
static long wrong;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("WRONG: %s\n", what);
        __atomic_add_fetch(&wrong, 1, __ATOMIC_RELAXED);
    }
}

/* One transaction: allocate, write words through barriers, memset over them, read them,
 * copy a pattern over part, write again, and publish; `seen` gets what it read back. */
static void fill(int id, long v, long *seen) {
    long before = 0, after = 0, zero = -1, copied = -1, zero2 = -1, set = -1, half = -1;
    __transaction_atomic {
        long *b = launder(malloc(SIZE * sizeof(long)));
        put(b + 3, 77);         /* a barrier write (redo log under the write-back methods) */
        before = get(b + 3);    /* read back through the log */
        memset(b, 0, SIZE * sizeof(long));
        after = get(b + 3);     /* must see the memset, not the logged 77 */
        put(b + 12, 5);         /* in the copy's range: the copy must win at commit */
        zero = get(b + 20);     /* read (NOrec logs the value), then overwritten in bulk */
        memcpy(b + 10, pattern, 500 * sizeof(long));
        copied = get(b + 20);
        zero2 = get(b + 600);   /* the same, with nothing read in between */
        memset(b + 600, 0x33, 8 * sizeof(long));
        set = get(b + 600);
        put(b + 700, 0x0102030405060708L); /* a whole word in the log, then half of it */
        memset((char *)(b + 700) + 4, 0xAA, 100); /* overwritten in place */
        half = get(b + 700);
        put(b + 11, v);         /* a barrier write after the bulk copy */
        put(b + SIZE - 1, v);
        long *old = shared[id];
        shared[id] = b;
        free(old);
    }
    seen[0] = before;
    seen[1] = after;
    seen[2] = zero;
    seen[3] = copied;
    seen[4] = zero2;
    seen[5] = set;
    seen[6] = half;
}

static void *worker(void *arg) {
    int id = (int)(long)arg;
    for (long i = 1; i <= ITERS; i++) {
        long seen[7];
        fill(id, i, seen);
        check(seen[0] == 77, "a barrier write read back before the memset");
        check(seen[1] == 0, "a word read back after the memset over it");
        check(seen[2] == 0 && seen[3] == pattern[10], "a word read before and after a copy over it");
        check(seen[4] == 0 && seen[5] == 0x3333333333333333L, "a word read before and after a memset over it");
        check(seen[6] == (long)0xAAAAAAAA05060708UL, "a logged word half overwritten in place");
        /* Read another thread's block, whole, in a transaction. */
        int other = (id + 1) % THREADS;
        long a = 0, b11 = 0, last = 0, p = 0, h = 0;
        int have = 0;
        __transaction_atomic {
            long *o = shared[other];
            if (o) {
                have = 1;
                a = get(o + 3);
                b11 = get(o + 11);
                last = get(o + SIZE - 1);
                p = get(o + 12);
                h = get(o + 700);
            }
        }
        if (have) {
            check(a == 0, "another thread's block: the memset word");
            check(b11 == last, "another thread's block: both writes of one transaction");
            check(p == pattern[2], "another thread's block: the copied pattern");
            check(h == (long)0xAAAAAAAA05060708UL, "another thread's block: a word half in the log");
        }
    }
    return NULL;
}

/* An inner transaction that writes a block the outer one allocated and is cancelled leaves
 * nothing of its writes; a block it allocated itself is gone with it. */
static int nested(void) {
    long x3 = -1, x7 = -1, y = -1;
    __transaction_atomic {
        long *b = launder(malloc(SIZE * sizeof(long)));
        memset(b, 0x11, SIZE * sizeof(long));
        put(b + 7, 5);
        __transaction_atomic {
            memset(b, 0, SIZE * sizeof(long)); /* not the inner level's own memory */
            put(b + 7, 6);
            __transaction_cancel;
        }
        x3 = get(b + 3);
        x7 = get(b + 7);
        __transaction_atomic {
            long *c = launder(malloc(SIZE * sizeof(long)));
            put(c + 2, 9);
            memset(c, 0, SIZE * sizeof(long)); /* the inner level's own memory */
            y = get(c + 2);
            free(c);
        }
        free(b);
    }
    return x3 == 0x1111111111111111L && x7 == 5 && y == 0;
}

int main(void) {
    for (int k = 0; k < SIZE; k++) pattern[k] = k * 3 + 1;
    check(nested(), "an inner transaction's cancelled writes to an outer block");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        long *b = shared[i];
        int ok = b[3] == 0 && b[11] == ITERS && b[SIZE - 1] == ITERS;
        for (int k = 0; k < 500; k++) ok &= k == 1 || b[10 + k] == pattern[k];
        check(ok, "a published block after the run");
        free(b);
    }
    printf("%s\n", wrong ? "WRONG" : "OK");
    return wrong ? 1 : 0;
}
