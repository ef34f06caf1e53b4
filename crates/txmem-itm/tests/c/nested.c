/* Nested transactions (flat nesting), from several threads, through function calls. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 3
#define ITERS 10000

static long x, y, depth3;

__attribute__((transaction_safe)) static void inc_y(void) {
    __transaction_atomic { y++; }
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        __transaction_atomic {
            x++;
            inc_y();
            __transaction_atomic {
                __transaction_atomic { depth3++; }
            }
        }
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    long e = (long)THREADS * ITERS;
    int ok = x == e && y == e && depth3 == e;
    printf("x=%ld y=%ld depth3=%ld %s\n", x, y, depth3, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
