/* A bank: transfer threads move money between accounts while auditor threads sum every
 * account in one transaction. The total must be conserved, and no auditor may ever see
 * another total (the algorithms are opaque). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ACCOUNTS 64
#define INITIAL 1000
#define TRANSFERS 20000
#define AUDITS 2000

static long accounts[ACCOUNTS];
static long bad_audits;

static void *transfer(void *arg) {
    unsigned seed = (unsigned)(long)arg;
    for (int i = 0; i < TRANSFERS; i++) {
        int from = rand_r(&seed) % ACCOUNTS, to = rand_r(&seed) % ACCOUNTS;
        long amount = rand_r(&seed) % 50;
        __transaction_atomic {
            accounts[from] -= amount;
            accounts[to] += amount;
        }
    }
    return NULL;
}

static void *audit(void *arg) {
    (void)arg;
    for (int i = 0; i < AUDITS; i++) {
        long total = 0;
        __transaction_atomic {
            for (int a = 0; a < ACCOUNTS; a++) total += accounts[a];
        }
        if (total != (long)ACCOUNTS * INITIAL) __atomic_add_fetch(&bad_audits, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(void) {
    for (int a = 0; a < ACCOUNTS; a++) accounts[a] = INITIAL;
    pthread_t t[4];
    pthread_create(&t[0], NULL, transfer, (void *)1L);
    pthread_create(&t[1], NULL, transfer, (void *)2L);
    pthread_create(&t[2], NULL, audit, NULL);
    pthread_create(&t[3], NULL, audit, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int a = 0; a < ACCOUNTS; a++) total += accounts[a];
    int ok = total == (long)ACCOUNTS * INITIAL && bad_audits == 0;
    printf("total=%ld bad_audits=%ld %s\n", total, bad_audits, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
