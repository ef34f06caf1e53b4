// try/catch entirely inside a transaction (g++ 12 only compiles `catch (...)` there: a typed
// handler in a transaction is an internal compiler error), by four threads. Some handlers
// cancel the transaction while inside the handler (the runtime must end the catch), some
// rethrow out of it (the transaction commits as the exception leaves).
#include <cstdio>
#include <exception>
#include <pthread.h>

struct Err { long v; };
long thrown_in_tx;
__attribute__((transaction_safe, noinline)) void thrower(long v) {
    thrown_in_tx++;
    if (v >= 0) throw Err{v};
}

enum { THREADS = 4, ROUNDS = 10000 };
long caught, passed, cancelled_writes, rethrown;
int yes = 1;

static void *worker(void *) {
    long out = 0;
    for (long r = 0; r < ROUNDS; r++) {
        __transaction_atomic {
            try { thrower(r % 3 == 0 ? -1 : r); passed++; } catch (...) { caught++; }
        }
        __transaction_atomic {
            cancelled_writes++;
            try { thrower(r); } catch (...) { if (yes) __transaction_cancel; }
        }
        try {
            __transaction_atomic {
                try { thrower(r); } catch (...) { rethrown++; throw; }
            }
        } catch (Err &e) {
            if (e.v == r) out++;
        }
    }
    return (void *)(out == ROUNDS ? 1L : 0L);
}

int main() {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, 0);
    bool ok = true;
    for (long i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != 0;
    }
    long n = (long)THREADS * ROUNDS, throws = n - THREADS * ((ROUNDS + 2) / 3);
    ok &= caught == throws && passed == n - throws && cancelled_writes == 0 && rethrown == n;
    ok &= thrown_in_tx == 2 * n && std::uncaught_exceptions() == 0;
    std::printf("caught=%ld passed=%ld rethrown=%ld cancelled_writes=%ld %s\n", caught, passed,
                rethrown, cancelled_writes, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
