"""animkit.jit: kernels name the kernels they call, and compiling one rewrites no module's names."""

from __future__ import annotations

import numpy as np
import pytest

from animkit import jit
from animkit.ik import lm_jit

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
