#!/usr/bin/env bash
# Installs what the memcached client tests need, if missing:
#   libmemcached's tools (memccapable, memcslap, memcaslap) from Debian,
#   and a Python virtual environment at target/py with pymemcache and pytest, and Dask's
#   distributed scheduler for the simulator's distributed sweep (scripts/sim-dask.py).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v memccapable >/dev/null || ! command -v memcaslap >/dev/null; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "client-deps: need root or sudo to install libmemcached-tools" >&2; exit 1; }
        sudo="sudo"
    fi
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q libmemcached-tools
fi

if [ ! -x target/py/bin/pytest ] || ! target/py/bin/python -c 'import pymemcache, distributed' 2>/dev/null; then
    python3 -m venv target/py
    target/py/bin/pip install -q --disable-pip-version-check 'pymemcache>=4,<5' 'pytest>=7' \
        'distributed>=2024,<2027'
fi
