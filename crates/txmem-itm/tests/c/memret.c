/* memcpy, memmove and memset return their destination inside transactions too: GCC calls
 * _ITM_memcpy*, _ITM_memmove* and _ITM_memset* for them and uses the returned pointer. */
#include <stdio.h>
#include <string.h>

static char a[512], b[512];
static long bad;

/* Opaque, so that the compiler cannot fold the returned pointer into the argument. */
__attribute__((transaction_safe, noipa)) static char *at(char *p, int off) { return p + off; }

int main(void) {
    for (int i = 0; i < 1000; i++) {
        int off = i % 64;
        char *r1, *r2, *r3, *r4, *r5;
        __transaction_atomic {
            r1 = memset(at(a, off), i & 0x7f, 300);
            r2 = memcpy(at(b, off), at(a, off), 300);
            r3 = memmove(at(a, off + 1), at(a, off), 100);
            r4 = memset(at(b, off), 1, 3);
            r5 = memcpy(at(a, off), at(b, off), 5);
        }
        bad += r1 != a + off;
        bad += r2 != b + off;
        bad += r3 != a + off + 1;
        bad += r4 != b + off;
        bad += r5 != a + off;
    }
    printf("wrong returns: %ld %s\n", bad, bad ? "WRONG" : "OK");
    return bad ? 1 : 0;
}
