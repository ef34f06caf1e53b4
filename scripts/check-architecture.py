#!/usr/bin/env python3
"""Files under crates/*/src that ARCHITECTURE.md does not mention, and files
there longer than 600 lines (a file that long holds more than one job).

A file counts as mentioned when an entry of ARCHITECTURE.md (a table row,
a list item, a paragraph) names its path inside its crate's `src/`
(`tx/desc.rs`), or names its folder (`tx/`, or just the folder's last
component) and its file name (`desc.rs`) together; a folder's `mod.rs`
needs only the folder, and a crate's top-level file only its file name in
backquotes. Exits 1 and lists the files if any is missing.

    scripts/check-architecture.py
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MAX_LINES = 600


def mentioned(lines: list, rel: Path) -> bool:
    path, name, folder = rel.as_posix(), rel.name, rel.parent.as_posix()
    for line in lines:
        if path in line:
            return True
        if folder == ".":
            if f"`{name}`" in line:
                return True
        else:
            # A folder is often named from its parent's entry (`report/`
            # inside `bench/`'s): its last component will do.
            last = rel.parent.name + "/"
            if last in line and (name in line or name == "mod.rs"):
                return True
    return False


def main() -> int:
    lines = (ROOT / "ARCHITECTURE.md").read_text().splitlines()
    # Table rows and list items are long lines; join wrapped list items so
    # that a folder and a file name on neighbouring lines count together.
    items, cur = [], ""
    for line in lines:
        if line.startswith(("* ", "- ", "|", "#")) or not line.strip():
            if cur:
                items.append(cur)
            cur = line
        else:
            cur += " " + line.strip()
    items.append(cur)
    missing = []
    for f in sorted((ROOT / "crates").glob("*/src/**/*.rs")):
        rel = Path(f.relative_to(ROOT / "crates").as_posix().split("/src/", 1)[1])
        if not mentioned(items, rel):
            missing.append(f.relative_to(ROOT).as_posix())
    for m in missing:
        print(f"not in ARCHITECTURE.md: {m}")
    long = []
    for f in sorted((ROOT / "crates").glob("*/src/**/*.rs")):
        n = len(f.read_text().splitlines())
        if n > MAX_LINES:
            long.append(f"{f.relative_to(ROOT).as_posix()} ({n} lines)")
    for f in long:
        print(f"over {MAX_LINES} lines: {f}")
    if missing or long:
        return 1
    print(f"ARCHITECTURE.md mentions every file under crates/*/src; none is over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
