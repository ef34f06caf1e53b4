#!/usr/bin/env python3
"""Make a transmem source tree compile with a current GCC (12 and later).

GCC 12 treats `transaction_safe` as part of a function's type, so a function
declared `transaction_safe` in a header and defined without it (or the other
way round) stops the build with "conflicting types for 'f'". GCC 4.9, which
the transmem code was written for, accepted the mismatch.

This program changes nothing but that: it runs `make -k` in a directory,
reads each "conflicting types" error and the note that points at the earlier
declaration, and adds one line, `__attribute__((transaction_safe))`, in front
of whichever of the two lacks the attribute. It repeats until make reports no
such conflict (or stops changing anything), then checks that every change it
made is one added attribute line.

Usage: transmem-attrs.py DIR [MAKE ARGS...]
Exit status 0 when no conflict is left (other build errors are make's to
report on the real build), 1 otherwise.
"""

import os
import re
import subprocess
import sys

ATTR = "__attribute__((transaction_safe))"
ERR = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error: conflicting types for [‘'](?P<name>\w+)[’']")
NOTE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): note: previous (?:declaration|definition) of [‘'](?P<name>\w+)[’']")
ENTER = re.compile(r"make(?:\[\d+\])?: Entering directory [‘'`](?P<dir>[^’']+)[’']")


def has_attr(lines, idx, col):
    """Whether the declaration whose name is at (idx, col) (0-based line)
    already carries the attribute: before the name on its line, or on the
    lines just above that belong to the same declaration."""
    if re.search(r"transaction_safe|TM_SAFE", lines[idx][: col - 1]):
        return True
    i = idx - 1
    while i >= 0:
        text = lines[i].strip()
        if not text or text.startswith(("#", "//")) or text.endswith((";", "}", "{", "*/")):
            return False
        if re.search(r"transaction_safe|TM_SAFE", text):
            return True
        i -= 1
    return False


def start_line(lines, idx, col):
    """The line on which the declaration of the name at (idx, col) starts:
    idx itself when the return type precedes the name there, else the line
    before (a type written on a line of its own)."""
    prefix = lines[idx][: col - 1]
    if prefix.strip(" \t*") or idx == 0:
        return idx
    return idx - 1


def run_make(directory, args):
    proc = subprocess.run(
        ["make", "-k", *args],
        cwd=directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    return proc.stdout


def conflicts(directory, output):
    """(error location, note location) pairs, as absolute paths."""
    cwd = directory
    pairs = []
    pending = None
    for line in output.splitlines():
        m = ENTER.search(line)
        if m:
            cwd = m.group("dir")
            continue
        m = ERR.match(line)
        if m:
            pending = (os.path.normpath(os.path.join(cwd, m.group("path"))), int(m.group("line")), int(m.group("col")), m.group("name"))
            continue
        m = NOTE.match(line)
        if m and pending and m.group("name") == pending[3]:
            note = (os.path.normpath(os.path.join(cwd, m.group("path"))), int(m.group("line")), int(m.group("col")))
            pairs.append((pending, note))
            pending = None
    return pairs


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    added = {}  # path -> set of 0-based line numbers (in the final file) that we added
    for _round in range(20):
        pairs = conflicts(directory, run_make(directory, args))
        if not pairs:
            break
        edits = {}  # path -> set of 0-based line indexes to insert before
        for (epath, eline, ecol, name), (npath, nline, ncol) in pairs:
            for path, line, col in ((epath, eline, ecol), (npath, nline, ncol)):
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    lines = f.readlines()
                if not has_attr(lines, line - 1, col):
                    edits.setdefault(path, set()).add(start_line(lines, line - 1, col))
                    break
        if not edits:
            names = sorted({p[0][3] for p in pairs})
            print(f"transmem-attrs: conflicts left that an attribute does not explain: {', '.join(names)}", file=sys.stderr)
            return 1
        for path, idxs in edits.items():
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                lines = f.readlines()
            prior = added.get(path, set())
            for idx in sorted(idxs, reverse=True):
                lines.insert(idx, ATTR + "\n")
                prior = {p + 1 if p >= idx else p for p in prior} | {idx}
            added[path] = prior
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.writelines(lines)
            print(f"transmem-attrs: {os.path.relpath(path, directory)}: {len(idxs)} attribute(s) added")
    else:
        print("transmem-attrs: still conflicting after 20 rounds", file=sys.stderr)
        return 1
    # Every change is one added line holding only the attribute.
    for path, idxs in added.items():
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.readlines()
        for idx in idxs:
            assert lines[idx] == ATTR + "\n", (path, idx)
    total = sum(len(v) for v in added.values())
    print(f"transmem-attrs: {total} attribute line(s) added in {len(added)} file(s); nothing else changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
