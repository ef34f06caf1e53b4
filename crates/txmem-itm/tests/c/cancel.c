/* __transaction_cancel: the outermost transaction's effects vanish; an inner cancel undoes
 * only the inner transaction (flat nesting with a checkpoint); [[outer]] cancels all. */
#include <stdio.h>

static int a, b, c, d;
static long arr[4];

static int check(const char *what, int cond) {
    if (!cond) printf("FAILED: %s\n", what);
    return cond;
}

__attribute__((transaction_may_cancel_outer)) static void cancel_all(void) {
    __transaction_cancel [[outer]];
}

int yes; /* set from argc, so the compiler cannot know the cancels are always taken */

int main(int argc, char **argv) {
    (void)argv;
    int ok = 1;
    yes = argc > 0;

    __transaction_atomic {
        a = 1;
        arr[2] = 7;
        if (yes) __transaction_cancel;
        b = 1;
    }
    ok &= check("outermost cancel", a == 0 && b == 0 && arr[2] == 0);

    __transaction_atomic {
        a = 1;
        __transaction_atomic {
            b = 1;
            arr[1] = 5;
            if (yes) __transaction_cancel;
        }
        c = 1;
    }
    ok &= check("inner cancel", a == 1 && b == 0 && arr[1] == 0 && c == 1);

    a = b = c = 0;
    __transaction_atomic [[outer]] {
        a = 1;
        __transaction_atomic {
            b = 1;
            if (yes) cancel_all();
        }
        c = 1;
    }
    ok &= check("outer cancel from inner", a == 0 && b == 0 && c == 0);

    /* A cancel after many iterations in one transaction, and a committed one afterwards. */
    int i;
    __transaction_atomic {
        for (i = 0; i < 4; i++) arr[i] = i + 10;
        if (yes) __transaction_cancel;
    }
    __transaction_atomic { d = 42; }
    ok &= check("loop cancel", arr[0] == 0 && arr[3] == 0 && d == 42);

    printf("%s\n", ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
