"""Expiry dates (`gc.pruneExpire`, `--cruft-expiration`) read exactly as Git reads them.

Git reads these with its approxidate rules ("2.weeks.ago", "1.week.ago", "3.months.ago",
"2020-01-01", "never", "now", and much else). Rather than re-implement them, packorder asks
Git: `git rev-parse --since=VALUE` prints approxidate's result as `--max-age=SECONDS`.

`git gc` refuses a value that does not name a time in the past (`Invalid gc.pruneexpire:
'false'`): approxidate answers "now" for anything it cannot read, so without that check a
typo would expire every unreachable object at once. packorder applies the same check to
the command line's `--cruft-expiration`, which `git repack` would take as "now".
"""

from __future__ import annotations

import time
from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError, UsageError

NEVER = None  # the expiry of "never": nothing expires


def approxidate(value: str, git_dir: Path | None = None) -> int:
    """Git's approxidate of `value`, in epoch seconds."""
    proc = gitcmd.run(["rev-parse", f"--since={value}"], git_dir=git_dir)
    out = proc.stdout.decode().strip()
    if not out.startswith("--max-age="):
        raise RepositoryError(f"git rev-parse --since gave no date for {value!r}")
    return int(out.removeprefix("--max-age="))


def expiration(value: str, source: str, git_dir: Path | None = None) -> int | None:
    """The time at or before which unreachable objects expire (an object is kept while its
    age is later), or NEVER; `source` names the setting in the error for a value Git would
    refuse: a config key (`gc.pruneExpire`, RepositoryError) or a parameter (UsageError)."""
    text = value.strip()
    if text == "now":
        return int(time.time())
    before = time.time()
    when = approxidate(text, git_dir)
    if when >= int(before):
        why = f"'{value}' (not a time in the past, as Git reads it)"
        if "." in source:  # a config key
            raise RepositoryError(f"invalid {source}: {why}")
        escaped = why.replace("{", "{{").replace("}", "}}")  # the value is not a placeholder
        raise UsageError("invalid {" + source + "}: " + escaped, params=(source,))
    return NEVER if when == 0 else when


def describe(when: int | None) -> str:
    """How an expiration reads in reports."""
    if when is NEVER:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(when))
