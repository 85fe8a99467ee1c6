"""The wheel: built by maturin as one abi3 wheel, installed into a fresh virtual environment
where no Rust toolchain is on PATH, it indexes a pack byte for byte as Git does, repacks a
repository, and `git packorder --help` finds its manual page. Also: the committed manual
pages are the commands' current help (packorder/cli/manpage.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git_env

from packorder.cli import manpage

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_manual_pages_are_current() -> None:
    for page in manpage.PAGES:
        assert (manpage.MAN_DIR / page).read_text() == manpage.render(page), (
            f"{page} is stale: run `python -m packorder.cli.manpage`"
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a fresh venv with the wheel installed: its bin, Git's, the
    system's; no cargo, no rustc."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--release", "--out", str(work / "dist")],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = (work / "dist").glob("packorder-*-abi3-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    git_bin = str(Path(shutil.which("git") or "/usr/bin/git").parent)
    path = os.pathsep.join([str(venv / "bin"), git_bin, "/usr/bin", "/bin"])
    assert shutil.which("cargo", path=path) is None and shutil.which("rustc", path=path) is None
    env = {**git_env(), "PATH": path, "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)]
    proc = subprocess.run(pip, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return env


def test_the_wheel_works_without_rust(installed: dict[str, str], tmp_path: Path) -> None:
    env = installed
    repo = build_history(tmp_path / "repo", commits=30).path
    subprocess.run(["git", "-C", str(repo), "repack", "-adq"], check=True, env=env)
    (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
    ours = tmp_path / "ours.idx"
    index = ["packorder", "index-pack", "-o", str(ours), str(pack)]
    proc = subprocess.run(index, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ours.read_bytes() == pack.with_suffix(".idx").read_bytes()
    where = subprocess.run(
        ["python", "-c", "import packorder, packorder._native as n; print(n.__file__, packorder.__version__)"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(env["VIRTUAL_ENV"]), where.stdout + where.stderr

    proc = subprocess.run(["packorder", "repack", "-q", str(repo)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    subprocess.run(["git", "-C", str(repo), "fsck", "--full"], check=True, env=env, capture_output=True)


@pytest.mark.skipif(shutil.which("man") is None, reason="no man(1) on this machine")
def test_git_packorder_help_opens_the_manual_page(installed: dict[str, str]) -> None:
    env = {**installed, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80"}
    env.pop("MANPATH", None)
    proc = subprocess.run(["git", "packorder", "--help"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "GIT-PACKORDER(1)" in proc.stdout and "packorder repack" in proc.stdout
