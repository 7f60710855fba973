"""The retarget drive's fused C pass ``drive_joint`` (one joint's Euler read and world turn per call) against what it
replaces: on real clips and characters, the poses a retarget writes with it equal, bit for bit, those written with it
set aside (:func:`animkit.motion.retarget_drive._drive_groups`' stacked ``euler_read`` and ``turned_by``), and to
1e-12 those of the NumPy reference (every drive kernel set aside, as ``ANIMKIT_JIT=0`` runs); on random inputs the
kernel's angles and turns equal the NumPy steps (the products added in the kernels' order) to 1e-12, for every
Tait–Bryan order, two and three DOFs, a glTF joint's translations before and scales after (their columns kept), a
parent turn per frame or one for all. Not on the tree before (the kernel is new)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit import jit
from animkit.model.transforms import euler_intrinsic_from_matrix, matrix_about_axis
from animkit.motion.retarget import retarget_full

DATA = Path(__file__).parent / "data"
NATIVE = jit.native_kernels()
pytestmark = pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "drive_joint"),
                                reason="the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")

#: every C kernel the drive runs: set aside, the NumPy reference runs
DRIVE_KERNELS = ("retarget_turns", "euler_read", "turned_by", "drive_joint", "mm3", "polar_turns")


class _Kernels:
    """The C extension with the kernels ``off`` set aside, counting the calls of ``drive_joint``."""

    def __init__(self, off: tuple[str, ...]) -> None:
        self.off, self.calls = off, 0

    def __getattr__(self, name: str) -> object:
        if name in self.off:
            raise AttributeError(name)
        kernel = getattr(NATIVE, name)
        if name != "drive_joint":
            return kernel

        def counted(*args: object) -> object:
            self.calls += 1
            return kernel(*args)

        return counted


def _retarget(off: tuple[str, ...], source: animkit.Scene, target: animkit.Scene) -> tuple[np.ndarray, int]:
    kernels = _Kernels(off)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: kernels)
        return retarget_full(source, target).poses, kernels.calls


def _scene(name: str) -> animkit.Scene:
    if name == "humanoid":
        return animkit.load(Path(animkit.__file__).parent / "examples" / "humanoid.toml")
    return animkit.load(DATA / name)


@pytest.mark.parametrize(("source", "target", "fused"), [
    ("cmu_02_01_walk.bvh", "CesiumMan.glb", True), ("cmu_09_01_run.bvh", "RiggedFigure.glb", True),
    ("cmu_02_heldout.bvh", "humanoid", False), ("cmu_131_03_hop_3dsmax.bvh", "CesiumMan.glb", True),
    ("Fox.glb", "Fox.glb", True)], ids=lambda p: str(p).split(".")[0])
def test_drive_joint_writes_the_stacked_readings_poses(source: str, target: str, fused: bool) -> None:
    """Real retargets: ``drive_joint`` runs where a driven joint has no limit (every glTF character; the humanoid's
    joints all have limits, so there the stacked reading runs alone), and the poses equal bit for bit those of the
    stacked reading it replaces, and the NumPy reference's to 1e-12."""
    src, tgt = _scene(source), _scene(target)
    got, calls = _retarget((), src, tgt)
    stacked, none = _retarget(("drive_joint",), src, tgt)
    numpy_poses, _ = _retarget(DRIVE_KERNELS, src, tgt)
    assert (calls > 0) == fused and none == 0
    assert np.array_equal(got, stacked)
    assert np.abs(got - numpy_poses).max() <= 1e-12


@pytest.mark.parametrize(("source", "target"), [("cmu_02_01_walk.bvh", "CesiumMan.glb"),
                                                ("cmu_131_03_hop_3dsmax.bvh", "CesiumMan.glb")],
                         ids=lambda p: p.split(".")[0])
def test_write_joint_locks_as_the_stacked_write_back(source: str, target: str) -> None:
    """Retarget + lock with the leg IK's write-back in ``write_joint`` (it runs: every CesiumMan leg joint reads its
    angles with ``euler_read``) against the same with it set aside: the same poses bit for bit, the same held
    frames and contacts left unlocked."""
    from animkit.motion import legs_of, lock_feet
    from animkit.motion.measures import carry_contacts, height_contacts

    src, tgt = _scene(source), _scene(target)
    r = retarget_full(src, tgt)
    P_s = src.clip().sample(r.times)
    c = carry_contacts(height_contacts(src.figure, P_s, r.clip.fps, up=src.up), legs_of(src.figure),
                       legs_of(r.figure))
    calls = {"n": 0}

    class Counted:
        def __getattr__(self, name: str) -> object:
            kernel = getattr(NATIVE, name)
            if name != "write_joint":
                return kernel

            def counted(*args: object) -> object:
                calls["n"] += 1
                return kernel(*args)

            return counted

    def lock(kernels: object) -> object:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(jit, "native_kernels", lambda: kernels)
            return lock_feet(r.figure, r.poses, r.clip.fps, up=tgt.up, meshes=tgt.meshes, contacts=c)

    got = lock(Counted())
    assert calls["n"] > 0
    want = lock(_Kernels(("write_joint",)))
    assert np.array_equal(got.poses, want.poses)
    assert np.array_equal(got.held, want.held) and got.unlocked == want.unlocked


