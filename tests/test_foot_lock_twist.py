"""The leg IK's hip twist for an ankle that cannot twist (animkit.motion.leg_ik), against a closed form.

The TOML humanoid's ankle is a universal joint (x then z): it tips the foot but cannot turn it about the shin, so a
foot held at a heading other than the shin's can only get it from the hip, turning the whole leg about its hip–ankle
line. The clip: the left leg bent (knee 40°, foot flat), then turned rigidly about its own hip–ankle line û by
ψ(f) = 25°·sin(πf / (F − 1)): the ankle stays put, and the foot's heading follows the shin. The lock asks for the
ankle where the clip has it and the foot turned back by Q = R(û, −ψ), so the foot it asks for is frame 0's. The only
leg that gives it turns by exactly −ψ about û: the foot's world turn equals frame 0's to 1e-6, the hip's twist
(the thigh's turn relative to the clip's) is R(û, −ψ), the knee comes back to frame 0's place (it turns with the
foot, never in), and the ankle stays on its goal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.model.transforms import matrix_about_axis, rotation_vector_from_matrix
from animkit.motion import legs_of
from animkit.motion.leg_ik import HeldLeg, held_leg_ik
from animkit.motion.retarget import read_dofs

SCENES = Path(__file__).parent.parent / "scenes"
F = 31


@pytest.fixture(scope="module")
def turned() -> tuple[animkit.Figure, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """(figure, poses (F, D), ψ (F,), û (3,), node indices): the left leg turned about its hip–ankle line by ψ."""
    fig = animkit.load(SCENES / "humanoid.toml").figure
    names, dofs = fig.node_names, fig.dof_names
    P0 = fig.rest_pose()
    P0[dofs.index("knee_l.rx")] = np.radians(40.0)
    P0[dofs.index("hip_l.rx")] = np.radians(-20.0)
    P0[dofs.index("ankle_l.rx")] = np.radians(-20.0)
    W0 = fig.world_batch(P0[None])[0]
    at = {n: names.index(n) for n in ("hips", "hip_l", "knee_l", "ankle_l")}
    H, A = W0[at["hip_l"], :3, 3], W0[at["ankle_l"], :3, 3]
    u = (A - H) / np.linalg.norm(A - H)
    psi = np.radians(25.0) * np.sin(np.pi * np.arange(F) / (F - 1))
    arc = fig.node("hip_l").parent_arc
    assert arc is not None
    above = W0[at["hips"], :3, :3] @ arc.L[:3, :3]  # the hip's frame before its own turn
    R_thigh = matrix_about_axis(u, psi) @ W0[at["hip_l"], :3, :3]  # (F, 3, 3)
    idx = fig.joint_dofs[arc.joint.name]
    P = np.repeat(P0[None], F, axis=0)
    P[:, idx] = read_dofs(arc.joint, above.T @ R_thigh, None, P0[idx])
    return fig, P, psi, u, at


def _solve(turned: tuple, twist: bool) -> tuple[np.ndarray, np.ndarray]:
    fig, P, psi, u, at = turned
    W = fig.world_batch(P)
    leg = next(lg for lg in legs_of(fig) if lg.side == "l")
    goal = W[:, at["ankle_l"], :3, 3]
    d = np.linalg.norm(goal - W[:, at["hip_l"], :3, 3], axis=1)
    held = HeldLeg(leg, goal, np.ones(F, bool), matrix_about_axis(u, -psi), float(d.max()), float(d.min()),
                   np.ones(F), d, np.ones(F) if twist else None)
    return W, fig.world_batch(held_leg_ik(fig, P, W, held, goal, held.active))


def test_the_clip_turns_the_foot_with_the_shin(turned: tuple) -> None:
    fig, P, psi, u, at = turned
    W = fig.world_batch(P)
    ia = at["ankle_l"]
    assert np.abs(W[:, ia, :3, 3] - W[0, ia, :3, 3]).max() < 1e-12  # the ankle is on the axis
    turn = rotation_vector_from_matrix(W[:, ia, :3, :3] @ W[0, ia, :3, :3].T)
    assert np.allclose(turn, psi[:, None] * u, atol=1e-9)  # the foot's heading is the shin's: turned by ψ
    assert psi.max() > np.radians(24.0)


def test_the_hip_twists_the_leg_so_the_foot_keeps_its_heading(turned: tuple) -> None:
    fig, P, psi, u, at = turned
    W, W1 = _solve(turned, twist=True)
    ia, ik, ih = at["ankle_l"], at["knee_l"], at["hip_l"]
    foot_err = np.linalg.norm(W1[:, ia, :3, :3] - W[0, ia, :3, :3], axis=(1, 2))
    assert foot_err.max() < 1e-6  # the foot's world turn is frame 0's: the held heading, not the shin's
    hip_twist = rotation_vector_from_matrix(W1[:, ih, :3, :3] @ np.swapaxes(W[:, ih, :3, :3], 1, 2))
    assert np.abs(hip_twist - (-psi)[:, None] * u).max() < 1e-6  # the hip turned the leg by −ψ about û
    assert np.abs(W1[:, ia, :3, 3] - W[:, ia, :3, 3]).max() < 1e-9  # the ankle on its goal
    assert np.abs(W1[:, ik, :3, 3] - W[0, ik, :3, 3]).max() < 1e-6  # the knee where the held foot points it


def test_without_the_twist_the_foot_follows_the_shin(turned: tuple) -> None:
    fig, P, psi, u, at = turned
    W, W1 = _solve(turned, twist=False)
    ia = at["ankle_l"]
    turn = rotation_vector_from_matrix(W1[:, ia, :3, :3] @ W[0, ia, :3, :3].T)
    # the ankle alone cannot turn it back: the foot stays turned with the shin, by ψ (to the 0.25° its two DOFs
    # leave, turning about the vertical rather than about û)
    assert np.abs(np.linalg.norm(turn, axis=1) - psi).max() < np.radians(0.25)


def _outward(X: np.ndarray, u: np.ndarray, side: np.ndarray, at: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(κ·ô, |κ|) per frame: the knee's offset from the hip square to û, along the hip's side outwards, and its size."""
    k = X[:, at["knee_l"], :3, 3] - X[:, at["hip_l"], :3, 3]
    kp = k - (k @ u)[:, None] * u
    return kp @ side, np.linalg.norm(kp, axis=1)


