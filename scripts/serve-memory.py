#!/usr/bin/env python3
"""Resident memory of `txmem serve` beside memcached's, both with `-m 16`,
under clients that misbehave.

    scripts/serve-memory.py [--seconds 60] [--txmem BIN] [--memcached BIN]
                            [--only SCENARIO ...] [--markdown FILE]

Scenarios (each on a fresh server of each kind, on 127.0.0.1):

  pipelined-gets  4 clients pipelining `get` of a 1 MB value, never reading
                  a reply, for --seconds
  multi-get       one `get` naming a 1 MB key 3,000 times, never read
  idle            10,000 connections that send nothing
  set-flood       3 GB of `set`s of 32 KB values under distinct keys
                  (4 clients, replies read)

Prints, per scenario and server, the peak RSS (sampled every 50 ms from
/proc) and the RSS at the end; then the limits the issue sets: txmem's peak
at most 64 MB and at most 1.5 times memcached's. Exits non-zero if a
scenario is over. Builds txmem (release) unless --txmem is given; installs
memcached with apt if it is missing.
"""

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALUE = 1_000_000  # "1 MB", within memcached's default 1 MiB item limit
LIMIT_MB = 64
RATIO = 1.5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler:
    """Samples a process's RSS until stopped; keeps the peak."""

    def __init__(self, pid):
        self.pid, self.peak, self.last = pid, 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            self.last = rss_kb(self.pid)
            self.peak = max(self.peak, self.last)
            time.sleep(0.05)

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.last = rss_kb(self.pid) or self.last
        return self.peak, self.last


def start(kind, binary, port):
    common = ["-p", str(port), "-l", "127.0.0.1", "-m", "16", "-c", "12000", "-t", "4"]
    if kind == "txmem":
        cmd = [binary, "serve", *common]
    else:
        cmd = [binary, "-U", "0", *common]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{kind} did not start: {cmd}")


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_line(s):
    buf = b""
    while not buf.endswith(b"\r\n"):
        chunk = s.recv(1)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def store_value(port, key=b"big"):
    s = connect(port)
    s.sendall(b"set %s 0 0 %d\r\n" % (key, VALUE) + b"v" * VALUE + b"\r\n")
    reply = read_line(s)
    assert reply == b"STORED\r\n", reply
    s.close()


def pipelined_gets(port, seconds):
    store_value(port)
    stop = time.time() + seconds
    socks = [connect(port) for _ in range(4)]
    for s in socks:
        s.setblocking(False)
    batch = b"get big\r\n" * 1000
    while time.time() < stop:
        for s in socks:
            try:
                s.send(batch)
            except BlockingIOError:
                pass
        time.sleep(0.01)
    return socks


def multi_get(port, seconds):
    store_value(port)
    s = connect(port)
    s.sendall(b"get" + b" big" * 3000 + b"\r\n")
    time.sleep(min(seconds, 10))
    return [s]


def idle(port, seconds):
    socks = []
    for _ in range(10_000):
        socks.append(connect(port))
    # Each server answers one request on some connections, so they are
    # known to be served, not only queued in the backlog.
    for s in socks[::500]:
        s.sendall(b"version\r\n")
        assert read_line(s).startswith(b"VERSION"), "not served"
    time.sleep(min(seconds, 10))
    return socks


def set_flood(port, seconds):
    total = 3 << 30
    size = 32 << 10
    value = b"x" * size
    per_client = total // 4

    def client(n):
        s = connect(port)
        replies = [0]

        def reader():
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return
                buf += chunk
                replies[0] += buf.count(b"\r\n")
                buf = buf[buf.rfind(b"\r\n") + 2 :] if b"\r\n" in buf else buf

        r = threading.Thread(target=reader, daemon=True)
        r.start()
        sent, i = 0, 0
        while sent < per_client:
            chunk = b"".join(
                b"set k%d-%d 0 0 %d\r\n" % (n, i + j, size) + value + b"\r\n" for j in range(16)
            )
            s.sendall(chunk)
            sent += len(chunk)
            i += 16
        # Every reply read before the connection goes.
        deadline = time.time() + 60
        while replies[0] < i and time.time() < deadline:
            time.sleep(0.05)
        s.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return []


SCENARIOS = {
    "pipelined-gets": pipelined_gets,
    "multi-get": multi_get,
    "idle": idle,
    "set-flood": set_flood,
}


def measure(kind, binary, scenario, seconds):
    port = free_port()
    proc = start(kind, binary, port)
    sampler = Sampler(proc.pid)
    began = time.time()
    held = SCENARIOS[scenario](port, seconds)
    elapsed = time.time() - began
    peak, last = sampler.finish()
    for s in held:
        s.close()
    alive = proc.poll() is None
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    return {"peak": peak / 1024, "end": last / 1024, "seconds": elapsed, "alive": alive}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--txmem")
    ap.add_argument("--memcached")
    ap.add_argument("--only", nargs="*", choices=list(SCENARIOS))
    ap.add_argument("--markdown", help="also write the table here")
    args = ap.parse_args()

    # The idle scenario holds 10,000 sockets here and 10,000 in the server.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 12_500:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65_536), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 12_500:
        raise SystemExit("need 12,500 file descriptors for the idle scenario (ulimit -n)")

    txmem = args.txmem
    if not txmem:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "txmem-cli"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        txmem = os.path.join(target, "release", "txmem")
    memcached = args.memcached or shutil.which("memcached")
    if not memcached:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "update", "-q"], check=True)
        subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "memcached"], check=True)
        memcached = shutil.which("memcached")
    version = subprocess.run([memcached, "-V"], capture_output=True, text=True).stdout.strip()

    rows = []
    ok = True
    for scenario in args.only or list(SCENARIOS):
        m = measure("memcached", memcached, scenario, args.seconds)
        t = measure("txmem", txmem, scenario, args.seconds)
        ratio = t["peak"] / m["peak"] if m["peak"] else float("inf")
        good = t["peak"] <= LIMIT_MB and ratio <= RATIO and t["alive"]
        ok &= good
        rows.append((scenario, t, m, ratio, good))
        print(
            f"{scenario:15} txmem peak {t['peak']:7.1f} MB end {t['end']:7.1f} MB | "
            f"memcached peak {m['peak']:7.1f} MB end {m['end']:7.1f} MB | "
            f"ratio {ratio:4.2f} {'ok' if good else 'OVER'}",
            flush=True,
        )
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"Peak RSS with `-m 16`, {version} beside `txmem serve` (same run, same machine).\n\n")
            f.write("| scenario | txmem peak | txmem end | memcached peak | memcached end | txmem / memcached |\n")
            f.write("|---|---:|---:|---:|---:|---:|\n")
            for scenario, t, m, ratio, good in rows:
                f.write(
                    f"| {scenario} | {t['peak']:.1f} MB | {t['end']:.1f} MB | {m['peak']:.1f} MB | "
                    f"{m['end']:.1f} MB | {ratio:.2f}{'' if good else ' (over)'} |\n"
                )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
