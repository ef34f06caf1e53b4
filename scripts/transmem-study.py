#!/usr/bin/env python3
"""The GCC-TM memcached study and STAMP in C, on txmem-itm and beside it.

Runs the programs that scripts/transmem.sh built from a transmem checkout
(BUILD/bin) under several TM runtimes, checks each run's own verification,
and prints Markdown tables (and writes JSON with --json):

  stamp      the eight stamp_c applications (vacation twice: low and high
             contention) under GCC's libitm (ml_wt), TinySTM's abi/gcc
             library, and libtxmem_itm.so with norec, lazy and eager; and
             `txmem stamp`'s typed and words variants on the same inputs.
  memcached  the transactional memcached 1.4.15 (semaphore version) under
             GCC's libitm and libtxmem_itm.so (each method), stock memcached
             and `txmem serve`, loaded by memaslap (Debian's memcaslap)
             --binary with x clients against x worker threads; execution
             time, ops/s and the server's CPU time per operation; and the
             TXMEM_ITM_STATS columns of the study's Tables 1-4.
  fig11      the transactional memcached under each contention policy x
             method, with aborts per commit.

Usage:
  scripts/transmem-study.py BUILD [stamp] [memcached] [tables] [fig11] [options]
  scripts/transmem-study.py BUILD --transmem DIR [--tinystm DIR] ...   # build first
  scripts/transmem-study.py --help

With --transmem, it first builds the programs (scripts/transmem.sh DIR BUILD,
with --tinystm if given) and txmem (cargo build --release -p txmem-cli -p
txmem-itm), so one command goes from a transmem checkout to the tables.

BUILD is scripts/transmem.sh's build folder. The txmem binary and
libtxmem_itm.so are taken from $CARGO_TARGET_DIR/release (or target/release),
or from --txmem / --itm-lib. STAMP's file inputs (kmeans, labyrinth, yada)
are generated with `txmem stamp --save-input` into BUILD/inputs.

Needs: memcached and memcaslap (Debian: memcached, libmemcached-tools) for
the memcached tables: installed with apt when missing and run as root, else
the missing tool is named before anything runs.
"""

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- runtimes


def runtime_env(name, args):
    """Environment additions that select a TM runtime for a -fgnu-tm binary."""
    if name == "ml_wt":
        return {"ITM_DEFAULT_METHOD": "ml_wt"}
    if name == "tinystm":
        return {"LD_PRELOAD": os.path.join(args.build, "bin", "tinystm", "libitm.so.1")}
    if name in ("norec", "lazy", "eager", "serial"):
        return {"LD_PRELOAD": args.itm_lib, "TXMEM_ITM_METHOD": name}
    raise SystemExit(f"unknown runtime {name}")


# ---------------------------------------------------------------- STAMP

# STAMP's arguments: the STO thesis' Table 7.1 (`paper`, the arguments of
# `txmem stamp --input paper`), and smaller ones (`medium`) that take about
# a second each on one core of a shared 2-vCPU guest under GCC's ml_wt
# (paper inputs take minutes a run there). {inputs} is BUILD/inputs.
STAMP = {
    "bayes": {
        "bin": "bayes",
        "paper": "-v32 -r4096 -n10 -p40 -i2 -e9 -s1",
        "medium": "-v24 -r1024 -n4 -p40 -i2 -e4 -s1",
    },
    "genome": {
        "bin": "genome",
        "paper": "-g16384 -s64 -n16777216",
        "medium": "-g2048 -s32 -n262144",
    },
    "intruder": {
        "bin": "intruder",
        "paper": "-a10 -l2048 -n10000 -s1",
        "medium": "-a10 -l128 -n2048 -s1",
    },
    "kmeans": {
        "bin": "kmeans",
        "paper": "-m160 -n160 -T0.01 -z -i {inputs}/kmeans-paper.txt",
        "medium": "-m160 -n160 -T0.01 -z -i {inputs}/kmeans-medium.txt",
    },
    "labyrinth": {
        "bin": "labyrinth",
        "paper": "-i {inputs}/labyrinth-paper.txt",
        "medium": "-i {inputs}/labyrinth-medium.txt",
    },
    "ssca2": {
        "bin": "ssca2",
        "paper": "-s21 -i1.0 -u1.0 -l3 -p3",
        "medium": "-s16 -i1.0 -u1.0 -l3 -p3",
    },
    "vacation-low": {
        "bin": "vacation",
        "paper": "-n2 -q90 -u98 -r1048576 -T4194304",
        "medium": "-n2 -q90 -u98 -r65536 -T65536",
    },
    "vacation-high": {
        "bin": "vacation",
        "paper": "-n8 -q1 -u60 -r1048576 -T4194304",
        "medium": "-n8 -q1 -u60 -r65536 -T65536",
    },
    "yada": {
        "bin": "yada",
        "paper": "-a20 -i {inputs}/yada-paper",
        "medium": "-a20 -i {inputs}/yada-paper",
    },
}

