"""`index-pack --promisor` in a partial clone, against Git's, when a fetched pack's objects
link to objects made locally: a commit whose parent is a local commit, a tree naming a local
tree and a local blob.

Git 2.48 and later then pack those local objects into a promisor pack of their own, with
`git pack-objects` (its release notes: "including these objects in the referring promisor
pack at the receiving end of the fetch"); Git 2.47 and earlier leave them where they are,
loose or in their pack. packorder does what 2.47 does: the test compares every file of the
pack directory, the loose objects, and what is in a promisor pack, with Git's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git, git_env, git_version
from helpers.routing import exec_path_routing_index_pack

GIT_PACKS_LOCAL_LINKS = git_version() >= (2, 48)


def promisor_objects(repo: Path) -> set[str]:
    """The objects of the promisor packs of `repo`."""
    found: set[str] = set()
    for promisor in (repo / ".git" / "objects" / "pack").glob("*.promisor"):
        listing = git(repo, "show-index", input=promisor.with_suffix(".idx").read_bytes()).decode()
        found.update(line.split()[1] for line in listing.splitlines())
    return found


def loose_objects(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {d.name + f.name for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def state(repo: Path) -> tuple:
    pack_dir = repo / ".git" / "objects" / "pack"
    files = sorted((p.name, p.read_bytes()) for p in pack_dir.iterdir())
    refs = git(repo, "show-ref").decode()
    return files, sorted(loose_objects(repo)), sorted(promisor_objects(repo)), refs


@pytest.mark.xfail(
    GIT_PACKS_LOCAL_LINKS, strict=True, reason="Git 2.48 packs local objects a promisor pack links to; not done"
)
def test_a_fetch_linking_to_local_objects_leaves_them_as_git_2_47_does(tmp_path: Path) -> None:
    server = Repo(tmp_path / "server")
    server.write("top", "top\n")
    server.write("d/e/f", "deep\n")
    server.commit("one")
    server.run("config", "uploadpack.allowFilter", "true")
    server.run("config", "receive.denyCurrentBranch", "updateInstead")
    url = f"file://{server.path}"
    env, log = exec_path_routing_index_pack(tmp_path)
    clients = {who: tmp_path / f"{who}-client" for who in ("git", "packorder")}
    for client in clients.values():
        git(None, "clone", "-q", "--filter=blob:none", url, str(client))
    for client in clients.values():
        # Made here and pushed (the same commit in both clones: fixed dates)...
        (client / "local" / "sub").mkdir(parents=True)
        (client / "local" / "sub" / "x").write_text("made in the clone\n")
        (client / "top").write_text("changed in the clone\n")
        git(client, "add", "-A")
        git(client, "commit", "-q", "-m", "local")
        git(client, "push", "-q", "origin", "main")
    linked = {*git(client, "rev-parse", "HEAD", "HEAD:local/sub", "HEAD:top").decode().split()}
    # ... and built upon on the server: its next commit has the local one as its parent, and
    # its tree a new tree `local` naming the local tree `sub`, and the local blob `top`.
    server.run("reset", "-q", "--hard")
    server.write("local/more", "made on the server\n")
    server.commit("server")
    outcomes = {}
    for who, fetch_env in (("git", git_env()), ("packorder", env)):
        client = clients[who]
        assert linked <= loose_objects(client)
        fetched = subprocess.run(
            ["git", "-C", str(client), "fetch", "-q", "origin"], env=fetch_env, capture_output=True
        )
        assert fetched.returncode == 0, fetched.stderr
        fsck = subprocess.run(["git", "-C", str(client), "fsck", "--no-dangling"], env=git_env(), capture_output=True)
        assert fsck.returncode == 0, fsck.stderr
        outcomes[who] = state(client)
    assert outcomes["packorder"] == outcomes["git"]
    files, loose, in_promisor, _ = outcomes["git"]
    assert any("--promisor" in line for line in log.read_text().splitlines())
    assert len([name for name, _ in files if name.endswith(".promisor")]) >= 2
    # What the fetched pack links to and the clone made stays outside every promisor pack.
    fetched_commit = git(clients["git"], "rev-parse", "origin/main").decode().strip()
    assert fetched_commit in in_promisor and not linked & set(in_promisor) and linked <= set(loose)