def _in_order(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B for stacks of 3×3 matrices, each entry (A_i0 B_0j + A_i1 B_1j) + A_i2 B_2j (the kernels' order)."""
    return (A[..., :, 0, None] * B[..., None, 0, :] + A[..., :, 1, None] * B[..., None, 1, :]
            + A[..., :, 2, None] * B[..., None, 2, :])


def _turns(rng: np.random.Generator, n: int) -> np.ndarray:
    axis = rng.normal(size=(n, 3))
    return matrix_about_axis(axis / np.linalg.norm(axis, axis=1, keepdims=True), rng.uniform(-np.pi, np.pi, n))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["xyz", "xzy", "yxz", "yzx", "zxy", "zyx", "xy", "zx", "yz"]),
       st.booleans(), st.booleans(), st.booleans())
def test_drive_joint_is_the_numpy_steps(seed: int, order: str, gltf: bool, still: bool, with_L: bool) -> None:
    """Bt = Rp · L (or Rp alone), the angles of Btᵀ · Rt (euler_intrinsic_from_matrix) written into the joint's
    angle columns of its row, the other columns (translations, scales, the neighbours' columns) left as they were,
    and R = Bt · Π R_a(θ): to 1e-12 of the NumPy steps, and bit for bit the C kernels it fuses (``mm3``,
    ``euler_read``, ``turned_by``)."""
    rng = np.random.default_rng(seed)
    F = int(rng.integers(1, 40))
    full = order if len(order) == 3 else order + next(c for c in "xyz" if c not in order)
    Rp = _turns(rng, 1 if still else F)
    L = _turns(rng, 1)[0] if with_L else np.empty(0)
    Rt = _turns(rng, F)
    letters = [-1] * 3 * gltf + ["xyz".index(c) for c in order] + [-1] * 3 * gltf
    D, c0 = len(letters) + 5, 2
    out = rng.normal(size=(F, D))
    before = out.copy()
    R = np.empty((F, 3, 3))
    i, j, k = ("xyz".index(c) for c in full)
    NATIVE.drive_joint(Rp, L, Rt, out, R, F, Rp.shape[0], D, c0, np.array(letters, dtype=np.int64), i, j, k)
    Bt = np.broadcast_to(_in_order(Rp, L[None]) if with_L else Rp, (F, 3, 3))
    eul = euler_intrinsic_from_matrix(_in_order(np.swapaxes(Bt, 1, 2), Rt), full)
    rev = [c0 + c for c, letter in enumerate(letters) if letter >= 0]
    assert np.abs(out[:, rev] - eul[:, :len(order)]).max() <= 1e-12
    kept = [c for c in range(D) if c not in rev]
    assert np.array_equal(out[:, kept], before[:, kept])
    ref = Bt
    for c, letter in enumerate(order):
        ref = _in_order(ref, matrix_about_axis(np.eye(3)["xyz".index(letter)], out[:, rev[c]]))
    assert np.abs(R - ref).max() <= 1e-12
    # bit for bit the unfused kernels' steps (mm3, euler_read, turned_by), which the stacked reading runs
    Bt_c = np.ascontiguousarray(Bt)
    if with_L:
        Bt_c = np.empty((Rp.shape[0], 3, 3))
        NATIVE.mm3(Rp, L[None], Bt_c, Rp.shape[0], 1, Rp.shape[0], 1, 1)
        Bt_c = np.ascontiguousarray(np.broadcast_to(Bt_c, (F, 3, 3)))
    angles = np.empty((F, 3))
    NATIVE.euler_read(Bt_c, Rt, angles, F, i, j, k)
    assert np.array_equal(out[:, rev], angles[:, :len(order)])
    R_c = np.empty((F, 3, 3))
    NATIVE.turned_by(Bt_c, np.ascontiguousarray(out[:, c0:c0 + len(letters)]), np.array(letters, dtype=np.int64), R_c,
                     F, len(letters))
    assert np.array_equal(R, R_c)


def test_drive_joint_refuses_what_does_not_match() -> None:
    """A buffer of the wrong size, a repeated axis or one letter only: ValueError, nothing written."""
    F, D = 4, 6
    Rp, Rt, R, out = np.tile(np.eye(3), (F, 1, 1)), np.tile(np.eye(3), (F, 1, 1)), np.empty((F, 3, 3)), np.zeros((F, D))
    good = np.array([0, 1, 2], dtype=np.int64)
    NATIVE.drive_joint(Rp, np.empty(0), Rt, out, R, F, F, D, 0, good, 0, 1, 2)
    assert np.array_equal(R, Rt) and not out.any()
    for args in ((Rp[:2], np.empty(0), Rt, out, R, F, F, D, 0, good, 0, 1, 2),
                 (Rp, np.empty(0), Rt, out, R, F, F, D, 4, good, 0, 1, 2),
                 (Rp, np.empty(0), Rt, out, R, F, F, D, 0, good, 0, 0, 2),
                 (Rp, np.empty(0), Rt, out, R, F, F, D, 0, np.array([0, -1, -1], dtype=np.int64), 0, 1, 2)):
        with pytest.raises(ValueError, match="drive_joint"):
            NATIVE.drive_joint(*args)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["xyz", "xzy", "yxz", "yzx", "zxy", "zyx", "xy", "zx", "yz"]),
       st.booleans(), st.booleans())
