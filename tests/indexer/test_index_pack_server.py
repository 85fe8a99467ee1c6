"""The options receive-pack and fetch-pack give `git index-pack`, against Git's own answers:
--pack_header, --promisor, --report-end-of-input, --max-input-size and --object-format."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from helpers.commands import bare_repo, run_cli
from helpers.gitrepo import Repo, git_env
from helpers.routing import exec_path_routing_index_pack, with_git_s_index_pack

from packorder.units import git_humanise_bytes


def git_run(*args: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # Progress at once (as t5302 asks it), not after Git's two seconds.
    env = {**git_env(), "GIT_PROGRESS_DELAY": "0"}
    return subprocess.run(["git", *args], input=input, capture_output=True, cwd=cwd, env=env)


def both(tmp_path: Path, *args: str, input: bytes) -> tuple[subprocess.CompletedProcess, Path, Path, Path]:
    """Our index-pack and Git's, each in a bare repository of its own, from the same input."""
    ours, theirs = bare_repo(tmp_path / "ours.git"), bare_repo(tmp_path / "theirs.git")
    mine = run_cli("index-pack", *args, "--repo", str(ours), input=input)
    git = git_run("-C", str(theirs), "-c", "pack.writeReverseIndex=true", "index-pack", *args, input=input)
    assert git.returncode == 0, git.stderr
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == git.stdout
    return git, ours, theirs, Path("objects/pack") / f"pack-{git.stdout.split()[1].decode()}"


def test_a_header_read_by_the_caller_a_promisor_and_the_end_of_input_as_git(
    packs: dict[str, Path], tmp_path: Path
) -> None:
    data = packs["ofs"].read_bytes()
    (count,) = struct.unpack(">I", data[8:12])
    args = ("--stdin", f"--pack_header=2,{count}", "--promisor=fetched by test", "--report-end-of-input")
    git, ours, theirs, name = both(tmp_path, *args, input=data[12:])
    for ext in (".pack", ".idx", ".rev", ".promisor"):
        assert (ours / name).with_suffix(ext).read_bytes() == (theirs / name).with_suffix(ext).read_bytes()
    # The NUL that tells fetch-pack the whole pack was read.
    assert git.stderr == b"\0"
    mine = run_cli("index-pack", "--stdin", "--report-end-of-input", "--repo", str(ours), input=data)
    assert mine.returncode == 0 and mine.stderr == b"\0"


def test_a_bare_promisor_is_an_empty_file(packs: dict[str, Path], tmp_path: Path) -> None:
    _, ours, theirs, name = both(tmp_path, "--stdin", "--promisor", input=packs["ofs"].read_bytes())
    assert (ours / name).with_suffix(".promisor").read_bytes() == b""
    assert (theirs / name).with_suffix(".promisor").read_bytes() == b""


@pytest.mark.parametrize("limit", [1, 20, 1025, 10_000])
def test_a_pack_over_max_input_size_fails_as_gits_and_leaves_nothing(
    packs: dict[str, Path], tmp_path: Path, limit: int
) -> None:
    pack = packs["ofs"]
    assert pack.stat().st_size > limit
    ours = bare_repo(tmp_path / "ours.git")
    git = git_run("-C", str(ours), "index-pack", f"--max-input-size={limit}", str(pack))
    mine = run_cli("index-pack", f"--max-input-size={limit}", str(pack), cwd=ours)
    assert git.returncode == mine.returncode == 128
    assert mine.stderr == git.stderr, (mine.stderr, git.stderr)
    assert git_humanise_bytes(limit).encode() in mine.stderr
    before = sorted(p.name for p in (ours / "objects" / "pack").iterdir())
    mine = run_cli("index-pack", "--stdin", f"--max-input-size={limit}", "--repo", str(ours), input=pack.read_bytes())
    assert mine.returncode == 128 and mine.stderr == git.stderr
    # Git leaves its tmp_pack_ file behind; nothing is left of ours.
    assert sorted(p.name for p in (ours / "objects" / "pack").iterdir()) == before
    fits = run_cli("index-pack", f"--max-input-size={pack.stat().st_size}", "-o", str(tmp_path / "x.idx"), str(pack))
    assert fits.returncode == 0, fits.stderr


def test_sizes_are_written_as_git_writes_them() -> None:
    assert [git_humanise_bytes(n) for n in (1, 2, 1024, 1025, 2048, 1_000_000, 1 << 20)] == [
        "1 byte",
        "2 bytes",
        "1024 bytes",
        "1.00 KiB",
        "2.00 KiB",
        "976.56 KiB",
        "1024.00 KiB",
    ]
    assert git_humanise_bytes((1 << 20) + 1) == "1.00 MiB"
    assert git_humanise_bytes(5 << 30) == "5.00 GiB"


