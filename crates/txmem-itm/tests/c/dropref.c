/* _ITM_dropReferences inside a transaction. The TM ABI leaves its meaning open, and GCC's
   libitm refuses it: it prints that the call is not supported and exits with EXIT_FAILURE.
   A runtime that returned from it would let the program go on as if the call had done
   something; this program says "returned" if it did. */
#include <stddef.h>
#include <stdio.h>

/* As libitm.h declares it (Debian installs no libitm.h). */
extern void _ITM_dropReferences(void *, size_t) __attribute__((transaction_pure));

long block[16];

int main(void) {
    __transaction_atomic {
        block[0] = 1;
        _ITM_dropReferences(block, sizeof block);
        block[1] = 2;
    }
    printf("returned: block[0]=%ld block[1]=%ld\n", block[0], block[1]);
    return 0;
}