# What `txmem stamp` runs for the same input: the generated paper input, or
# the same file. At `medium`, only the file-fed applications have the same
# input in both suites (yada's medium input is its paper input).
RUST_INPUT = {
    "kmeans": {"paper": "{inputs}/kmeans-paper.txt", "medium": "{inputs}/kmeans-medium.txt"},
    "labyrinth": {"paper": "{inputs}/labyrinth-paper.txt", "medium": "{inputs}/labyrinth-medium.txt"},
    "yada": {"paper": "{inputs}/yada-paper", "medium": "{inputs}/yada-paper"},
}


def stamp_verify(app, out, rc):
    """The application's own verdict: (ok, reason)."""
    if rc != 0:
        return False, f"exit status {rc}"
    checks = {
        "genome": r"Sequence matches gene: yes",
        "labyrinth": r"Verification passed\.",
        "yada": r"Final mesh is valid\.",
    }
    if app in checks and not re.search(checks[app], out):
        return False, "no '" + checks[app].replace("\\", "") + "'"
    if app == "intruder":
        a = re.search(r"Num attack\s*=\s*(\d+)", out)
        f = re.search(r"Num found\s*=\s*(\d+)", out)
        if not a or not f or a.group(1) != f.group(1):
            return False, "attacks found != attacks"
    return True, ""


def stamp_time(app, out):
    """The parallel phase's time as STAMP prints it (ssca2: kernel 1)."""
    if app == "ssca2":
        m = re.search(r"Time taken for kernel 1 is\s+([\d.]+)", out)
    else:
        m = re.search(r"^\s*(?:Time|Elapsed time)\s*=\s*([\d.]+)", out, re.M)
    return float(m.group(1)) if m else None


def ensure_inputs(args):
    inputs = os.path.join(args.build, "inputs")
    os.makedirs(inputs, exist_ok=True)
    wanted = {
        ("kmeans", "paper"): "kmeans-paper.txt",
        ("kmeans", "dev"): "kmeans-dev.txt",
        ("labyrinth", "paper"): "labyrinth-paper.txt",
        ("labyrinth", "dev"): "labyrinth-dev.txt",
        ("yada", "paper"): "yada-paper",
    }
    for (app, size), name in wanted.items():
        path = os.path.join(inputs, name)
        probe = path + ".node" if app == "yada" else path
        if not os.path.exists(probe):
            subprocess.run([args.txmem, "stamp", app, "--input", size, "--save-input", path],
                           check=True, stdout=subprocess.DEVNULL)
    # medium: the first 16,384 points of the paper's kmeans input, and a
    # 128 x 128 x 5 maze with 128 pairs, no walls (seeded).
    km = os.path.join(inputs, "kmeans-medium.txt")
    if not os.path.exists(km):
        with open(os.path.join(inputs, "kmeans-paper.txt")) as f, open(km, "w") as g:
            for _, line in zip(range(16384), f):
                g.write(line)
    lab = os.path.join(inputs, "labyrinth-medium.txt")
    if not os.path.exists(lab):
        import random
        rng = random.Random(1)
        x, y, z, n = 128, 128, 5, 128
        ends = []
        seen = set()
        while len(ends) < 2 * n:
            p = (rng.randrange(x), rng.randrange(y), rng.randrange(z))
            if p not in seen:
                seen.add(p)
                ends.append(p)
        with open(lab, "w") as g:
            g.write(f"# labyrinth: {x} x {y} x {z} grid, 0 walls, {n} paths\nd {x} {y} {z}\n")
            for i in range(n):
                g.write("p " + " ".join(map(str, ends[2 * i] + ends[2 * i + 1])) + "\n")
    return inputs


