/* Four threads add to one counter under a default mutex, and to a second one through
 * trylock (spinning on EBUSY); both totals must be exact. */
#include "check.h"
#include <errno.h>
#include <pthread.h>

#define THREADS 4
#define ITERS 20000
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t t = PTHREAD_MUTEX_INITIALIZER;
static long counter, tried;
static long busy;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK(pthread_mutex_lock(&m) == 0);
        counter++;
        CHECK(pthread_mutex_unlock(&m) == 0);
        int r;
        while ((r = pthread_mutex_trylock(&t)) == EBUSY)
            __atomic_fetch_add(&busy, 1, __ATOMIC_RELAXED);
        CHECK(r == 0);
        tried++;
        CHECK(pthread_mutex_unlock(&t) == 0);
    }
    return NULL;
}

int main(void) {
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, work, NULL) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(th[i], NULL) == 0);
    CHECK(counter == (long)THREADS * ITERS);
    CHECK(tried == (long)THREADS * ITERS);
    /* A held mutex is busy for trylock, from this thread too. */
    CHECK(pthread_mutex_lock(&m) == 0);
    CHECK(pthread_mutex_trylock(&m) == EBUSY);
    CHECK(pthread_mutex_unlock(&m) == 0);
    printf("counter %ld\n", counter);
    return 0;
}
