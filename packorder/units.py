"""Sizes as people read them."""

from __future__ import annotations


def human_size(n: float) -> str:
    """1536 -> '1.50 KiB'; below a KiB, in bytes."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{int(n)} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)