def run_stamp(args):
    inputs = ensure_inputs(args)
    apps = args.apps.split(",") if args.apps else list(STAMP)
    sizes = dict(a.split("=") for a in args.size_of.split(",")) if args.size_of else {}
    rows = []
    failures = []
    for app in apps:
        spec = STAMP[app]
        size = sizes.get(app, args.size)
        cargs = spec[size].format(inputs=inputs).split()
        binary = os.path.join(args.build, "bin", "stamp", spec["bin"])
        for rt in args.runtimes.split(","):
            for t in args.threads:
                times = []
                cpus = []
                for _ in range(args.repeat):
                    env = dict(os.environ, **runtime_env(rt, args))
                    cmd = [binary, *cargs, f"-t{t}"]
                    start = time.monotonic()
                    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    try:
                        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                           errors="replace", timeout=args.timeout)
                        out, rc = p.stdout + p.stderr, p.returncode
                    except subprocess.TimeoutExpired:
                        out, rc = "", "timeout"
                    wall = time.monotonic() - start
                    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpus.append(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime)
                    ok, why = stamp_verify(app, out, rc) if rc != "timeout" else (False, f"over {args.timeout} s")
                    secs = stamp_time(app, out)
                    if not ok or secs is None:
                        failures.append(f"{app} {rt} t={t}: {why or 'no time printed'}")
                        print(f"  FAIL {app} {rt} t={t}: {why}\n{out[-800:]}", file=sys.stderr)
                        times = []
                        break
                    times.append(secs)
                    print(f"  {app:<13} {size:<5} {rt:<8} t={t} {secs:8.3f} s (wall {wall:.1f} s)",
                          file=sys.stderr)
                rows.append({"app": app, "size": size, "suite": "stamp_c", "runtime": rt,
                             "threads": t, "seconds": statistics.median(times) if times else None,
                             "runs": times, "args": " ".join(cargs),
                             "cpu_seconds": statistics.median(cpus) if times else None})
        # txmem stamp, typed and words, on the same input.
        if args.rust and (size == "paper" or app in RUST_INPUT):
            rin = RUST_INPUT.get(app, {}).get(size, "paper").format(inputs=inputs)
            jpath = os.path.join(args.build, f"rust-{app}-{size}.json")
            cmd = [args.txmem, "stamp", app, "--variant", "seq,typed,words", "--threads",
                   ",".join(map(str, args.threads)), "--repeat", str(args.repeat),
                   "--input", rin, "--json", jpath, "--no-progress"]
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
            if p.returncode != 0:
                failures.append(f"{app} txmem stamp: exit {p.returncode}")
                print(p.stdout[-1500:] + p.stderr[-1500:], file=sys.stderr)
            else:
                for r in json.load(open(jpath))["results"]:
                    rows.append({"app": app, "size": size, "suite": "txmem stamp",
                                 "runtime": r["variant"], "threads": r["threads"],
                                 "seconds": r["seconds"], "input": rin})
                    print(f"  {app:<13} {size:<5} rust-{r['variant']:<5} t={r['threads']} "
                          f"{r['seconds']:8.3f} s", file=sys.stderr)
    return rows, failures


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt_s(x):
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def stamp_table(rows, args):
    rts = args.runtimes.split(",")
    rust = ["seq", "typed", "words"]
    apps = list(dict.fromkeys(r["app"] for r in rows))
    lines = []
    for t in args.threads:
        cols = rts + [f"txmem {v}" for v in rust]
        lines.append(f"\n**{t} thread{'s' if t > 1 else ''}** (seconds of the parallel phase, median of {args.repeat})\n")
        lines.append("| application | input | " + " | ".join(cols) + " |")
        lines.append("|---|---|" + "---:|" * len(cols))
        for app in apps:
            cells = []
            size = next(r["size"] for r in rows if r["app"] == app)
            for rt in rts:
                r = next((r for r in rows if r["app"] == app and r["suite"] == "stamp_c"
                          and r["runtime"] == rt and r["threads"] == t), None)
                cells.append(fmt_s(r["seconds"]) if r else "—")
            for v in rust:
                tt = 1 if v == "seq" else t
                r = next((r for r in rows if r["app"] == app and r["suite"] == "txmem stamp"
                          and r["runtime"] == v and r["threads"] == tt), None)
                cells.append(fmt_s(r["seconds"]) if r else "—")
            lines.append(f"| {app} | {size} | " + " | ".join(cells) + " |")
        # Geometric means over the applications every runtime finished, so
        # that the columns compare; a second row over each column's own.
        def ok(app, rt):
            return any(r["app"] == app and r["suite"] == "stamp_c" and r["runtime"] == rt
                       and r["threads"] == t and r["seconds"] for r in rows)
        common = [app for app in apps if all(ok(app, rt) for rt in rts)]

        def gm_of(rt, subset):
            return geomean([r["seconds"] for r in rows if r["suite"] == "stamp_c" and r["runtime"] == rt
                            and r["threads"] == t and r["app"] in subset])
        lines.append(f"| **geometric mean**, the {len(common)} applications all finished | | "
                     + " | ".join(fmt_s(gm_of(rt, common)) for rt in rts) + " |" + " |" * len(rust))
        lines.append("| geometric mean, each column's finished runs | | "
                     + " | ".join(fmt_s(gm_of(rt, apps)) for rt in rts) + " |" + " |" * len(rust))
        base = gm_of("ml_wt", common) if "ml_wt" in rts else None
        if base:
            lines.append("| speed over ml_wt (common geometric mean) | | "
                         + " | ".join(f"{base / gm_of(rt, common):.2f}x" for rt in rts) + " |" + " |" * len(rust))
    return "\n".join(lines)


