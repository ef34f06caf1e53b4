/* Readers check an invariant (a == b) that writers keep; try-locks and timed locks behave
 * as specified while a writer or readers hold the lock. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <time.h>

static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
static long a, b, reads;

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        CHECK(pthread_rwlock_wrlock(&l) == 0);
        a++;
        b++;
        CHECK(pthread_rwlock_unlock(&l) == 0);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        CHECK(pthread_rwlock_rdlock(&l) == 0);
        CHECK(a == b);
        __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
        CHECK(pthread_rwlock_unlock(&l) == 0);
    }
    return NULL;
}

static void *try_while_written(void *arg) {
    (void)arg;
    struct timespec ts;
    CHECK(pthread_rwlock_tryrdlock(&l) == EBUSY);
    CHECK(pthread_rwlock_trywrlock(&l) == EBUSY);
    CHECK(clock_gettime(CLOCK_REALTIME, &ts) == 0);
    ts.tv_nsec += 10 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    CHECK(pthread_rwlock_timedrdlock(&l, &ts) == ETIMEDOUT);
    CHECK(pthread_rwlock_timedwrlock(&l, &ts) == ETIMEDOUT);
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, i < 2 ? writer : reader, NULL) == 0);
    for (int i = 0; i < 4; i++) CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(a == 40000 && b == 40000 && reads == 40000);

    CHECK(pthread_rwlock_wrlock(&l) == 0);
    pthread_t x;
    CHECK(pthread_create(&x, NULL, try_while_written, NULL) == 0);
    CHECK(pthread_join(x, NULL) == 0);
    CHECK(pthread_rwlock_unlock(&l) == 0);

    CHECK(pthread_rwlock_tryrdlock(&l) == 0);
    CHECK(pthread_rwlock_rdlock(&l) == 0); /* readers share */
    CHECK(pthread_rwlock_trywrlock(&l) == EBUSY);
    CHECK(pthread_rwlock_unlock(&l) == 0);
    CHECK(pthread_rwlock_unlock(&l) == 0);
    CHECK(pthread_rwlock_trywrlock(&l) == 0);
    CHECK(pthread_rwlock_unlock(&l) == 0);
    printf("reads %ld\n", reads);
    return 0;
}
