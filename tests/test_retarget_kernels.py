"""The retarget's compiled kernels against their NumPy references: ``rotation_part`` with the C extension's
``polar_turns`` (and its ``mm3`` products) equals, bit for bit, ``rotation_part`` with the extension set aside (the
NumPy steps), over stacks of turns, scaled turns, float32-rounded turns, noisy and random matrices and reflections;
a retarget with the extension set aside writes the same poses to 1e-9 (FK, the drive's products and polar factors
all in NumPy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit import jit
from animkit.model.transforms import matrix_about_axis
from animkit.motion.retarget import retarget_full, rotation_part

DATA = Path(__file__).parent / "data"
NATIVE = jit.native_kernels()
pytestmark = pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "polar_turns"),
                                reason="the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")


def _numpy(fn, *args):  # noqa: ANN001, ANN202
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: None)
        return fn(*args)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["turns", "scaled", "float32", "noisy", "random", "reflected"]),
       st.sampled_from([3, 4]))
def test_rotation_part_is_the_numpy_steps_bit_for_bit(seed: int, kind: str, width: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    R = matrix_about_axis(axis, rng.uniform(-np.pi, np.pi, n))
    M = {"turns": R, "scaled": R * rng.uniform(1e-3, 1e3, (n, 1, 1)),
         "float32": (R * 0.01).astype(np.float32).astype(float), "noisy": R + 1e-5 * rng.normal(size=R.shape),
         "random": rng.normal(size=R.shape), "reflected": -R}[kind]
    if width == 4:
        W = np.zeros((n, 4, 4))
        W[:, :3, :3] = M
        W[:, :3, 3] = rng.normal(size=(n, 3))
        W[:, 3, 3] = 1.0
        M = W
    got = rotation_part(M)
    want = _numpy(rotation_part, M)
    assert np.array_equal(got, want)
    assert np.abs(np.swapaxes(got, 1, 2) @ got - np.eye(3)).max() < 1e-9


@pytest.mark.parametrize("target", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_retarget_without_the_extension_writes_the_same_poses(target: str) -> None:
    source, character = animkit.load(DATA / "cmu_09_01_run.bvh"), animkit.load(DATA / target)
    got = retarget_full(source, character).poses
    want = _numpy(retarget_full, source, character).poses
    assert np.abs(got - want).max() <= 1e-9


def _pairs() -> list[tuple[str, str]]:
    return [("cmu_02_01_walk.bvh", "humanoid"), ("cmu_09_01_run.bvh", "humanoid"),
            ("cmu_02_heldout.bvh", "RiggedFigure.glb"), ("cmu_08_heldout.bvh", "CesiumMan.glb"),
            ("cmu_131_03_hop_3dsmax.bvh", "CesiumMan.glb"), ("Fox.glb", "Fox.glb")]


def _scene(name: str) -> animkit.Scene:
    if name == "humanoid":
        return animkit.load(Path(animkit.__file__).parent / "examples" / "humanoid.toml")
    return animkit.load(DATA / name)


@pytest.mark.parametrize(("source", "target"), _pairs(), ids=lambda p: p.split(".")[0])
def test_retarget_turns_kernel_is_the_numpy_pass(source: str, target: str) -> None:
    """The C pass ``retarget_turns`` against :func:`bone_turns_numpy` on real clips and characters: the same bone turns
    and poses to 1e-12 (the C library's cbrt and NumPy's SIMD one, or NumPy's matmul, may differ in the last bit)."""
    from animkit.motion import retarget_drive as rd

    calls = {"compiled": 0}
    diff = [0.0]
    compiled = rd.bone_turns_compiled

    def counted(*args):  # noqa: ANN002, ANN202
        out = compiled(*args)
        if out is not None:
            calls["compiled"] += 1
            diff[0] = max(diff[0], float(np.abs(out - rd.bone_turns_numpy(args[0], list(args[1]), *args[2:])).max()))
        return out

    src, tgt = _scene(source), _scene(target)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rd, "bone_turns_compiled", counted)
        got = retarget_full(src, tgt).poses
    assert calls["compiled"] == 1
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rd, "bone_turns_compiled", lambda *a: None)
        want = retarget_full(src, tgt).poses
    print(source, target, "turns", diff[0], "poses", np.abs(got - want).max())
    assert diff[0] <= 1e-12
    assert np.abs(got - want).max() <= 1e-12


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["turns", "scaled", "opposite", "zero", "reflected", "far",
                                                   "sheared"]))
