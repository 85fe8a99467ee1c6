"""index-pack's object checks (--strict, --fsck-objects, --check-self-contained-and-connected)
against Git's own: the same exit status, the same lines on stderr and stdout, for objects that
break each of fsck's rules. The packs are written byte by byte (packbuilder), so they can hold
objects Git would not write."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.commands import run_cli
from helpers.gitrepo import git, git_env, git_version
from helpers.packbuilder import PackBuilder, object_id

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
IDENT = "A U Thor <author@example.com> 1234567890 +0000"
EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")


def tree(*entries: tuple[str, str, bytes]) -> bytes:
    """A tree's bytes from (mode text, name, id), in the order given."""
    return b"".join(f"{mode} {name}".encode() + b"\0" + oid for mode, name, oid in entries)


def commit(tree_id: bytes = EMPTY_TREE, *, author: str = IDENT, committer: str = IDENT, extra: str = "") -> bytes:
    return f"tree {tree_id.hex()}\n{extra}author {author}\ncommitter {committer}\n\nmessage\n".encode()


def tag(target: bytes, kind: str = "commit", name: str = "v1", tagger: str | None = IDENT, extra: str = "") -> bytes:
    head = f"object {target.hex()}\ntype {kind}\ntag {name}\n"
    if tagger is not None:
        head += f"tagger {tagger}\n"
    return (head + extra + "\nmessage\n").encode()


def pack_of(objects: list[tuple[int, bytes]]) -> bytes:
    b = PackBuilder()
    for kind, data in objects:
        b.whole(kind, data)
    return b.build()


def repo_holding(path: Path, populate: list[tuple[int, bytes]]) -> Path:
    """A new bare repository at `path` holding the objects `populate` lists (loose)."""
    git(None, "init", "-q", "--bare", str(path))
    for kind, data in populate:
        kind_name = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}[kind]
        git(path, "hash-object", "--literally", "-w", "--stdin", "-t", kind_name, input=data)
    return path


def run_both(tmp_path: Path, pack: bytes, *args: str, populate: list[tuple[int, bytes]] = ()) -> tuple:
    """Git's index-pack and ours on the same pack, each in a repository of its own holding
    `populate`: (Git's result, ours)."""
    results = []
    for who in ("git", "ours"):
        repo = repo_holding(tmp_path / who, populate)
        path = tmp_path / f"{who}.pack"
        path.write_bytes(pack)
        if who == "git":
            proc = subprocess.run(["git", "index-pack", *args, str(path)], capture_output=True, cwd=repo, env=git_env())
        else:
            proc = run_cli("index-pack", *args, str(path), cwd=repo)
        results.append(proc)
    return results[0], results[1]


def same(theirs: subprocess.CompletedProcess, ours: subprocess.CompletedProcess) -> None:
    """The same status and lines. Where Git fails only after it has written the pack's index
    (its last checks, of .gitmodules blobs it read before the tree naming them), it has
    printed the pack's name already; we make those checks before anything is written and
    print nothing on stdout then."""
    if theirs.returncode == 128 and theirs.stdout:
        assert (ours.returncode, ours.stderr.decode(), ours.stdout) == (128, theirs.stderr.decode(), b"")
        return
    assert (ours.returncode, ours.stderr.decode(), ours.stdout) == (
        theirs.returncode,
        theirs.stderr.decode(),
        theirs.stdout,
    )


BLOB_X = (BLOB, b"x\n")
X_ID = object_id(BLOB, b"x\n")

