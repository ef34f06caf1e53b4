/* Proxy privatization: one thread privatizes an object in a transaction, and *another* thread,
 * which learns of it only through a read-only transaction, then writes the object without one.
 * A doomed transaction that updated the object before the privatizing commit must not land a
 * write-back or an undo after that plain write.
 *
 * Round r: updaters keep incrementing obj[r] transactionally while its flag is clear; the
 * privatizer sets the flag; the owner spins on the flag in read-only transactions, then fills
 * the object with a pattern without barriers and checks, after a pause, that it is intact. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define ROUNDS 2000
#define WORDS 8
#define PATTERN (-7L)

struct obj { long flag; long val[WORDS]; } __attribute__((aligned(64)));
static struct obj objs[ROUNDS];
static atomic_int round_no; /* the round updaters work on; plain atomics, outside transactions */
static atomic_int stop;
static long clobbered;

static void *updater(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        struct obj *o = &objs[atomic_load(&round_no)];
        __transaction_atomic {
            if (!o->flag)
                for (int i = 0; i < WORDS; i++) o->val[i]++;
        }
    }
    return NULL;
}

static void *privatizer(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        while (atomic_load(&round_no) != r) {}
        for (volatile int k = 0; k < 200 * (r % 7); k++) {}
        __transaction_atomic { objs[r].flag = 1; }
    }
    return NULL;
}

static void *owner(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        long f = 0;
        while (!f) {
            __transaction_atomic { f = objs[r].flag; }
        }
        /* Private now: plain writes, then a pause for any late transactional store to land. */
        for (int i = 0; i < WORDS; i++) ((volatile long *)objs[r].val)[i] = PATTERN;
        for (volatile int k = 0; k < 2000; k++) {}
        for (int i = 0; i < WORDS; i++)
            if (((volatile long *)objs[r].val)[i] != PATTERN) clobbered++;
        atomic_store(&round_no, r + 1 < ROUNDS ? r + 1 : r);
    }
    atomic_store(&stop, 1);
    return NULL;
}

int main(void) {
    pthread_t u[2], p, o;
    for (long i = 0; i < 2; i++) pthread_create(&u[i], NULL, updater, NULL);
    pthread_create(&p, NULL, privatizer, NULL);
    pthread_create(&o, NULL, owner, NULL);
    pthread_join(o, NULL);
    pthread_join(p, NULL);
    for (int i = 0; i < 2; i++) pthread_join(u[i], NULL);
    if (clobbered) {
        printf("FAIL: %ld words of privatized objects changed after the owner wrote them\n", clobbered);
        return 1;
    }
    printf("OK\n");
    return 0;
}
