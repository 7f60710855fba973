"""LM on a chain with cones (a glTF character's human ranges): every path keeps the joints inside their cones.

The compiled loops know only per-DOF limits, so a coned chain runs NumPy's loop, which projects the cones each
step. Before, CesiumMan's hand sent to an out-of-reach target through the compiled strategy came back "converged",
0.0 m off, with a joint 0.444 rad outside its cone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import LM, IKProblem

DATA = Path(__file__).parent / "data"
TARGET = np.array([-0.3, 0.6, 0.4])  # in front of and above CesiumMan's right shoulder, beyond the arm and trunk


@pytest.fixture(scope="module")
def cesium():  # type: ignore[no-untyped-def]
    return animkit.load(DATA / "CesiumMan.glb").figure


@pytest.mark.parametrize("chain", ["torso", "hips-up"])
def test_lm_keeps_the_cones_on_every_path(cesium, chain: str) -> None:  # type: ignore[no-untyped-def]
    was = (jit.ENABLED, jit.ALWAYS)
    try:
        jit.ALWAYS = True  # the compiled paths wherever they apply, from the first solve
        prob = IKProblem(cesium, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4)
        assert prob.model.cones
        one = prob.solve(TARGET)
        many = prob.solve_batch(np.stack([TARGET, TARGET + 0.01]))
        jit.ENABLED, jit.ALWAYS = False, False  # NumPy's loop alone: the reference
        ref = IKProblem(cesium, "hand_r", chain, solver=LM(max_iter=200), tol=1e-4).solve(TARGET)
    finally:
        jit.ENABLED, jit.ALWAYS = was
    for pose in (one.pose, *many.poses, ref.pose):
        q = pose[prob.model.dofs]
        assert np.abs(prob.model.project_cones(q[None])[0] - q).max() <= 1e-9
    assert not one.converged and one.position_error > 0.05  # out of reach, and not called met
    np.testing.assert_allclose(one.pose, ref.pose, atol=1e-9)