@pytest.mark.parametrize("sense", [1.0, -1.0], ids=["in", "out"])
def test_the_twist_keeps_the_knee_within_the_clips_own_range(turned: tuple, sense: float) -> None:
    """Asked for a foot turned a further 60° past frame 0's, inwards or outwards, the hip twists the leg only until the
    knee reaches the edge of the range the clip's own knee takes (its outward sine κ̂·ô, κ the knee's offset square to
    û, ô the hip's side; the clip's knee turns through 25° about û): never past it, and the guard is what stopped it
    (the knee ends on that edge); the foot keeps the rest of the turn unreached. The old guard let a knee turn in to
    30° past straight ahead whatever the clip did, and out without bound."""
    fig, P, psi, u, at = turned
    W = fig.world_batch(P)
    leg = next(lg for lg in legs_of(fig) if lg.side == "l")
    ia, ih = at["ankle_l"], at["hip_l"]
    side = W[0, ih, :3, 3] - W[0, at["hips"], :3, 3]
    side[1] = 0.0
    side /= np.linalg.norm(side)
    x0, size = _outward(W, u, side, at)
    lo, hi = (x0 / size).min(), (x0 / size).max()  # the clip's own range of the knee's turn
    assert hi - lo > np.sin(np.radians(20.0))  # it does turn (25° about û)
    goal = W[:, ia, :3, 3]
    d = np.linalg.norm(goal - W[:, ih, :3, 3], axis=1)
    # the sense of a turn about û that moves the knee in (ô's way is out)
    turn_in = -np.sign(np.cross(u, W[0, at["knee_l"], :3, 3] - W[0, ih, :3, 3]) @ side)
    extra = np.radians(60.0) * sense * turn_in
    held = HeldLeg(leg, goal, np.ones(F, bool), matrix_about_axis(u, -psi + extra), float(d.max()), float(d.min()),
                   np.ones(F), d, np.ones(F))
    W1 = fig.world_batch(held_leg_ik(fig, P, W, held, goal, held.active))
    x1, size1 = _outward(W1, u, side, at)
    assert np.abs(size1 - size).max() < 1e-9  # a turn about û: the knee's distance from û is the clip's
    assert (x1 >= np.minimum(x0, lo * size) - 1e-9).all() and (x1 <= np.maximum(x0, hi * size) + 1e-9).all()
    edge = lo * size if sense > 0 else hi * size
    # the guard stopped it on the range's edge, on every frame (to the bisection's 1/64 of the asked turn)
    assert np.abs(x1 - edge).max() < 0.03 * size.min()
    assert np.abs(x0 - edge).max() > 0.3 * size.min()  # where the clip's knee was not
    foot_err = np.linalg.norm(W1[:, ia, :3, :3] - matrix_about_axis(u, extra) @ W[0, ia, :3, :3], axis=(1, 2))
    assert foot_err.max() > 0.1  # the rest of the foot's turn is left unreached
