"""Each operator on real code (the standard library's own sources), deterministic per seed."""

import difflib
import inspect
import textwrap as textwrap_module

import pytest

from impasse.tasks.mutate import OPERATORS, candidate_order, enumerate_sites, mutate

SOURCES = {name: inspect.getsource(mod) for name, mod in
           (("textwrap.py", textwrap_module), ("difflib.py", difflib))}
SITES = enumerate_sites(SOURCES)


def first_mutation(op: str):
    for f, o, site in SITES:
        if o == op:
            m = mutate(SOURCES[f], f, o, site, seed=1)
            if m is not None:
                return m
    raise AssertionError(f"no applicable site for {op}")


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operator_changes_real_code_and_keeps_it_compilable(op):
    m = first_mutation(op)
    assert m.mutated != m.original
    compile(m.mutated, m.file, "exec")
    assert m.function, "mutations happen inside functions"
    diff = m.diff()
    assert diff.startswith(f"diff --git a/{m.file} b/{m.file}\n")
    assert any(line.startswith("-") and not line.startswith("---") for line in diff.splitlines()) or op in (
        "remove_wrapper",)


def test_operator_semantics_on_a_small_function():
    src = ("def f(a, b):\n    x = a + b * 2\n    if a < b and b:\n        return x\n    else:\n"
           "        return -x\n")
    changed = {op: mutate(src, "m.py", op, 0, seed=0) for op in OPERATORS}
    assert "x = a + 2 * b" in changed["swap_operands"].mutated  # site 0 is the innermost operation
    assert "a <= b" in changed["change_compare"].mutated
    assert "a < b or b" in changed["flip_boolean"].mutated
    assert changed["invert_if"].mutated.index("return -x") < changed["invert_if"].mutated.index("return x\n")
    assert "x = a + b * 2" not in changed["remove_assignment"].mutated
    assert " 1" in changed["change_constant"].mutated or " 3" in changed["change_constant"].mutated
    assert changed["remove_loop"] is None  # no loop: no site, no mutation


def test_same_seed_same_result_and_different_seed_reorders():
    sites = SITES
    assert candidate_order(sites, 7) == candidate_order(sites, 7)
    assert candidate_order(sites, 7) != candidate_order(sites, 8)
    f, o, s = candidate_order(sites, 7)[0]
    assert mutate(SOURCES[f], f, o, s, 7) == mutate(SOURCES[f], f, o, s, 7)


def test_order_is_balanced_over_operators():
    order = candidate_order(SITES, 0)
    first = {o for _, o, _ in order[: len(OPERATORS)]}
    assert len(first) == len({o for _, o, _ in order})  # the first round visits every operator once