def stamp_svg(rows, args, path):
    """Grouped bars: each runtime's speed over ml_wt's (ml_wt time / time), per
    application and for the geometric mean, one panel per thread count."""
    rts = args.runtimes.split(",")
    apps = list(dict.fromkeys(r["app"] for r in rows if r["suite"] == "stamp_c")) + ["geomean"]
    colors = ["#777777", "#d08c2b", "#2b6fd0", "#3aa35b", "#b84ac9", "#c0392b"]
    w_bar, gap, h, top, left = 9, 14, 220, 30, 50
    group = w_bar * len(rts) + gap
    width = left + group * len(apps) + 20
    panels = []

    def t_of(app, rt, t):
        if app == "geomean":
            common = [x for x in apps[:-1] if all(t_of(x, q, t) for q in rts)]
            return geomean([t_of(x, rt, t) for x in common])
        r = next((r for r in rows if r["suite"] == "stamp_c" and r["app"] == app
                  and r["runtime"] == rt and r["threads"] == t), None)
        return r["seconds"] if r else None

    ymax = 3.0
    out = []
    for pi, t in enumerate(args.threads):
        y0 = top + pi * (h + 70)
        out.append(f'<text x="{left}" y="{y0 - 8}" font-size="13">{t} thread{"s" if t > 1 else ""}: '
                   f'speed over GCC libitm ml_wt (higher is faster; 0 = failed)</text>')
        for k in range(int(ymax) + 1):
            y = y0 + h - h * k / ymax
            out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                       f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{k}x</text>')
        for ai, app in enumerate(apps):
            base = t_of(app, "ml_wt", t)
            x0 = left + ai * group + gap / 2
            for ri, rt in enumerate(rts):
                v = t_of(app, rt, t)
                sp = base / v if base and v else 0
                bh = h * min(sp, ymax) / ymax
                out.append(f'<rect x="{x0 + ri * w_bar:.1f}" y="{y0 + h - bh:.1f}" width="{w_bar - 1}" '
                           f'height="{bh:.1f}" fill="{colors[ri % len(colors)]}"><title>{app} {rt}: '
                           f'{sp:.2f}x</title></rect>')
            out.append(f'<text x="{x0 + w_bar * len(rts) / 2:.1f}" y="{y0 + h + 14}" font-size="10" '
                       f'text-anchor="middle">{app}</text>')
    ly = top + len(args.threads) * (h + 70) - 30
    for ri, rt in enumerate(rts):
        out.append(f'<rect x="{left + ri * 90}" y="{ly}" width="10" height="10" fill="{colors[ri % len(colors)]}"/>'
                   f'<text x="{left + ri * 90 + 14}" y="{ly + 9}" font-size="11">{rt}</text>')
    height = ly + 20
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'font-family="sans-serif">\n' + "\n".join(out) + "\n</svg>\n")


