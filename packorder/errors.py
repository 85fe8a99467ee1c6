"""The exceptions the library raises. The CLI turns each into one line on stderr and exit 1."""

from __future__ import annotations


class PackError(Exception):
    """Base of every error packorder reports to its user."""


class CorruptPackError(PackError):
    """A pack (or its index) is malformed: the message names the problem and the offset."""

    def __init__(self, message: str, offset: int | None = None, path: str | None = None) -> None:
        self.message = message
        self.offset = offset
        self.path = path
        where = []
        if path:
            where.append(path)
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class RepositoryError(PackError):
    """The repository is missing, unreadable, or not in a state we can work on."""


class CollisionError(PackError):
    """An object the repository has differs from the object of the same id in a pack."""


class UsageError(PackError):
    """Options that cannot work together, or an input that is not what the command takes."""


class Interrupted(PackError):
    """The user interrupted a long operation; nothing was left behind."""
