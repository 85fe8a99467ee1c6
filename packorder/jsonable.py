"""Results as JSON-ready values: dataclasses and named tuples become objects, paths strings;
a command's --json document, which names its schema; a CSV cell as a reader expects one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The version of every command's --json document: raised when a field changes meaning or goes.
SCHEMA_VERSION = 1


def document(value: Any, command: str) -> dict[str, Any]:
    """`command`'s --json document: `"schema": "packorder.COMMAND/N"` first, then the result's
    fields (a list of results under `results`), every object's keys sorted."""
    body = to_jsonable(value)
    if not isinstance(body, dict):
        body = {"results": body}
    if "schema" in body:
        raise ValueError(f"{command}'s result has a field named schema")
    return {"schema": f"packorder.{command}/{SCHEMA_VERSION}", **_sorted(body)}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: true/false (not Python's True), a float to 4 decimals, None empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 4))
    return "" if value is None else value


def to_jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses  # only once a dataclass is printed: it loads `inspect` (index-pack's memory)

        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # a named tuple
        return {k: to_jsonable(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return value