# ---------------------------------------------------------------- memcached


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cmd(kind, threads, port, args):
    """(argv, extra environment) of one server."""
    if kind == "memcached-1.6":
        return [shutil.which("memcached"), "-u", "root", "-U", "0", "-l", "127.0.0.1", "-p", str(port),
                "-t", str(threads), "-m", "1024"], {}
    if kind == "txmem-serve":
        return [args.txmem, "serve", "-l", "127.0.0.1", "-p", str(port), "-t", str(threads), "-m", "1024"], {}
    binary = os.path.join(args.build, "bin", "memcached-semaphore")
    rt = kind.split(":", 1)[1]
    return [binary, "-u", "root", "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", str(threads),
            "-m", "1024"], runtime_env(rt, args)


def parse_itm_stats(text):
    """TXMEM_ITM_STATS's total line (with the per-thread line's lists under
    "thread_commits" and "thread_aborts") and its per-site lines."""
    total, sites, threads = None, [], {}
    for line in text.splitlines():
        m = re.match(r"txmem-itm stats: per-thread (.*)", line)
        if m:
            for k, v in re.findall(r"(commits|aborts)=([\d,]+)", m.group(1)):
                threads[f"thread_{k}"] = [int(x) for x in v.split(",") if x]
            continue
        m = re.match(r"txmem-itm stats: (\S+)\s+(txns=.*)", line)
        if not m:
            continue
        fields = dict(re.findall(r"([\w-]+)=(\d+)", m.group(2)))
        fields = {k: int(v) for k, v in fields.items()}
        if m.group(1) == "total":
            total = fields
        else:
            sites.append((m.group(1), fields))
    if total is not None:
        total.update(threads)
    return total, sites


def run_server(kind, clients, args, extra_env=None, stats=False, execute=None):
    port = free_port()
    argv, env_add = server_cmd(kind, clients, port, args)
    env = dict(os.environ, **env_add, **(extra_env or {}))
    if stats:
        env["TXMEM_ITM_STATS"] = "1"
    log = open(os.path.join(args.build, "server.log"), "w+")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(port, proc):
            log.seek(0)
            raise RuntimeError(f"{kind} did not start: {log.read()[-1000:]}")
        n = execute if execute is not None else args.execute_number * clients
        cmd = ["memcaslap", "-s", f"127.0.0.1:{port}", "-T", str(clients), "-c", str(clients),
               "-x", str(n), "-B"]
        cpu0 = cpu_seconds(proc.pid)
        start = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                             timeout=args.timeout).stdout
        wall = time.monotonic() - start
        cpu = cpu_seconds(proc.pid) - cpu0
        tps = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", out)
        if not tps:
            raise RuntimeError(f"memcaslap against {kind}: no result\n{out[-1500:]}")
        if "SERVER_ERROR" in out or "CLIENT_ERROR" in out:
            raise RuntimeError(f"memcaslap against {kind}: error replies\n{out[-1500:]}")
        ops = int(tps.group(2))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.seek(0)
    text = log.read()
    log.close()
    if proc.returncode not in (0, -signal.SIGINT, 130):
        raise RuntimeError(f"{kind} exited with {proc.returncode}: {text[-1000:]}")
    total, sites = parse_itm_stats(text) if stats else (None, [])
    return {"server": kind, "clients": clients, "ops": ops, "seconds": wall,
            "ops_per_s": ops / wall, "cpu_us_per_op": cpu / ops * 1e6,
            "itm_total": total, "itm_sites": sites}


MC_SERVERS = ["memcached-1.6", "txmem-serve", "tm:ml_wt", "tm:norec", "tm:lazy", "tm:eager"]


