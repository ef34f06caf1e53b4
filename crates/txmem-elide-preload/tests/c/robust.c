/* A robust, process-shared mutex in shared memory: a child process takes it and exits
 * without unlocking; the parent then gets EOWNERDEAD, makes it consistent and uses it.
 * The child also forks under the preload, so fork itself is exercised. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    pthread_mutex_t *m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    pthread_mutexattr_t a;
    CHECK(pthread_mutexattr_init(&a) == 0);
    CHECK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0);
    CHECK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0);
    CHECK(pthread_mutex_init(m, &a) == 0);

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (pthread_mutex_lock(m) != 0) _exit(3);
        _exit(0); /* dies holding it */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CHECK(pthread_mutex_lock(m) == EOWNERDEAD);
    CHECK(pthread_mutex_consistent(m) == 0);
    CHECK(pthread_mutex_unlock(m) == 0);
    CHECK(pthread_mutex_trylock(m) == 0);
    CHECK(pthread_mutex_unlock(m) == 0);

    /* A process-shared (not robust) mutex used by both processes in turn. */
    pthread_mutex_t *s = m + 0;
    CHECK(pthread_mutex_destroy(m) == 0);
    CHECK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED) == 0);
    CHECK(pthread_mutex_init(s, &a) == 0);
    CHECK(pthread_mutex_lock(s) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        _exit(pthread_mutex_trylock(s) == EBUSY ? 0 : 4);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(pthread_mutex_unlock(s) == 0);
    printf("robust ok\n");
    return 0;
}
