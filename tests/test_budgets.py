"""Size budgets (issue 26 §6): no module over 600 lines, no function over 80 lines or with more than 12 parameters,
beyond a short list of named exceptions, each with its reason (at most 4 modules, 6 long functions, 2 long
parameter lists). Split by concept, not by line count: records (small frozen dataclasses) instead of long parameter
lists, one module per idea.

Counting: a module's lines are its newline characters; a function's lines run from its ``def`` to its last line
(decorators not counted); its parameters are every positional, keyword-only, ``*args`` and ``**kwargs`` one, each
``*``/``**`` counting as one, ``self``/``cls`` not counted. Nested functions are counted on their own, named
``outer.inner``; methods ``Class.method``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import animkit

PKG = Path(animkit.__file__).resolve().parent
ROOT = PKG.parent

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 12

#: Modules allowed over MAX_MODULE_LINES (at most 4), with the reason.
MODULE_EXCEPTIONS: dict[str, str] = {}

#: Functions allowed over MAX_FUNCTION_LINES (at most 6), with the reason.
FUNCTION_EXCEPTIONS: dict[str, str] = {
    "animkit/io/bvh.py:_scan_frames": "the BVH MOTION scanner compiled by numba, ported line for line to "
    "_native.c's scan_frames and held to it bit for bit by tests/test_bvh_scan.py: one loop over the bytes that "
    "a split would make two copies of",
    "animkit/model/fk.py:_fk_frames": "the frame-by-frame FK kernel compiled by numba, ported line for line to "
    "_native.c's fk_frames and held to it bit for bit by tests/test_graph.py: one loop whose split would cost "
    "the call per node that the kernel exists to avoid",
    "animkit/ik/lm_batch_jit.py:_lm_lanes": "the LM loop over 8 SIMD lanes (each lane's rules are lm_jit's "
    "stop_reason and accept_step): its lanes' state (start, finish, take the next problem or restart) is one block "
    "of locals that numba keeps in registers; split, it needs a lane-state record (issue 26 §2, open)",
}

#: Functions allowed over MAX_PARAMETERS (at most 2), with the reason.
PARAMETER_EXCEPTIONS: dict[str, str] = {}

def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function in ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + node.name, node))
            out.extend(_functions(node, f"{prefix}{node.name}."))
        elif isinstance(node, ast.ClassDef):
            out.extend(_functions(node, f"{prefix}{node.name}."))
        else:
            out.extend(_functions(node, prefix))
    return out


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Positional, keyword-only, ``*args`` and ``**kwargs`` (one each); ``self``/``cls`` not counted."""
    a = fn.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    first = (a.posonlyargs + a.args)[:1]
    return n - (1 if first and first[0].arg in ("self", "cls") else 0)


@functools.cache  # the package's source does not change during a run: parsed once for the four budget tests
def measure() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """(module → lines, function → lines, function → parameters) for every offender in the package."""
    modules, lengths, params = {}, {}, {}
    for path in sorted(PKG.rglob("*.py")):
        if "vendor" in path.parts:
            continue
        rel = path.relative_to(ROOT).as_posix()
        src = path.read_text(encoding="utf-8")
        if src.count("\n") > MAX_MODULE_LINES:
            modules[rel] = src.count("\n")
        for name, fn in _functions(ast.parse(src)):
            length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if length > MAX_FUNCTION_LINES:
                lengths[f"{rel}:{name}"] = length
            if parameter_count(fn) > MAX_PARAMETERS:
                params[f"{rel}:{name}"] = parameter_count(fn)
    return modules, lengths, params


def test_the_exception_lists_are_short_and_say_why() -> None:
    assert len(MODULE_EXCEPTIONS) <= 4 and len(FUNCTION_EXCEPTIONS) <= 6 and len(PARAMETER_EXCEPTIONS) <= 2
    for reasons in (MODULE_EXCEPTIONS, FUNCTION_EXCEPTIONS, PARAMETER_EXCEPTIONS):
        assert all(len(why.split()) >= 5 for why in reasons.values()), "each exception needs its reason"


def test_modules_within_600_lines() -> None:
    modules, _, _ = measure()
    over = set(modules) - set(MODULE_EXCEPTIONS)
    assert not over, "modules over 600 lines: " + ", ".join(f"{m} ({modules[m]})" for m in sorted(over))


def test_functions_within_80_lines() -> None:
    _, lengths, _ = measure()
    over = set(lengths) - set(FUNCTION_EXCEPTIONS)
    assert not over, "functions over 80 lines: " + ", ".join(f"{f} ({lengths[f]})" for f in sorted(over))


def test_functions_within_12_parameters() -> None:
    _, _, params = measure()
    over = set(params) - set(PARAMETER_EXCEPTIONS)
    assert not over, "functions over 12 parameters: " + ", ".join(f"{f} ({params[f]})" for f in sorted(over))


def test_no_stale_exception() -> None:
    # an exception that no longer exceeds its budget goes from the list (so the lists only shrink)
    modules, lengths, params = measure()
    stale = ([m for m in MODULE_EXCEPTIONS if m not in modules] + [f for f in FUNCTION_EXCEPTIONS if f not in lengths]
             + [f for f in PARAMETER_EXCEPTIONS if f not in params])
    assert not stale, "within budget now, remove from the lists: " + ", ".join(stale)


def test_the_counting_itself() -> None:
    # a known answer: four parameters (self not counted, *args and **kwargs one each), four lines, one nested
    tree = ast.parse("class A:\n    def f(self, a, *args, b=1, **kw):\n        def g():\n            pass\n"
                     "        return 1\n")
    found = dict(_functions(tree))
    assert set(found) == {"A.f", "A.f.g"}
    f = found["A.f"]
    assert parameter_count(f) == 4 and (f.end_lineno or 0) - f.lineno + 1 == 4
