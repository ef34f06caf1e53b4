#!/usr/bin/env python3
"""Import circles between the modules of each crate under crates/.

Every `.rs` file under `crates/*/src` is a module (`mod.rs` and `lib.rs` name
their folder's module). An arrow goes from a module to each module it names
by path: `use crate::a::b`, `use super::x`, `self::`, and `crate::`/`super::`
paths written in code. Arrows between a module and its own ancestors or
descendants do not count (a module and its submodules are one unit to the
rest of the crate; a child naming its parent's items, or a parent re-exporting
its children, is how Rust spells that), nor do test modules (`#[cfg(test)]`
blocks and files named `tests.rs`).

Where a crate declares layers (`LAYERS` below, as ARCHITECTURE.md states
them), an arrow from a module to one in a higher layer fails too.

Prints each strongly connected set of two or more modules with the arrows
inside it, and each upward arrow, and exits 1 if there is one; exits 0
otherwise.

    scripts/check-layers.py [CRATE ...]     # default: every crate
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
PATH_RE = re.compile(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


# Each crate's layers, lowest first (module paths; a module belongs to the
# longest path that prefixes it). ARCHITECTURE.md names the same order.
LAYERS = {
    "txmem-sim": [
        [
            "memory::settings",
            "coherence::settings",
            "network::settings",
            "htm::settings",
            "machine::settings",
            "energy::settings",
        ],
        ["config"],
        ["engine"],
        ["htm"],
        ["stats"],
        ["network"],
        ["coherence"],
        ["memory"],
        ["machine"],
        ["cpu"],
        ["simulation"],
        ["elision"],
        ["locks"],
        ["workloads"],
        ["energy"],
        ["experiments"],
    ],
    "txmem-itm": [
        ["fatal", "config", "checkpoint", "orec", "seqlock", "redo"],
        ["stats", "cxxrt", "fence"],
        ["tx::desc"],
        ["method"],
        ["tx::gate"],
        ["tx::lifecycle"],
        ["abi"],
    ],
}


def layer_of(m: tuple, layers: list):
    best, best_len = None, -1
    for i, names in enumerate(layers):
        for n in names:
            parts = tuple(n.split("::"))
            if m[: len(parts)] == parts and len(parts) > best_len:
                best, best_len = i, len(parts)
    return best


def module_of(src: Path, f: Path) -> tuple:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip_tests(text: str) -> str:
    """Drops `#[cfg(test)]` items (a `mod … { … }` block or a `mod x;`)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        j = m.end()
        semi, brace = text.find(";", j), text.find("{", j)
        if brace == -1 or (semi != -1 and semi < brace):
            i = semi + 1
            continue
        depth, k = 0, brace
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    out.append(text[i:])
    return "".join(out)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list:
    """Paths of a use tree: `a::{b, c::d}` gives a::b, a::c::d."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^([^{]*)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as[A-Za-z_0-9]+$", "", tree)]
    prefix, inner = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for it in items:
        if it:
            out += [p for p in expand_use(prefix + it)]
    return out


def resolve(path: str, here: tuple, modules: set):
    """The deepest module a path names, relative to module `here`."""
    segs = path.split("::")
    base = list(here)
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    else:
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    best = tuple(base)
    cur = list(base)
    for s in segs:
        cur.append(s)
        if tuple(cur) in modules:
            best = tuple(cur)
        else:
            break
    return best


def related(a: tuple, b: tuple) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def crate_edges(crate: Path) -> dict:
    src = crate / "src"
    files = [f for f in src.rglob("*.rs") if f.name != "tests.rs" and "tests" not in f.relative_to(src).parts[:-1]]
    modules = {module_of(src, f): f for f in files}
    edges = {m: set() for m in modules}
    for m, f in modules.items():
        text = strip_tests(strip_comments(f.read_text()))
        paths = []
        for u in USE_RE.finditer(text):
            paths += expand_use(u.group(1))
        paths += PATH_RE.findall(USE_RE.sub("", text))
        for p in paths:
            t = resolve(p, m, set(modules))
            if t != m and t in modules and not related(m, t):
                edges[m].add(t)
    return edges


def upward(crate: Path, edges: dict) -> list:
    layers = LAYERS.get(crate.name)
    if not layers:
        return []
    out = []
    for a, targets in edges.items():
        la = layer_of(a, layers)
        for b in targets:
            lb = layer_of(b, layers)
            if la is not None and lb is not None and lb > la:
                out.append((a, b))
    return sorted(out)


def sccs(edges: dict) -> list:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append((comp, {(a, b) for a in comp for b in edges[a] if b in comp}))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def name(m: tuple) -> str:
    return "::".join(m) or "(crate root)"


def main() -> int:
    wanted = sys.argv[1:]
    crates = sorted(p for p in (ROOT / "crates").iterdir() if (p / "src").is_dir())
    if wanted:
        crates = [c for c in crates if c.name in wanted]
    found = 0
    for crate in crates:
        edges = crate_edges(crate)
        for a, b in upward(crate, edges):
            found += 1
            print(f"{crate.name}: an upward arrow {name(a)} -> {name(b)}")
        for comp, arrows in sccs(edges):
            found += 1
            print(f"{crate.name}: a circle through {', '.join(sorted(name(m) for m in comp))}")
            for a, b in sorted(arrows):
                print(f"    {name(a)} -> {name(b)}")
    if found:
        print(f"{found} import circle(s) or upward arrow(s)")
        return 1
    print(f"no import circle or upward arrow in {len(crates)} crate(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
