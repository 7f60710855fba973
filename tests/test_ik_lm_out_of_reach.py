"""LM on targets beyond the humanoid arm's reach ends where the straight arm points at the target (a closed form):
the hand at shoulder + L·û, û = unit(target − shoulder), L the arm's length, whenever that straight arm lies within
the limits. Before, a target up and behind (û ∝ (−0.76, 0.51, −0.40), 2 m from the shoulder) left lm's first run
held on the shoulder's rx limit with the elbow bent, 1.379 m away against the straight arm's 1.35 (FABRIK's), and
no retry ran because the target lay beyond reach."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import FABRIK, LM, IKProblem

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "humanoid.toml"
DIRECTIONS = [(0.0, 1.0, 0.0), (-0.76, 0.51, -0.40), (-0.3, 0.95, 0.0), (0.0, 0.0, 1.0), (-1.0, 0.0, 0.0)]


@pytest.fixture(scope="module")
def arm():  # type: ignore[no-untyped-def]
    fig = animkit.load(SCENE).figure
    return fig, IKProblem(fig, "hand_r", "arm", solver=LM())


def _straight_arm(prob: IKProblem, u: np.ndarray) -> np.ndarray | None:
    """The arm's DOFs (rx, rz, ry of the shoulder, elbow, wrist) that point the straight arm along u, or None when
    no such pose lies within the limits: the shoulder turns R = Rx(a) Rz(b) (its xzy order, ry = 0) the hanging
    arm (0, −1, 0) to (sin b, −cos b cos a, −cos b sin a) = u, both branches b and π − b."""
    lo, hi = prob.model.lower, prob.model.upper
    for b in (math.asin(u[0]), math.pi - math.asin(u[0])):
        b = math.remainder(b, 2 * math.pi)
        c = math.cos(b)
        a = math.atan2(-u[2] / c, -u[1] / c)
        q = np.array([a, b, 0.0, 0.0, 0.0, 0.0])
        for k in (0, 1):  # each angle also a whole turn away
            for t in (-2 * math.pi, 0.0, 2 * math.pi):
                cand = q.copy()
                cand[k] += t
                if np.all(cand >= lo - 1e-12) and np.all(cand <= hi + 1e-12):
                    return cand
    return None


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("compiled", [True, False])
def test_lm_ends_with_the_straight_arm_pointing_at_an_out_of_reach_target(arm, direction, compiled: bool) -> None:  # type: ignore[no-untyped-def]
    fig, prob = arm
    m = prob.model
    rest = fig.rest_pose()[m.dofs]
    fr = m.frames(rest[None])
    shoulder = fr.r[0, 0]
    joints = [*fr.r[0], fr.p[0, 0]]
    length = sum(float(np.linalg.norm(b - a)) for a, b in zip(joints[:-1], joints[1:], strict=True))
    u = np.asarray(direction) / np.linalg.norm(direction)
    target = shoulder + 2.0 * u
    q = _straight_arm(prob, u)
    assert q is not None  # each direction's straight arm lies within the limits
    hand = shoulder + length * u  # the closed form: no pose ends closer than 2 − L
    np.testing.assert_allclose(m.frames(q[None]).p[0, 0], hand, atol=1e-9)  # the construction checked by FK
    was = (jit.ENABLED, jit.ALWAYS)
    try:
        jit.ENABLED, jit.ALWAYS = compiled, compiled
        res = IKProblem(fig, "hand_r", "arm", solver=LM()).solve(target)
    finally:
        jit.ENABLED, jit.ALWAYS = was
    assert res.reason == "unreachable" and res.reachable is False
    assert res.position_error <= 2.0 - length + 1e-6
    np.testing.assert_allclose(m.frames(res.pose[m.dofs][None]).p[0, 0], hand, atol=1e-3)


def test_lm_ends_at_least_as_close_as_fabrik_beyond_reach(arm) -> None:  # type: ignore[no-untyped-def]
    """On the same targets, lm's answer is never farther than FABRIK's (both stretched toward the target)."""
    fig, prob = arm
    m = prob.model
    shoulder = m.frames(fig.rest_pose()[m.dofs][None]).r[0, 0]
    fab = IKProblem(fig, "hand_r", "arm", solver=FABRIK())
    for d in DIRECTIONS:
        target = shoulder + 2.0 * np.asarray(d) / np.linalg.norm(d)
        assert prob.solve(target).position_error <= fab.solve(target).position_error + 1e-6
