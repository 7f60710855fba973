"""animkit.jit: kernels name the kernels they call, and compiling one rewrites no module's names."""

from __future__ import annotations

import numpy as np
import pytest

from animkit import jit
from animkit.ik import lm_jit
from animkit.io.bvh import parse_bvh

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")


def _double(x: float) -> float:
    return 2.0 * x


def _twice_plus_one(x: float) -> float:
    return _double(x) + 1.0


def test_a_kernel_calls_the_kernels_it_names_and_leaves_its_module_alone() -> None:
    global _double
    plain = _double
    _double = jit.kernel(plain)
    try:
        k = jit.kernel(_twice_plus_one, calls=(_double,))
        assert k is not None and k(3.0) == 7.0
        assert isinstance(_double, jit.Kernel)  # still the wrapper: the module's name was not rebound
        unnamed = jit.kernel(_twice_plus_one)
        assert unnamed is not None
        with pytest.raises(RuntimeError, match="calls kernel _double: list it in calls="):
            unnamed(3.0)
    finally:
        _double = plain


def test_the_lm_kernels_stay_wrappers_after_the_loop_compiles() -> None:
    lm_jit.warm_up()
    for name in ("chain_forward", "chain_residual", "solve_spd"):
        assert isinstance(getattr(lm_jit, name), jit.Kernel)
    A = np.array([[4.0, 1.0], [1.0, 3.0]])
    x = np.empty(2)
    assert lm_jit.solve_spd(A.copy(), np.array([1.0, 2.0]), x)
    np.testing.assert_allclose(A @ x, [1.0, 2.0], atol=1e-12)


def test_pays_takes_a_cached_kernel_once_numba_is_up_and_the_declined_work_repays_its_load(monkeypatch) -> None:
    """The warm rule of :func:`jit.pays`: below the cold threshold, a kernel runs only once another kernel has run
    (numba is up), it is in numba's disk cache, and the work sent to NumPy since adds up to ``warm``."""
    monkeypatch.setattr(jit, "ALWAYS", False)
    cached, uncached = jit.kernel(_double), jit.kernel(_double)
    assert isinstance(cached, jit.Kernel) and isinstance(uncached, jit.Kernel)
    monkeypatch.setattr(cached, "on_disk", lambda: True)
    monkeypatch.setattr(uncached, "on_disk", lambda: False)
    monkeypatch.setattr(jit, "_warm", False)
    assert not jit.pays(cached, 10, 100, warm=25)  # numba not up: the load would cost its start-up too
    assert cached.declined == 0
    assert jit.pays(cached, 100, 100, warm=25)  # the cold threshold still decides alone
    monkeypatch.setattr(jit, "_warm", True)
    assert [jit.pays(cached, 10, 100, warm=25) for _ in range(3)] == [False, False, True]
    assert not any(jit.pays(uncached, 10, 100, warm=25) for _ in range(5))  # would compile: never on this rule
    assert not any(jit.pays(jit.kernel(_double), 10, 100) for _ in range(5))  # no warm size: the old rule
    jit.kernel(_double)(1.0)  # a kernel that runs makes numba warm for the others
    assert jit._warm


def test_on_disk_reads_numba_s_cache_index(monkeypatch, tmp_path) -> None:
    import numba.core.config

    from animkit import fk

    assert fk.fk_frames_kernel is not None
    data = parse_bvh("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}\nMOTION\nFrames: 1\n"
                     "Frame Time: 0.1\n0\n")
    data.figure.world_positions(data.frames)  # tests run kernels always: this compiles or loads it, onto disk
    assert fk.fk_frames_kernel.on_disk()
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path))  # an empty cache: nothing to load
    fresh = jit.kernel(fk._fk_frames)
    assert isinstance(fresh, jit.Kernel) and not fresh.on_disk()