def test_object_format_as_git_answers_it(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = tmp_path / "outside" / "p.pack"
    pack.parent.mkdir()
    pack.write_bytes(packs["ofs"].read_bytes())
    outside = pack.parent  # in no repository
    git = git_run("index-pack", "--object-format=sha1", "-o", str(tmp_path / "g.idx"), str(pack), cwd=outside)
    mine = run_cli("index-pack", "--object-format=sha1", "-o", str(tmp_path / "m.idx"), str(pack), cwd=outside)
    assert git.returncode == mine.returncode == 0 and mine.stdout == git.stdout
    assert (tmp_path / "m.idx").read_bytes() == (tmp_path / "g.idx").read_bytes()
    repo = bare_repo(tmp_path / "repo.git")
    for args in (["--object-format=md5", str(pack)], ["--stdin", "--object-format=sha1"]):
        git = git_run("index-pack", *args, cwd=repo, input=b"")
        mine = run_cli("index-pack", *args, cwd=repo, input=b"")
        assert git.returncode == mine.returncode == 128
        assert git.stderr == mine.stderr
    # A SHA-1 pack read as SHA-256 outside a repository: one line naming the format, no guessing.
    mine = run_cli("index-pack", "--object-format=sha256", str(pack), cwd=tmp_path)
    assert mine.returncode == 128 and mine.stderr.count(b"\n") == 1 and b"sha256" in mine.stderr


def test_a_promisor_for_a_pack_file_is_refused(packs: dict[str, Path], tmp_path: Path) -> None:
    mine = run_cli("index-pack", "--promisor", "-o", str(tmp_path / "x.idx"), str(packs["ofs"]))
    assert mine.returncode == 128 and mine.stderr == b"fatal: --promisor cannot be used with a pack name\n"
    assert not (tmp_path / "x.idx").exists()


def test_a_push_a_fetch_and_a_clone_index_with_packorder_as_with_git(history: Repo, tmp_path: Path) -> None:
    env, log = exec_path_routing_index_pack(tmp_path)
    results = {}
    for who, run_env in (("git", with_git_s_index_pack()), ("packorder", env)):
        server = bare_repo(tmp_path / f"{who}-server.git")
        subprocess.run(["git", "-C", str(server), "config", "receive.unpackLimit", "1"], check=True)
        push = subprocess.run(
            ["git", "-C", str(history.path), "push", "-q", str(server), "HEAD:refs/heads/main"],
            env=run_env,
            capture_output=True,
        )
        assert push.returncode == 0, push.stderr
        client = bare_repo(tmp_path / f"{who}-client.git")
        fetch = subprocess.run(
            ["git", "-C", str(client), "-c", "fetch.unpackLimit=1", "fetch", "-q", str(server), "main:main"],
            env=run_env,
            capture_output=True,
        )
        assert fetch.returncode == 0, fetch.stderr
        cloned = tmp_path / f"{who}-clone.git"
        clone = subprocess.run(
            ["git", "clone", "-q", "--bare", "--no-local", str(server), str(cloned)], env=run_env, capture_output=True
        )
        assert clone.returncode == 0, clone.stderr
        for repo in (server, client, cloned):
            fsck = git_run("-C", str(repo), "fsck", "--full", "--no-dangling")
            assert fsck.returncode == 0, fsck.stderr
        results[who] = [
            sorted(
                (p.name, p.read_bytes()) for p in (repo / "objects" / "pack").iterdir() if p.suffix in (".idx", ".pack")
            )
            for repo in (server, client, cloned)
        ] + [git_run("-C", str(r), "show-ref").stdout for r in (client, cloned)]
    assert results["packorder"] == results["git"]
    calls = log.read_text().splitlines()
    # receive-pack's and fetch-pack's own options (header already read), all through us; a
    # clone asks whether the pack is self-contained and connected.
    assert len(calls) == 3 and all("--stdin" in c for c in calls), calls
    assert all("--pack_header=2," in c for c in calls[:2]), calls
    assert "--report-end-of-input" in calls[0] and "--fix-thin" in calls[1]
    assert "--check-self-contained-and-connected" in calls[2]


@pytest.mark.parametrize("title", [None, "Fetching objects"])
def test_progress_titles_as_git_shows_them(packs: dict[str, Path], tmp_path: Path, title: str | None) -> None:
    args = ["index-pack", "-v", "--stdin", *(["--progress-title", title] if title else [])]
    ours, theirs = bare_repo(tmp_path / "ours.git"), bare_repo(tmp_path / "theirs.git")
    data = packs["ofs"].read_bytes()
    mine = run_cli(*args, "--repo", str(ours), input=data)
    git = git_run("-C", str(theirs), *args, input=data)
    assert mine.returncode == git.returncode == 0, mine.stderr

    def titles(err: bytes) -> list[str]:
        lines = err.decode().replace("\r", "\n").splitlines()
        return list(dict.fromkeys(line.split(":")[0] for line in lines if "%" in line))

    assert titles(mine.stderr) == titles(git.stderr) == [title or "Receiving objects", "Resolving deltas"]


def test_pushes_and_fetches_checked_by_fsck_rules_as_with_git(history: Repo, tmp_path: Path) -> None:
    """receive.fsckObjects and fetch.fsckObjects: receive-pack and fetch-pack then pass
    --strict (with each receive.fsck.<msg-id> as --strict=<msg-id>=<severity>)."""
    env, log = exec_path_routing_index_pack(tmp_path)
    source = tmp_path / "source.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(history.path), str(source)], check=True, env=git_env())
    head = git_run("-C", str(source), "rev-parse", "HEAD").stdout.decode().strip()
    tree = git_run("-C", str(source), "rev-parse", "HEAD^{tree}").stdout.decode().strip()
    bad = f"tree {tree}\nparent {head}\nauthor No Email 1 +0000\ncommitter No Email 1 +0000\n\nbad\n"
    bad_id = git_run(
        "-C", str(source), "hash-object", "--literally", "-t", "commit", "-w", "--stdin", input=bad.encode()
    )
    subprocess.run(
        ["git", "-C", str(source), "update-ref", "refs/heads/bad", bad_id.stdout.decode().strip()], check=True
    )
    outcomes = {}
    for who, run_env in (("git", with_git_s_index_pack()), ("packorder", env)):
        server = bare_repo(tmp_path / f"{who}-server.git")
        for key, value in (("receive.unpackLimit", "1"), ("receive.fsckObjects", "true")):
            subprocess.run(["git", "-C", str(server), "config", key, value], check=True)

        def push(ref: str, *config: str, server: Path = server, run_env: dict = run_env) -> tuple[int, list[str]]:
            p = subprocess.run(
                ["git", "-C", str(source), *config, "push", "-q", str(server), ref],
                env=run_env,
                capture_output=True,
            )
            text = p.stderr.decode().replace(str(server), "SERVER")
            return p.returncode, [line for line in text.splitlines() if "error:" in line or "fatal:" in line]

        good = push("main:refs/heads/main")
        rejected = push("bad:refs/heads/bad")
        subprocess.run(["git", "-C", str(server), "config", "receive.fsck.missingEmail", "warn"], check=True)
        downgraded = push("bad:refs/heads/bad")
        client = bare_repo(tmp_path / f"{who}-client.git")
        config = ["-c", "fetch.unpackLimit=1", "-c", "fetch.fsckObjects=true"]
        fetch = subprocess.run(
            ["git", "-C", str(client), *config, "fetch", "-q", str(server), "main:main"],
            env=run_env,
            capture_output=True,
        )
        # The downgraded push stored the commit without an email: fsck allowed it the same.
        check = git_run("-C", str(server), "-c", "fsck.missingEmail=warn", "fsck", "--full", "--no-dangling")
        assert check.returncode == 0, check.stderr
        outcomes[who] = (
            good,
            rejected,
            downgraded,
            fetch.returncode,
            git_run("-C", str(client), "rev-parse", "main").stdout,
        )
    assert outcomes["packorder"] == outcomes["git"]
    good, rejected, downgraded, fetched, _ = outcomes["git"]
    assert good[0] == 0 and rejected[0] != 0 and downgraded[0] == 0 and fetched == 0
    assert any("missingEmail" in line for line in rejected[1])
    calls = log.read_text().splitlines()
    assert sum("--strict" in c for c in calls) >= 4, calls
    assert any("--strict=missingemail=warn" in c.lower() for c in calls), calls


def test_a_blobless_clone_checked_by_fsck_rules_as_with_git(tmp_path: Path) -> None:
    """A partial clone (--filter=blob:none) with transfer.fsckObjects: the trees name
    .gitattributes and .gitmodules blobs the pack does not carry; they are promised, and Git
    skips them. So must we."""
    env, log = exec_path_routing_index_pack(tmp_path)
    source = Repo(tmp_path / "source")
    source.write(".gitattributes", "*.c diff\n")
    source.write(".gitmodules", '[submodule "a"]\n\tpath = a\n\turl = https://example.com/a.git\n')
    source.write("x.c", "int x;\n")
    source.commit("one")
    source.run("config", "uploadpack.allowFilter", "true")
    outcomes = {}
    for who, run_env in (("git", with_git_s_index_pack()), ("packorder", env)):
        dest = tmp_path / f"{who}.git"
        options = ["-q", "--bare", "--filter=blob:none", "--no-local"]
        clone = subprocess.run(
            ["git", "-c", "transfer.fsckObjects=true", "clone", *options, str(source.path), str(dest)],
            env=run_env,
            capture_output=True,
        )
        outcomes[who] = (clone.returncode, clone.stderr, git_run("-C", str(dest), "show-ref").stdout)
    assert outcomes["packorder"] == outcomes["git"]
    assert outcomes["git"][0] == 0
    assert any("--promisor" in c for c in log.read_text().splitlines())


@pytest.mark.parametrize("header", ["x", "2", "2,x", "2,1x"])
def test_a_bad_pack_header_fails_as_in_git(tmp_path: Path, header: str) -> None:
    repo = bare_repo(tmp_path / "r.git")
    git = git_run("-C", str(repo), "index-pack", "--stdin", f"--pack_header={header}", input=b"")
    ours = run_cli("index-pack", "--stdin", f"--pack_header={header}", "--repo", str(repo), input=b"")
    assert (ours.returncode, ours.stderr) == (git.returncode, git.stderr) == (128, git.stderr)
