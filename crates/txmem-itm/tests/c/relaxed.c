/* Relaxed transactions calling printf (unsafe code): they must run serial irrevocable, once
 * always (known at compile time) and once only on some paths (switched mid-flight). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 2
#define ITERS 2000

static long counter, printed;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        __transaction_relaxed {
            counter++;
            if (i % 500 == 0) {
                printed++;
                printf("relaxed: counter=%ld\n", counter);
            }
        }
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    __transaction_relaxed {
        counter++;
        printf("relaxed always: counter=%ld\n", counter);
    }
    long e = (long)THREADS * ITERS + 1;
    int ok = counter == e && printed == THREADS * (ITERS / 500);
    printf("counter=%ld %s\n", counter, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
