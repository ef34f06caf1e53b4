// An exception thrown out of a transaction: GCC's semantics commit the writes made before the
// throw, and the exception arrives outside with its value. Four threads throw out of
// transactions on a shared counter, so commits that fail (and rerun, deleting the exception in
// flight) happen under the lazy and eager methods; every exception object constructed by a
// committed transaction (a transactional count) is destroyed once.
#include <cstdio>
#include <exception>
#include <pthread.h>

__attribute__((transaction_pure)) static void count(long *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }
static long destroyed;
long made; // written by the constructor inside the transaction: rolled back with it

struct Err {
    long round, value;
    Err(long r, long v) : round(r), value(v) { made++; }
    ~Err() { count(&destroyed); }
};

enum { THREADS = 4, ROUNDS = 20000 };
long shared, after_throw;
long slot[THREADS];
int yes = 1;

static void *worker(void *arg) {
    long id = (long)arg;
    long caught = 0, wrong = 0;
    for (long r = 0; r < ROUNDS; r++) {
        try {
            __transaction_atomic {
                shared++;
                slot[id] = r;
                if (yes) throw Err(r, 1000 * id + r % 1000);
                after_throw++;
            }
        } catch (Err &e) {
            caught++;
            if (e.round != r || e.value != 1000 * id + r % 1000) wrong++;
        }
        if (slot[id] != r) wrong++;
    }
    return (void *)(caught == ROUNDS && wrong == 0 ? 1L : 0L);
}

int main() {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
    bool ok = true;
    for (long i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != 0;
    }
    ok &= shared == THREADS * ROUNDS && after_throw == 0;
    ok &= made == destroyed && std::uncaught_exceptions() == 0;
    std::printf("shared=%ld after_throw=%ld made=%ld destroyed=%ld %s\n", shared, after_throw, made,
                destroyed, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
