/* Privatization: one thread publishes an object, lets others update it transactionally, then
 * takes it private in a transaction and writes it without one. No transactional update may
 * land after the privatizing commit (a late write-back or undo would be seen here). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 3000

struct obj { long val; long pad[3]; };
static struct obj *shared;
static int done;
static long clobbered;
static long scratch[2][64]; /* each updater's own: more work after the update widens the window */

static void *updater(void *arg) {
    long *mine = scratch[(long)arg];
    for (;;) {
        int stop;
        __transaction_atomic {
            stop = done;
            if (shared) shared->val++;
            for (int k = 0; k < 64; k++) mine[k]++;
        }
        if (stop) return NULL;
    }
}

int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, updater, (void *)i);
    for (int r = 0; r < ROUNDS; r++) {
        struct obj *o = malloc(sizeof *o);
        o->val = 0;
        __transaction_atomic { shared = o; }
        for (volatile int spin = 0; spin < 200; spin++) {}
        struct obj *mine;
        __transaction_atomic {
            mine = shared;
            shared = NULL;
        }
        mine->val = -1000000;
        for (volatile int spin = 0; spin < 200; spin++) {}
        if (mine->val != -1000000) clobbered++;
        free(mine);
    }
    __transaction_atomic { done = 1; }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("clobbered=%ld %s\n", clobbered, clobbered == 0 ? "OK" : "WRONG");
    return clobbered == 0 ? 0 : 1;
}