COMMITS = {
    "good": commit(),
    "missing email": commit(author="A U Thor"),
    "missing name before email": commit(author="<a@b> 1 +0000"),
    "missing space before email": commit(author="A U Thor<a@b> 1 +0000"),
    "bad name": commit(author="A > U <a@b> 1 +0000"),
    "bad email": commit(author="A U Thor <a<b> 1 +0000"),
    "missing space before date": commit(author="A U Thor <a@b>1 +0000"),
    "bad date": commit(author="A U Thor <a@b> x +0000"),
    "zero-padded date": commit(author="A U Thor <a@b> 0123 +0000"),
    "date overflow": commit(author="A U Thor <a@b> 99999999999999999999 +0000"),
    "bad time zone": commit(committer="A U Thor <a@b> 1 +00"),
    "extra spaces before the date": commit(author="A U Thor <a@b>  \t 1 +0000"),
    "multiple authors": commit(extra=f"author {IDENT}\n"),
    "missing author": f"tree {EMPTY_TREE.hex()}\ncommitter {IDENT}\n\nm\n".encode(),
    "missing committer": f"tree {EMPTY_TREE.hex()}\nauthor {IDENT}\n\nm\n".encode(),
    "NUL in a header": f"tree {EMPTY_TREE.hex()}\nauthor {IDENT}\0\ncommitter {IDENT}\n\nm\n".encode(),
    "unterminated header": f"tree {EMPTY_TREE.hex()}\nauthor {IDENT}\ncommitter {IDENT}".encode(),
    "NUL in the body": commit() + b"\0after\n",
    "no tree line": f"author {IDENT}\ncommitter {IDENT}\n\nm\n".encode(),
    "bad tree id": f"tree {'z' * 40}\nauthor {IDENT}\ncommitter {IDENT}\n\nm\n".encode(),
    "bad parent id": commit(extra=f"parent {'g' * 40}\n"),
    "upper-case ids": commit(extra=f"parent {object_id(COMMIT, commit()).hex().upper()}\n").replace(
        EMPTY_TREE.hex().encode(), EMPTY_TREE.hex().upper().encode(), 1
    ),
    "a tree as the parent": commit(extra=f"parent {EMPTY_TREE.hex()}\n"),
    "a commit as the tree": commit(object_id(COMMIT, commit())),
}


@pytest.mark.parametrize("case", sorted(COMMITS))
@pytest.mark.parametrize("option", ["--strict", "--fsck-objects"])
def test_commits_are_judged_as_git_judges_them(tmp_path: Path, case: str, option: str) -> None:
    # The empty tree and a parent: with --strict the links must resolve too.
    pack = pack_of([(COMMIT, COMMITS[case]), (TREE, b"")])
    same(*run_both(tmp_path, pack, option, populate=[(COMMIT, commit())]))


TAGS = {
    "good": tag(EMPTY_TREE, "tree"),
    "missing tagger": tag(EMPTY_TREE, "tree", tagger=None),
    "bad tag name": tag(EMPTY_TREE, "tree", name="guten tag"),
    "tag name ending in .lock": tag(EMPTY_TREE, "tree", name="v1.lock"),
    "bad tagger": tag(EMPTY_TREE, "tree", tagger="T <t@x> 1 +0"),
    "unknown type": tag(EMPTY_TREE, "treeish"),
    "no tag line": f"object {EMPTY_TREE.hex()}\ntype tree\n\nm\n".encode(),
    "extra header": tag(EMPTY_TREE, "tree", extra="colour blue\n"),
    "bad tagger then an extra header": tag(EMPTY_TREE, "tree", tagger="T <t@x>", extra="colour blue\n"),
    "signed": tag(EMPTY_TREE, "tree", extra="gpgsig -----BEGIN-----\n abc\n -----END-----\n"),
}


@pytest.mark.parametrize("case", sorted(TAGS))
@pytest.mark.parametrize("option", ["--strict", "--fsck-objects", "--strict=extraHeaderEntry=error"])
def test_tags_are_judged_as_git_judges_them(tmp_path: Path, case: str, option: str) -> None:
    if case == "signed" and git_version() < (2, 52):
        pytest.skip("Git reads a tag's signature as a header of its own since 2.52")
    same(*run_both(tmp_path, pack_of([(TAG, TAGS[case]), (TREE, b"")]), option))


