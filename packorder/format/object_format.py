"""The hash a repository names its objects by (`extensions.objectFormat`): SHA-1 or SHA-256,
and what follows from it in every file format (id sizes, the hash id of .rev, .mtimes and
.bitmap headers, file checksums). Chosen once, where a repository or a pack is opened."""

from __future__ import annotations

from typing import NamedTuple

from packorder import _native
from packorder.errors import PackError


class ObjectFormat(NamedTuple):
    name: str  # as Git's configuration and options spell it
    rawsz: int  # bytes in an id
    format_id: int  # the hash id of .rev, .mtimes and .bitmap headers

    @property
    def hexsz(self) -> int:
        return 2 * self.rawsz

    def hasher(self) -> _native.FileChecksum:
        """The plain hash of file contents (trailers), from the native core: hashlib would
        load OpenSSL into index-pack's process."""
        return _native.FileChecksum(self.name)

    def checksum(self, data: bytes | memoryview) -> bytes:
        h = self.hasher()
        h.update(data)
        return h.digest()

    def object_id(self, kind: int, data: bytes) -> bytes:
        return _native.object_id(kind, data, object_format=self.name)

    def split(self, ids: bytes) -> list[bytes]:
        """Concatenated ids, one by one."""
        return [ids[i : i + self.rawsz] for i in range(0, len(ids), self.rawsz)]


SHA1 = ObjectFormat("sha1", 20, 1)
SHA256 = ObjectFormat("sha256", 32, 2)
FORMATS = {f.name: f for f in (SHA1, SHA256)}


def of_size(rawsz: int) -> ObjectFormat:
    """The format whose ids are `rawsz` bytes long."""
    return next(f for f in FORMATS.values() if f.rawsz == rawsz)


def named(name: str) -> ObjectFormat:
    """The format Git calls `name`; Git's words for one it does not know."""
    try:
        return FORMATS[name]
    except KeyError:
        raise PackError(f"unknown hash algorithm '{name}'") from None
