"""animkit.jit: kernels name the kernels they call, and compiling one rewrites no module's names."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest

from animkit import jit
from animkit.ik import lm_jit
from animkit.io.bvh import parse_bvh

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")


@contextlib.contextmanager
def _as_kernel(name: str, **options: bool) -> Iterator[jit.Kernel]:
    """This module's function ``name`` bound as a kernel while the block runs (a kernel that calls it finds it by
    that name), then the plain function again."""
    plain = globals()[name]
    globals()[name] = kernel = jit.kernel(plain, **options)
    try:
        yield kernel
    finally:
        globals()[name] = plain


def _double(x: float) -> float:
    return 2.0 * x


def _twice_plus_one(x: float) -> float:
    return _double(x) + 1.0


def test_a_kernel_calls_the_kernels_it_names_and_leaves_its_module_alone() -> None:
    with _as_kernel("_double") as double:
        k = jit.kernel(_twice_plus_one, calls=(double,))
        assert k is not None and k(3.0) == 7.0
        assert globals()["_double"] is double  # still the wrapper: the module's name was not rebound
        unnamed = jit.kernel(_twice_plus_one)
        assert unnamed is not None
        with pytest.raises(RuntimeError, match="calls kernel _double: list it in calls="):
            unnamed(3.0)


def _scaled(x: float, k: int) -> float:
    return x * k


def _scaled_by_constants(x: float) -> float:
    return _scaled(x, 2) + _scaled(x, 3) + _scaled(x, 0)


def test_a_kernel_called_with_constants_compiles_once_for_their_type(monkeypatch, tmp_path) -> None:
    """A constant argument is typed as its type, not as a literal: the callee compiles one copy for (float64, int64),
    not one for each of Literal[int](2), (3) and (0) (three copies before, each a full compile)."""
    import numba

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path))  # an empty cache: the caller compiles
    with _as_kernel("_scaled") as scaled:
        k = jit.kernel(_scaled_by_constants, calls=(scaled,))
        assert k is not None and k(1.5) == 7.5
        assert [tuple(map(str, sig)) for sig in scaled.inner().signatures] == [("float64", "int64")]


def _row_sums(A: np.ndarray, out: np.ndarray) -> None:
    for i in range(A.shape[0]):
        row = A[i]  # a view: numba would count a reference to it
        s = 0.0
        for j in range(row.shape[0]):
            s += row[j]
        out[i] = s


def _sums_many(A: np.ndarray, times: int) -> np.ndarray:
    out = np.empty(A.shape[0])
    acc = np.zeros(A.shape[0])
    for _ in range(times):
        _row_sums(A, out)
        acc += out
    return acc


def test_a_helper_without_reference_counts_runs_inside_a_counting_kernel() -> None:
    """kernel(refcounts=False): the copy other kernels call is compiled with numba's ``_nrt`` off; the one Python
    calls keeps it (it boxes arrays). Called 10⁴ times from a kernel that allocates, it leaves every array whole."""
    with _as_kernel("_row_sums", refcounts=False) as row_sums:
        k = jit.kernel(_sums_many, calls=(row_sums,))
        assert k is not None and isinstance(row_sums, jit.Kernel)
        A = np.arange(12.0).reshape(3, 4)
        np.testing.assert_array_equal(k(A, 10_000), 10_000 * A.sum(axis=1))
        assert row_sums.inner().targetoptions["_nrt"] is False
        assert "_nrt" not in row_sums.compiled().targetoptions  # the entry from Python: numba's default
        out = np.empty(3)
        row_sums(A, out)
        np.testing.assert_array_equal(out, A.sum(axis=1))


def _copy_into(out: np.ndarray, a: np.ndarray) -> np.ndarray:
    out[:] = a
    return out


def test_a_kernel_s_slice_assignment_checks_shapes_with_numba_s_plain_message(tmp_path) -> None:
    """``out[:] = a`` in a kernel still checks that the shapes agree (a ValueError, as NumPy's), but with the plain
    message numba's generic target uses, not the CPU target's message that formats both shapes at run time: that
    formatting is compiled into every kernel assigning a slice (jit.py's numba loader swaps it; see docs/testing.md
    for the compile time it saves)."""
    k = jit.kernel(_copy_into)
    assert k is not None
    np.testing.assert_array_equal(k(np.zeros(3), np.arange(3.0)), np.arange(3.0))
    with pytest.raises(ValueError, match=r"^cannot assign slice from input of different size$"):
        k(np.zeros(3), np.arange(4.0))


_CALLEE = """
import numpy as np
from animkit.jit import kernel

def scaled_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * FACTOR
    return s

scaled_sum = kernel(scaled_sum)
"""

_CALLER = """
from animkit.jit import kernel
from callee_mod import scaled_sum

def plus_one(a):
    return scaled_sum(a) + 1.0

plus_one = kernel(plus_one, calls=(scaled_sum,))
"""

_RUN = """
import sys
import numpy as np
from animkit import jit_link
jit_link.MIN_INSTRUCTIONS = 0  # the toy callee is small: link it by its symbol all the same
import caller_mod
print(caller_mod.plus_one(np.arange(5.0)))
lib = next(iter(caller_mod.plus_one.compiled().overloads.values())).library
tok = jit_link.token("scaled_sum__inner")
print(sorted({bool(f.is_declaration) for f in lib._final_module.functions if tok in f.name}))
"""


def _run_in(folder, env) -> list[str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _RUN], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")


def test_a_kernel_calls_a_big_kernel_by_its_symbol_and_a_changed_callee_is_never_stale(tmp_path) -> None:
    """jit_link: the caller links the callee as a declaration (its own library defines the code), loads from
    numba's cache in a fresh process, and when the callee's source changes the cached caller is compiled again
    rather than load a call to code that is gone (numba's default linking copies the callee into the caller's
    cache entry, so the old callee's result would come back: numba tracks no dependency between cache files)."""
    import os
    import time

    (tmp_path / "callee_mod.py").write_text(_CALLEE.replace("FACTOR", "2.0"))
    (tmp_path / "caller_mod.py").write_text(_CALLER)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.path.dirname(os.path.dirname(jit.__file__))])}
    first = _run_in(tmp_path, env)
    assert first[:2] == ["21.0", "[True]"]  # 2·(0+1+2+3+4) + 1; the callee only declared in the caller
    assert _run_in(tmp_path, env)[0] == "21.0"  # loaded from the cache (the callee's symbol loaded first)
    (tmp_path / "callee_mod.py").write_text(_CALLEE.replace("FACTOR", "3.0"))
    later = time.time() + 5  # a new time stamp: numba's cache key for the callee's file
    os.utime(tmp_path / "callee_mod.py", (later, later))
    assert _run_in(tmp_path, env)[0] == "31.0"  # the caller compiled again against the new callee
    assert _run_in(tmp_path, env)[0] == "31.0"