def test_retarget_turns_kernel_edge_cases(seed: int, kind: str) -> None:
    """Constructed stacks: scaled turns, a bone's direction opposite its source's (the half turn), a zero direction
    (I), matrices a little off a turn (a shear of 1e-7 to 1e-3: the Newton-Schulz steps run, over the whole stack as
    the reference steps it), and matrices whose polar factor needs the SVD (a reflection, a shear: the kernel
    declines, NumPy runs)."""
    from animkit.motion import retarget_drive as rd

    rng = np.random.default_rng(seed)
    F, N, B = int(rng.integers(1, 40)), 5, 3
    axis = rng.normal(size=(F * N, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    W = np.zeros((F, N, 4, 4))
    W[:, :, :3, :3] = matrix_about_axis(axis, rng.uniform(-np.pi, np.pi, F * N)).reshape(F, N, 3, 3)
    W[:, :, :3, 3] = rng.normal(size=(F, N, 3))
    W[:, :, 3, 3] = 1.0
    if kind == "scaled":
        W[:, :, :3, :3] *= rng.uniform(1e-3, 1e3)
    src, child = np.array([0, 1, 2]), np.array([3, -1, 4])
    k_axis = rng.normal(size=(B, 3))
    K = matrix_about_axis(k_axis / np.linalg.norm(k_axis, axis=1, keepdims=True), rng.uniform(-3, 3, B))
    d = rng.normal(size=(B, 3))
    # the aiming bones' source directions: their turned rest directions turned by up to 150° (the shortest turn is
    # ill-conditioned towards 180°, where any two sums of the same products part), or opposite, or zero
    P = rd.rotation_part(W[:, :3, :3, :3].reshape(-1, 3, 3)).reshape(F, 3, 3, 3)
    for j, c in ((0, 3), (2, 4)):
        u = np.einsum("fij,jk,k->fi", P[:, j], K[j], d[j])
        n = np.cross(u, rng.normal(size=(F, 3)))
        turn = matrix_about_axis(n / np.linalg.norm(n, axis=1, keepdims=True), rng.uniform(0, np.radians(150), F))
        w = {"opposite": -2.5 * u, "zero": 0.0 * u}.get(kind, rng.uniform(0.1, 10) * np.einsum("fij,fj->fi", turn, u))
        W[:, c, :3, 3] = W[:, j, :3, 3] + (w if j == 0 else np.einsum("fij,fj->fi", turn, u))
    if kind == "reflected":
        W[rng.integers(F), rng.integers(3), :3, :3] *= -1.0
    if kind == "far":
        W[rng.integers(F), rng.integers(3), 0, 1] += 0.5
    if kind == "sheared":  # some frames' sources off a turn: every matrix of the stack takes the same steps
        W[rng.integers(F, size=3), rng.integers(3, size=3), 0, 1] += 10.0 ** rng.uniform(-7, -3, 3)
    got = rd.bone_turns_compiled(W, src, child, K, d)
    want = rd.bone_turns_numpy(W, list(src), child, K, d)
    if kind in ("reflected", "far"):
        assert got is None
        return
    assert got is not None
    assert np.abs(got - want).max() <= 1e-12
    assert np.abs(np.einsum("bfji,bfjk->bfik", got, got) - np.eye(3)).max() < 1e-9


#: the C extension's kernels for the retarget's drive (:mod:`animkit.motion.retarget_drive`)
DRIVE_KERNELS = ("retarget_turns", "euler_read", "turned_by", "drive_joint")


def _without(names: tuple[str, ...], fn, *args):  # noqa: ANN001, ANN202
    """``fn(*args)`` with the C extension's kernels ``names`` set aside (their NumPy references run)."""
    real = jit.native_kernels()

    class Partial:
        def __getattr__(self, name: str) -> object:
            if name in names:
                raise AttributeError(name)
            return getattr(real, name)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: Partial())
        return fn(*args)


@pytest.mark.parametrize(("source", "target"), _pairs(), ids=lambda p: p.split(".")[0])
def test_drive_kernels_write_the_numpy_poses(source: str, target: str) -> None:
    """Retargeting with the drive's C kernels (bone turns, Euler reads, world turns) against the same with them set
    aside: the poses agree to 1e-12 on real clips and characters (measured: ≤ 6.7e-16)."""
    src, tgt = _scene(source), _scene(target)
    got = retarget_full(src, tgt).poses
    want = _without(DRIVE_KERNELS, retarget_full, src, tgt).poses
    assert np.abs(got - want).max() <= 1e-12


def _products_in_order(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B for stacks of 3×3 matrices, each entry (A_i0 B_0j + A_i1 B_1j) + A_i2 B_2j: the order the C kernels add
    them in (at gimbal lock the Euler read amplifies a last-bit difference of the product ~10⁸ times)."""
    return (A[..., :, 0, None] * B[..., None, 0, :] + A[..., :, 1, None] * B[..., None, 1, :]
            + A[..., :, 2, None] * B[..., None, 2, :])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["xyz", "xzy", "yxz", "yzx", "zxy", "zyx", "xy", "zx", "yz"]),
       st.sampled_from(["any", "lock"]))
def test_euler_read_and_turned_by_are_the_numpy_steps(seed: int, order: str, kind: str) -> None:
    """euler_read(Bt, Rt) against euler_intrinsic_from_matrix(Btᵀ Rt) (every Tait–Bryan order, two- and three-DOF
    joints, at gimbal lock too), and turned_by(Bt, θ) against Bt · Π R_a(θ) (products added in the kernels' order);
    and the round trip:
    Bt · Π R_a(read angles) = Rt for three DOFs away from the lock."""
    from animkit.model.transforms import euler_intrinsic_from_matrix, matrix_from_euler_intrinsic

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    axis = rng.normal(size=(2, n, 3))
    axis /= np.linalg.norm(axis, axis=2, keepdims=True)
    Bt, Rt = matrix_about_axis(axis, rng.uniform(-np.pi, np.pi, (2, n)))
    full = order if len(order) == 3 else order + next(c for c in "xyz" if c not in order)
    if kind == "lock":  # the middle angle at ±90°: Rt = Bt · R(α, ±π/2, γ)
        ang = np.stack([rng.uniform(-3, 3, n), rng.choice([-1.0, 1.0], n) * np.pi / 2, rng.uniform(-3, 3, n)], 1)
        Rt = Bt @ matrix_from_euler_intrinsic(ang, full)
    i, j, k = ("xyz".index(c) for c in full)
    got = np.empty((n, 3))
    NATIVE.euler_read(np.ascontiguousarray(Bt), np.ascontiguousarray(Rt), got, n, i, j, k)
    want = euler_intrinsic_from_matrix(_products_in_order(np.swapaxes(Bt, 1, 2), Rt), full)
    assert np.abs(got - want).max() <= 1e-12
    vals = got[:, :len(order)].copy()
    letters = np.array(["xyz".index(c) for c in order], dtype=np.int64)
    R = np.empty((n, 3, 3))
    NATIVE.turned_by(np.ascontiguousarray(Bt), vals, letters, R, n, len(order))
    ref = Bt
    for c, letter in enumerate(order):
        ref = _products_in_order(ref, matrix_about_axis(np.eye(3)["xyz".index(letter)], vals[:, c]))
    assert np.abs(R - ref).max() <= 1e-12
    if len(order) == 3 and kind == "any":  # (at the lock, asin near ±1 keeps only ~1e-8 of β: the reference's too)
        assert np.abs(R - Rt).max() <= 1e-9


def _unwrap_steps(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The drive's angles into their limits in NumPy's own steps: np.unwrap over frames, a whole number of turns
    taken out so the mean sits nearest the limits' middle, then wrapped (limits a whole turn wide) or clipped."""
    u = np.unwrap(v, axis=0)
    finite = np.isfinite(lo) & np.isfinite(hi)
    mid = np.where(finite, 0.5 * (np.where(finite, lo, 0.0) + np.where(finite, hi, 0.0)), 0.0)
    u = u - np.round((u.mean(axis=0) - mid) / (2 * np.pi)) * (2 * np.pi)
    full = finite & (np.where(finite, hi - lo, 0.0) >= 2 * np.pi - 1e-9)
    wrapped = np.where(full, lo + np.mod(u - np.where(full, lo, 0.0), 2 * np.pi), u)
    return np.where(full, np.minimum(wrapped, hi), np.clip(u, lo, hi))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.05, 1.0, 3.0, 7.0]))