TREES = {
    "good": tree(("100644", "a", X_ID), ("40000", "d", EMPTY_TREE)),
    "dot": tree(("100644", ".", X_ID)),
    "dot dot": tree(("100644", "..", X_ID)),
    "dot git": tree(("40000", ".git", EMPTY_TREE)),
    "dot git in capitals": tree(("40000", ".GIT", EMPTY_TREE)),
    "git short name": tree(("40000", "GIT~1", EMPTY_TREE)),
    "dot git with NTFS dots": tree(("100644", ".git. .", X_ID)),
    "dot git with HFS ignorables": tree(("100644", ".g\u200cit", X_ID)),
    "dot git after a backslash": tree(("100644", "a\\.git", X_ID)),
    "full path": tree(("100644", "a/b", X_ID)),
    "null id": tree(("100644", "a", bytes(20))),
    "zero-padded mode": tree(("0100644", "a", X_ID)),
    "mode 664": tree(("100664", "a", X_ID)),
    "bad mode": tree(("100600", "a", X_ID)),
    "duplicate": tree(("100644", "a", X_ID), ("100644", "a", X_ID)),
    "file and directory of one name": tree(("100644", "a", X_ID), ("100644", "a.b", X_ID), ("40000", "a", EMPTY_TREE)),
    "not sorted": tree(("100644", "b", X_ID), ("100644", "a", X_ID)),
    "directory sorts as with a slash": tree(("40000", "a", EMPTY_TREE), ("100644", "a.b", X_ID)),
    "gitlink": tree(("160000", "sub", bytes.fromhex("11" * 20))),
    "symlinked gitmodules": tree(("120000", ".gitmodules", X_ID)),
    "symlinked gitignore": tree(("120000", ".gitignore", X_ID)),
    "symlinked mailmap": tree(("120000", ".mailmap", X_ID)),
    "symlinked gitattributes": tree(("120000", ".gitattributes", X_ID)),
    "truncated": tree(("100644", "a", X_ID))[:-3],
    "no space in an entry": b"100644a\0" + X_ID,
    "a long name": tree(("100644", "n" * 5000, X_ID)),
}


@pytest.mark.parametrize("case", sorted(TREES))
@pytest.mark.parametrize("option", ["--strict", "--fsck-objects", "--strict=largePathname=error:100,hasDot=warn"])
def test_trees_are_judged_as_git_judges_them(tmp_path: Path, case: str, option: str) -> None:
    same(*run_both(tmp_path, pack_of([(TREE, TREES[case]), (TREE, b""), BLOB_X]), option))


GITMODULES = {
    "good": b'[submodule "a"]\n\tpath = a\n\turl = https://example.com/a.git\n',
    "name climbing out": b'[submodule "../x"]\n\tpath = x\n',
    "url as an option": b'[submodule "a"]\n\turl = -oProxyCommand=x\n',
    "url climbing to the host": b'[submodule "a"]\n\turl = ../:x/y\n',
    "url with a newline": b'[submodule "a"]\n\turl = https://example.com/%0a\n',
    "url with a bad port": b'[submodule "a"]\n\turl = https://example.com:99999/x\n',
    "url without a host": b'[submodule "a"]\n\turl = https:///x\n',
    "path as an option": b'[submodule "a"]\n\tpath = --x\n',
    "update as a command": b'[submodule "a"]\n\tupdate = !rm -rf /\n',
    "unparsable": b'[submodule "a"\n\tpath = a\n',
    "bad escape": b'[submodule "a"]\n\tpath = "a\\q"\n',
}


@pytest.mark.parametrize("case", sorted(GITMODULES))
@pytest.mark.parametrize("blob_first", [True, False])
def test_gitmodules_blobs_are_judged_as_git_judges_them(tmp_path: Path, case: str, blob_first: bool) -> None:
    blob = GITMODULES[case]
    names = tree(("100644", ".gitmodules", object_id(BLOB, blob)))
    objects = [(BLOB, blob), (TREE, names)]
    pack = pack_of(objects if blob_first else objects[::-1])
    same(*run_both(tmp_path, pack, "--strict"))


def test_gitattributes_lines_too_long_fail_as_in_git(tmp_path: Path) -> None:
    for i, blob in enumerate([b"*.c diff\n", b"a" * 2048 + b" text\n", b"*.c diff\0" + b"a" * 3000 + b"\n"]):
        names = tree(("100644", ".gitattributes", object_id(BLOB, blob)))
        same(*run_both(tmp_path / str(i), pack_of([(TREE, names), (BLOB, blob)]), "--strict"))


def test_a_gitmodules_blob_outside_the_pack_is_read_from_the_repository(tmp_path: Path) -> None:
    bad = GITMODULES["url as an option"]
    names = tree(("100644", ".gitmodules", object_id(BLOB, bad)))
    same(*run_both(tmp_path / "there", pack_of([(TREE, names)]), "--fsck-objects", populate=[(BLOB, bad)]))
    # Nowhere: Git prints its id after the pack's, for fetch-pack to check it later.
    theirs, ours = run_both(tmp_path / "nowhere", pack_of([(TREE, names)]), "--fsck-objects")
    same(theirs, ours)
    assert object_id(BLOB, bad).hex().encode() in ours.stdout


