"""The foot lock's fast path against the reference path on real retargets: the poses and held frames ``lock_feet``
writes for CMU walk, run and hop clips retargeted onto CesiumMan, RiggedFigure and the humanoid (the source's
contacts carried to the target, as ``animkit retarget`` does) equal, to 1e-9, those the lock wrote before its world
matrices were shared between passes and judgements (commit e8b6fe7). The reference is
tests/data/foot_lock_reference.npz, written by ``python -m tests.test_foot_lock_reference --write`` (SOURCES.md); a
later change that moves any pose by more than 1e-9 fails here (a deliberate change of the lock's behaviour rewrites
it and says so)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.motion import legs_of, lock_feet
from animkit.motion.measures import carry_contacts, height_contacts
from animkit.motion.retarget import retarget_full

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "foot_lock_reference.npz"
PAIRS = [("cmu_02_01_walk.bvh", "CesiumMan.glb"), ("cmu_09_01_run.bvh", "RiggedFigure.glb"),
         ("cmu_131_03_hop_3dsmax.bvh", "humanoid.toml"), ("cmu_02_01_walk.bvh", "humanoid.toml"),
         ("cmu_131_03_hop_3dsmax.bvh", "CesiumMan.glb")]
FRAMES = 600  # the first frames of each retarget (after CMU's T-pose frame 0): every case has contacts in them


def _path(name: str) -> Path:
    return ROOT / "scenes" / name if name.endswith(".toml") else DATA / name


def _key(source: str, target: str) -> str:
    return f"{source.rsplit('.', 1)[0]}__{target.rsplit('.', 1)[0]}"


def _locked(source: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    """(poses, held frames (F, K) or an empty array) of the lock on the retarget of ``source`` onto ``target``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glTF sampling notes
        src, scene = animkit.load(_path(source)), animkit.load(_path(target))
        r = retarget_full(src, scene)
    P, fps = r.poses[1:FRAMES + 1], r.clip.fps
    P_s = src.clip().sample(r.times)[1:FRAMES + 1]
    c = carry_contacts(height_contacts(src.figure, P_s, fps, up=src.up), legs_of(src.figure), legs_of(r.figure))
    out = lock_feet(r.figure, P, fps, up=scene.up, ground=0.0, meshes=scene.meshes, contacts=c)
    held = np.zeros((0, 0), dtype=bool) if out.held is None else out.held
    return out.poses, held


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[_key(*p) for p in PAIRS])
def test_lock_equals_the_reference_path(source: str, target: str) -> None:
    ref = np.load(REFERENCE)
    want, want_held = ref[_key(source, target)], ref[_key(source, target) + "__held"]
    got, held = _locked(source, target)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-9
    assert np.array_equal(held, want_held)
    assert want_held.any()  # the case locks something: a lock that gave up everywhere would not test the passes


#: the C extension's kernels the retarget and the lock's write-back run (animkit._native): set aside, NumPy runs
KERNELS = ("retarget_turns", "euler_read", "turned_by", "drive_joint", "write_joint", "leg_bend", "unwrap_limits",
           "smooth_max", "drift_means")


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[_key(*p) for p in PAIRS])
def test_lock_with_the_kernels_equals_numpy(source: str, target: str) -> None:
    """Retarget + lock with the C kernels against the same with them set aside (their NumPy references): poses to
    1e-12, the same held frames."""
    from animkit import jit

    native = jit.native_kernels()
    if native is None or not all(hasattr(native, k) for k in KERNELS):
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")

    class Without:
        def __getattr__(self, name: str) -> object:
            if name in KERNELS:
                raise AttributeError(name)
            return getattr(native, name)

    got, held = _locked(source, target)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: Without())
        want, want_held = _locked(source, target)
    assert np.abs(got - want).max() <= 1e-12
    assert np.array_equal(held, want_held)


