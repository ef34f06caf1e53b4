/* The cost of a pthread mutex's lock and unlock, for comparing a plain run with one under
 * an LD_PRELOAD library that interposes them.
 *
 *   lock_overhead MODE THREADS ITERATIONS
 *
 * MODE: "bare" (lock, increment, unlock: the interposer's worst case), "work" (a section
 * updating 8 words, then about 100 ns of private work), "rw" (pthread_rwlock_rdlock and
 * unlock around a read). Each thread runs ITERATIONS sections; every thread shares one lock.
 * Prints the nanoseconds per section twice: wall time / sections per thread, and the
 * process's CPU time / sections in all (less sensitive to a loaded host's preemptions);
 * checks the shared total. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile long shared[8];
static long iters;
static int mode; /* 0 bare, 1 work, 2 rw */

static void *run(void *arg) {
    volatile long local = (long)arg;
    long seen = 0;
    for (long i = 0; i < iters; i++) {
        if (mode == 2) {
            pthread_rwlock_rdlock(&rw);
            seen += shared[0];
            pthread_rwlock_unlock(&rw);
            continue;
        }
        pthread_mutex_lock(&m);
        if (mode == 0) {
            shared[0]++;
        } else {
            for (int k = 0; k < 8; k++) shared[k] += k;
        }
        pthread_mutex_unlock(&m);
        if (mode == 1)
            for (int k = 0; k < 40; k++) local = local * 3 + k;
    }
    return (void *)(seen + (local & 0));
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s bare|work|rw THREADS ITERATIONS\n", argv[0]);
        return 2;
    }
    mode = strcmp(argv[1], "bare") == 0 ? 0 : strcmp(argv[1], "work") == 0 ? 1 : 2;
    int threads = atoi(argv[2]);
    iters = atol(argv[3]);
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, run, (void *)(long)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (mode != 2 && shared[0] != (mode == 0 ? 1L : 0L) * threads * iters) {
        fprintf(stderr, "lost updates: %ld\n", shared[0]);
        return 1;
    }
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
                 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
    printf("%.2f %.2f\n", ns / iters, cpu / ((double)iters * threads));
    return 0;
}