def test_unwrap_limits_kernel_is_numpys_unwrap(seed: int, step: float) -> None:
    """unwrap_limits against np.unwrap and NumPy's mod, round and clip (:func:`_unwrap_steps`), on angle paths that
    wrap, jump by exact multiples of π (np.unwrap's boundary), hold NaN, and limits that are none, narrow, or a whole
    turn wide: equal to 1e-12 and NaN where NumPy's is (measured: equal bit for bit). Not on the tree before (the
    kernel is new)."""
    rng = np.random.default_rng(seed)
    F, n = int(rng.integers(1, 200)), int(rng.integers(1, 8))
    v = np.cumsum(rng.normal(0.0, step, (F, n)), axis=0) + rng.uniform(-20, 20, n)
    v = np.where(rng.random((F, n)) < 0.05, np.pi * rng.integers(-3, 4, (F, n)), v)
    if seed % 5 == 0:
        v[rng.integers(0, F), 0] = np.nan
    lo = rng.choice([-np.inf, -np.pi, -1.0, -2 * np.pi, 0.0], n)
    hi = np.where(np.isinf(lo), np.inf, lo + rng.choice([0.5, 2 * np.pi, 4.0, 7.0], n))
    got = np.empty((F, n))
    NATIVE.unwrap_limits(np.ascontiguousarray(v), lo, hi, got, F, n)
    want = _unwrap_steps(v, lo, hi)
    assert (np.isnan(got) == np.isnan(want)).all()
    assert np.nanmax(np.abs(got - want), initial=0.0) <= 1e-12


@pytest.mark.parametrize(("sa", "sb", "index"), [
    ((40, 3, 3), (40, 3, 3), (1, 40, 1, 40)), ((1, 3, 3), (40, 3, 3), (1, 1, 1, 40)),
    ((40, 3, 3), (1, 3, 3), (1, 40, 1, 1)), ((4, 40, 3, 3), (1, 40, 3, 3), (1, 160, 1, 40)),
    ((5, 1, 3, 3), (5, 7, 3, 3), (7, 5, 1, 35)), ((3, 1, 3, 3), (1, 4, 3, 3), (4, 3, 1, 4))])
def test_mm3_broadcasts_as_numpy(sa: tuple[int, ...], sb: tuple[int, ...], index: tuple[int, int, int, int]) -> None:
    """The C extension's stacked 3×3 products out_i = A[(i / da) % ma] · B[(i / db) % mb], broadcast as NumPy
    broadcasts (whole stacks, a stack repeated, one matrix, the outer or inner axis repeated), against NumPy's
    broadcast products added in the kernel's order, bit for bit (the stack indices are kept as counters, no
    division per matrix: fails if a counter wraps wrongly)."""
    rng = np.random.default_rng(sum(sa) + 7 * sum(sb))
    A, B = rng.normal(size=sa), rng.normal(size=sb)
    shape = np.broadcast_shapes(sa, sb)
    got = np.empty(shape)
    NATIVE.mm3(np.ascontiguousarray(A), np.ascontiguousarray(B), got, int(np.prod(shape[:-2])), *index)
    assert np.array_equal(got, _products_in_order(A, B))
