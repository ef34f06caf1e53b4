// new/delete, new[]/delete[] and sized delete in committed, cancelled and aborted
// transactions by four threads. Live nodes are counted in the constructor and destructor
// (transactionally) and the heap's in-use bytes must come back to where they were; the
// nothrow clones, called directly, must behave the same. Run under MALLOC_CHECK_=3 as well.
// (The global operators are not replaced: a program that replaces them gets g++'s own
// transactional clones of its operators, which bypass the runtime.)
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <new>
#include <pthread.h>

// The nothrow clones: g++ 12 does not mark the nothrow operators transaction_safe, so they
// are called here by name.
extern "C" {
__attribute__((transaction_pure)) void *_ZGTtnwmRKSt9nothrow_t(std::size_t, const std::nothrow_t &);
__attribute__((transaction_pure)) void *_ZGTtnamRKSt9nothrow_t(std::size_t, const std::nothrow_t &);
__attribute__((transaction_pure)) void _ZGTtdlPvRKSt9nothrow_t(void *, const std::nothrow_t &);
__attribute__((transaction_pure)) void _ZGTtdaPvRKSt9nothrow_t(void *, const std::nothrow_t &);
}

long live_nodes; // transactional
struct Node {
    Node *next;
    long key;
    Node(long k, Node *n) : next(n), key(k) { live_nodes++; }
    ~Node() { live_nodes--; }
};

enum { THREADS = 4, ROUNDS = 5000 };
Node *head;
long sum_arrays;
int yes = 1;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long r = 0; r < ROUNDS; r++) {
        long key = id * ROUNDS + r;
        __transaction_atomic { head = new Node(key, head); }               // committed new
        __transaction_atomic {                                             // cancelled delete
            Node *n = head; head = n->next; delete n;
            if (yes) __transaction_cancel;
        }
        __transaction_atomic {                                             // cancelled new
            head = new Node(-1, head);
            long *a = new long[8];
            a[0] = 1; head->key = a[0] - 2;
            if (yes) __transaction_cancel;
        }
        __transaction_atomic {                                             // new[] + delete[]
            long *a = new long[16];
            for (int i = 0; i < 16; i++) a[i] = i;
            long s = 0;
            for (int i = 0; i < 16; i++) s += a[i];
            sum_arrays += s;
            delete[] a;
        }
        __transaction_atomic {                                             // nothrow clones
            void *p = _ZGTtnwmRKSt9nothrow_t(24, std::nothrow);
            void *q = _ZGTtnamRKSt9nothrow_t(40, std::nothrow);
            _ZGTtdlPvRKSt9nothrow_t(p, std::nothrow);
            if (r & 1) _ZGTtdaPvRKSt9nothrow_t(q, std::nothrow);
            if (r & 1 || yes) __transaction_cancel;
        }
        if (r % 2 == 0) {
            __transaction_atomic {                                         // committed delete
                Node *n = head; head = n->next; delete n;
            }
        }
    }
    return 0;
}

int main() {
    for (int i = 0; i < 2; i++) { __transaction_atomic { head = new Node(0, head); } __transaction_atomic { Node *n = head; head = n->next; delete n; } }
    std::size_t before = mallinfo2().uordblks;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
    for (long i = 0; i < THREADS; i++) pthread_join(t[i], 0);
    long len = 0;
    bool keys_ok = true;
    for (Node *n = head; n; n = n->next) { len++; keys_ok &= n->key >= 0; }
    bool ok = keys_ok && len == THREADS * ROUNDS / 2 && live_nodes == len;
    ok &= sum_arrays == (long)THREADS * ROUNDS * 120;
    while (head) { __transaction_atomic { Node *n = head; head = n->next; delete n; } }
    std::size_t after = mallinfo2().uordblks;
    ok &= live_nodes == 0 && after <= before + 65536;
    std::printf("len=%ld in-use before=%zu after=%zu %s\n", len, before, after, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
