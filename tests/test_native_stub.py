"""packorder/_native.pyi describes the native module as built: mypy's stubtest imports it,
compares every function, class, method, property and constant with the stub, and reports
any the stub lacks or the module does not have."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import packorder

ROOT = Path(packorder.__file__).resolve().parent.parent


def test_the_stub_matches_the_native_module(tmp_path: Path) -> None:
    # MYPYPATH and PYTHONPATH: the stub and the module of this tree, whatever is installed.
    paths = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "MYPYPATH": str(ROOT), "PYTHONPATH": paths}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", os.devnull, "packorder._native"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout, proc.stdout