def test_the_lm_kernels_stay_wrappers_after_the_loop_compiles() -> None:
    lm_jit.warm_up()
    for name in ("chain_forward", "chain_residual", "solve_spd"):
        assert isinstance(getattr(lm_jit, name), jit.Kernel)
    A = np.array([[4.0, 1.0], [1.0, 3.0]])
    x = np.empty(2)
    assert lm_jit.solve_spd(A.copy(), np.array([1.0, 2.0]), x)
    np.testing.assert_allclose(A @ x, [1.0, 2.0], atol=1e-12)


def test_pays_adds_up_declined_work_and_takes_a_cached_kernel_once_numba_is_up(monkeypatch) -> None:
    """:func:`jit.pays` with a warm size: the work sent to NumPy adds up; the kernel runs once the sum reaches the
    cold threshold, or, after another kernel has run in this process (numba is up) and the kernel is in numba's
    disk cache, the warm size. Without a warm size a call is judged alone, as before."""
    monkeypatch.setattr(jit, "ALWAYS", False)
    monkeypatch.setattr(jit, "WARM", False)
    cold, cached, uncached = jit.kernel(_double), jit.kernel(_double), jit.kernel(_double)
    assert all(isinstance(k, jit.Kernel) for k in (cold, cached, uncached))
    monkeypatch.setattr(cached, "on_disk", lambda: True)
    monkeypatch.setattr(uncached, "on_disk", lambda: False)
    assert [jit.pays(cold, 30, 100, warm=25) for _ in range(4)] == [False, False, False, True]  # 120 >= 100
    assert jit.pays(cached, 100, 100, warm=25)  # one call at the threshold decides alone
    assert cached.declined == 0
    assert not jit.pays(cached, 10, 100, warm=25) and not jit.pays(cached, 20, 100, warm=25)  # numba not up
    monkeypatch.setattr(jit, "WARM", True)
    assert jit.pays(cached, 10, 100, warm=25)  # 40 >= 25 now that numba is up and the kernel is on disk
    assert [jit.pays(uncached, 10, 100, warm=25) for _ in range(10)] == [False] * 9 + [True]  # would compile:
    # only the cold threshold takes it
    assert not any(jit.pays(jit.kernel(_double), 99, 100) for _ in range(5))  # no warm size: each call alone
    jit.kernel(_double)(1.0)  # a kernel that runs makes numba warm for the others
    assert jit.WARM


