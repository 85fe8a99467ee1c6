"""Lists of names (orders, workloads) in the one form every call takes: a sequence of names,
or a comma-separated string, or a mix (a repeated command-line option gives several strings)."""

from __future__ import annotations

from collections.abc import Iterable

from packorder.errors import UsageError


def names(value: str | Iterable[object], what: str = "name") -> list[str]:
    """'recency,history', ['recency', 'history'] and ('recency', 'history') all give
    ['recency', 'history']; items that are not strings (a WorkloadSpec) are kept as they are."""
    items = [value] if isinstance(value, str) else list(value)
    out: list = []
    for item in items:
        if isinstance(item, str):
            out += [part.strip() for part in item.split(",") if part.strip()]
        elif item is None:
            raise UsageError(f"a {what} cannot be None")
        else:
            out.append(item)
    return out
