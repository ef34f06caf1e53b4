#!/usr/bin/env python3
"""Runs a `txmem sim` experiment or sweep on a Dask cluster.

A sweep's points are independent, deterministic simulations, so any engine can run them
and the rows come out the same. This script asks `txmem sim ... --plan` for the points,
runs each on a Dask worker (`txmem sim points`, the point on its standard input), and
appends every finished point to a checkpoint file as it arrives. The same `txmem sim`
command with `--checkpoint FILE` then reads the points back and writes the table, JSON and
plot without simulating anything. Points already in the checkpoint are not sent again, so
an interrupted run resumes.

    scripts/sim-dask.py --checkpoint fig3.jsonl [--scheduler tcp://host:8786] \\
        -- rwle-hashmap --preset power8 --scenario hc-hc
    txmem sim rwle-hashmap --preset power8 --scenario hc-hc --checkpoint fig3.jsonl --json fig3.json

Without --scheduler it starts a local cluster (one worker process per core). The workers
need the `txmem` binary at the path given by --txmem (the default is `txmem` on PATH).

Dask rather than Ray: a point is one call of a binary with a small input and output, which
Dask's distributed scheduler runs as a plain Python function with nothing else to set up;
its wheels are pure Python and a local cluster starts in-process, which keeps the test that
runs a sweep on it small.
"""

import argparse
import json
import subprocess
import sys


def run_point(txmem, point_line):
    """Runs one point on a worker; returns its checkpoint line."""
    done = subprocess.run(
        [txmem, "sim", "points"],
        input=point_line,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"txmem sim points failed: {done.stderr.strip()}")
    return done.stdout.strip()


def already_done(path):
    """The configurations the checkpoint holds (a cut-off last line is ignored)."""
    done = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    done.append(json.loads(line)["config"])
                except (json.JSONDecodeError, KeyError):
                    pass
    except FileNotFoundError:
        pass
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="JSON-lines file of finished points")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler")
    ap.add_argument("--workers", type=int, help="local cluster: worker processes")
    ap.add_argument("--txmem", default="txmem", help="the txmem binary (on every worker)")
    ap.add_argument("sim_args", nargs=argparse.REMAINDER, help="-- then txmem sim's arguments")
    a = ap.parse_args()
    sim_args = a.sim_args[1:] if a.sim_args[:1] == ["--"] else a.sim_args
    if not sim_args:
        ap.error("give txmem sim's arguments after --")

    plan = subprocess.run(
        [a.txmem, "sim", *sim_args, "--plan"], capture_output=True, text=True, check=False
    )
    if plan.returncode != 0:
        sys.exit(f"txmem sim --plan failed: {plan.stderr.strip()}")
    points = [line for line in plan.stdout.splitlines() if line.strip()]
    done = already_done(a.checkpoint)
    todo = [p for p in points if json.loads(p)["config"] not in done]
    print(f"{len(points)} points, {len(points) - len(todo)} already done", file=sys.stderr)
    if not todo:
        return

    from dask.distributed import Client, LocalCluster, as_completed

    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True)
        client = Client(cluster)
    try:
        futures = [client.submit(run_point, a.txmem, p, pure=False) for p in todo]
        with open(a.checkpoint, "a", encoding="utf-8") as out:
            for n, fut in enumerate(as_completed(futures), 1):
                out.write(fut.result() + "\n")
                out.flush()
                print(f"{n}/{len(todo)}", file=sys.stderr)
    finally:
        client.close()


if __name__ == "__main__":
    main()
