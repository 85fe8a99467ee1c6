"""The command line as a user of Git's tools expects it: the package installed runs whatever
the current directory holds, Git's spellings of repack's options, Git's answer to an unknown
option and a missing path, -v and -q on every command, and one schema key a JSON document."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git_env
from helpers.routing import exec_path_routing_index_pack
from test_cli_contract import run_cli

# As the `packorder` script starts: its own folder first on sys.path, not the current directory.
SCRIPT = [sys.executable, "-P", "-c", "from packorder.cli.launch import main; main()"]

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def small_repo(path: Path, commits: int = 3) -> Repo:
    repo = Repo(path)
    for c in range(commits):
        repo.write("f.txt", "".join(f"line {c} {n}\n" for n in range(20)))
        repo.commit(f"c{c}")
    return repo


def source_checkout(directory: Path) -> Path:
    """A directory that holds a `packorder/` folder, as a checkout of packorder's source does,
    whose import fails as a checkout's without its built core does."""
    (directory / "packorder").mkdir(parents=True)
    (directory / "packorder" / "__init__.py").write_text(
        "raise ImportError(\"cannot import name '_native' from a source checkout\")\n"
    )
    return directory


def test_fleet_workers_import_the_installed_package_from_a_source_checkout(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    repo = small_repo(tmp_path / "repo")
    cwd = source_checkout(tmp_path / "checkout")
    results = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [
            *SCRIPT,
            "fleet",
            "repack",
            "-q",
            "--workers",
            "1",
            "--min-gain",
            "-1000",
            "--results",
            str(results),
            str(repo.path),
        ],
        cwd=cwd,
        env=git_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"status": "done"' in results.read_text()


def test_index_pack_run_by_git_in_a_source_checkout_imports_the_installed_package(tmp_path: Path) -> None:
    env, log = exec_path_routing_index_pack(tmp_path)
    server = small_repo(tmp_path / "server")
    client = Repo(source_checkout(tmp_path / "client"))
    fetch = subprocess.run(
        [
            "git",
            "-C",
            str(client.path),
            "-c",
            "fetch.unpackLimit=1",
            "fetch",
            "-q",
            str(server.path),
            "HEAD:refs/o/main",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert fetch.returncode == 0, fetch.stderr
    assert len(log.read_text().splitlines()) == 1  # the fetch's index-pack went through packorder


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repository, as a server's (where Git's scripts run `git repack -adb`)."""
    work = small_repo(tmp_path_factory.mktemp("surface") / "work", commits=4)
    path = work.path.parent / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work.path), str(path)], check=True, env=git_env())
    subprocess.run(["git", "--git-dir", str(path), "repack", "-adq"], check=True, env=git_env())
    return path


@pytest.mark.parametrize(
    ("args", "warned"),
    [
        (["-adb"], []),
        (["-Ad"], ["-A"]),
        (["-adf"], []),
        (["-adfq"], []),
        (["-adbm"], []),
        (["-a", "-d", "-k", "-l", "-f", "-F", "-q", "-b", "-m"], []),
        (["-adlq", "--depth=50", "--window=250"], []),
        (["-ad", "--window-memory=1g", "--max-pack-size", "2g"], ["--window-memory", "--max-pack-size"]),
    ],
)
def test_gits_spellings_of_repack_run(bare: Path, args: list[str], warned: list[str]) -> None:
    proc = run_cli("repack", "--dry-run", *args, str(bare))
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.decode().splitlines() if line.startswith("warning: ")]
    assert [w.split()[1] for w in warnings] == warned
    quiet = any(a[0] == "-" and a[1] != "-" and "q" in a for a in args)
    assert quiet == (proc.stdout == b"")  # -q, bundled or not, silences the summary


def test_a_refused_repack_command_line_warns_of_nothing(bare: Path) -> None:
    proc = run_cli("repack", "-Adk", str(bare))
    err = proc.stderr.decode()
    assert proc.returncode == 129 and err.startswith("error: options '-A' and '-k/--keep-unreachable'"), err


def test_a_bundled_repack_writes_what_git_would(bare: Path, tmp_path: Path) -> None:
    repo = tmp_path / "copy.git"
    shutil.copytree(bare, repo)
    proc = run_cli("repack", "-adbq", str(repo))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    packs = list((repo / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1 and packs[0].with_suffix(".bitmap").exists()
    subprocess.run(["git", "--git-dir", str(repo), "fsck", "--full"], check=True, capture_output=True)


COMMANDS = ["repack", "gc", "seekstats", "experiment", "sample", "index-pack", "fleet status", "fleet repack"]


@pytest.mark.parametrize("command", [*COMMANDS, "fleet report"])
@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("--bogus", "error: unknown option `bogus'"),
        ("--verbos", "error: unknown option `verbos'"),
        ("-Z", "error: unknown switch `Z'"),
    ],
)
def test_an_unknown_option_reads_as_gits(command: str, word: str, message: str) -> None:
    proc = run_cli(*command.split(), word)
    err = proc.stderr.decode()
    lines = err.splitlines()
    assert proc.returncode == 129, err
    assert lines[0] == message and lines[1] == f"usage: packorder {command} [OPTIONS]" + lines[1].split("[OPTIONS]")[1]
    assert "Did you mean" not in err and "\nOptions:\n" in err and proc.stdout == b""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["repack", "--order"], "error: option `order' requires a value"),
        (["repack", "-o"], "error: switch `o' requires a value"),
        (["repack", "--dry-run=yes"], "error: option `dry-run' takes no value"),
        (["index-pack", "--threads"], "error: option `threads' requires a value"),
        (["index-pack", "--stdin=yes"], "error: option `stdin' takes no value"),
        (["index-pack", "--threads", "x", "a.pack"], "error: Invalid value for '--threads': not a number of threads"),
        (["repack", "--window", "x"], "error: Invalid value for '--window': 'x' is not a valid integer range"),
        (["index-pack", "a.pack", "b.pack"], "error: Got unexpected extra argument (b.pack)"),
        (["seekstats", "REPO", "ANOTHER"], "error: Got unexpected extra argument (ANOTHER)"),
        (["fleet", "bogus"], "error: unknown subcommand: `bogus'"),
    ],
)
def test_index_pack_and_the_click_commands_refuse_a_command_line_alike(args: list[str], message: str) -> None:
    proc = run_cli(*args)
    err = proc.stderr.decode()
    assert proc.returncode == 129, err
    assert err.startswith(message) and "\nusage: packorder " in err and "\nOptions:\n" in err, err


def test_index_pack_help_is_laid_out_as_the_other_commands_help() -> None:
    ours, theirs = run_cli("index-pack", "-h"), run_cli("repack", "-h")
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout.startswith(b"Usage: packorder index-pack [OPTIONS] [PACK]\n\n  Build the .idx")
    for out in (ours.stdout.decode(), theirs.stdout.decode()):
        help_line = next(line for line in out.splitlines() if "--help" in line)
        assert help_line.startswith("  -h, --help") and help_line.endswith("  Show this message and exit."), help_line
        assert help_line.index("Show") == 34  # the column click puts option help in


def test_packorder_alone_prints_its_usage_once_as_git_does() -> None:
    proc = run_cli()
    git = subprocess.run(["git"], capture_output=True)
    assert proc.returncode == git.returncode == 1
    assert proc.stderr == b"" and proc.stdout.decode().count("Usage: packorder") == 1
    assert "Commands:" in proc.stdout.decode() and "error" not in proc.stdout.decode()


def test_an_unknown_command_reads_as_gits() -> None:
    proc = run_cli("bogus")
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr == b"packorder: 'bogus' is not a packorder command. See 'packorder --help'.\n"


@pytest.mark.parametrize(
    "args",
    [
        ["repack", "MISSING"],
        ["repack", "-g", "2", "MISSING"],
        ["gc", "MISSING"],
        ["gc", "--auto", "MISSING"],
        ["index-pack", "MISSING"],
        ["index-pack", "--verify", "MISSING"],
        ["seekstats", "MISSING"],
        ["seekstats", "REPO", "--compare", "MISSING"],
        ["seekstats", "REPO", "--plot", "MISSING/seeks.png"],
        ["experiment", "MISSING", "--runs", "0"],
        ["fleet", "status", "MISSING"],
        ["fleet", "status", "REPO", "MISSING"],
        ["fleet", "repack", "MISSING"],
        ["fleet", "report", "MISSING"],
        ["sample", "MISSING/sample.git"],
    ],
)
def test_a_missing_path_is_fatal_in_every_command(bare: Path, tmp_path: Path, args: list[str]) -> None:
    if args[0] == "fleet":
        pytest.importorskip("distributed")
    missing = tmp_path / "no" / "such"
    args = [str(missing) if a == "MISSING" else str(bare) if a == "REPO" else a for a in args]
    args = [a.replace("MISSING", str(missing)) for a in args]
    proc = run_cli(*args)
    err = proc.stderr.decode()
    assert proc.returncode == 128, err
    assert err.startswith("fatal: ") and err.count("\n") == 1 and str(missing) in err, err
    assert proc.stdout == b"" and not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", [*COMMANDS, "fleet report"])
def test_every_command_takes_verbose_and_quiet(command: str) -> None:
    proc = run_cli(*command.split(), "-h")
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "-v, --verbose" in out and "-q, --quiet" in out, out
    proc = run_cli(*command.split(), "-q", "-v", "ARG")
    assert proc.returncode == 129 and proc.stderr.startswith(b"error: -q and -v cannot be used together"), proc.stderr


def test_fleet_status_shows_its_progress_with_v_and_none_with_q(bare: Path) -> None:
    pytest.importorskip("distributed")
    loud, quiet = run_cli("fleet", "status", "-v", str(bare)), run_cli("fleet", "status", "-q", str(bare))
    assert loud.returncode == quiet.returncode == 0, loud.stderr
    assert b"Triaging repositories: 100% (1/1), done." in loud.stderr and quiet.stderr == b""
    assert loud.stdout == quiet.stdout and str(bare).encode() in quiet.stdout  # the table either way


def test_fleet_repack_shows_its_progress_line_with_v(bare: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    repo = tmp_path / "copy.git"
    shutil.copytree(bare, repo)
    results = tmp_path / "results.jsonl"
    proc = run_cli(
        "fleet", "repack", "-v", "--workers", "1", "--min-gain", "-1000", "--results", str(results), str(repo)
    )
    assert proc.returncode == 0, proc.stderr
    assert b"\rRepacking repositories: 1 done, 0 failed, 0 running, 0 left" in proc.stderr


def test_fleet_report_prints_the_failures_alone_with_q_and_every_repository_with_v(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    records = [
        {"path": "/srv/a.git", "order": "recency", "status": "done", "error": None, "seconds": 2.0}
        | {"bytes_before": 4 << 20, "bytes_after": 3 << 20},
        {"path": "/srv/b.git", "order": "recency", "status": "failed", "error": "not a git repository"},
        {"path": "/srv/c.git", "order": "recency", "status": "skipped", "error": None, "reason": "gain below 1"},
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    quiet = run_cli("fleet", "report", "-q", str(results))
    assert (quiet.returncode, quiet.stdout) == (0, b"failed: /srv/b.git: not a git repository\n")
    verbose = run_cli("fleet", "report", "-v", str(results)).stdout.decode().splitlines()
    rows = [line.split() for line in verbose[verbose.index("") + 1 :]]
    assert rows[0] == ["repository", "status", "before", "after", "seconds", "why"]
    assert rows[1] == ["/srv/a.git", "done", "4.00", "MiB", "3.00", "MiB", "2.0"]
    assert rows[2][:2] == ["/srv/b.git", "failed"] and " ".join(rows[2]).endswith("not a git repository")
    assert rows[3][:2] == ["/srv/c.git", "skipped"] and " ".join(rows[3]).endswith("gain below 1")
    plain = run_cli("fleet", "report", str(results)).stdout.decode()
    assert plain.splitlines()[-1] == "failed: /srv/b.git: not a git repository" and "/srv/a.git" not in plain


def test_seekstats_takes_a_workload_path_in_experiments_spelling_too(bare: Path) -> None:
    spellings = [["-w", "log-path:f.txt"], ["-w", "log-path", "f.txt"], ["-w", "log-path", "--path", "f.txt"]]
    workloads = []
    for words in spellings:
        proc = run_cli("seekstats", "--json", str(bare), *words)
        assert proc.returncode == 0, proc.stderr
        workloads.append(json.loads(proc.stdout)["results"][0]["workload"])
    assert workloads[0] == workloads[1] == workloads[2]
    assert workloads[0]["name"] == "log-path" and workloads[0]["path"] == "f.txt" and not workloads[0]["chosen"]
    proc = run_cli("seekstats", str(bare), "-w", "log-path:f.txt", "--path", "g.txt")
    assert proc.returncode == 129 and b"given twice" in proc.stderr.splitlines()[0]


@pytest.mark.parametrize(
    ("schema", "args"),
    [
        ("repack", ["repack", "--dry-run", "REPO"]),
        ("gc", ["gc", "REPO"]),
        ("sample", ["sample", "--commits", "3", "TMP/sample.git"]),
        ("seekstats", ["seekstats", "REPO"]),
        ("seekstats", ["seekstats", "REPO", "--simulate-order", "history"]),
        ("experiment", ["experiment", "REPO", "--runs", "0", "--orders", "recency", "-w", "log", "-o", "TMP/out"]),
        ("index-pack", ["index-pack", "-o", "TMP/copy.idx", "PACK"]),
        ("fleet.status", ["fleet", "status", "REPO"]),
        ("fleet.repack", ["fleet", "repack", "--workers", "1", "--results", "TMP/results.jsonl", "REPO"]),
        ("fleet.report", ["fleet", "report", "RESULTS"]),
    ],
)
def test_every_json_document_names_its_schema(bare: Path, tmp_path: Path, schema: str, args: list[str]) -> None:
    if args[0] == "fleet":
        pytest.importorskip("distributed")
    repo = tmp_path / "repo.git"
    shutil.copytree(bare, repo)
    (pack,) = (repo / "objects" / "pack").glob("*.pack")
    results = tmp_path / "given.jsonl"
    results.write_text(json.dumps({"path": str(repo), "order": "recency", "status": "skipped", "error": None}) + "\n")
    places = {"REPO": str(repo), "PACK": str(pack), "RESULTS": str(results)}
    args = [places.get(a, a.replace("TMP", str(tmp_path))) for a in args]
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert isinstance(document, dict) and document["schema"] == f"packorder.{schema}/1"
    assert next(iter(document)) == "schema" and len(document) > 1
    # The document as docs/schemas/ describes it: every key there, each of its type.
    jsonschema = pytest.importorskip("jsonschema")
    described = json.loads((SCHEMAS / f"packorder.{schema}-1.schema.json").read_text())
    jsonschema.validate(document, described)


def test_csv_writes_true_false_and_rounded_numbers(bare: Path) -> None:
    pytest.importorskip("distributed")
    proc = run_cli("fleet", "status", "--csv", str(bare))
    assert proc.returncode == 0, proc.stderr
    (row,) = list(csv.DictReader(proc.stdout.decode().splitlines()))
    assert row["cached"] == "false"
    # Shares and gains in one unit, fractions (the table prints points).
    if row["share_now"] and row["share_after"]:
        assert float(row["gain"]) == pytest.approx(float(row["share_after"]) - float(row["share_now"]), abs=2e-4)
    for name in ("seconds", "estimated_seconds", "drift", "gain"):
        assert row[name] == repr(round(float(row[name]), 4)), (name, row[name])
    proc = run_cli("seekstats", "--csv", str(bare))
    (row,) = [r for r in csv.DictReader(proc.stdout.decode().splitlines()) if r["view"] == "raw"]
    assert row["seconds"] == repr(round(float(row["seconds"]), 4)) and len(row["seconds"].partition(".")[2]) <= 4
