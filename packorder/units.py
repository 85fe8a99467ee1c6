"""Sizes as people read them."""

from __future__ import annotations


def human_size(n: float) -> str:
    """1536 -> '1.50 KiB'; below a KiB, in bytes."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{int(n)} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def git_humanise_bytes(n: int, rate: bool = False) -> str:
    """A size as Git's messages print it (strbuf_humanise_bytes): 1536 -> '1.50 KiB', with
    Git's rounding, so that a message can be matched word for word; `rate`: a speed as its
    progress lines print it (strbuf_humanise_rate): '1.50 KiB/s'."""
    per = "/s" if rate else ""
    if n > 1 << 30:
        return f"{n >> 30}.{(n & ((1 << 30) - 1)) // 10737419:02d} GiB{per}"
    if n > 1 << 20:
        x = n + 5243
        return f"{x >> 20}.{((x & ((1 << 20) - 1)) * 100) >> 20:02d} MiB{per}"
    if n > 1 << 10:
        x = n + 5
        return f"{x >> 10}.{((x & ((1 << 10) - 1)) * 100) >> 10:02d} KiB{per}"
    return f"{n} {'byte' if n == 1 else 'bytes'}{per}"
