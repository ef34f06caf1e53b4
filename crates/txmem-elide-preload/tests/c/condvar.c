/* A bounded queue between two producers and two consumers on one mutex and two condition
 * variables (signal and broadcast); every item arrives once, and the sum proves it. Then a
 * timed wait that nobody signals times out with the mutex held again. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <time.h>

#define CAP 8
#define PER_PRODUCER 20000
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static long q[CAP];
static int head, count, producers_left = 2;
static long sum_in, sum_out, taken;

static void *produce(void *arg) {
    long base = (long)arg;
    for (long i = 1; i <= PER_PRODUCER; i++) {
        CHECK(pthread_mutex_lock(&m) == 0);
        while (count == CAP) CHECK(pthread_cond_wait(&not_full, &m) == 0);
        q[(head + count++) % CAP] = base + i;
        sum_in += base + i;
        CHECK(pthread_cond_signal(&not_empty) == 0);
        CHECK(pthread_mutex_unlock(&m) == 0);
    }
    CHECK(pthread_mutex_lock(&m) == 0);
    producers_left--;
    CHECK(pthread_cond_broadcast(&not_empty) == 0);
    CHECK(pthread_mutex_unlock(&m) == 0);
    return NULL;
}

static void *consume(void *arg) {
    (void)arg;
    for (;;) {
        CHECK(pthread_mutex_lock(&m) == 0);
        while (count == 0 && producers_left > 0) CHECK(pthread_cond_wait(&not_empty, &m) == 0);
        if (count == 0) {
            CHECK(pthread_mutex_unlock(&m) == 0);
            return NULL;
        }
        sum_out += q[head];
        head = (head + 1) % CAP;
        count--;
        taken++;
        CHECK(pthread_cond_signal(&not_full) == 0);
        CHECK(pthread_mutex_unlock(&m) == 0);
    }
}

int main(void) {
    pthread_t p[2], c[2];
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_create(&c[i], NULL, consume, NULL) == 0);
        CHECK(pthread_create(&p[i], NULL, produce, (void *)(long)(i * 1000000)) == 0);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_join(p[i], NULL) == 0);
        CHECK(pthread_join(c[i], NULL) == 0);
    }
    CHECK(taken == 2 * PER_PRODUCER);
    CHECK(sum_in == sum_out);

    struct timespec ts;
    CHECK(clock_gettime(CLOCK_REALTIME, &ts) == 0);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    CHECK(pthread_mutex_lock(&m) == 0);
    CHECK(pthread_cond_timedwait(&not_empty, &m, &ts) == ETIMEDOUT);
    CHECK(pthread_mutex_trylock(&m) == EBUSY); /* held again after the timeout */
    CHECK(pthread_mutex_unlock(&m) == 0);

    /* pthread_mutex_timedlock: succeeds when free, times out when held elsewhere. */
    CHECK(pthread_mutex_timedlock(&m, &ts) == 0);
    CHECK(pthread_mutex_unlock(&m) == 0);
    printf("moved %ld\n", taken);
    return 0;
}
