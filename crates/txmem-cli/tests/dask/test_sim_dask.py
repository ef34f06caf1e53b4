"""A simulator sweep run on a local Dask cluster by scripts/sim-dask.py gives the rows a
local `txmem sim` run gives, and a second run resumes from the checkpoint."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
TXMEM = os.environ.get("TXMEM_BIN", str(ROOT / "target" / "debug" / "txmem"))
SWEEP = ["sweep", "--param", "cores", "--values", "1,2,4", "--increments", "20"]


def rows(path):
    """The report's rows without the host_* metrics (which measure the host)."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    return [
        (r["params"], {k: v for k, v in r["metrics"].items() if not k.startswith("host_")})
        for r in report["results"]
    ]


def dask_run(ckpt):
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sim-dask.py"), "--checkpoint", str(ckpt),
         "--workers", "2", "--txmem", TXMEM, "--", *SWEEP],
        capture_output=True, text=True, check=True, timeout=300,
    )


def test_a_sweep_on_dask_matches_the_local_run(tmp_path):
    ckpt = tmp_path / "points.jsonl"
    first = dask_run(ckpt)
    assert "3 points, 0 already done" in first.stderr
    lines = ckpt.read_text().splitlines()
    assert len(lines) == 3

    # The report from the checkpoint (nothing simulated) and a local run agree.
    from_dask, local = tmp_path / "dask.json", tmp_path / "local.json"
    subprocess.run([TXMEM, "sim", *SWEEP, "-q", "--checkpoint", str(ckpt), "--json",
                    str(from_dask)], check=True, capture_output=True, timeout=120)
    subprocess.run([TXMEM, "sim", *SWEEP, "-q", "-j", "1", "--json", str(local)],
                   check=True, capture_output=True, timeout=120)
    assert rows(from_dask) == rows(local)
    assert ckpt.read_text().splitlines() == lines, "reading back added no point"

    # Run again: every point is already done, nothing is sent to the cluster.
    again = dask_run(ckpt)
    assert "3 points, 3 already done" in again.stderr
    assert len(ckpt.read_text().splitlines()) == 3
