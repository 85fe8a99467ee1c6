"""What a script author finds in the library: help(packorder) lists the functions, a version,
one form for lists of orders and workloads in every call, and errors that name the call's
parameters (the command lines show their flags instead)."""

from __future__ import annotations

import inspect
import pydoc
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers.gitrepo import build_history

import packorder
from packorder.errors import UsageError
from packorder.experiments.run import parse_workloads
from packorder.orders.catalog import check_orders
from packorder.seek import workloads


def test_help_lists_the_functions_with_their_parameters() -> None:
    text = pydoc.render_doc(packorder, renderer=pydoc.plaintext)
    functions = text[text.index("FUNCTIONS") :]
    for name in ("repack(", "gc(", "index_pack(", "seekstats(", "experiment("):
        assert name in functions
    assert "cruft_expiration" in functions and "fix_thin" in functions


def test_every_export_is_documented_with_a_readable_signature() -> None:
    """Each function and result type has its own docstring; signatures name public types,
    never a module alias or an object's address; the repository is `repo` everywhere."""
    for name in packorder.__all__:
        if name == "__version__":
            continue
        value = getattr(packorder, name)
        doc = inspect.getdoc(value) or ""
        if isinstance(value, type):
            assert doc and not doc.startswith(f"{name}("), f"{name} has no docstring of its own"
        elif callable(value):
            assert doc, name
            signature = str(inspect.signature(value))
            assert " at 0x" not in signature and "_mod." not in signature, signature
    for fn in (packorder.repack, packorder.gc, packorder.seekstats, packorder.experiment):
        assert next(iter(inspect.signature(fn).parameters)) == "repo"
    overview = (packorder.__doc__ or "").split("\n\n")[2]
    for name in ("repack(", "gc(", "index_pack(", "seekstats(", "experiment(", "sample("):
        assert name in overview


def test_version_is_the_installed_one() -> None:
    assert packorder.__version__ == version("packorder")
    assert (Path(packorder.__file__).parent / "py.typed").exists()


@pytest.mark.parametrize(
    "form", ["recency,history", ["recency", "history"], ("recency", " history"), ["recency,history"]]
)
def test_orders_are_a_sequence_or_a_comma_string(form: object) -> None:
    assert check_orders(form, "compare") == ["recency", "history"]


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ("r,h", "unknown order 'r'"),
        ("", "no order to compare"),
        ("recency,recency", "an order is given twice"),
    ],
)
def test_bad_order_lists_fail_clearly(form: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_orders(form, "compare")


def test_workloads_take_the_same_forms_everywhere() -> None:
    given = workloads.WorkloadSpec("blame", "src/a.c")
    specs = parse_workloads(["log", "log-path:src", given])
    assert specs == [workloads.WorkloadSpec("log"), workloads.WorkloadSpec("log-path", "src"), given]
    assert parse_workloads("log,log-path:src") == specs[:2]
    assert workloads.parse("log-path:src") == workloads.parse("log-path", "src") == specs[1]
    assert workloads.parse(given) is given
    with pytest.raises(UsageError, match="given twice"):
        workloads.parse("log-path:src", "lib")
    with pytest.raises(UsageError, match="custom is for seekstats"):
        parse_workloads(["custom"])


def test_library_errors_name_parameters_not_flags(tmp_path: Path) -> None:
    repo = build_history(tmp_path / "repo", commits=2)
    with pytest.raises(UsageError) as caught:
        packorder.index_pack(tmp_path / "x.pack", fix_thin=True)
    assert str(caught.value) == "fix_thin requires stdin"
    assert caught.value.render(lambda name: "--" + name.replace("_", "-")) == "--fix-thin requires --stdin"
    with pytest.raises(UsageError, match=r"^window and depth take non-negative numbers$"):
        packorder.repack(repo.path, window=-1, dry_run=True)
    with pytest.raises(UsageError, match=r"^invalid cruft_expiration: 'false'"):
        packorder.repack(repo.path, cruft_expiration="false", dry_run=True)
    with pytest.raises(UsageError, match=r"^a pack in output_dir gets no bitmap"):
        packorder.repack(repo.path, output_dir=tmp_path / "out", write_bitmap=True)
    with pytest.raises(UsageError, match=r"^cold_iops limits the cold runs: give runs too$"):
        packorder.experiment(repo.path, runs=0, cold_iops=10, output_dir=tmp_path / "exp")


def test_a_template_keeps_braces_of_values() -> None:
    e = UsageError("invalid {when}: '{{x}}'", params=("when",))
    assert str(e) == "invalid when: '{x}'"
    assert e.render(lambda name: "--" + name) == "invalid --when: '{x}'"
    assert UsageError("plain {text}").render(str.upper) == "plain {text}"
