/* malloc and free in committed and cancelled transactions: a cancelled transaction's
 * allocation is freed, its free is not done; a committed one's free happens. Checked by the
 * heap's in-use bytes staying flat over many rounds. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

struct node { struct node *next; long payload[30]; };
static struct node *head;

int yes; /* set from argc, so the compiler cannot know the cancels are always taken */

int main(int argc, char **argv) {
    (void)argv;
    yes = argc > 0;
    int ok = 1;
    for (int warm = 0; warm < 2; warm++) {
        /* Committed push and pop. */
        __transaction_atomic {
            struct node *n = malloc(sizeof *n);
            n->next = head;
            head = n;
        }
        __transaction_atomic {
            struct node *n = head;
            head = n->next;
            free(n);
        }
    }
    size_t before = mallinfo2().uordblks;
    for (int round = 0; round < 20000; round++) {
        __transaction_atomic {
            struct node *n = malloc(sizeof *n);
            n->payload[0] = round;
            n->next = head;
            head = n;
        }
        /* Cancelled pop: the node must survive. */
        __transaction_atomic {
            struct node *n = head;
            head = n->next;
            free(n);
            if (yes) __transaction_cancel;
        }
        if (head == NULL || head->payload[0] != round) { ok = 0; break; }
        /* Cancelled allocation: must be released. */
        __transaction_atomic {
            struct node *m = calloc(1, sizeof *m);
            m->next = head;
            head = m;
            if (yes) __transaction_cancel;
        }
        /* Committed pop: the node is freed at commit. */
        __transaction_atomic {
            struct node *n = head;
            head = n->next;
            free(n);
        }
    }
    size_t after = mallinfo2().uordblks;
    ok &= head == NULL;
    ok &= after <= before + 4096;
    printf("in-use before=%zu after=%zu %s\n", before, after, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
