"""Real memcached clients against `txmem serve` on a loopback port.

pymemcache (the Python client) and libmemcached's tools (memccapable, the
conformance tester; memcslap and memcaslap, the load generators) talk to a
server started here; at the end the server is stopped with SIGTERM and its
exit report must show no serialized transaction.

Run by scripts/test.sh; TXMEM_BIN names the txmem binary to test.
"""

import os
import re
import signal
import subprocess
import threading

import pytest
from pymemcache.client.base import Client
from pymemcache.client.hash import HashClient

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
BIN = os.environ.get("TXMEM_BIN", os.path.join(ROOT, "target", "debug", "txmem"))


class Server:
    """A `txmem serve -p 0` process; `port` is read from its first line."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [BIN, "serve", "-p", "0", "-t", "2", "--stats-on-exit", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        first = self.proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", first)
        assert m, f"unexpected first line: {first!r}"
        self.port = int(m.group(1))
        self.addr = f"127.0.0.1:{self.port}"

    def stop(self):
        """SIGTERM; returns the exit report (what it printed after the first line)."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {out}"
        return out


def assert_no_serialization(report):
    m = re.search(
        r"switched to irrevocable mid-flight (\d+), started irrevocable (\d+), "
        r"serialized after aborts (\d+)",
        report,
    )
    assert m, report
    assert m.groups() == ("0", "0", "0"), report


@pytest.fixture
def server():
    s = Server()
    yield s
    if s.proc.poll() is None:
        assert_no_serialization(s.stop())


def client(s):
    return Client(("127.0.0.1", s.port), default_noreply=False, timeout=10)


def test_pymemcache_commands(server):
    c = client(server)
    assert c.set("a", b"hello", expire=0)
    assert c.get("a") == b"hello"
    assert c.add("a", b"x") is False
    assert c.add("b", b"2")
    assert c.replace("nope", b"x") is False
    assert c.append("a", b" world")
    assert c.prepend("a", b">")
    assert c.get("a") == b">hello world"
    assert c.get_many(["a", "b", "zz"]) == {"a": b">hello world", "b": b"2"}
    value, cas = c.gets("b")
    assert c.cas("b", b"3", cas) is True
    assert c.cas("b", b"4", cas) is False
    assert c.incr("b", 10) == 13
    assert c.decr("b", 20) == 0
    assert c.incr("missing", 1) is None
    assert c.touch("b", 100)
    assert c.delete("b")
    assert not c.delete("b")
    # Binary-safe values: line endings and every byte.
    blob = bytes(range(256)) + b"\r\nEND\r\n"
    assert c.set("blob", blob)
    assert c.get("blob") == blob
    # The largest item (1 MiB by default) and one byte more.
    assert c.set("big", b"x" * (1 << 20))
    assert len(c.get("big")) == 1 << 20
    with pytest.raises(Exception):
        c.set("big", b"x" * ((1 << 20) + 1))
    assert c.get("big") is None
    stats = c.stats()
    assert stats[b"cmd_set"] >= 8
    assert c.version().startswith(b"1.6.18")
    assert c.flush_all()
    assert c.get("a") is None


def test_pymemcache_concurrent_incr_and_cas(server):
    c = client(server)
    c.set("n", b"0")
    c.set("c", b"0")
    threads, rounds = 8, 200

    def work():
        mine = client(server)
        for _ in range(rounds):
            mine.incr("n", 1)
            while True:
                value, cas = mine.gets("c")
                if mine.cas("c", str(int(value) + 1).encode(), cas):
                    break

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert int(c.get("n")) == threads * rounds
    assert int(c.get("c")) == threads * rounds


def test_two_servers_behind_one_client():
    """Sharding: a consistent-hashing client spreads keys over two servers."""
    a, b = Server(), Server()
    try:
        ring = HashClient([("127.0.0.1", a.port), ("127.0.0.1", b.port)], default_noreply=False)
        for i in range(1000):
            assert ring.set(f"user:{i}", str(i).encode())
        for i in range(1000):
            assert ring.get(f"user:{i}") == str(i).encode()
        held = [int(client(s).stats()[b"curr_items"]) for s in (a, b)]
        assert sum(held) == 1000
        assert min(held) > 300, held
    finally:
        for s in (a, b):
            assert_no_serialization(s.stop())


def run(cmd, timeout=120):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_memccapable_text_and_binary(server):
    code, out = run(["memccapable", "-h", "127.0.0.1", "-p", str(server.port)])
    assert code == 0 and "All tests passed" in out, out


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("test", ["set", "get", "mget"])
def test_memcslap(server, test, binary):
    cmd = ["memcslap", f"--servers={server.addr}", f"--test={test}", "--concurrency=4",
           "--execute-number=2000"]
    if binary:
        cmd.append("--binary")
    code, out = run(cmd)
    assert code == 0, out
    assert "error" not in out.lower(), out


@pytest.mark.parametrize("binary", [False, True])
def test_memcaslap(server, binary):
    cmd = ["memcaslap", "-s", server.addr, "-T", "2", "-c", "16", "-t", "2s", "-v", "0.05"]
    if binary:
        cmd.append("-B")
    code, out = run(cmd)
    assert code == 0, out
    assert "CLIENT_ERROR" not in out and "SERVER_ERROR" not in out, out
    m = re.search(r"verify_failed:\s*(\d+)", out)
    assert m and m.group(1) == "0", out
    assert re.search(r"TPS:\s*\d+", out), out
