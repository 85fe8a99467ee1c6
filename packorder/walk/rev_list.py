"""Git's walks, run as `git rev-list` and `git show-ref` beside the rest of the work: every
reachable object (when `packorder.walk = git`, or where our walk leaves it to Git), the
unreleased history, HEAD's commits with their root trees, the tag tips; and `object_walk`,
which chooses between Git's walk and ours (walk/native.py)."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import threading
from pathlib import Path

from packorder import _native, gitcmd
from packorder.errors import RepositoryError, UsageError
from packorder.format.object_format import ObjectFormat
from packorder.walk import native as native_walk
from packorder.walk.native import graft_roots

IN_COMMIT_ORDER = ("--in-commit-order",)
# What the default branch (HEAD) holds that no tag does: the unreleased history a fetch from
# the last release wants (the `history` order writes the blob families it touches first).
# Only HEAD: on libgit2 every branch's unreleased blobs lie in families of 48 of the 67 MB of
# blobs, HEAD's in 12 MB, so gathering all of them gathered little (docs/locality.md).
# --ignore-missing: an unborn HEAD walks nothing instead of failing the repack.
UNRELEASED = ("--ignore-missing", "HEAD", "--not", "--tags")


class GitObjectWalk:
    """`git rev-list --objects` of everything, read and parsed natively (without the GIL) in a
    thread as it streams, so the caller can do other work meanwhile. Reading it from Python
    stalled Git on a full pipe whenever imports held the GIL."""

    def __init__(
        self,
        git_dir: Path,
        fmt: ObjectFormat,
        missing_ok: bool,
        extra: tuple[str, ...] = (),
        revs: tuple[str, ...] | None = None,
    ) -> None:
        """`revs`: the revisions to walk; by default every ref, reflog and index entry. Git
        prints ids of `fmt`, the repository's hash."""
        # Git prints the same commits and the same other objects in the same order with
        # --in-commit-order as without, only interleaved (checked on libgit2, redis and git/git:
        # docs/repack.md); so one such walk gives the discovery order and each object's
        # introducing commit.
        self.in_commit_order = "--in-commit-order" in extra
        self._result: tuple[bytes, bytes, bytes] | None = None
        args = [gitcmd.GIT, "--git-dir", str(git_dir), "rev-list", "--objects", *extra]
        roots: list[str] = []
        if revs is not None:
            args += revs
        else:
            args += ["--all", "--reflog"]
            if (git_dir / "index").exists():
                args.append("--indexed-objects")
            roots = graft_roots(git_dir)
            if roots:
                args += ["--ignore-missing", "--stdin"]
        if missing_ok:
            args.append("--missing=print")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if roots else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=gitcmd.git_env(),
        )
        if roots:
            assert self.proc.stdin is not None
            # rev-list reads all of its standard input before it prints anything.
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write("".join(r + "\n" for r in roots).encode())
            self.proc.stdin.close()
        self.parser = _native.RevList(fmt.name)
        self.error: BaseException | None = None
        self.stderr = b""
        self.thread = threading.Thread(target=self._pump, name="packorder-rev-list", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        try:
            self.parser.feed_fd(self.proc.stdout.fileno())
        except BaseException as e:  # reported by result()
            self.error = e
            self.proc.kill()
        self.stderr = self.proc.stderr.read()

    def result(self) -> native_walk.Walked:
        """The objects in the order Git printed them; the same again on later calls."""
        if self._result is not None:
            return self._result
        self.thread.join()
        code = self.proc.wait()
        if self.error is not None:
            raise RepositoryError(f"cannot list the repository's objects: {self.error}")
        if code != 0:
            raise native_walk.walk_failed(self.stderr, code)
        self._result = self.parser.finish()
        return self._result

    def graph(self) -> None:
        """Git's walk records no graph: a bitmap reads it from the new pack."""
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.thread.join()
        self.proc.wait()


class GitBeside:
    """A Git command run beside the walk, its output kept in temporary files: nothing reads it
    until the walk is done, and in a pipe Git would stop once 64 KiB wait there (git/git's
    HEAD lists 6.7 MB of commits; `show-ref -d` of about 700 tags fills a pipe)."""

    def __init__(self, git_dir: Path, *args: str) -> None:
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            [gitcmd.GIT, "--git-dir", str(git_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            env=gitcmd.git_env(),
        )

    def output(self) -> tuple[int, bytes, bytes]:
        """Its exit status, standard output and standard error, once it has ended."""
        code = self.proc.wait()
        self.out.seek(0)
        self.err.seek(0)
        return code, self.out.read(), self.err.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.out.close()
        self.err.close()


class HeadWalk:
    """`git rev-list HEAD` with each commit's root tree, run beside the walk, for the `paths`
    order (head_side.py). An unborn HEAD holds nothing."""

    def __init__(self, git_dir: Path, fmt: ObjectFormat) -> None:
        self.fmt = fmt
        args = ("rev-list", "--no-commit-header", "--format=%H %T", "--ignore-missing", "HEAD")
        self.git = GitBeside(git_dir, *args)

    def result(self) -> tuple[bytes, bytes]:
        """HEAD's commits and their root trees, ids one after another."""
        code, out, err = self.git.output()
        if code != 0:
            line = err.decode(errors="replace").strip().splitlines()
            raise RepositoryError(f"cannot walk HEAD's commits: {line[-1] if line else 'git rev-list failed'}")
        width = 2 * self.fmt.rawsz
        text = out.decode("ascii", errors="replace").split()
        if len(text) % 2 or any(len(t) != width for t in text):
            raise RepositoryError("cannot walk HEAD's commits: unexpected output from git rev-list")
        try:
            commits, trees = bytes.fromhex("".join(text[0::2])), bytes.fromhex("".join(text[1::2]))
        except ValueError:
            raise RepositoryError("cannot walk HEAD's commits: unexpected output from git rev-list") from None
        return commits, trees

    def stop(self) -> None:
        self.git.stop()


class TagTips:
    """`git show-ref --tags -d`, run beside the walk: each tag ref's target and what it peels to."""

    def __init__(self, git_dir: Path) -> None:
        self.git = GitBeside(git_dir, "show-ref", "--tags", "-d")

    def ids(self) -> list[bytes]:
        # show-ref exits 1 when there is no tag: no tag tips, not an error.
        _, out, _ = self.git.output()
        return sorted({bytes.fromhex(line.split()[0]) for line in out.decode().splitlines() if line.strip()})

    def stop(self) -> None:
        self.git.stop()


def object_walk(
    git_dir: Path,
    fmt: ObjectFormat,
    config: gitcmd.Config,
    packs: list[Path],
    loose: list[tuple[bytes, Path]],
    promisor: bool,
    in_commit_order: bool,
    record_graph: bool = False,
) -> GitObjectWalk | native_walk.NativeWalk:
    """The walk of every reachable object over `packs` and `loose` (alternates' included):
    `packorder.walk` chooses Git's or ours."""
    choice = config.get("packorder.walk") or "native"
    if choice not in native_walk.WALKS:
        raise UsageError(f"packorder.walk is {choice!r}: it is one of {', '.join(native_walk.WALKS)}")

    def gits() -> GitObjectWalk:
        return GitObjectWalk(git_dir, fmt, missing_ok=promisor, extra=IN_COMMIT_ORDER if in_commit_order else ())

    if choice == "native":
        walk = native_walk.start(
            git_dir, packs, loose, promisor, in_commit_order, config, gits, record_graph=record_graph
        )
        if walk is not None:
            return walk
    return gits()