def test_on_disk_reads_numba_s_cache_index(monkeypatch, tmp_path) -> None:
    import numba.core.config

    from animkit.model import fk

    assert fk.fk_frames_kernel is not None
    monkeypatch.setattr(jit, "native_kernels", lambda: None)  # numba's kernel, not the one built at install
    data = parse_bvh("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}\nMOTION\nFrames: 1\n"
                     "Frame Time: 0.1\n0\n")
    data.figure.world_positions(data.frames)  # tests run kernels always: this compiles or loads it, onto disk
    assert fk.fk_frames_kernel.on_disk()
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path))  # an empty cache: nothing to load
    fresh = jit.kernel(fk.fk_frames_kernel.fn)
    assert isinstance(fresh, jit.Kernel) and not fresh.on_disk()


def _triple(x: float) -> float:
    return 3.0 * x


def _triple_twice(x: float) -> float:
    return _triple(_triple(x))


def test_warm_compiles_recorded_signatures_onto_the_disk_cache_and_skips_stale_lines(monkeypatch, tmp_path) -> None:
    """What tests/conftest.py does as the workers start: :func:`jit.signatures` lists each compiled signature;
    :func:`jit.warm` compiles them (its parts together: all of them, none twice) onto numba's disk cache, so a
    process that then calls the kernel loads it; lines naming no kernel are skipped, not errors."""
    import gc

    import numba.core.config

    global _triple
    plain = _triple
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "first"))
    try:
        _triple = jit.kernel(plain)
        outer = jit.kernel(_triple_twice, calls=(_triple,))
        assert outer is not None and outer(2.0) == 18.0 and outer(np.int64(2)) == 18.0  # two signatures
        lines = [line for line in jit.signatures(prefix="tests.") if "_triple" in line.split("\t")[0]]
        # the kernels called from Python (the one it calls compiles with it)
        assert [line.split("\t")[0] for line in lines] == ["tests.test_jit:_triple_twice"] * 2
        assert {line.split("\t")[3] for line in lines} == {"(float64,)", "(int64,)"}
        del outer
        _triple = plain
        gc.collect()  # the kernels recorded above are gone: warm finds the fresh ones below
        monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "second"))  # an empty cache
        _triple = jit.kernel(plain)
        fresh = jit.kernel(_triple_twice, calls=(_triple,))
        assert isinstance(fresh, jit.Kernel) and not fresh.on_disk()
        stale = ["# a comment", "tests.test_jit:_gone\t1.0\tAAAA\tx", "tests.nowhere:f\t1.0\tAAAA\tx"]
        parts = [jit.warm(lines + stale, part, 2) for part in (0, 1)]
        assert [done for done, _ in parts] in ([2, 0], [0, 2]) and [skipped for _, skipped in parts] == [2, 0]
        again, callee = jit.kernel(_triple_twice, calls=(_triple,)), jit.kernel(plain)
        assert isinstance(again, jit.Kernel) and isinstance(callee, jit.Kernel)
        # the kernel it calls compiled with it, as the entry-less copy callers bind (Kernel.inner): its own
        # Python entry was never compiled
        assert again.on_disk() and not callee.on_disk() and again(1.5) == 13.5 and callee(1.0) == 3.0
    finally:
        _triple = plain


