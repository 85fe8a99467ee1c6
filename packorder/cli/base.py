"""What every command's front end shares, without click: errors as Git reports them (one
`fatal:` line and status 128; a usage error as `error:`, the usage and 129; never a
traceback), and JSON output. `index-pack` is parsed without click (see
cli/index_pack.py), so nothing here may import it."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from packorder.errors import Interrupted, PackError, Terminated, UsageError, interruption
from packorder.jsonable import document

# numpy's OpenBLAS starts a thread per core that spins after loading, though packorder does no
# linear algebra: in repack it took ~0.2 s of CPU from the core Git's walk runs on. A front
# end owns its process, so it may say so before numpy loads (the library leaves it alone).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def size_argument(value: str) -> int:
    """'512m', '2g', '1048576' -> bytes (Git's k/m/g suffixes); ValueError with the message
    to show, which each front end raises its own way."""
    from packorder.gitcmd import parse_int

    try:
        return parse_int(value, "size")
    except PackError:
        raise ValueError(f"not a size: {value!r} (use a number with an optional k, m or g)") from None


def parse_size(value: str | None) -> int | None:
    """A size option of the click commands: bytes, or a click error naming the option."""
    import click  # only the click commands call this: index-pack runs without click

    if value is None:
        return None
    try:
        return size_argument(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def print_json(value: Any, command: str) -> None:
    """`command`'s result as its --json document (jsonable.document: its schema named)."""
    json.dump(document(value, command), sys.stdout, indent=2)
    sys.stdout.write("\n")


# Git's exit statuses: die() exits 128, a usage error 129; a process stopped by a signal
# ends as 128 + its number (130 for SIGINT, 143 for SIGTERM).
FATAL, USAGE, SIGNALLED = 128, 129, 128
INTERRUPTED = SIGNALLED + signal.SIGINT


def stop_on_termination() -> None:
    """SIGTERM (`timeout`, `systemctl stop`) and SIGHUP (a closed terminal) stop a command as
    Ctrl-C does: the main thread gets Terminated, a KeyboardInterrupt, so the same cleanup
    runs (native work cancelled, temporaries removed, the lock released) and the command ends
    with `fatal: terminated` and 128 + the signal. Only the front ends call this: a library's
    process keeps its own handlers."""

    def handler(signum: int, _frame: object) -> None:
        raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def warn(message: str) -> None:
    """A warning, as Git prints one."""
    sys.stderr.write(f"warning: {message}\n")
    sys.stderr.flush()


class Notes:
    """A command's notes on stderr ("chose PATH", "Auto packing ..."): as they come with -v;
    otherwise held until the command has succeeded (flush), or with `held=False` not shown,
    so that a failure is its one `fatal:` line. Nothing with -q."""

    def __init__(self, prefix: str = "", verbose: bool = False, quiet: bool = False, held: bool = True) -> None:
        self.prefix, self.verbose, self.quiet, self.held = prefix, verbose, quiet, held
        self.waiting: list[str] = []
        self.before: Callable[[], None] | None = None  # run before a note is written (ends a progress line)

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        if self.verbose:
            self._write(message)
        elif self.held:
            self.waiting.append(message)

    def flush(self) -> None:
        for message in self.waiting:
            self._write(message)
        self.waiting.clear()

    def _write(self, message: str) -> None:
        if self.before is not None:
            self.before()
        sys.stderr.write(f"{self.prefix}{message}\n")
        sys.stderr.flush()


def fail(message: str, status: int = FATAL) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.write(f"fatal: {message}\n")
    sys.stderr.flush()
    sys.exit(status)


def usage_error(message: str, usage: str | None = None) -> NoReturn:
    """Git's answer to a bad command line: `error: ...`, the usage, status 129."""
    sys.stdout.flush()
    sys.stderr.write(f"error: {message}\n")
    if usage:
        sys.stderr.write(usage if usage.endswith("\n") else usage + "\n")
    sys.stderr.flush()
    sys.exit(USAGE)


def quiet_or_verbose(quiet: bool, verbose: bool) -> None:
    """-q and -v together ask for less and more at once: refused, in every command."""
    if quiet and verbose:
        raise UsageError("-q and -v cannot be used together")


def unknown_option(word: str) -> str:
    """Git's words for an option it does not know (parse-options.c): no guess at another."""
    return f"unknown option `{word[2:]}'" if word.startswith("--") else f"unknown switch `{word[1:2]}'"


def option_needs_value(name: str) -> str:
    """Git's words for an option given without its value."""
    return (
        f"option `{name[2:]}' requires a value" if name.startswith("--") else f"switch `{name[1:2]}' requires a value"
    )


def option_takes_no_value(name: str) -> str:
    return f"option `{name.lstrip('-')}' takes no value"


def click_usage() -> str | None:
    """The running click command's usage and options, as Git prints them under an error
    (click is looked up, not imported: index-pack runs without it)."""
    click = sys.modules.get("click")
    ctx = click.get_current_context(silent=True) if click is not None else None
    return command_usage(ctx) if ctx is not None else None


def flag_of(param: str) -> str:
    """The command-line flag of a library parameter: the running click command's own option
    of that name, else Git's spelling (`fix_thin` -> `--fix-thin`)."""
    click = sys.modules.get("click")
    ctx = click.get_current_context(silent=True) if click is not None else None
    if ctx is not None:
        for option in ctx.command.params:
            if option.name == param and isinstance(option, click.Option):
                return max(option.opts, key=len)
    # Git spells one index-pack option with its underscore.
    return "--pack_header" if param == "pack_header" else "--" + param.replace("_", "-")


def command_usage(ctx: Any) -> str:
    formatter = ctx.make_formatter()
    ctx.command.format_usage(ctx, formatter)
    ctx.command.format_options(ctx, formatter)
    text = formatter.getvalue()
    return "usage:" + text[len("Usage:") :] if text.startswith("Usage:") else text


def guarded(fn: Callable[..., None], usage: Callable[[], str | None] = click_usage) -> Callable[..., None]:
    """Turn library errors into one line on stderr and Git's exit status; never a traceback.
    `usage` gives the usage text shown under a usage error."""

    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except UsageError as e:
            usage_error(e.render(flag_of), usage())
        except Interrupted as e:
            fail(str(e), SIGNALLED + e.signum)
        except PackError as e:
            fail(str(e))
        except KeyboardInterrupt as e:
            stopped = interruption(e)
            fail(str(stopped), SIGNALLED + stopped.signum)
        except MemoryError:
            fail("out of memory")
        except BrokenPipeError:
            # What Git's status is when its reader goes away (killed by SIGPIPE: 128 + 13).
            sys.exit(141)
        except OSError as e:  # a file we were told to read or write
            fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))
        except BaseException as e:
            # A panic in the native core arrives as pyo3's PanicException (a BaseException);
            # the core's own error, where no call site converted it, as PackFormatError.
            if type(e).__name__ == "PanicException":
                fail(f"internal error in the native core: {e}")
            if type(e).__name__ == "PackFormatError" and len(e.args) == 2:
                message, offset = e.args
                fail(f"{message} (offset {offset})" if offset is not None else str(message))
            raise

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper
