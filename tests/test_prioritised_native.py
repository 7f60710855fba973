"""The C extension's ``prio_step`` (animkit._native) against its NumPy reference, :func:`bounded_step`'s own path
(the prioritised step's levels, the null-space term and the inequality rows' active set): random levels to 1e-12,
an exactly singular level left to NumPy (its LinAlgError), and the natural reach's bake (the main job's torso
panel) to 1e-9 with it and without it. They fail on the tree before (its extension has no ``prio_step``)."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import prioritised
from animkit.ik.prioritised import BOUND_DAMPING, bounded_step, prioritised_step

from .conftest import SCENES


def _kernel():  # noqa: ANN202 - the extension's function
    native = jit.native_kernels()
    if native is None:
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    assert hasattr(native, "prio_step"), "animkit._native has no prio_step: rebuild it (setup.py build_ext)"
    return native.prio_step


class _Without:
    """The extension with ``prio_step`` set aside (its NumPy reference runs), the other kernels as they are."""

    def __init__(self, native: object) -> None:
        self.native = native

    def __getattr__(self, name: str) -> object:
        if name == "prio_step":
            raise AttributeError(name)
        return getattr(self.native, name)


def _numpy(levels, bounds, grad, sc, null):  # noqa: ANN001, ANN202 - bounded_step's NumPy path alone
    native = jit.native_kernels()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: _Without(native))
        return bounded_step(levels, bounds, grad, sc, null)


def _shape(rng: np.random.Generator) -> tuple[int, list[int], int]:
    """n DOFs, the levels' row counts (1-4 levels of 1-9 rows) and the inequality rows (0, 3 or 12), with every row
    independent (n ≥ all rows + 1): a level below others then keeps singular values well above its λ. (Where the
    rows above already span a level's, its G + λ²I is λ²-conditioned and any two orders of summation differ by
    eps/λ²: both answers are roundoff there; the natural solver's levels are not.)"""
    sizes = [int(rng.integers(1, 10)) for _ in range(int(rng.integers(1, 5)))]
    rows = int(rng.choice([0, 3, 12]))
    return int(rng.integers(sum(sizes) + rows + 1, 48)), sizes, rows


def _case(rng: np.random.Generator, n: int, sizes: list[int], bound_rows: int, null: bool):  # noqa: ANN202
    """Levels of ``sizes`` rows over n DOFs (some columns zero: DOFs a level does not move), λ from 1e-6 to 0.05,
    a stiffness scale with a blocked DOF (0), ∇H or none, and inequality rows of which some a step breaks."""
    levels = []
    for m in sizes:
        J = rng.normal(size=(m, n)) * (rng.random(n) < 0.8)
        levels.append((J, rng.normal(size=m) * 0.05, float(rng.choice([1e-6, 1e-3, 0.01, 0.05]))))
    sc = rng.uniform(0.2, 1.0, n)
    sc[rng.integers(n)] = 0.0
    grad = rng.normal(size=n) if null else np.zeros(n)
    bounds = None
    if bound_rows:
        bounds = (rng.normal(size=(bound_rows, n)), rng.normal(size=bound_rows) * 0.01)
    return levels, bounds, grad, sc


@pytest.mark.parametrize("seed", range(40))
def test_prio_step_equals_numpys_step(seed: int) -> None:
    """One to four levels of 1-9 rows over up to 47 DOFs (:func:`_shape`), with and without ∇H and inequality rows
    (the active set's rounds run: some rows join), to 1e-12 of the step's size."""
    fn = _kernel()
    rng = np.random.default_rng(seed)
    n, sizes, rows = _shape(rng)
    levels, bounds, grad, sc = _case(rng, n, sizes, rows, bool(seed % 2))
    null = float(rng.choice([0.02, 0.08, 0.0, 10.0]))
    want = _numpy(levels, bounds, grad, sc, null)
    got = bounded_step(levels, bounds, grad, sc, null)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)
    out = np.empty(n)  # and the kernel itself answered (1: not left to NumPy)
    J = np.vstack([j for j, _, _ in levels])
    V = np.concatenate([v for _, v, _ in levels])
    Jb, room = bounds if bounds is not None else (np.empty((0, n)), np.empty(0))
    assert fn(J, V, np.array(sizes, dtype=np.int64), np.array([la for _, _, la in levels]), grad, sc, Jb, room,
              out, n, len(levels), len(room), null) == 1
    np.testing.assert_array_equal(out, got)


def test_the_active_set_case_is_exercised() -> None:
    """The cases above include steps where bound rows join (the step differs from the unbounded one)."""
    joined = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n, sizes, rows = _shape(rng)
        levels, bounds, grad, sc = _case(rng, n, sizes, rows, bool(seed % 2))
        null = float(rng.choice([0.02, 0.08, 0.0, 10.0]))
        joined += bounds is not None and not np.array_equal(_numpy(levels, bounds, grad, sc, null),
                                                            prioritised_step(levels, grad, sc, null))
    assert joined >= 5


def test_a_singular_level_is_left_to_numpy() -> None:
    """An exactly singular level (λ = 0, a zero row): the kernel answers 0 and writes nothing NumPy would not;
    bounded_step then raises NumPy's LinAlgError, as its NumPy path does."""
    fn = _kernel()
    n = 4
    J, V = np.zeros((2, n)), np.ones(2)
    J[0, 0] = 1.0
    out = np.full(n, 7.0)
    assert fn(J, V, np.array([2], dtype=np.int64), np.array([0.0]), np.zeros(n), np.ones(n), np.empty((0, n)),
              np.empty(0), out, n, 1, 0, 0.02) == 0
    with pytest.raises(np.linalg.LinAlgError):
        bounded_step([(J, V, 0.0)], None, np.zeros(n), np.ones(n), 0.02)
    with pytest.raises(np.linalg.LinAlgError):
        _numpy([(J, V, 0.0)], None, np.zeros(n), np.ones(n), 0.02)


def test_a_bound_level_s_damping_is_the_module_s() -> None:
    """The kernel's bound level takes λ = 1e-3 (BOUND_DAMPING, written into the C as a number)."""
    assert BOUND_DAMPING == 1e-3 and prioritised.BOUND_GAIN == 0.2 and prioritised.BOUND_ROUNDS == 3


def test_the_main_job_s_torso_bake_is_the_same_with_the_kernel() -> None:
    """The main job's torso panel (natural reach: gaze, plants, balance, ranges, hang, clear) baked with the kernel
    and with NumPy's step: every frame's pose within 1e-9 (measured: 6e-12), the same iterations."""
    from animkit.motion.reach import compare

    _kernel()
    scene = animkit.load(SCENES / "humanoid.toml")
    got = compare(scene, chains=["torso"], quiet=True).panels[0]
    native = jit.native_kernels()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: _Without(native))
        want = compare(scene, chains=["torso"], quiet=True).panels[0]
    assert got.poses.shape == want.poses.shape
    np.testing.assert_allclose(got.poses, want.poses, rtol=0, atol=1e-9)
    assert got.frame_iterations == want.frame_iterations and got.result.iterations == want.result.iterations