def test_write_joint_is_the_stacked_write_back(seed: int, order: str, gltf: bool, still: bool) -> None:
    """The leg IK's write-back of one joint (``write_joint``) against the stacked steps it replaces, on the same
    inputs: Bt = R_above · R_L (the kernels' sums), ``euler_read``, each angle moved by whole turns nearest its old
    value o, o + ((θ − o + π) mod 2π) − π in NumPy, then ``np.clip`` on arrays; bit for bit on the active frames,
    nothing written elsewhere; angles far from their old values (whole turns away), limits that clip (±0 bounds, old
    values ±0.0 on them: NumPy's clip keeps the bound where equal) and limits that do not."""
    rng = np.random.default_rng(seed)
    F = int(rng.integers(1, 40))
    letters = [-1] * 3 * gltf + ["xyz".index(c) for c in order] + [-1] * 3 * gltf
    k, c0 = len(letters), 3
    D = k + 6
    P = rng.normal(size=(F, D)) + 2 * np.pi * rng.integers(-2, 3, (F, D))
    P[rng.random((F, D)) < 0.2] = rng.choice([0.0, -0.0])
    lim = np.array([[-np.inf, np.inf]] * k)
    lim[3 * gltf] = [-np.pi / 3, 0.0]  # the first angle's limits clip
    if gltf:
        lim[:3] = [[0.0, 0.5], [-0.5, -0.0], [-0.0, 0.5]]  # a translation's limits clip its old value too, ±0 on ±0
    Ra = _turns(rng, 1 if still else F)
    Rw = _turns(rng, F)
    L = _turns(rng, 1)[0]
    active = rng.random(F) < 0.7
    got, want = P.copy(), P.copy()
    full = order if len(order) == 3 else order + next(c for c in "xyz" if c not in order)
    i, j, kk = ("xyz".index(c) for c in full)
    NATIVE.write_joint(Ra, L, Rw, active.astype(np.uint8), got, lim, F, Ra.shape[0], D, c0,
                       np.array(letters, dtype=np.int64), i, j, kk)
    idx = np.arange(c0, c0 + k)
    old = want[:, idx][active]
    Bt = _in_order(np.broadcast_to(Ra, (F, 3, 3))[active], L[None])
    angles = np.empty((len(Bt), 3))
    NATIVE.euler_read(np.ascontiguousarray(Bt), np.ascontiguousarray(Rw[active]), angles, len(Bt), i, j, kk)
    rev = [c for c, letter in enumerate(letters) if letter >= 0]
    vals = old.copy()
    vals[:, rev] = old[:, rev] + (angles[:, :len(rev)] - old[:, rev] + np.pi) % (2 * np.pi) - np.pi
    vals = np.clip(vals, np.repeat(lim[None, :, 0], len(vals), 0), np.repeat(lim[None, :, 1], len(vals), 0))
    cols = want[:, idx]
    cols[active] = vals
    want[:, idx] = cols
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_euler_plan_is_found_once_per_joint() -> None:
    """:func:`euler_plan` kept per joint: the same answer as found afresh for every joint of three characters (the
    DOF codes and the Tait–Bryan order the C passes read with), the same object on a second call, read-only codes."""
    from animkit.motion.retarget_rest import euler_plan

    seen = 0
    for name in ("CesiumMan.glb", "Fox.glb", "humanoid", "RiggedFigure.glb"):
        for arc in _scene(name).figure.arcs():
            dofs = arc.joint.dofs
            rev = [d for d in dofs if d.revolute]
            letters = [d.axis_letter for d in rev]
            first_rev = min((c for c, d in enumerate(dofs) if d.revolute), default=0)
            readable = len(rev) in (2, 3) and None not in letters and len(set(letters)) == len(letters) \
                and all(c < first_rev for c, d in enumerate(dofs) if d.kind == "prismatic")
            plan = euler_plan(arc.joint)
            assert euler_plan(arc.joint) is plan
            assert (plan is not None) == readable
            if plan is not None:
                seen += 1
                codes, order = plan
                assert codes.tolist() == ["xyz".index(d.axis_letter) if d.revolute else -1 for d in dofs]
                assert order[:len(rev)] == ["xyz".index(c) for c in letters] and sorted(order) == [0, 1, 2]
                assert not codes.flags.writeable
    assert seen > 40
