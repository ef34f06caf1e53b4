/* Recursive and error-checking mutexes keep their semantics: a recursive mutex is taken
 * three times by its owner and released three times; an error-checking one reports
 * EDEADLK on relock and EPERM on an unlock by a non-owner. */
#include "check.h"
#include <errno.h>
#include <pthread.h>

static pthread_mutex_t rec, ec;

static void *other_unlocks(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_unlock(&ec) == EPERM);
    CHECK(pthread_mutex_trylock(&rec) == EBUSY);
    return NULL;
}

int main(void) {
    pthread_mutexattr_t a;
    CHECK(pthread_mutexattr_init(&a) == 0);
    CHECK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) == 0);
    CHECK(pthread_mutex_init(&rec, &a) == 0);
    CHECK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK) == 0);
    CHECK(pthread_mutex_init(&ec, &a) == 0);

    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_trylock(&rec) == 0);

    CHECK(pthread_mutex_lock(&ec) == 0);
    CHECK(pthread_mutex_lock(&ec) == EDEADLK);
    CHECK(pthread_mutex_trylock(&ec) == EBUSY);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_unlocks, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);

    CHECK(pthread_mutex_unlock(&ec) == 0);
    CHECK(pthread_mutex_unlock(&ec) == EPERM);
    for (int i = 0; i < 3; i++) CHECK(pthread_mutex_unlock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == EPERM);
    CHECK(pthread_mutex_destroy(&rec) == 0);
    CHECK(pthread_mutex_destroy(&ec) == 0);
    printf("kinds ok\n");
    return 0;
}