def run_memcached(args):
    rows = []
    for rnd in range(args.rounds):
        for clients in args.threads:
            for kind in args.servers.split(","):
                stats = kind.startswith("tm:") and kind != "tm:ml_wt" and kind != "tm:tinystm"
                r = run_server(kind, clients, args, stats=stats)
                r["round"] = rnd
                rows.append(r)
                print(f"  {kind:<14} x={clients} {r['seconds']:7.2f} s {r['ops_per_s']:9.0f} ops/s "
                      f"{r['cpu_us_per_op']:6.1f} µs CPU/op", file=sys.stderr)
    return rows


def memcached_table(rows, args):
    lines = ["| server | clients = workers | execution time | ops/s | server CPU µs/op | aborts/commit |",
             "|---|---:|---:|---:|---:|---:|"]
    for clients in args.threads:
        for kind in args.servers.split(","):
            rs = [r for r in rows if r["server"] == kind and r["clients"] == clients]
            if not rs:
                continue
            sec = statistics.median(r["seconds"] for r in rs)
            ops = statistics.median(r["ops_per_s"] for r in rs)
            cpu = statistics.median(r["cpu_us_per_op"] for r in rs)
            apc = "—"
            tot = [r["itm_total"] for r in rs if r["itm_total"]]
            if tot:
                apc = f"{sum(t['aborts'] for t in tot) / max(1, sum(t['commits'] for t in tot)):.4f}"
            lines.append(f"| {label(kind)} | {clients} | {sec:.2f} s | {ops:,.0f} | {cpu:.1f} | {apc} |")
    return "\n".join(lines)


def label(kind):
    return {"memcached-1.6": "memcached 1.6.18 (stock, Debian)",
            "txmem-serve": "txmem serve",
            "tm:ml_wt": "TM memcached 1.4.15, GCC libitm ml_wt",
            "tm:tinystm": "TM memcached 1.4.15, TinySTM"}.get(kind, f"TM memcached 1.4.15, txmem-itm {kind[3:]}")


def tables_columns(args):
    """The study's Tables 1-4 columns from TXMEM_ITM_STATS, at args.table_threads."""
    rows = []
    for m in args.table_methods.split(","):
        r = run_server(f"tm:{m}", args.table_threads, args, stats=True)
        rows.append(r)
        t = r["itm_total"]
        print(f"  tables {m}: {t}", file=sys.stderr)
    return rows


