"""What `index_pack` was asked to do (`IndexPackRequest`), checked in one place before
anything is read, and the settings it runs with once the configuration is read. Named
tuples and plain classes only: `dataclasses` loads `inspect`, 1.3 MiB of index-pack's peak."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import BinaryIO, NamedTuple

from packorder import gitcmd
from packorder.errors import PackError, UsageError
from packorder.format import idx as idx_format
from packorder.format import object_format as object_formats
from packorder.settings import compression_level, delta_base_cache_limit, thread_count


class IndexPackRequest(NamedTuple):
    """index_pack's arguments, as Git's options (index_pack's doc says what each does)."""

    pack: str | os.PathLike[str] | None = None
    stdin: BinaryIO | None = None
    repo: str | os.PathLike[str] | None = None
    output: str | os.PathLike[str] | None = None
    index_version: int | None = None
    off32_limit: int | None = None
    rev_index: bool | None = None
    fix_thin: bool = False
    verify: bool = False
    keep: str | bool | None = None
    promisor: str | bool | None = None
    pack_header: str | None = None
    max_input_size: int | None = None
    object_format: str | None = None
    on_end_of_input: Callable[[], None] | None = None
    progress_title: str | None = None
    strict: bool = False
    fsck_objects: bool = False
    fsck_msg_types: Sequence[str] = ()
    check_self_contained_and_connected: bool = False
    stat: str | None = None
    threads: int | None = None
    max_memory: int | None = None
    detect_collisions: bool = True

    def check(self) -> None:
        """Refuse what cannot be combined, in Git's words and with Git's exit statuses."""
        stdin = self.stdin
        if (self.pack is None) == (stdin is None):
            raise UsageError("give either a pack file or {stdin}", params=("stdin",))
        if self.fix_thin and stdin is None:
            raise UsageError("{fix_thin} requires {stdin}", params=("fix_thin", "stdin"))
        if self.verify and stdin is not None:
            raise UsageError("{verify} cannot be used with {stdin}", params=("verify", "stdin"))
        if self.stat is not None and not self.verify:
            raise UsageError("{stat} requires {verify}", params=("stat", "verify"))
        # Git dies (128) on these, rather than showing its usage.
        if self.promisor is not None and stdin is None:
            raise PackError("--promisor cannot be used with a pack name")
        if self.pack_header is not None and stdin is None:
            raise UsageError("{pack_header} requires {stdin}", params=("pack_header", "stdin"))

    def check_object_format(self) -> None:
        """The hash named, after the header given is read (Git checks in this order)."""
        if self.object_format is not None:
            object_formats.named(self.object_format)  # Git's words for a name it does not know
            if self.stdin is not None:
                raise PackError("options '--object-format' and '--stdin' cannot be used together")


class Settings:
    def __init__(
        self, threads: int, budget: int, index_version: int, off32_limit: int, write_rev: bool, compression: int
    ) -> None:
        self.threads = threads
        self.budget = budget
        self.index_version = index_version
        self.off32_limit = off32_limit
        self.write_rev = write_rev
        self.compression = compression


def read_settings(
    config: gitcmd.Config,
    threads: int | None,
    max_memory: int | None,
    index_version: int | None,
    off32_limit: int | None,
    rev_index: bool | None,
) -> Settings:
    threads = thread_count(config, threads, "pack.threads")
    if threads < 1:
        raise UsageError(f"invalid number of threads: {threads}")
    if max_memory is None:
        # Git's budget for index-pack: core.deltaBaseCacheLimit per thread.
        max_memory = delta_base_cache_limit(config) * threads
    if max_memory < 0:
        raise UsageError(f"invalid memory budget: {max_memory}")
    if index_version is None:
        index_version = config.get_int("pack.indexVersion", 2)
    if index_version not in (1, 2):
        raise UsageError(f"unsupported index version {index_version}")
    if rev_index is None:
        rev_index = config.get_bool("pack.writeReverseIndex", True)
    return Settings(
        threads=threads,
        budget=max_memory,
        index_version=index_version,
        off32_limit=idx_format.OFF32_LIMIT if off32_limit is None else off32_limit,
        write_rev=rev_index,
        compression=compression_level(config),
    )
