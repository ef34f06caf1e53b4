/* Every barrier type: integers, float, double, long double, their complex forms and SSE
 * vectors; commit and undo actions; transaction queries. */
#include <complex.h>
#include <stdio.h>
#include <stdint.h>
#include <xmmintrin.h>

extern int _ITM_inTransaction(void) __attribute__((transaction_pure));
extern uint64_t _ITM_getTransactionId(void) __attribute__((transaction_pure));
extern void _ITM_addUserCommitAction(void (*)(void *), uint64_t, void *) __attribute__((transaction_pure));
extern void _ITM_addUserUndoAction(void (*)(void *), void *) __attribute__((transaction_pure));

static long double ld = 1.5L;
static double complex cd = 1.0 + 2.0 * I;
static float complex cf = 3.0f + 4.0f * I;
static long double complex cld = 5.0L + 6.0L * I;
static __m128 vec;
static unsigned char u1 = 1;
static unsigned short u2 = 2;
static unsigned u4 = 4;
static unsigned long long u8 = 8;
static float f = 0.5f;
static double d = 0.25;
static int committed, undone, inside, outside;

static void on_commit(void *p) { *(int *)p += 1; }
static void on_undo(void *p) { *(int *)p += 1; }

int yes; /* set from argc, so the compiler cannot know the cancels are always taken */

int main(int argc, char **argv) {
    (void)argv;
    yes = argc > 0;
    int ok = 1;
    uint64_t id1 = 0, id2 = 0;
    outside = _ITM_inTransaction();
    __transaction_atomic {
        ld = ld * 2;
        cd = cd * 2;
        cf = cf * 2;
        cld = cld * 2;
        vec = _mm_add_ps(vec, _mm_set1_ps(1.0f));
        u1 += 1; u2 += 2; u4 += 4; u8 += 8; f *= 2; d *= 2;
        inside = _ITM_inTransaction();
        id1 = _ITM_getTransactionId();
        _ITM_addUserCommitAction(on_commit, 1, &committed);
        _ITM_addUserUndoAction(on_undo, &undone);
    }
    __transaction_atomic { u8 += 0; id2 = _ITM_getTransactionId(); }
    __transaction_atomic {
        _ITM_addUserCommitAction(on_commit, 1, &committed);
        _ITM_addUserUndoAction(on_undo, &undone);
        ld = 0;
        if (yes) __transaction_cancel;
    }
    float out[4];
    _mm_storeu_ps(out, vec);
    ok &= ld == 3.0L && creal(cd) == 2.0 && cimag(cd) == 4.0;
    ok &= crealf(cf) == 6.0f && cimagf(cf) == 8.0f;
    ok &= creall(cld) == 10.0L && cimagl(cld) == 12.0L;
    ok &= out[0] == 1.0f && out[3] == 1.0f;
    ok &= u1 == 2 && u2 == 4 && u4 == 8 && u8 == 16 && f == 1.0f && d == 0.5;
    ok &= committed == 1 && undone == 1;
    ok &= outside == 0 && inside >= 1 && id1 > 1 && id2 > 1 && id1 != id2;
    printf("ld=%Lf cd=%f%+fi cf=%f%+fi cld=%Lf%+Lfi vec=%f u=%d,%d,%u,%llu f=%f d=%f committed=%d undone=%d inside=%d ids=%llu,%llu %s\n", ld, creal(cd), cimag(cd), crealf(cf), cimagf(cf), creall(cld), cimagl(cld), out[0], u1, u2, u4, u8, f, d,
           committed, undone, inside, (unsigned long long)id1, (unsigned long long)id2, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
