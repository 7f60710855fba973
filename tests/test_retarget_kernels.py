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
