#!/usr/bin/env python3
"""txmem serve beside memcached under the same load (memaslap).

Starts memcached and `txmem serve` on loopback ports with the same number
of worker threads, runs memcaslap (libmemcached's memaslap: 90% get, 10%
set by default) against each in turn for several rounds, and prints the
median throughput and latency of each, and their ratio. With --policies,
runs txmem serve under each contention policy instead and reports
throughput and aborts per commit (from `stats txmem`).

Needs: memcached and libmemcached-tools (Debian packages), and the release
binary (built here with cargo). Latency comes from memaslap's log2
histogram, so a percentile is known only to within a factor of two: the
table gives the bucket's upper bound.

Usage:
  scripts/bench-serve.py [--seconds 10] [--rounds 3] [--threads 2] [--concurrency 32]
  scripts/bench-serve.py --policies [--seconds 10] [--rounds 3] [--window 1k]
  scripts/bench-serve.py --policies --hot-keys 4 [--clients 4]
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TXMEM = os.path.join(ROOT, "target", "release", "txmem")
POLICIES = ["none", "backoff", "hourglass", "serialize-after=100"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc):
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited early with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"no server on port {port}")


def start(kind, threads, policy="backoff"):
    port = free_port()
    if kind == "memcached":
        cmd = ["memcached", "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", str(threads),
               "-m", "1024"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]
    else:
        cmd = [TXMEM, "serve", "-p", str(port), "-t", str(threads), "-m", "1024",
               "--contention", policy]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, proc)
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def stats(port, group=""):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"stats {group}\r\n".encode())
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    out = {}
    for line in data.decode().splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def cpu_seconds(pid):
    """User plus system CPU time of process `pid` so far (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(port, args, pid):
    """One memaslap run: throughput, latency percentiles (µs, bucket bounds)
    and the server's CPU time per operation (µs: a figure the shared
    machine's noise moves less than throughput)."""
    cpu0 = cpu_seconds(pid)
    cmd = ["memcaslap", "-s", f"127.0.0.1:{port}", "-T", str(args.threads), "-c",
           str(args.concurrency), "-t", f"{args.seconds}s", "-S", f"{args.seconds}s"]
    if args.window:
        cmd += ["-w", args.window]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 60).stdout
    cpu = cpu_seconds(pid) - cpu0
    tps = re.search(r"TPS: (\d+)", out)
    ops = int(re.search(r"Ops: (\d+)", out).group(1))
    if not tps:
        sys.exit("memcaslap printed no TPS:\n" + out)
    if "CLIENT_ERROR" in out or "SERVER_ERROR" in out:
        sys.exit("memcaslap saw error replies:\n" + out[:2000])
    total = out[out.index("Total Statistics"):]
    avg = int(re.search(r"Avg:\s+(\d+)", total).group(1))
    buckets = []  # (upper bound in µs, count)
    dist = total[total.index("Log2 Dist:"):].splitlines()[1:]
    for line in dist:
        head, _, rest = line.strip().partition(":")
        if not head.isdigit() or not rest.split():
            break
        for i, n in enumerate(rest.split()):
            buckets.append((2 ** (int(head) + i + 1), int(n)))
    count = sum(n for _, n in buckets)

    def pct(p):
        seen = 0
        for bound, n in buckets:
            seen += n
            if seen >= p * count:
                return bound
        return buckets[-1][0]

    return {"tps": int(tps.group(1)), "avg_us": avg, "p50_us": pct(0.50), "p99_us": pct(0.99),
            "cpu_us_per_op": cpu * 1e6 / max(ops, 1)}


def hot_incr_worker(port, seconds, keys, seed, counter):
    """One client: pipelined batches of `incr` on a few hot keys."""
    import random
    rng = random.Random(seed)
    with socket.create_connection(("127.0.0.1", port)) as s:
        done = 0
        end = time.time() + seconds
        while time.time() < end:
            batch = b"".join(f"incr hot{rng.randrange(keys)} 1\r\n".encode() for _ in range(100))
            s.sendall(batch)
            lines = 0
            buf = b""
            while lines < 100:
                buf += s.recv(65536)
                lines = buf.count(b"\r\n")
            done += 100
    with counter.get_lock():
        counter.value += done


