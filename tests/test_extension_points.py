"""Each extension point is one table: an order, a workload and a verification level are one
entry naming what computes it. These check that every entry names something that exists,
takes what its callers pass, and that nothing outside the table adds a case of its own."""

from __future__ import annotations

import inspect

import pytest

from packorder.cli.options import ORDERS_EPILOG
from packorder.orders import catalog
from packorder.orders.catalog import CATALOG as ORDER_CATALOG
from packorder.orders.catalog import HISTORY_FACTS, history_needs
from packorder.orders.functions import ORDERS
from packorder.repacking import writer
from packorder.seek.workload_catalog import CATALOG as WORKLOAD_CATALOG
from packorder.seek.workload_catalog import WorkloadSpec
from packorder.settings import VERIFY_MODES, Limits


@pytest.mark.parametrize("name", sorted(ORDER_CATALOG))
def test_every_order_names_its_function_and_known_facts(name: str) -> None:
    info = ORDER_CATALOG[name]
    assert info.needs <= set(HISTORY_FACTS)
    fn = ORDERS[name].fn
    assert callable(fn)
    # Called with the OrderInput alone: any other parameter has a default.
    first, *rest = inspect.signature(fn).parameters.values()
    assert first.name == "objs" and all(p.default is not inspect.Parameter.empty for p in rest)
    assert ORDERS[name].needs == info.needs


def test_an_entry_needing_an_unknown_fact_is_refused() -> None:
    with pytest.raises(ValueError, match="release"):
        catalog._order("permutations.recency", "intro release", "a misspelt fact")


def test_the_orders_help_fits_80_columns() -> None:
    # click indents an epilog by two columns.
    lines = ORDERS_EPILOG.splitlines()[2:]
    assert len(lines) == len(ORDER_CATALOG)
    assert max(len(line) + 2 for line in lines) <= 80


def test_orders_needs_together_are_the_union() -> None:
    assert history_needs(["recency", "history", "paths"]) == {"intro", "unreleased", "head"}
    assert history_needs(["recency", "git"]) == frozenset()


@pytest.mark.parametrize("level", sorted(VERIFY_MODES))
def test_every_verification_level_names_a_prover_with_one_signature(level: str) -> None:
    prove = getattr(writer, VERIFY_MODES[level].function)
    params = [p for p in inspect.signature(writer.verify).parameters if p != "level"]
    assert list(inspect.signature(prove).parameters) == params


def test_an_unknown_verification_level_is_refused_not_run_as_another() -> None:
    with pytest.raises(KeyError):
        writer.verify(None, "quick", Limits(1, 0, 0))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(WORKLOAD_CATALOG))
def test_every_workload_describes_itself_and_names_its_git_command(name: str) -> None:
    info = WORKLOAD_CATALOG[name]
    spec = WorkloadSpec(name, path="src/a.c" if info.takes_path else None, git_args=("log", "--all"))
    described = spec.describe()
    assert described.startswith("git ")
    if info.git is None:
        assert name in ("index-pack", "custom")  # not one command on the repository
        return
    run = info.git(spec)
    assert run.args and all(isinstance(a, str) for a in run.args)
    # The description names the command it runs.
    assert run.args[0] in described
    if info.takes_path:
        assert "src/a.c" in run.args and "src/a.c" in described
