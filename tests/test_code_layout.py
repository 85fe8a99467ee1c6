"""Rules of the code's layout (docs/design.md): no import cycle among packorder's modules
(imports under `if TYPE_CHECKING:` are annotations only and do not count) nor among the
native core's modules, folders that depend one way in both languages, and no module,
Python or Rust, over 500 lines."""

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


def folder_of(module: str) -> str:
    """The folder a module is in (`repacking` for packorder.repacking.writer), or "" for the
    top-level modules every folder may use."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def test_folders_depend_one_way() -> None:
    """The folders form layers (docs/design.md): no two of them import each other, even
    through a third. The top-level modules are the foundation and import no folder (the
    package's `__main__` and `__init__` excepted: they are the entry points)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        if name in ("packorder", "packorder.__main__"):
            continue
        graph.setdefault(folder_of(name), set())
        for dep in imports(path, set(paths)):
            if folder_of(dep) != folder_of(name):
                graph[folder_of(name)].add(folder_of(dep))
                graph.setdefault(folder_of(dep), set())
    assert graph[""] <= {""}, f"top-level modules import {sorted(graph[''] - {''})}"
    assert first_cycle(graph) is None


def native_module(path: Path) -> str:
    """`index::resolve` for native/src/index/resolve.rs (and for its child resolve/read.rs),
    `error` for error.rs, `pack` for pack/mod.rs."""
    parts = path.relative_to(NATIVE).with_suffix("").parts
    if len(parts) == 1:
        return parts[0]
    return parts[0] if parts[1] == "mod" else f"{parts[0]}::{parts[1]}"


def native_uses(text: str, modules: set[str]) -> set[str]:
    """The modules a source names through `crate::` paths (grouped `use crate::{..}` too)."""
    paths = re.findall(r"crate::([a-z_0-9]+(?:::[a-z_0-9]+)?)", text)
    for group in re.findall(r"use crate::\{([^}]*)\}", text):
        paths += re.findall(r"\b([a-z_0-9]+(?:::[a-z_0-9]+)?)", group)
    found = set()
    for path in paths:
        if path in modules:
            found.add(path)
        elif path.split("::")[0] in modules:
            found.add(path.split("::")[0])
    return found


def native_graph(level: str) -> dict[str, set[str]]:
    sources = {p: p.read_text() for p in NATIVE.rglob("*.rs") if p.name != "lib.rs"}
    modules = {native_module(p) for p in sources}
    key = (lambda m: m.split("::")[0]) if level == "folder" else (lambda m: m)
    graph: dict[str, set[str]] = {key(m): set() for m in modules}
    for path, text in sources.items():
        name = key(native_module(path))
        graph[name] |= {key(m) for m in native_uses(text, modules)} - {name}
    return graph


def test_native_folders_depend_one_way() -> None:
    """native/src's folders (pack, index, write, bitmap, seek, python) form layers too."""
    graph = native_graph("folder")
    assert {"pack", "index", "write", "bitmap", "python"} <= set(graph)
    assert first_cycle(graph) is None


def test_no_use_cycle_in_the_native_core() -> None:
    """No cycle among the native modules either (a child module such as index/resolve/read.rs
    counts as its parent's)."""
    assert first_cycle(native_graph("module")) is None


def test_no_module_over_500_lines() -> None:
    files = [*PACKAGE.rglob("*.py"), *NATIVE.rglob("*.rs")]
    long = {str(p.relative_to(PACKAGE.parent)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


MAX_FUNCTION_LINES = 100
SCRIPTS = PACKAGE.parent / "scripts"


def test_no_function_over_100_lines() -> None:
    """A function that long does several jobs (ruff's C901 and PLR0915, in pyproject.toml,
    hold complexity and statements down beside this)."""
    long = {}
    for path in [*PACKAGE.rglob("*.py"), *SCRIPTS.glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE.parent)}:{node.name}"] = lines
    assert long == {}


# A source or doc naming a module: `head_side.py`, `walk/tree.rs`, `packorder/cli/base.py`.
NAMED_FILE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|rs))\b")


def test_every_file_a_comment_or_the_design_names_exists() -> None:
    """Pointers left behind by a move read as facts; a named module must exist (by its name,
    or by the tail of its path when a folder is given)."""
    root = PACKAGE.parent
    trees = [PACKAGE, NATIVE, root / "tests", root / "scripts", root / "docs"]
    files = [p.relative_to(root).as_posix() for tree in trees for p in tree.rglob("*")]
    names = {f.rsplit("/", 1)[-1] for f in files}
    sources = [*PACKAGE.rglob("*.py"), *NATIVE.rglob("*.rs"), root / "docs" / "design.md"]
    missing = []
    for source in sources:
        for number, line in enumerate(source.read_text().splitlines(), 1):
            if source.suffix == ".rs":
                line = line.partition("//")[2]  # Rust code names methods such as `m.py()`
            for named in NAMED_FILE.findall(line):
                found = any(f == named or f.endswith("/" + named) for f in files) if "/" in named else named in names
                if not found:
                    missing.append(f"{source.relative_to(root)}:{number}: {named}")
    assert missing == []


def test_the_design_names_every_folder() -> None:
    design = (PACKAGE.parent / "docs" / "design.md").read_text()
    folders = [p for p in [*PACKAGE.iterdir(), *NATIVE.iterdir()] if p.is_dir() and p.name != "__pycache__"]
    unnamed = sorted(str(p.relative_to(PACKAGE.parent)) for p in folders if f"`{p.name}/`" not in design)
    assert unnamed == []
