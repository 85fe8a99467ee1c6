"""Rules of the code's layout (docs/design.md): no import cycle among packorder's modules
(imports under `if TYPE_CHECKING:` are annotations only and do not count) nor among the
native core's top-level modules, and no module, Python or Rust, over 500 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "packorder"
NATIVE = PACKAGE.parent / "native" / "src"
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The packorder modules `path` imports when it runs (at its top or inside a function)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != "packorder"} - {module_name(path)}


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    found: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for dep in sorted(graph[name]):
            if state.get(dep) == "open":
                found.append([*trail[trail.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found[0] if found else None


def test_no_import_cycle() -> None:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: imports(path, set(paths)) for name, path in paths.items()}
    assert first_cycle(graph) is None


def test_no_use_cycle_in_the_native_core() -> None:
    """`crate::m` names between the top-level modules of native/src (a child module such as
    resolve/read.rs counts as its parent's)."""
    sources = {p: p.read_text() for p in NATIVE.rglob("*.rs") if p.name != "lib.rs"}
    top = {p.relative_to(NATIVE).parts[0].removesuffix(".rs") for p in sources}
    graph: dict[str, set[str]] = {name: set() for name in top}
    for path, text in sources.items():
        name = path.relative_to(NATIVE).parts[0].removesuffix(".rs")
        named = set(re.findall(r"crate::([a-z_0-9]+)", text))
        for group in re.findall(r"use crate::\{([^}]*)\}", text):
            named.update(re.findall(r"\b([a-z_0-9]+)\b", group))
        graph[name] |= (named & top) - {name}
    assert first_cycle(graph) is None


def test_no_module_over_500_lines() -> None:
    files = [*PACKAGE.rglob("*.py"), *NATIVE.rglob("*.rs")]
    long = {str(p.relative_to(PACKAGE.parent)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