def tables_md(rows):
    lines = ["| run | transactions | in-flight switch | start serial | abort serial | aborts | aborts/commit |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = r["itm_total"]
        n = t["txns"]

        def pct(k):
            return f"{t.get(k, 0)} ({100 * t.get(k, 0) / n:.1f}%)" if n else "0"
        lines.append(f"| {r['server'][3:]}, {r['clients']} threads, {r['ops']:,} ops | {n:,} | "
                     f"{pct('switched-mid-flight')} | {pct('started-irrevocable')} | "
                     f"{t.get('after-aborts', 0)} | {t.get('aborts', 0):,} | "
                     f"{t.get('aborts', 0) / max(1, t.get('commits', 1)):.4f} |")
    return "\n".join(lines)


def site_name(site, args):
    """`object+0xOFF` as function (file:line) through addr2line, when it can."""
    m = re.match(r"(.+)\+(0x[0-9a-f]+)$", site)
    if not m or not shutil.which("addr2line"):
        return site
    obj = os.path.join(args.build, "bin", m.group(1))
    if not os.path.exists(obj):
        return site
    p = subprocess.run(["addr2line", "-f", "-s", "-e", obj, m.group(2)], capture_output=True, text=True)
    parts = p.stdout.split()
    return f"{parts[0]} ({parts[1]})" if len(parts) == 2 and parts[0] != "??" else site


def sites_md(r, args, top=8):
    sites = sorted(r["itm_sites"], key=lambda s: (-s[1].get("aborts", 0), -s[1].get("txns", 0)))
    lines = [f"Sites of {r['server'][3:]} ({r['clients']} threads), most aborts first:", "",
             "| site | transactions | aborts | serial (all causes) |", "|---|---:|---:|---:|"]
    for name, f in sites[:top]:
        ser = sum(f.get(k, 0) for k in ("method", "started-irrevocable", "switched-mid-flight", "after-aborts"))
        lines.append(f"| `{site_name(name, args)}` | {f['txns']:,} | {f.get('aborts', 0):,} | {ser} |")
    return "\n".join(lines)


def run_fig11(args):
    rows = []
    policies = {
        "none": {"TXMEM_ITM_CM": "none", "TXMEM_ITM_SERIALIZE_AFTER": "1000000000"},
        "backoff": {"TXMEM_ITM_CM": "backoff", "TXMEM_ITM_SERIALIZE_AFTER": "1000000000"},
        "hourglass-128": {"TXMEM_ITM_CM": "hourglass", "TXMEM_ITM_HOURGLASS_AFTER": "128"},
        "serialize-100": {"TXMEM_ITM_CM": "none", "TXMEM_ITM_SERIALIZE_AFTER": "100"},
    }
    for clients in args.threads:
        for pol, env in policies.items():
            for m in ("eager", "lazy", "norec"):
                r = run_server(f"tm:{m}", clients, args, extra_env=env, stats=True,
                               execute=args.fig11_execute * clients)
                r["policy"] = pol
                rows.append(r)
                t = r["itm_total"]
                print(f"  fig11 {pol:<14} {m:<6} x={clients} {r['seconds']:6.2f} s "
                      f"aborts/commit {t['aborts'] / max(1, t['commits']):.4f}", file=sys.stderr)
    return rows


def thread_spread(t):
    """Aborts per worker thread: "a, b, ..." and their (population) variance, from the
    per-thread line. Threads with under a tenth of the busiest thread's commits (memcached's
    main and maintenance threads, a handful of transactions each) are left out."""
    commits = t.get("thread_commits") or []
    busiest = max(commits, default=0)
    aborts = [a for a, c in zip(t.get("thread_aborts") or [], commits) if c * 10 >= busiest]
    if not aborts:
        return "—", "—"
    return ", ".join(f"{a:,}" for a in aborts), f"{statistics.pvariance(aborts):,.0f}"


def fig11_md(rows):
    lines = ["| clients | policy | method | time | ops/s | aborts/commit | aborts per thread | variance "
             "| serial after aborts | hourglass closed |",
             "|---:|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        t = r["itm_total"]
        per, var = thread_spread(t)
        lines.append(f"| {r['clients']} | {r['policy']} | {r['server'][3:]} | {r['seconds']:.2f} s | "
                     f"{r['ops_per_s']:,.0f} | {t['aborts'] / max(1, t['commits']):.4f} | {per} | {var} | "
                     f"{t.get('after-aborts', 0)} | {t.get('hourglass-closed', 0)} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def render(result, a):
    out = []
    if "stamp" in result:
        out.append("## STAMP in C\n" + stamp_table(result["stamp"], a))
        if a.plot:
            stamp_svg(result["stamp"], a, a.plot)
    if "memcached" in result:
        out.append(f"## memcached, memaslap --binary, {a.execute_number} operations per client\n\n"
                   + memcached_table(result["memcached"], a))
    if "tables" in result:
        out.append("## Tables 1-4 columns (TXMEM_ITM_STATS)\n\n" + tables_md(result["tables"]) + "\n\n"
                   + "\n\n".join(sites_md(r, a) for r in result["tables"]))
    if "fig11" in result:
        out.append("## Fig 11: contention policy x method\n\n" + fig11_md(result["fig11"]))
    return "\n\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", help="scripts/transmem.sh's build folder")
    ap.add_argument("parts", nargs="*", default=["stamp", "memcached"],
                    help="stamp, memcached, tables, fig11 (default: stamp memcached)")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--txmem", default=os.path.join(target, "release", "txmem"))
    ap.add_argument("--itm-lib", default=os.path.join(target, "release", "libtxmem_itm.so"))
    ap.add_argument("--threads", default="1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--repeat", type=int, default=1, help="STAMP runs per cell (median)")
    ap.add_argument("--size", default="medium", choices=["paper", "medium"], help="STAMP arguments")
    ap.add_argument("--size-of", default="", help="per-application size, e.g. yada=paper,bayes=paper")
    ap.add_argument("--apps", default="", help="STAMP applications, comma separated (default: all)")
    ap.add_argument("--runtimes", default="ml_wt,tinystm,norec,lazy,eager")
    ap.add_argument("--no-rust", dest="rust", action="store_false", help="skip txmem stamp")
    ap.add_argument("--servers", default=",".join(MC_SERVERS))
    ap.add_argument("--execute-number", type=int, default=625000,
                    help="memaslap operations per client (the study: 625000)")
    ap.add_argument("--rounds", type=int, default=1, help="memcached rounds (median)")
    ap.add_argument("--table-threads", type=int, default=4, help="threads of the Tables 1-4 run (the study: 4)")
    ap.add_argument("--table-methods", default="norec,lazy,eager")
    ap.add_argument("--fig11-execute", type=int, default=100000, help="operations per client in the fig11 sweep")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--json", help="write every row as JSON")
    ap.add_argument("--plot", help="write the STAMP plot (SVG) here")
    ap.add_argument("--from-json", help="print the tables of an earlier --json run instead of running")
    ap.add_argument("--transmem", help="a transmem checkout: build BUILD from it first (scripts/transmem.sh)")
    ap.add_argument("--tinystm", help="with --transmem: a TinySTM checkout, for the tinystm runtime")
    a = ap.parse_intermixed_args()
    a.build = os.path.abspath(a.build)
    if a.from_json:
        result = json.load(open(a.from_json))
        print(render(result, a))
        return 0
    t0 = time.monotonic()
    if a.transmem:
        cmd = [os.path.join(ROOT, "scripts", "transmem.sh"), a.transmem, a.build]
        if a.tinystm:
            cmd += ["--tinystm", a.tinystm]
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "txmem-cli", "-p", "txmem-itm",
                        "--manifest-path", os.path.join(ROOT, "Cargo.toml")], check=True)
    elif a.tinystm:
        sys.exit("--tinystm goes with --transmem (or build it with scripts/transmem.sh ... --tinystm DIR)")
    if not os.path.isdir(os.path.join(a.build, "bin")):
        sys.exit(f"{a.build}: no bin/ folder: build it first with scripts/transmem.sh TRANSMEM_DIR {a.build}")
    need = [a.txmem, a.itm_lib]
    if "tinystm" in a.runtimes and "stamp" in a.parts:
        need.append(os.path.join(a.build, "bin", "tinystm", "libitm.so.1"))
    for p in need:
        if not os.path.exists(p):
            sys.exit(f"missing {p} (cargo build --release -p txmem-cli -p txmem-itm; "
                     f"scripts/transmem.sh ... --tinystm DIR for TinySTM)")
    if any(p in a.parts for p in ("memcached", "tables", "fig11")):
        for tool, pkg in (("memcached", "memcached"), ("memcaslap", "libmemcached-tools")):
            if not shutil.which(tool) and os.geteuid() == 0 and shutil.which("apt-get"):
                print(f"installing {pkg} (for {tool})", file=sys.stderr)
                subprocess.run(["apt-get", "install", "-y", "-q", pkg], stdout=subprocess.DEVNULL)
            if not shutil.which(tool):
                sys.exit(f"needs {tool}: apt-get install {pkg}")
    result = {"machine": f"{platform.node()} {os.cpu_count()} CPUs {platform.platform()}",
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "argv": sys.argv}
    failures = []
    if "stamp" in a.parts:
        rows, fails = run_stamp(a)
        failures += fails
        result["stamp"] = rows
    if "memcached" in a.parts:
        result["memcached"] = run_memcached(a)
    if "tables" in a.parts:
        result["tables"] = tables_columns(a)
    if "fig11" in a.parts:
        result["fig11"] = run_fig11(a)
    result["failures"] = failures
    result["seconds"] = time.monotonic() - t0
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    print(render(result, a))
    print(f"\n{len(failures)} failed run(s){': ' + '; '.join(failures) if failures else ''}; "
          f"{result['seconds']:.0f} s in all")
    # The exit status is txmem's: a peer runtime's failure (ml_wt, tinystm) is listed only.
    peers = (" ml_wt ", " tinystm ")
    ours = [f for f in failures if not any(p in f for p in peers)]
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