def test_queued_checks_outside_a_repository_fail_as_in_git(tmp_path: Path) -> None:
    # Git 2.47 crashes here (SIGSEGV); later versions print the line checked below.
    names = tree(("100644", ".gitattributes", X_ID))
    pack = tmp_path / "p.pack"
    pack.write_bytes(pack_of([(TREE, names)]))
    outside = tmp_path / "outside"
    outside.mkdir()
    ours = run_cli("index-pack", "--fsck-objects", str(pack), cwd=outside)
    assert ours.returncode == 128
    assert ours.stderr == b"fatal: cannot perform queued object checks outside of a repository\n"
    assert not (tmp_path / "p.idx").exists()


def test_links_must_resolve_in_the_pack_or_the_repository(tmp_path: Path) -> None:
    names = tree(("100644", "x", X_ID), ("40000", "d", EMPTY_TREE))
    only_trees = pack_of([(TREE, names), (TREE, b"")])
    # The blob is nowhere: Git's "did not receive expected object".
    theirs, ours = run_both(tmp_path / "empty", only_trees, "--strict")
    same(theirs, ours)
    assert ours.returncode == 128
    # The repository has it: the pack is fine, and not self-contained.
    same(*run_both(tmp_path / "has", only_trees, "--strict", populate=[BLOB_X]))
    for where, populate, status in (("sc-has", [BLOB_X], 1), ("sc-empty", [], 128)):
        theirs, ours = run_both(tmp_path / where, only_trees, "--check-self-contained-and-connected", populate=populate)
        same(theirs, ours)
        assert ours.returncode == status
    same(
        *run_both(
            tmp_path / "self", pack_of([(TREE, names), (TREE, b""), BLOB_X]), "--check-self-contained-and-connected"
        )
    )
    # A link to a blob that is a tree in the repository.
    wrong = tree(("100644", "x", EMPTY_TREE))
    same(*run_both(tmp_path / "type", pack_of([(TREE, wrong)]), "--strict", populate=[(TREE, b"")]))


def test_message_types_and_skip_lists_as_git_reads_them(tmp_path: Path) -> None:
    bad = pack_of([(COMMIT, COMMITS["missing email"]), (TREE, b"")])
    skip = tmp_path / "skip"
    skip.write_text(f"# skipped\n{object_id(COMMIT, COMMITS['missing email']).hex()}  # this one\n\n")
    for i, option in enumerate(
        [
            "--strict=missingEmail=warn",
            "--strict=missingemail=ignore",
            "--fsck-objects=missingEmail=warn,badDate=ignore|zeroPaddedDate=ignore",
            f"--strict=skipList={skip}",
            "--strict=unterminatedHeader=warn",
            "--strict=missingEmail=info",
            "--strict=noSuchMessage=error",
            "--strict=missingEmail",
            "--strict=skipList",
            f"--strict=skipList={tmp_path / 'absent'}",
        ]
    ):
        same(*run_both(tmp_path / str(i), bad, option))


