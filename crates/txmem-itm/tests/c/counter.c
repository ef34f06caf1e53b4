/* Counters: threads increment shared counters inside transactions; the totals must be exact. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 20000

static long counter;
static char small[8];
static short mid[4];
static double fsum;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        __transaction_atomic {
            counter++;
            small[i % 8]++;
            mid[i % 4] += 1;
            fsum += 1.0;
        }
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    long expect = (long)THREADS * ITERS;
    int ok = counter == expect && fsum == (double)expect;
    for (int i = 0; i < 8; i++) ok &= small[i] == (char)(expect / 8);
    for (int i = 0; i < 4; i++) ok &= mid[i] == (short)(expect / 4);
    printf("counter=%ld fsum=%.0f %s\n", counter, fsum, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
