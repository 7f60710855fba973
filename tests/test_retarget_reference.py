"""The retarget's fast path against the reference path on real clips: the poses ``retarget_full`` writes for CMU clips
onto two glTF characters and a bare BVH skeleton equal, to 1e-9, those the reference implementation wrote (the code
before the retarget was batched: one polar decomposition of the source's turns for every bone, 3×3 products entry by
entry, the source's FK read once). The reference poses are tests/data/retarget_reference.npz, written at commit
9680110 by ``python -m tests.test_retarget_reference --write`` (SOURCES.md); a later change that moves any pose by
more than 1e-9 fails here. ``rotation_part`` is held to the SVD's polar factor over random matrices."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.model.transforms import matrix_about_axis
from animkit.motion.retarget import feet_of, retarget_full, rotation_part

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "retarget_reference.npz"
PAIRS = [("cmu_02_01_walk.bvh", "CesiumMan.glb"), ("cmu_09_01_run.bvh", "CesiumMan.glb"),
         ("cmu_02_heldout.bvh", "RiggedFigure.glb"), ("cmu_02_01_walk.bvh", "cmu_131_03_hop_3dsmax.bvh")]


def _key(source: str, target: str) -> str:
    return f"{source.rsplit('.', 1)[0]}__{target.rsplit('.', 1)[0]}"


def _poses(source: str, target: str) -> np.ndarray:
    return retarget_full(animkit.load(DATA / source), animkit.load(DATA / target)).poses


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[_key(*p) for p in PAIRS])
def test_retarget_equals_the_reference_path(source: str, target: str) -> None:
    want = np.load(REFERENCE)[_key(source, target)]
    got = _poses(source, target)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=9, max_size=9), st.floats(1e-3, 1e3),
       st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3), st.floats(0.0, 1e-3))
def test_rotation_part_is_the_polar_factor(noise: list[float], scale: float, axis_angle: list[float],
                                           shear: float) -> None:
    """M = s·R·(I + ε N): the polar factor U Vᵀ of the SVD (an independent oracle), in a stack of frames."""
    v = np.asarray(axis_angle)
    angle = float(np.linalg.norm(v))
    R = matrix_about_axis(v / angle, angle) if angle > 1e-9 else np.eye(3)
    M = scale * R @ (np.eye(3) + shear * np.asarray(noise).reshape(3, 3))
    U, _, Vt = np.linalg.svd(M)
    want = U @ Vt
    if np.linalg.det(want) < 0:
        U[:, 2] *= -1.0
        want = U @ Vt
    stack = np.stack([M, scale * R, np.eye(3)])
    got = rotation_part(stack)
    assert np.abs(got[0] - want).max() <= 1e-9
    assert np.abs(got[1] - R).max() <= 1e-12
    assert np.abs(got[2] - np.eye(3)).max() == 0.0


def test_feet_of_follows_a_changed_figure() -> None:
    """feet_of is found once per skeleton (names and parents): a node added under a foot is among the feet after."""
    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    feet = feet_of(fig)
    assert feet and feet_of(fig) == feet
    fig.add("extra_toe_tip", feet[0], offset=[0.0, 0.0, 0.01])
    assert "extra_toe_tip" in feet_of(fig) and "extra_toe_tip" not in feet


if __name__ == "__main__" and "--write" in sys.argv:  # the reference poses, from the code checked out
    np.savez_compressed(REFERENCE, **{_key(*p): _poses(*p) for p in PAIRS})
    print(f"wrote {REFERENCE}")