def test_strict_over_stdin_stores_nothing_when_a_check_fails(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    git(None, "init", "-q", "--bare", str(repo))
    bad = pack_of([(COMMIT, COMMITS["missing email"]), (TREE, b"")])
    proc = run_cli("index-pack", "--stdin", "--strict", "--repo", str(repo), input=bad)
    assert proc.returncode == 128
    assert proc.stderr.decode().splitlines()[-1] == "fatal: fsck error in packed object"
    assert list((repo / "objects" / "pack").iterdir()) == []


def test_a_real_history_passes_strict_with_the_same_index_as_git(tmp_path: Path, packs: dict[str, Path]) -> None:
    for shape in ("ofs", "ref"):
        data = packs[shape].read_bytes()
        theirs, ours = run_both(tmp_path / shape, data, "--strict")
        same(theirs, ours)
        assert ours.returncode == 0
        assert (tmp_path / shape / "ours.idx").read_bytes() == (tmp_path / shape / "git.idx").read_bytes()


@pytest.mark.parametrize("option", ["--strict", "--fsck-objects", "--check-self-contained-and-connected"])
def test_an_object_twice_in_the_pack_fails_strict_as_in_git(tmp_path: Path, option: str) -> None:
    same(*run_both(tmp_path, pack_of([BLOB_X, BLOB_X]), option))


@pytest.mark.parametrize("option", ["--strict", "--check-self-contained-and-connected"])
def test_a_thin_push_checked_strictly_completes_as_in_git(history, tmp_path: Path, option: str) -> None:
    """receive-pack's case: a thin pack of the newest commits, into a repository holding the
    older ones, with --fix-thin and the checks; the links to old objects are the repository's."""
    thin = git(history.path, "pack-objects", "--thin", "--revs", "--stdout", "-q", input=b"main\n^main~5\n")
    results = []
    for who in ("git", "ours"):
        repo = tmp_path / f"{who}.git"
        git(None, "clone", "-q", "--bare", "--no-local", str(history.path), str(repo))
        git(repo, "update-ref", "refs/heads/main", git(history.path, "rev-parse", "main~5").decode().strip())
        git(repo, "reflog", "expire", "--expire=now", "--all")
        git(repo, "gc", "-q", "--prune=now")
        args = ("index-pack", "--stdin", "--fix-thin", option)
        if who == "git":
            proc = subprocess.run(["git", *args], input=thin, capture_output=True, cwd=repo, env=git_env())
        else:
            proc = run_cli(*args, input=thin, cwd=repo)
        results.append(proc)
    theirs, ours = results
    # The completed packs differ only in the appended bases' deflate bytes: their names too.
    assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr)
    assert ours.returncode == (0 if option == "--strict" else 1)
    assert ours.stdout.startswith(b"pack\t") and theirs.stdout.startswith(b"pack\t")


def test_objects_a_scan_thread_read_from_a_false_boundary_are_not_checked(tmp_path: Path) -> None:
    """A blob stored without compression can hold what looks like pack entries; a thread of
    the first pass that starts inside it reads them. A tree among them links to an object
    nobody has: had its check counted, the pack would fail --strict."""
    from packorder import _native
    from packorder.format.object_format import SHA1
    from packorder.indexer import fsck
    from packorder.settings import Limits

    inner = PackBuilder()
    inner.whole(TREE, tree(("100644", "evil", b"\xaa" * 20)))
    inner.whole(BLOB, b"after the fake tree\n")
    fake = bytes(inner.body)
    # The split point (half way) falls in the zeros before the fake entries.
    outer = bytes(8192) + fake + bytes(2048)
    b = PackBuilder()
    b.whole(BLOB, b"first\n")
    b.whole(BLOB, outer, level=0)
    b.whole(BLOB, b"last\n")
    pack = tmp_path / "p.pack"
    pack.write_bytes(b.build())
    checks = fsck.checks(strict=True, fsck_objects=False, self_contained=False, fmt=SHA1)
    indexer = _native.PackIndexer(str(pack), Limits(2, 1 << 26, 1 << 30), True, False, 0)
    indexer.set_checks(checks)
    indexer.scan()
    indexer.resolve()
    checked = indexer.finish_checks()
    assert (checked.findings, checked.foreign_ids, checked.outside) == ([], b"", [])
    assert git(None, "index-pack", "--strict", str(pack)) and (tmp_path / "p.idx").exists()


def test_a_bad_object_resolved_from_a_base_of_the_repository_fails_as_in_git(tmp_path: Path) -> None:
    """A thin pack whose one delta, once its base is appended from the repository, is a tree
    Git's rules refuse: the failure is the check's, not the unresolved delta's."""
    from helpers.packbuilder import make_delta

    base = tree(("100644", "a", X_ID))
    bad = tree(("100644", ".", X_ID), ("100644", "a", X_ID))
    b = PackBuilder()
    b.ref_delta(object_id(TREE, base), make_delta(base, bad))
    thin = b.build()
    results = []
    for who in ("git", "ours"):
        repo = tmp_path / f"{who}.git"
        git(None, "init", "-q", "--bare", str(repo))
        for kind, data in ((TREE, base), BLOB_X):
            name = {TREE: "tree", BLOB: "blob"}[kind]
            git(repo, "hash-object", "--literally", "-w", "--stdin", "-t", name, input=data)
        args = ("index-pack", "--stdin", "--fix-thin", "--strict")
        if who == "git":
            results.append(subprocess.run(["git", *args], input=thin, capture_output=True, cwd=repo, env=git_env()))
        else:
            results.append(run_cli(*args, input=thin, cwd=repo))
    same(*results)
    assert results[1].returncode == 128
