"""The biped pelvis the foot lock moves (animkit.motion.pelvis), against answers known in closed form.

The clip: the TOML humanoid (scenes/humanoid.toml), both feet planted (contacts given) and flat; its knees sway
once through 40° and 5° (the clip's own range of bend, which the lock keeps) and then stand at 22.5° with the hips
held a known height too high, so the planted feet float over the ground. To put the soles on the ground the ankles
must come down further than a leg reaches, so the pelvis must come down. With the hip joint H, the ankle A and the
ankle's goal G = A − (lowest sole point − clearance)·ê_up, the leg's reach r = max_f |A − H| (the clip's
straightest frame) and far = r·(1 − SOFT/2) (half into the leg IK's soft stop), the pelvis comes down by

    d = (H − G)·ê_up − √(far² − |H − G|²_ground),

the least drop that brings G within far of H. Where the clip stands still, that drop is constant and no smoothing
changes it: the test compares it to 1e-7 m, and the held feet must then stay put (within 1 mm) with their soles on
the ground (within 1 cm).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.look.surface import body_surface, descendants
from animkit.motion import Contacts, knee_angles, legs_of, lock_feet
from animkit.motion.foot_lock import SOLE_CLEARANCE
from animkit.motion.leg_ik import SOFT
from animkit.motion.retarget import hip_height

SCENES = Path(__file__).parent.parent / "scenes"
FPS = 30.0


@pytest.fixture(scope="module")
def fig() -> animkit.Figure:
    return animkit.load(SCENES / "humanoid.toml").figure


def raised_stance(fig: animkit.Figure, raised: float, frames: int = 80) -> np.ndarray:
    """Poses (F, D): knees θ = 22.5° + 17.5°·sin(2πf / 36) over frames 0-35 (one sway through 40° and 5°), then
    22.5° (hips and ankles −θ/2: the feet flat), the hips lifted so the feet's lowest surface point stands
    ``raised`` m over the ground."""
    names = fig.dof_names
    f = np.arange(frames)
    theta = np.radians(np.where(f < 36, 22.5 + 17.5 * np.sin(2 * np.pi * f / 36), 22.5))
    P = np.repeat(fig.rest_pose()[None], frames, axis=0)
    for s in ("l", "r"):
        P[:, names.index(f"knee_{s}.rx")] = theta
        P[:, names.index(f"hip_{s}.rx")] = -theta / 2
        P[:, names.index(f"ankle_{s}.rx")] = -theta / 2
    feet = [descendants(fig, leg.ankle) for leg in legs_of(fig)]
    low = body_surface(fig).lowest(fig.world_batch(P), 1, feet).min(axis=1)
    P[:, names.index("hips.ty")] += raised - low
    return P


def planted(fig: animkit.Figure, frames: int) -> Contacts:
    points = tuple(p for leg in legs_of(fig) for p in (leg.ankle, leg.toe))
    return Contacts(points, np.ones((frames, len(points)), dtype=bool), 0.0, False, 0.04, 0.5)


def closed_form_drop(fig: animkit.Figure, P: np.ndarray, f: int) -> float:
    """d = (H − G)_up − √(far² − |H − G|²_ground), the larger over the two legs, at frame f (see the docstring)."""
    W = fig.world_batch(P)
    names = fig.node_names
    surface = body_surface(fig)
    clear = SOLE_CLEARANCE * hip_height(fig, legs_of(fig)[0].hip, "y")
    out = []
    for leg in legs_of(fig):
        H, A = W[:, names.index(leg.hip), :3, 3], W[:, names.index(leg.ankle), :3, 3]
        reach = float(np.linalg.norm(A - H, axis=1).max())
        far = reach * (1.0 - 0.5 * SOFT)
        low = surface.lowest(W[f:f + 1], 1, [descendants(fig, leg.ankle)])[0, 0]
        G = A[f] - np.array([0.0, low - clear, 0.0])
        off = H[f] - G
        out.append(off[1] - np.sqrt(far**2 - off[0] ** 2 - off[2] ** 2))
    return max(out)


@pytest.mark.parametrize("raised", [0.02, 0.04])
def test_the_pelvis_comes_down_by_the_closed_form_and_the_feet_stay(fig: animkit.Figure, raised: float) -> None:
    P = raised_stance(fig, raised)
    r = lock_feet(fig, P, FPS, contacts=planted(fig, len(P)))
    assert r.unlocked == ()
    names = fig.node_names
    hips = names.index("hips")
    still = slice(50, len(P))  # 14 frames after the sway: more than two blends (2 × 6 frames) from it
    drop = fig.world_positions(P)[still, hips, 1] - fig.world_positions(r.poses)[still, hips, 1]
    want = closed_form_drop(fig, P, 60)
    assert want > 0.005  # a real drop: the feet would not reach the ground without it
    np.testing.assert_allclose(drop, want, atol=1e-7)
    # the held feet stay put (within 1 mm) with their soles on the ground (within 1 cm, none under it)
    X = fig.world_positions(r.poses)[still]
    for leg in legs_of(fig):
        a = X[:, names.index(leg.ankle)]
        assert np.linalg.norm(a - a.mean(axis=0), axis=1).max() < 1e-3
    lows = body_surface(fig).lowest(fig.world_batch(r.poses)[still], 1,
                                    [descendants(fig, leg.ankle) for leg in legs_of(fig)])
    assert lows.min() >= 0.0 and lows.max() <= 0.01
    # and the knees stay within the clip's own range of bend (5-40°)
    bend = np.degrees(knee_angles(fig, r.poses, legs_of(fig)))
    assert bend.min() >= 5.0 - 1e-6 and bend.max() <= 40.0 + 1e-6


def test_a_trailing_foot_out_of_reach_and_a_bent_landing_knee_shift_the_pelvis_back() -> None:
    """The clash, in closed form: two legs of length 1 with hips at height 1, the left (trailing) foot's goal 0.5
    behind its hip, the right (landing) one's 0.3 ahead, both planted, reach 0.95 (far = 0.95·(1 − SOFT/2)) and the
    clip's tightest bend 0.9 (bent = 0.9 + 0.95·SOFT/2). Lowering the pelvis by d alone needs d ≥ 1 − √(far² − 0.5²)
    for the left foot but d ≤ 1 − √(bent² − 0.3²) for the right knee: no d does both. Shifted back by s, both hold
    when far² − (0.5 − s)² ≥ bent² − (0.3 + s)², i.e. s ≥ s* = (0.16 − far² + bent²) / 1.6; the pelvis shifts back by
    the least step of the search (0.12 leg lengths in 20 steps) at or past s*, and comes down by the left foot's
    1 − √(far² − (0.5 − s)²) there."""
    from animkit.motion.legs import Leg
    from animkit.motion.pelvis import PELVIS_SHIFT, HeldLeg, pelvis_offset

    F = 30
    names = ["hip_l", "knee_l", "ankle_l", "hip_r", "knee_r", "ankle_r"]
    W = np.tile(np.eye(4), (F, len(names), 1, 1))
    for i, (x, y) in enumerate([(0.1, 1.0), (0.1, 0.5), (0.1, 0.0), (-0.1, 1.0), (-0.1, 0.5), (-0.1, 0.0)]):
        W[:, i, :3, 3] = (x, y, 0.0)
    reach, near = 0.95, 0.9
    feet = [HeldLeg(Leg(s, f"hip_{s}", f"knee_{s}", f"ankle_{s}", f"ankle_{s}", f"ankle_{s}"),
                    np.tile([x, 0.0, z], (F, 1)), np.ones(F, bool), np.tile(np.eye(3), (F, 1, 1)), reach, near,
                    np.ones(F), np.ones(F)) for s, x, z in (("l", 0.1, -0.5), ("r", -0.1, 0.3))]
    o = pelvis_offset(feet, W, names, 1, 3)
    far, bent = reach * (1 - 0.5 * SOFT), near + 0.5 * SOFT * reach
    assert 1 - np.sqrt(far**2 - 0.25) > 1 - np.sqrt(bent**2 - 0.09)  # the clash: no vertical move does both
    s_star = (0.16 - far**2 + bent**2) / 1.6
    step = PELVIS_SHIFT / 20
    s = np.ceil(s_star / step - 1e-9) * step
    np.testing.assert_allclose(o[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(o[:, 2], -s, atol=1e-12)  # back, towards the trailing foot
    np.testing.assert_allclose(o[:, 1], -(1 - np.sqrt(far**2 - (0.5 - s) ** 2)), atol=1e-12)
    # and there both hold: the left goal within far of its hip, the right at least bent from its own
    hip_l, hip_r = W[0, 0, :3, 3] + o[0], W[0, 3, :3, 3] + o[0]
    assert np.linalg.norm(feet[0].goal[0] - hip_l) <= far + 1e-12
    assert np.linalg.norm(feet[1].goal[0] - hip_r) >= bent - 1e-12
