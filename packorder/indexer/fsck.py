"""Git's object checks for index-pack: `--strict`, `--fsck-objects` and
`--check-self-contained-and-connected`.

The checks of each object run in the native indexer as it hashes the object (fsck's rules,
message ids and words: native/src/fsck). This module parses the message-type options as Git
does (`--strict=missingEmail=ignore,skipList=FILE`), and once the pack is indexed asks the
repository what the pack alone cannot answer: whether the objects it links to but lacks are
there, and what the `.gitmodules` and `.gitattributes` blobs it names but lacks hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from packorder import _native, gitcmd
from packorder.errors import PackError
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import TYPE_CODES, TYPE_NAMES

# Severities as the native checks take them.
IGNORE, WARN, ERROR = 0, 1, 2
# Index-pack checks with fsck's strict defaults: warnings are errors, infos are warnings.
_DEFAULT_SEVERITY = {"fatal": ERROR, "error": ERROR, "warn": ERROR, "info": WARN, "ignore": IGNORE}
_SET_SEVERITY = {"error": ERROR, "warn": WARN, "ignore": IGNORE}
_MAX_TREE_ENTRY_LEN = 4096


class FsckError(PackError):
    """An object fails Git's checks. `lines` are what Git prints before its fatal line."""

    def __init__(self, message: str, lines: Sequence[str] = ()) -> None:
        self.lines = list(lines)
        super().__init__(message)


class Checks(NamedTuple):
    """What one run checks."""

    objects: bool  # every object by fsck's rules
    links: bool  # everything linked to is in the pack or the repository
    strict: bool  # and no object appears twice (Git's strict index)
    severities: bytes  # one per message of _native.fsck_messages()
    skip: bytes  # ids never reported on, one after another
    max_tree_entry_len: int


class Outcome(NamedTuple):
    """What the checks found without failing."""

    warnings: list[str]
    # `.gitmodules` blobs neither the pack nor the repository has: Git prints their ids on
    # stdout for fetch-pack, which checks them once it has fetched everything.
    missing_gitmodules: list[str]
    # Linked objects the repository holds and the pack does not.
    foreign: int


def _skip_list(path: str, fmt: ObjectFormat) -> list[bytes]:
    try:
        text = Path(path).read_text(errors="surrogateescape")
    except OSError:
        raise PackError(f"could not open object name list: {path}") from None
    ids = []
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        try:
            if len(name) != fmt.hexsz:
                raise ValueError
            ids.append(bytes.fromhex(name))
        except ValueError:
            raise PackError(f"invalid object name: {name}") from None
    return ids


def _parse_size(text: str) -> int:
    """Git's git_parse_ssize_t: a number with an optional k, m or g."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    digits = text.rstrip("kKmMgG")
    unit = text[len(digits) :].lower()
    if not digits.lstrip("-").isdigit() or unit not in units:
        raise PackError(f"unable to parse max tree entry len: {text}")
    return int(digits) * units[unit]


def checks(
    *, strict: bool, fsck_objects: bool, self_contained: bool, fmt: ObjectFormat, msg_types: Sequence[str] = ()
) -> Checks | None:
    """The checks Git's options ask for, None for none. `msg_types` are the values of every
    `--strict=` and `--fsck-objects=`, in order, as Git's fsck_set_msg_types parses them;
    a skip list names ids of `fmt`."""
    if not (strict or fsck_objects or self_contained):
        return None
    messages = _native.fsck_messages()
    index = {name.lower(): i for i, (name, _) in enumerate(messages)}
    severities = [_DEFAULT_SEVERITY[default] for _, default in messages]
    skip: list[bytes] = []
    max_len = _MAX_TREE_ENTRY_LEN
    for values in msg_types:
        for token in values.replace(",", " ").replace("|", " ").split(" "):
            if not token:
                continue
            equal = min((token.find(c) for c in "=:" if c in token), default=len(token))
            key, value = token[:equal].lower(), token[equal + 1 :]
            if key == "skiplist":
                if equal == len(token):
                    raise PackError("skiplist requires a path")
                skip.extend(_skip_list(value, fmt))
                continue
            if equal == len(token):
                raise PackError(f"Missing '=': '{key}'")
            if key not in index:
                raise PackError(f"Unhandled message id: {key}")
            at = index[key]
            if key == "largepathname" and ":" in value:
                value, _, limit = value.partition(":")
                max_len = _parse_size(limit)
            if value not in _SET_SEVERITY:
                raise PackError(f"Unknown fsck message type: '{value}'")
            if messages[at][1] == "fatal" and value != "error":
                raise PackError(f"Cannot demote {key} to {value}")
            severities[at] = _SET_SEVERITY[value]
    return Checks(
        objects=strict or fsck_objects,
        links=strict or self_contained,
        strict=strict or self_contained,
        severities=bytes(severities),
        skip=b"".join(skip),  # sorted by the core
        max_tree_entry_len=max_len,
    )


_WARNING, _ERROR = 0, 1  # the levels of native/src/fsck/report.rs; the third is a plain error


def _lines(finding: _native.Finding) -> list[str]:
    oid = finding.id
    return [
        f"warning: object {oid.hex()}: {text}"
        if level == _WARNING
        else f"error: object {oid.hex()}: {text}"
        if level == _ERROR
        else f"error: {text}"
        for level, text in finding.lines
    ]


def _settle(findings: list[_native.Finding], printed: list[str]) -> None:
    """Print-ready lines of `findings` (in pack order) into `printed`; raise at the first that
    fails the pack, as Git dies at it."""
    for finding in findings:
        printed.extend(_lines(finding))
        if finding.fatal is not None:
            raise FsckError(finding.fatal, printed)


def finish(native, run_checks: Checks, git_dir: Path | None, fmt: ObjectFormat, promised: bool = False) -> Outcome:
    """End the checks of an indexed pack; raises FsckError on the first failure. `promised`:
    the pack is a promisor pack, or the repository a partial clone, so that a special blob
    nobody has is one the promisor remote holds (Git skips it then: blob:none clones)."""
    checked = native.finish_checks()
    outside = checked.outside
    printed: list[str] = []
    _settle(checked.findings, printed)
    foreign = [oid.hex() for oid in fmt.split(checked.foreign_ids)]
    if foreign:
        types = gitcmd.object_types(git_dir, foreign) if git_dir is not None else [None] * len(foreign)
        for oid_hex, want, found in zip(foreign, checked.foreign_kinds, types, strict=True):
            if found is None:
                raise FsckError(f"did not receive expected object {oid_hex}", printed)
            if found != TYPE_NAMES[want]:
                raise FsckError(f"object {oid_hex}: expected type {TYPE_NAMES[want]}, found {found}", printed)
    missing: list[str] = []
    if outside:
        if git_dir is None:
            raise FsckError("cannot perform queued object checks outside of a repository", printed)
        with gitcmd.ObjectReader(git_dir) as reader:
            for (oid, special), (_, obj) in zip(outside, reader.read_many([o.hex() for o, _ in outside]), strict=True):
                if obj is None and promised:
                    continue
                if obj is None and special == "gitmodules":
                    missing.append(oid.hex())
                    continue
                kind = None if obj is None else TYPE_CODES[obj[0]]
                data = b"" if obj is None else obj[1]
                _settle(native.check_special_blob(oid, special, kind, data), printed)
        if missing and run_checks.severities[_gitmodules_missing()] == IGNORE:
            missing = []
    return Outcome(warnings=printed, missing_gitmodules=missing, foreign=len(foreign))


def _gitmodules_missing() -> int:
    return next(i for i, (name, _) in enumerate(_native.fsck_messages()) if name == "gitmodulesMissing")
