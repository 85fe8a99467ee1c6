"""What every command's front end shares, without click: errors as one `fatal:` line and an
exit status (never a traceback), and JSON output. `index-pack` is parsed without click (see
index_pack_command.py), so nothing here may import it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from packorder.errors import Interrupted, PackError, UsageError
from packorder.jsonable import to_jsonable

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


def print_json(value: Any) -> None:
    json.dump(to_jsonable(value), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def fail(message: str, status: int = 1) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.write(f"fatal: {message}\n")
    sys.stderr.flush()
    sys.exit(status)


def guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Turn library errors into one line on stderr and an exit status; never a traceback."""

    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except UsageError as e:
            fail(str(e), 2)
        except Interrupted:
            fail("interrupted", 130)
        except PackError as e:
            fail(str(e))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except MemoryError:
            fail("out of memory")
        except BrokenPipeError:
            sys.exit(1)
        except OSError as e:  # a file we were told to read or write
            fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))
        except BaseException as e:
            # A panic in the native core arrives as pyo3's PanicException (a BaseException).
            if type(e).__name__ == "PanicException":
                fail(f"internal error in the native core: {e}")
            raise

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper
