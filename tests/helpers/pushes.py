"""Repositories as a server holds them: one ordered or fully packed base, then a pack for each
push (receive.unpackLimit=1 keeps every push as a pack, as a busy server keeps its larger
ones; index-pack --fix-thin copies the bases a thin push needs into it, so pushes hold
duplicates of each other's objects), for the geometric repack and the multi-pack-index."""

from __future__ import annotations

from pathlib import Path

from helpers.gitrepo import Repo, build_history, git


class Server:
    """A bare repository `git_dir` and the work repository `work` that pushes to it."""

    def __init__(self, path: Path, commits: int = 20, object_format: str = "sha1", seed: int = 7) -> None:
        self.work = build_history(path / "work", commits=commits, seed=seed, object_format=object_format)
        self.git_dir = path / "server.git"
        git(None, "clone", "-q", "--bare", "--no-local", str(self.work.path), str(self.git_dir))
        git(self.git_dir, "config", "receive.unpackLimit", "1")
        git(self.git_dir, "config", "gc.auto", "0")
        self.work.run("remote", "add", "origin", str(self.git_dir))
        self.pushes = 0

    def push(self, commits: int = 1, files: int = 2, branch: str = "main") -> None:
        """`commits` commits each changing `files` files, pushed to `branch` as one pack."""
        for _ in range(commits):
            self.pushes += 1
            for k in range(files):
                name = f"src/file{(self.pushes + k) % 5}.c"
                path = self.work.path / name
                if path.exists():
                    path.write_text(path.read_text() + f"push {self.pushes} line {k}\n")
                else:
                    self.work.write(f"pushed/p{self.pushes}-{k}.txt", f"push {self.pushes}\n")
            self.work.commit(f"push {self.pushes}")
        self.work.run("push", "-q", "origin", f"HEAD:refs/heads/{branch}")
        self._drop_receive_keeps()

    def _drop_receive_keeps(self) -> None:
        """receive-pack keeps a pushed pack with a .keep until its refs are updated, then
        removes it; the Git 2.55 snapshot's does not (it looks for the file in the push's
        quarantine). What it leaves, the push being done, goes as it should have."""
        for keep in (self.git_dir / "objects" / "pack").glob("pack-*.keep"):
            if keep.read_text(errors="replace").startswith("receive-pack "):
                keep.unlink()

    def packs(self) -> list[Path]:
        return sorted((self.git_dir / "objects" / "pack").glob("pack-*.pack"))


def server_with_pushes(path: Path, pushes: int, commits: int = 20, **kw: object) -> Server:
    server = Server(path, commits=commits, **kw)  # type: ignore[arg-type]
    git(server.git_dir, "repack", "-adq")
    for _ in range(pushes):
        server.push()
    return server


def copy_repo(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest, symlinks=True)
    return dest


__all__ = ["Repo", "Server", "copy_repo", "server_with_pushes"]
