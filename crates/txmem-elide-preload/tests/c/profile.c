/* Known lock traffic for the profile's test: `hot` is taken 3000 times from hot_site() and
 * 1000 times from cold_site() and held about 200 microseconds in ten of the hot sections;
 * then the program execs itself once ("exec" argument), which must print a profile of its
 * own, and forks a child that exits normally, which must not. */
#include "check.h"
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static volatile long n;

__attribute__((noinline)) static void hot_site(int slow) {
    CHECK(pthread_mutex_lock(&hot) == 0);
    n++;
    if (slow) {
        struct timespec d = {0, 200 * 1000};
        nanosleep(&d, NULL);
    }
    CHECK(pthread_mutex_unlock(&hot) == 0);
}

__attribute__((noinline)) static void cold_site(void) {
    CHECK(pthread_mutex_lock(&hot) == 0);
    n++;
    CHECK(pthread_mutex_unlock(&hot) == 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exec") == 0) {
        cold_site();
        return 0;
    }
    for (int i = 0; i < 3000; i++) hot_site(i % 300 == 0);
    for (int i = 0; i < 1000; i++) cold_site();
    CHECK(n == 4000);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        cold_site();
        exit(0); /* runs destructors: the child must stay quiet */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fflush(stdout);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
        _exit(5);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("profiled %ld\n", n);
    return 0;
}
