/* memcpy, memmove and memset inside transactions, concurrently: each record is always seen
 * whole (all bytes equal). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 3
#define ITERS 5000
#define SIZE 300 /* not a multiple of 8, and more than one copy chunk with the offsets */

static unsigned char rec[SIZE + 16];
static unsigned char other[SIZE + 16];
static long torn;

static void *worker(void *arg) {
    int id = (int)(long)arg;
    unsigned char local[SIZE];
    for (int i = 0; i < ITERS; i++) {
        unsigned char v = (unsigned char)(id * 50 + i % 50);
        __transaction_atomic {
            memset(rec + 3, v, SIZE);
        }
        __transaction_atomic {
            memcpy(local, rec + 3, SIZE);
            memcpy(other + 5, rec + 3, SIZE);
        }
        for (int k = 1; k < SIZE; k++)
            if (local[k] != local[0]) { __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED); break; }
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    int ok = torn == 0;
    for (int k = 1; k < SIZE; k++) ok &= other[5 + k] == other[5];
    /* An overlapping move inside a transaction. */
    for (int k = 0; k < SIZE; k++) rec[k] = (unsigned char)k;
    __transaction_atomic { memmove(rec + 7, rec, 200); }
    for (int k = 0; k < 200; k++) ok &= rec[7 + k] == (unsigned char)k;
    __transaction_atomic { memmove(rec, rec + 7, 200); }
    for (int k = 0; k < 200; k++) ok &= rec[k] == (unsigned char)k;
    printf("torn=%ld %s\n", torn, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
