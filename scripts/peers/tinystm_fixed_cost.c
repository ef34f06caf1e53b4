/*
 * The fixed costs of TinySTM's word-based transactions, for instruction
 * counts under callgrind beside txmem's (scripts/callgrind-tinystm.sh).
 *
 *   tinystm_fixed_cost N MODE
 *
 * runs N transactions of one kind on one thread:
 *   empty  begin and commit, nothing else;
 *   read   one load;
 *   incr   one load and one store of the same word (an increment);
 *   rw10   ten loads of distinct words, then ten stores to ten others.
 * The words sit in separate cache lines, as the elements of a txmem TArray
 * of padded values would not; TinySTM maps each to its own lock either way.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stm.h>

#define WORDS 20
#define STRIDE 8 /* words per cache line */

static stm_word_t cells[WORDS * STRIDE];

static stm_word_t *cell(int i) { return &cells[i * STRIDE]; }

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N empty|read|incr|rw10\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    const char *mode = argv[2];
    int m = !strcmp(mode, "empty") ? 0 : !strcmp(mode, "read") ? 1
          : !strcmp(mode, "incr") ? 2 : !strcmp(mode, "rw10") ? 3 : -1;
    if (m < 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    stm_init();
    stm_init_thread();
    stm_word_t sum = 0;
    for (long i = 0; i < n; i++) {
        stm_tx_attr_t attr = {{.id = 0, .read_only = m < 2}};
        sigjmp_buf *env = stm_start(attr);
        if (env != NULL)
            sigsetjmp(*env, 0);
        switch (m) {
        case 1:
            sum += stm_load(cell(0));
            break;
        case 2:
            stm_store(cell(0), stm_load(cell(0)) + 1);
            break;
        case 3: {
            stm_word_t s = 0;
            for (int k = 0; k < 10; k++)
                s += stm_load(cell(k));
            for (int k = 10; k < 20; k++)
                stm_store(cell(k), s + k);
            break;
        }
        }
        stm_commit();
    }
    stm_exit_thread();
    stm_exit();
    printf("%lu\n", (unsigned long)(sum + *cell(0) + *cell(10)));
    return 0;
}
