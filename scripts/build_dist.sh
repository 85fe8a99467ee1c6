#!/usr/bin/env bash
# Build packorder's release files into dist/ (or $1): the sdist, and one abi3 wheel for
# CPython 3.11+ on manylinux2014 (glibc 2.17 and later), linked with zig so that it runs on
# systems older than the one that built it. Installing the wheel needs no Rust and no C
# compiler; tests/test_wheel.py installs one into a fresh virtual environment without them.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
python3 -m pip install -q 'maturin>=1.5,<2' 'ziglang>=0.11,<0.14'
python3 -m maturin sdist --out "$out"
python3 -m maturin build --release --zig --compatibility manylinux2014 --out "$out"
ls -l "$out"