def test_warming_shares_groups_through_a_folder_and_waits_only_for_the_kernel_reached(monkeypatch, tmp_path) -> None:
    """What the workers of a parallel run do while the warming processes compile (tests/conftest.py): the
    processes sharing a folder each claim a group once (the first compiles it, the next finds it taken), a process
    reaching a kernel another has claimed waits until that kernel is marked ready, and one reaching a kernel no one
    has claimed compiles it itself, without waiting."""
    import threading

    import numba.core.config

    global _triple
    plain = _triple
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    try:
        _triple = jit.kernel(plain)
        outer = jit.kernel(_triple_twice, calls=(_triple,))
        assert outer is not None and outer(2.0) == 18.0
        lines = [line for line in jit.signatures(prefix="tests.") if "_triple" in line.split("\t")[0]]
        key = lines[0].split("\t")[0]
        first, second = tmp_path / "first", tmp_path / "second"
        first.mkdir(), second.mkdir()
        assert jit.warm(lines, 0, 2, shared=first) == (1, 0) and (first / f"ready.{key}").exists()
        assert jit.warm(lines, 1, 2, shared=first) == (0, 0)  # the group was claimed: nothing compiled twice
        waiting = jit.Warming(second, lines, processes=1)
        assert jit.Warming.claim(second, {key})  # another process is compiling it
        threading.Timer(0.3, (second / f"ready.{key}").touch).start()
        waiting.wait(key)
        assert waiting.waited >= 0.25 and waiting.compiled == 0
        third = tmp_path / "third"
        third.mkdir()
        mine = jit.Warming(third, lines, processes=1)
        mine.wait(key)  # no one had claimed it: compiled here, at once
        assert mine.compiled == 1 and mine.waited == 0.0 and (third / f"ready.{key}").exists()
        ended = jit.Warming(tmp_path, lines, processes=1)
        (tmp_path / "0.done").touch()  # the warming ended (a group unmarked): no wait
        jit.Warming.claim(tmp_path, {key})
        ended.wait(key)
        assert ended.waited == 0.0 and ended.compiled == 0
        ended.wait("tests.test_jit:_not_warmed")  # a kernel the lines do not name: no wait
    finally:
        _triple = plain


def _shared(x: float) -> float:
    return x + 1.0


def _first_caller(x: float) -> float:
    return _shared(x)


def _second_caller(x: float) -> float:
    return _shared(x) * 2.0


def _alone(x: float) -> float:
    return x - 1.0


def test_kernels_calling_one_unlisted_kernel_form_one_group(monkeypatch, tmp_path) -> None:
    """Two listed kernels that call the same kernel compiled only inside its callers (no line of its own, as
    FABRIK's ``step_one`` and ``solve_all`` share ``_step``) are one group of :func:`jit.warm` (one claim in the
    shared folder): one process compiles the shared kernel once and the second caller loads it, instead of two
    processes compiling it at once. A kernel calling nothing is a group of its own."""
    import numba.core.config

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    shared = jit.kernel(_shared)
    first = jit.kernel(_first_caller, calls=(shared,))
    second = jit.kernel(_second_caller, calls=(shared,))
    alone = jit.kernel(_alone)
    assert first is not None and second is not None and alone is not None
    assert (first(1.0), second(1.0), alone(1.0)) == (2.0, 4.0, 0.0)
    names = ("_first_caller", "_second_caller", "_alone")
    lines = [line for line in jit.signatures(prefix="tests.") if line.split("\t")[0].endswith(names)]
    assert len(lines) == 3  # the shared kernel has no line: it compiles inside its callers
    folder = tmp_path / "warming"
    folder.mkdir()
    assert jit.warm(lines, 0, 2, shared=folder) == (3, 0)
    claims = sorted(p.name.rpartition(":")[2] for p in folder.glob("claim.*"))
    assert claims == ["_alone", "_first_caller"]  # two groups; before, a third claim for _second_caller