def hot_incr(port, args, pid):
    """Contended load: `--clients` processes incrementing `--hot-keys` keys."""
    import multiprocessing as mp
    with socket.create_connection(("127.0.0.1", port)) as s:
        for k in range(args.hot_keys):
            s.sendall(f"set hot{k} 0 0 1\r\n0\r\n".encode())
            s.recv(100)
    counter = mp.Value("q", 0)
    cpu0 = cpu_seconds(pid)
    procs = [mp.Process(target=hot_incr_worker, args=(port, args.seconds, args.hot_keys, i, counter))
             for i in range(args.clients)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    cpu = cpu_seconds(pid) - cpu0
    # Every increment must have landed: the keys' values add up to the count.
    with socket.create_connection(("127.0.0.1", port)) as s:
        keys = " ".join(f"hot{k}" for k in range(args.hot_keys))
        s.sendall(f"get {keys}\r\n".encode())
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
    total = sum(int(line) for line in buf.decode().split("\r\n") if line.isdigit())
    assert total == counter.value, f"{counter.value} increments sent, {total} applied"
    return {"tps": counter.value / args.seconds, "p99_us": 0,
            "cpu_us_per_op": cpu * 1e6 / max(counter.value, 1)}


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def compare(args):
    results = {"memcached": [], "txmem": []}
    for r in range(args.rounds):
        # Alternate the order, so neither server always runs first.
        order = ["memcached", "txmem"] if r % 2 == 0 else ["txmem", "memcached"]
        for kind in order:
            proc, port = start(kind, args.threads)
            try:
                results[kind].append(load(port, args, proc.pid))
            finally:
                stop(proc)
            print(f"round {r + 1} {kind}: {results[kind][-1]}", file=sys.stderr)
    print(f"memaslap -T {args.threads} -c {args.concurrency} -t {args.seconds}s "
          f"(90% get, 10% set), servers with {args.threads} threads; medians of {args.rounds}")
    print(f"{'server':<10} {'ops/s':>10} {'avg µs':>8} {'p50 µs ≤':>9} {'p99 µs ≤':>9} "
          f"{'CPU µs/op':>10}")
    for kind in ("memcached", "txmem"):
        runs = results[kind]
        print(f"{kind:<10} {median_of(runs, 'tps'):>10.0f} {median_of(runs, 'avg_us'):>8.0f} "
              f"{median_of(runs, 'p50_us'):>9.0f} {median_of(runs, 'p99_us'):>9.0f} "
              f"{median_of(runs, 'cpu_us_per_op'):>10.2f}")
    ratio = median_of(results["txmem"], "tps") / median_of(results["memcached"], "tps")
    cpu = median_of(results["txmem"], "cpu_us_per_op") / median_of(results["memcached"], "cpu_us_per_op")
    print(f"txmem / memcached: throughput {ratio:.2f}, CPU per operation {cpu:.2f}")
    return results


def policies(args):
    results = {}
    for r in range(args.rounds):
        for policy in POLICIES:
            proc, port = start("txmem", args.threads, policy)
            try:
                before = stats(port, "txmem")
                run = (hot_incr if args.hot_keys else load)(port, args, proc.pid)
                after = stats(port, "txmem")
            finally:
                stop(proc)
            commits = int(after["commits"]) - int(before["commits"])
            aborts = int(after["aborts"]) - int(before["aborts"])
            run["aborts_per_commit"] = aborts / max(commits, 1)
            run["serialized"] = int(after["serialized_after_aborts"])
            results.setdefault(policy, []).append(run)
            print(f"round {r + 1} {policy}: {run}", file=sys.stderr)
    if args.hot_keys:
        print(f"txmem serve -t {args.threads}, {args.clients} clients pipelining `incr` on "
              f"{args.hot_keys} keys for {args.seconds}s; medians of {args.rounds}")
    else:
        window = f" -w {args.window}" if args.window else ""
        print(f"txmem serve -t {args.threads} under memaslap -T {args.threads} -c "
              f"{args.concurrency} -t {args.seconds}s{window}; medians of {args.rounds}")
    print(f"{'policy':<20} {'ops/s':>10} {'p99 µs ≤':>9} {'aborts/commit':>14} {'serialized':>11}")
    for policy in POLICIES:
        runs = results[policy]
        print(f"{policy:<20} {median_of(runs, 'tps'):>10.0f} {median_of(runs, 'p99_us'):>9.0f} "
              f"{median_of(runs, 'aborts_per_commit'):>14.5f} {median_of(runs, 'serialized'):>11.0f}")
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--window", help="memaslap's key window per connection (e.g. 1k; default 10k): "
                   "smaller windows mean fewer keys and more conflicts")
    p.add_argument("--policies", action="store_true", help="compare txmem's contention policies")
    p.add_argument("--hot-keys", type=int, default=0,
                   help="with --policies: instead of memaslap, clients pipelining `incr` on this "
                        "many keys (every increment of a key conflicts with the others)")
    p.add_argument("--clients", type=int, default=4, help="client processes for --hot-keys")
    p.add_argument("--json", help="write every run's figures to this file")
    args = p.parse_args()
    for tool in ["memcaslap"] + ([] if args.policies else ["memcached"]):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install memcached libmemcached-tools")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "txmem-cli"], cwd=ROOT, check=True)
    results = policies(args) if args.policies else compare(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
