// A sorted linked-list set with new/delete, four threads: each inserts its own keys
// (k % 4 == id) into a shared list, then removes the odd ones. The final list must hold
// exactly the even keys, sorted, and the transactional node count must match.
#include <cstdio>
#include <pthread.h>

struct Node {
    long key;
    Node *next;
    Node(long k, Node *n) : key(k), next(n) { nodes++; }
    ~Node() { nodes--; }
    static long nodes;
};
long Node::nodes;
Node *head;
enum { THREADS = 4, KEYS = 2000 };

static bool insert(long k) {
    bool done;
    __transaction_atomic {
        Node **p = &head;
        while (*p && (*p)->key < k) p = &(*p)->next;
        done = !(*p && (*p)->key == k);
        if (done) *p = new Node(k, *p);
    }
    return done;
}

static bool remove(long k) {
    bool done;
    __transaction_atomic {
        Node **p = &head;
        while (*p && (*p)->key < k) p = &(*p)->next;
        done = *p && (*p)->key == k;
        if (done) { Node *n = *p; *p = n->next; delete n; }
    }
    return done;
}

static void *worker(void *arg) {
    long id = (long)arg, bad = 0;
    for (long k = id; k < KEYS; k += THREADS) bad += !insert(k);
    for (long k = id; k < KEYS; k += THREADS) bad += insert(k);    // already there
    for (long k = id; k < KEYS; k += THREADS) if (k & 1) bad += !remove(k);
    for (long k = id; k < KEYS; k += THREADS) if (k & 1) bad += remove(k);
    return (void *)bad;
}

int main() {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
    bool ok = true;
    for (long i = 0; i < THREADS; i++) { void *r; pthread_join(t[i], &r); ok &= r == 0; }
    long expect = 0, len = 0;
    for (Node *n = head; n; n = n->next, expect += 2, len++) ok &= n->key == expect;
    ok &= len == KEYS / 2 && Node::nodes == len;
    std::printf("len=%ld nodes=%ld %s\n", len, Node::nodes, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
