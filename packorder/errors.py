"""The exceptions the library raises. The command line turns each into one line on stderr
and Git's exit status (128; 129 for a usage error)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class PackError(Exception):
    """Base of every error packorder reports to its user."""


class CorruptPackError(PackError):
    """A pack (or its index) is malformed: the message names the problem and the offset."""

    def __init__(self, message: str, offset: int | None = None, path: str | None = None, kind: str = "corrupt") -> None:
        self.message = message
        self.offset = offset
        self.path = path
        self.kind = kind  # the core's error kind: corrupt, io, missing, not-planned
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
    """Options that cannot work together, or an input that is not what the command takes.

    A message about parameters names them as the call does (`fix_thin needs stdin`); given as
    a template with `{name}` for each of `params`, a command line shows its own flag for each
    instead (`--fix-thin needs --stdin`)."""

    def __init__(self, message: str, *, params: tuple[str, ...] = ()) -> None:
        self.template = message
        self.params = params
        super().__init__(self.render(lambda name: name))

    def render(self, flag: Callable[[str], str]) -> str:
        """The message with each parameter shown as `flag` names it."""
        return self.template.format(**{name: flag(name) for name in self.params}) if self.params else self.template


class Interrupted(PackError):
    """The user interrupted a long operation (or a signal stopped it); nothing was left
    behind. `signum`: the signal (SIGINT for Ctrl-C)."""

    def __init__(self, message: str = "interrupted", signum: int = 2) -> None:
        self.signum = signum
        super().__init__(message)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the command line receives SIGTERM or SIGHUP: a
    KeyboardInterrupt, so that everything that cleans up after Ctrl-C (native work
    cancelled, temporary files removed, the lock released) does so for these too."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signum)


def interruption(e: KeyboardInterrupt) -> Interrupted:
    """The Interrupted error for a KeyboardInterrupt (Ctrl-C) or a Terminated."""
    if isinstance(e, Terminated):
        return Interrupted("terminated", e.signum)
    return Interrupted()
