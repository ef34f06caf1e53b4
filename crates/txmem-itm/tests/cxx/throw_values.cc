// What a catch outside a transaction receives from a throw inside one. The C++ runtime looks at
// the exception object before the transaction commits (while it searches for a handler): the
// value of a thrown pointer, and the vtable pointer of an object caught through a virtual
// base, are read then. Under a write-back method those bytes must already be in the object,
// not only in the transaction's log. Every round throws a value that differs from the round
// before, so an object that still holds a previous throw's bytes is caught as wrong.
//
// libstdc++'s transactional constructors of std::logic_error and std::runtime_error write the
// object through barriers and then store its message pointer directly: the direct store must
// win, as it does when writes happen in program order.
#include <cstdio>
#include <stdexcept>
#include <string>

struct Base {
    long tag;
    Base() : tag(0) {}
    virtual ~Base() {}
    virtual long id() const { return tag; }
};
struct Mid : virtual Base {
    long extra;
    Mid(long t, long e) : extra(e) { tag = t; }
    long id() const override { return tag * 1000 + extra; }
};

long cells[4];
long wrong, rounds;
int yes = 1;

static void bad(const char *what, long r) {
    if (wrong++ < 5) std::printf("round %ld: wrong %s\n", r, what);
}

template <typename P> static void throw_pointer(P p, long r) {
    try {
        __transaction_atomic {
            cells[r & 3]++;
            if (yes) throw p;
        }
    } catch (P q) {
        if (q != p) bad("pointer", r);
        return;
    }
    bad("(nothing caught)", r);
}

static void throw_virtual_base(long r) {
    try {
        __transaction_atomic {
            if (yes) throw Mid(r, r & 7);
        }
    } catch (Base &b) {
        if (b.id() != r * 1000 + (r & 7)) bad("virtual base", r);
        return;
    }
    bad("(nothing caught)", r);
}

static const char *const words[] = {"alpha", "beta", "gamma", "delta"};

static void throw_library_errors(long r) {
    const char *w = words[r & 3];
    try {
        __transaction_atomic {
            if (yes) throw std::logic_error(w);
        }
    } catch (std::logic_error &e) {
        if (std::string(e.what()) != w) bad("logic_error message", r);
    }
    std::string msg(words[(r + 1) & 3]);
    try {
        __transaction_atomic {
            if (yes) throw std::runtime_error(msg);
        }
    } catch (std::runtime_error &e) {
        if (msg != e.what()) bad("runtime_error message", r);
    }
}

static void throw_long(long v, long r) {
    try {
        __transaction_atomic {
            if (yes) throw v;
        }
    } catch (long w) {
        if (w != v) bad("long", r);
        return;
    }
    bad("(nothing caught)", r);
}

int main() {
    for (long r = 0; r < 2000; r++, rounds++) {
        // Null and non-null in turn, then pointers of another type, then an integer.
        throw_pointer<void *>(r & 1 ? (void *)&cells[r & 3] : (void *)0, r);
        throw_pointer<long *>(r & 1 ? (long *)0 : &cells[(r + 1) & 3], r);
        throw_pointer<const char *>(r & 1 ? "odd" : "even", r);
        throw_long(r * 7, r);
        throw_library_errors(r);
        throw_virtual_base(r);
    }
    long sum = cells[0] + cells[1] + cells[2] + cells[3];
    bool ok = wrong == 0 && sum == 3 * rounds;
    std::printf("rounds=%ld wrong=%ld cells=%ld %s\n", rounds, wrong, sum, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