def test_leg_bend_kernel_is_the_numpy_step() -> None:
    """The C extension's ``leg_bend`` against :func:`animkit.motion.leg_ik.bend_legs`'s NumPy path over random legs
    (scaled world blocks as under Mixamo's 0.01 armature, any bend, either side): the same knees and turns to 1e-12,
    and the closed form: the new knee lies l₁ from the hip, the turns are rotations carrying the old thigh and shin
    directions onto the new ones."""
    from animkit import jit
    from animkit.model.transforms import matrix_about_axis
    from animkit.motion import leg_ik

    native = jit.native_kernels()
    if native is None or not hasattr(native, "leg_bend"):
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    rng = np.random.default_rng(7)
    n = 500
    Hp, K, A = rng.normal(size=(3, n, 3))
    axis = rng.normal(size=(2, n, 3))
    axis /= np.linalg.norm(axis, axis=2, keepdims=True)
    scale = rng.choice([1.0, 0.01], (2, n))[..., None, None]
    Mh, Mk = matrix_about_axis(axis, rng.uniform(-3, 3, (2, n))) * scale
    n_w, u = rng.normal(size=(2, n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    rows = (rng.uniform(0, 3, n), rng.uniform(0.1, 1, n), rng.uniform(0.1, 2, n), rng.choice([-1.0, 1.0], n))
    got = leg_ik.bend_legs((Hp, K, A), (Mh, Mk), n_w, u, rows)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: None)
        want = leg_ik.bend_legs((Hp, K, A), (Mh, Mk), n_w, u, rows)
    for g, w in zip(got, want, strict=True):
        assert np.abs(g - w).max() <= 1e-12
    K_new, R_thigh, R_shin = got
    assert np.abs(np.linalg.norm(K_new - Hp, axis=1) - rows[1]).max() < 1e-12
    assert np.abs(np.einsum("fji,fjk->fik", R_thigh, R_thigh) - np.eye(3)).max() < 1e-12
    old = (K - Hp) / np.linalg.norm(K - Hp, axis=1, keepdims=True)
    new = (K_new - Hp) / rows[1][:, None]
    assert np.abs(np.einsum("fij,fjk,fk->fi", R_thigh, np.swapaxes(Mh / np.linalg.norm(Mh[:, :, 0], axis=1)[:, None,
                  None], 1, 2), old) - new).max() < 1e-12


def _smooth_max_steps(x: np.ndarray, r: int) -> np.ndarray:
    """The pelvis's bump in NumPy's own steps: edge-padded windows of 2r + 1, their max, then their mean."""
    win = np.lib.stride_tricks.sliding_window_view
    wide = win(np.pad(x, r, mode="edge"), 2 * r + 1).max(axis=1)
    return win(np.pad(wide, r, mode="edge"), 2 * r + 1).mean(axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_smooth_max_kernel_is_numpys_windows(seed: int) -> None:
    """The C extension's ``smooth_max`` (running block maxima, then NumPy's pairwise sum per window) against NumPy's
    max and mean over sliding windows, bit for bit, for windows shorter and longer than NumPy's pairwise block (128)
    and clips shorter than the window; a clip holding a NaN is left to NumPy (the kernel answers 0, writes nothing).
    Not on the tree before (the kernel is new)."""
    from animkit import jit

    native = jit.native_kernels()
    if native is None or not hasattr(native, "smooth_max"):
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    rng = np.random.default_rng(seed)
    for F, r in [(1, 3), (7, 24), (60, 24), (400, 2), (2000, 24), (300, 90)]:
        x = np.maximum(rng.normal(size=F), 0.0) * rng.choice([1e-3, 1.0, 1e3]) * (rng.random(F) < 0.6)
        out = np.empty(F)
        assert native.smooth_max(x, out, F, r) == 1
        assert np.array_equal(out, _smooth_max_steps(x, r))
    x[5] = np.nan
    out = np.full(x.size, 7.0)
    assert native.smooth_max(x, out, x.size, 3) == 0 and (out == 7.0).all()


def test_drift_means_kernel_known_speeds() -> None:
    """The C extension's ``drift_means`` (the never-worse judge's mean planted ground speed per contact) on cases with
    known answers: a point sliding 3 mm a frame along the ground beside one standing still scores 0 (the slowest
    point counts); alone it scores 3 mm a frame over any window; a second clip of the same run sliding 1.5 mm a
    frame scores 1.5; a run of one frame is too short to tell (NaN); height never counts. Not on the tree before."""
    from animkit import jit

    native = jit.native_kernels()
    if native is None or not hasattr(native, "drift_means"):
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    L = 40
    mask = np.zeros((2, L), np.uint8)
    mask[:, 5:25] = 1
    mask[:, 30] = 1  # a one-frame run
    f = np.arange(L, dtype=float)
    slide = np.stack([0.003 * f, np.zeros(L)], axis=1)  # along the ground: x, z
    Y = np.zeros((2, 2, L, 2))
    Y[0, 0], Y[1, 0] = slide, 0.5 * slide
    Y[:, 1] = 0.0  # the second point stands still
    runs = np.array([[5, 25], [30, 31]], dtype=np.int64)
    for window in (1, 6, 30):
        out = np.empty((2, 2))
        native.drift_means(Y, mask, runs, out, 2, 2, L, 2, window)
        assert out[0, 0] == 0.0 and out[1, 0] == 0.0 and np.isnan(out[:, 1]).all()
        alone = np.empty((2, 2))
        native.drift_means(np.ascontiguousarray(Y[:, :1]), np.ascontiguousarray(mask[:1]), runs, alone, 2, 1, L, 2,
                           window)
        assert np.abs(alone[:, 0] - [0.003, 0.0015]).max() < 1e-15 and np.isnan(alone[:, 1]).all()


if __name__ == "__main__" and "--write" in sys.argv:  # the reference poses, from the code checked out
    arrays = {}
    for p in PAIRS:
        arrays[_key(*p)], arrays[_key(*p) + "__held"] = _locked(*p)
    np.savez_compressed(REFERENCE, **arrays)
    print(f"wrote {REFERENCE}")
