/* Calls through function pointers: the runtime finds transactional clones in the tables the
 * program registers at start-up (_ITM_getTMCloneSafe / _ITM_getTMCloneOrIrrevocable), and a
 * relaxed transaction calling a function without a clone goes irrevocable. */
#include <stdio.h>

static long total, plain_calls;

__attribute__((transaction_safe, noinline)) void add_safe(long n) { total += n; }
__attribute__((noinline)) void add_plain(long n) { total += n; plain_calls++; }

typedef void (*safe_fn)(long) __attribute__((transaction_safe));
typedef void (*any_fn)(long);

safe_fn volatile safe_ptr = add_safe;
any_fn volatile any_ptr = add_plain;
any_fn volatile any_safe_ptr = (any_fn)add_safe;

int main(void) {
    for (int i = 0; i < 100; i++) {
        safe_fn f = safe_ptr;
        __transaction_atomic { f(1); }
    }
    for (int i = 0; i < 100; i++) {
        any_fn f = any_safe_ptr;
        __transaction_relaxed { f(1); }
    }
    any_fn g = any_ptr;
    __transaction_relaxed { g(1); }
    int ok = total == 201 && plain_calls == 1;
    printf("total=%ld %s\n", total, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
