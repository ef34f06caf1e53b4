/* Shared by the test programs: CHECK stops the program with a message and exit code 1. */
#include <stdio.h>
#include <stdlib.h>
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)
