"""The options of a repack: what the caller asked for (`RepackRequest`), completed from the
repository's configuration into the settings the repack runs with (`RepackOptions`).

Every default comes from a config key where there is one: packorder's own keys first
(`packorder.order`, `packorder.verify`, `packorder.window`, `packorder.depth`,
`packorder.threads`), then Git's (`pack.window`, `pack.depth`, `pack.threads`,
`pack.compression`, `pack.usePathWalk`, `pack.writeReverseIndex`, `repack.writeBitmaps`,
`repack.useDeltaBaseOffset`, `repack.updateServerInfo`), so that `packorder repack` and
`packorder gc` run unattended with the settings a repository's owner chose.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from packorder import gitcmd, settings
from packorder.errors import UsageError
from packorder.orders.catalog import configured_order
from packorder.repacking import expiry
from packorder.settings import DEFAULT_VERIFY, MIDX_MODES, VERIFY_MODES, compression_level, thread_count
from packorder.store.repository import Repository

GIT_DEPTH_LIMIT = 4095
NAME_HASH_VERSIONS = (1, 2)  # Git's --name-hash-version


@dataclass
class RepackRequest:
    """What the caller asked for; None where the configuration (or Git's default) decides."""

    order: str | None = None
    no_reuse_delta: bool = False
    window: int | None = None
    depth: int | None = None
    threads: int | None = None
    ref_delta: bool = False
    write_bitmap: bool | None = None
    verify: str | None = None
    repick_backward: bool = False
    cruft_expiration: str | None = None  # Git's date syntax; None: no unreachable object expires
    max_cruft_size: int | None = None  # new cruft packs split at this size (Git 2.50's --max-cruft-size)
    combine_cruft_below_size: int | None = None  # only cruft packs smaller than this are rewritten
    local: bool = True
    update_server_info: bool | None = None
    path_walk: bool | None = None  # None: pack.usePathWalk
    name_hash_version: int | None = None  # None: 1
    # How the run installs what it writes.
    write_midx: str | None = None  # of settings.MIDX_MODES
    delete: bool = True  # remove what the new packs replace (Git's -d)
    geometric: int | None = None  # roll up only the packs that break a progression of this factor
    dry_run: bool = False
    output_dir: str | os.PathLike[str] | None = None  # write the packs there, leaving the repository as it is

    @property
    def in_place(self) -> bool:
        return self.output_dir is None and not self.dry_run

    def check(self, snapshot_given: bool = False) -> None:
        """Refuse what cannot be combined, before anything is read or locked."""
        if self.geometric:
            if self.output_dir is not None or snapshot_given or self.ref_delta or self.repick_backward:
                raise UsageError("a geometric repack works in place and reuses the deltas it keeps as they are")
            if self.path_walk or self.name_hash_version is not None:
                raise UsageError("a geometric repack searches its roll-up's deltas by name hash: drop --path-walk")
        if self.write_midx is not None and self.write_midx not in MIDX_MODES:
            raise UsageError(f"unknown value for --write-midx: {self.write_midx}")
        if self.write_midx is not None and self.output_dir is not None:
            raise UsageError("a pack in output_dir gets no multi-pack-index: it belongs beside the repository's packs")
        if self.output_dir is not None and self.write_bitmap:
            raise UsageError("a pack in output_dir gets no bitmap: a bitmap belongs beside the repository's own packs")


@dataclass
class RepackOptions:
    order: str
    no_reuse_delta: bool
    window: int
    depth: int
    threads: int
    ref_delta: bool
    level: int
    write_bitmap: bool
    verify: str
    write_rev: bool
    cruft_expiration: int | None  # epoch seconds; None: never
    max_cruft_size: int | None
    local: bool
    update_server_info: bool
    repick_backward: bool = False
    combine_cruft_below_size: int | None = None
    path_walk: bool = False
    name_hash_version: int = 1

    def describe(self) -> dict[str, object]:
        """The settings as `--dry-run --json` reports them."""
        out: dict[str, object] = asdict(self)
        out["cruft_expiration"] = expiry.describe(self.cruft_expiration)
        out["compression"] = out.pop("level")
        return out


def check_verify(verify: str) -> None:
    if verify not in VERIFY_MODES:
        raise UsageError(f"unknown verification '{verify}' (choose from {', '.join(VERIFY_MODES)})")


def _int_setting(config: gitcmd.Config, value: int | None, own: str, git_key: str, default: int) -> int:
    if value is not None:
        return value
    return config.get_int(own, config.get_int(git_key, default))


def read_options(repo: Repository, request: RepackRequest) -> RepackOptions:
    cfg = repo.config
    order = configured_order(cfg, request.order)
    verify = request.verify or cfg.get("packorder.verify") or DEFAULT_VERIFY
    check_verify(verify)
    window = _int_setting(cfg, request.window, "packorder.window", "pack.window", 10)
    depth = _int_setting(cfg, request.depth, "packorder.depth", "pack.depth", 50)
    if window < 0 or depth < 0:
        raise UsageError("{window} and {depth} take non-negative numbers", params=("window", "depth"))
    depth = min(depth, GIT_DEPTH_LIMIT)
    threads = thread_count(cfg, request.threads, "packorder.threads", "pack.threads")
    ref_delta = request.ref_delta or not cfg.get_bool("repack.useDeltaBaseOffset", True)
    kept = any(p.keep for p in repo.packs)
    write_bitmap = settings.write_bitmap(cfg, request.write_bitmap, repo.bare, repo.has_promisor_packs, kept)
    cruft_expiration = None
    if request.cruft_expiration is not None:
        cruft_expiration = expiry.expiration(request.cruft_expiration, "cruft_expiration", repo.git_dir)
    for name in ("max_cruft_size", "combine_cruft_below_size"):
        if (getattr(request, name) or 0) < 0:
            raise UsageError(f"{{{name}}} takes a size", params=(name,))
    path_walk = cfg.get_bool("pack.usePathWalk", False) if request.path_walk is None else request.path_walk
    name_hash_version = 1 if request.name_hash_version is None else request.name_hash_version
    if name_hash_version not in NAME_HASH_VERSIONS:
        raise UsageError("{name_hash_version} is 1 or 2", params=("name_hash_version",))
    update_server_info = request.update_server_info
    if update_server_info is None:
        update_server_info = cfg.get_bool("repack.updateServerInfo", True)
    return RepackOptions(
        order=order,
        no_reuse_delta=request.no_reuse_delta,
        window=window,
        depth=depth,
        threads=threads,
        ref_delta=ref_delta,
        level=compression_level(cfg),
        write_bitmap=bool(write_bitmap),
        verify=verify,
        write_rev=cfg.get_bool("pack.writeReverseIndex", True),
        cruft_expiration=cruft_expiration,
        max_cruft_size=request.max_cruft_size or None,  # 0: no limit, as in Git
        combine_cruft_below_size=request.combine_cruft_below_size or None,
        local=request.local,
        update_server_info=update_server_info,
        repick_backward=request.repick_backward,
        path_walk=path_walk,
        name_hash_version=name_hash_version,
    )
