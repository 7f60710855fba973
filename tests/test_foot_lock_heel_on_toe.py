"""A heel that comes down again on a toe the lock holds lands where that toe is held (animkit.motion.lock_feet).

The clip: the TOML humanoid (knees swaying, feet flat, soles 1 cm over their clearance) sliding 10 cm
forwards over 60 frames. The left foot stands on heel and toe over frames 0–19, on its toe alone over 20–39, and on
both again over 40–59; the right one on both throughout. The toe's contact starts with the heel down, so its lock is
where the heel's lock puts it (heel lock + the toe's offset), and it holds over all 60 frames; when the heel comes down
again at frame 40 the ankle must go where that held toe puts it, so the toe stays at one point over the whole contact
(within 1 mm) and the ankle does not jump as the heel lands. (The lock used to send that heel to the clip's mean
toe over the contact less the toe's offset, centimetres from the held toe; the jump then made the lock worse than
the clip, and it was dropped.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import animkit
from animkit.look.surface import body_surface, descendants
from animkit.motion import Contacts, legs_of, lock_feet
from animkit.motion.foot_lock import SOLE_CLEARANCE
from animkit.motion.retarget import hip_height

SCENES = Path(__file__).parent.parent / "scenes"
FPS, F = 30.0, 60


def sliding_stance(fig: animkit.Figure) -> np.ndarray:
    names = fig.dof_names
    f = np.arange(F)
    theta = np.radians(22.5 + 17.5 * np.sin(2 * np.pi * f / 36))
    P = np.repeat(fig.rest_pose()[None], F, axis=0)
    for s in ("l", "r"):
        P[:, names.index(f"knee_{s}.rx")] = theta
        P[:, names.index(f"hip_{s}.rx")] = -theta / 2
        P[:, names.index(f"ankle_{s}.rx")] = -theta / 2
    feet = [descendants(fig, leg.ankle) for leg in legs_of(fig)]
    low = body_surface(fig).lowest(fig.world_batch(P), 1, feet).min(axis=1)
    P[:, names.index("hips.ty")] += 0.01 + SOLE_CLEARANCE * hip_height(fig, legs_of(fig)[0].hip, "y") - low
    P[:, names.index("hips.tz")] += 0.1 * f / (F - 1)
    return P


def test_the_heel_lands_where_the_held_toe_puts_it() -> None:
    fig = animkit.load(SCENES / "humanoid.toml").figure
    P = sliding_stance(fig)
    points = ("ankle_l", "toe_l", "ankle_r", "toe_r")
    mask = np.ones((F, 4), dtype=bool)
    mask[20:40, 0] = False  # the left heel up over frames 20-39
    r = lock_feet(fig, P, FPS, contacts=Contacts(points, mask, 0.0, False, 0.04, 0.5))
    assert r.unlocked == ()
    X = fig.world_positions(r.poses)
    names = fig.node_names
    toe = X[:, names.index("toe_l")][:, [0, 2]]
    assert np.linalg.norm(toe - toe[0], axis=1).max() < 1e-3  # one point over the whole contact
    ankle = X[:, names.index("ankle_l")][:, [0, 2]]
    assert np.linalg.norm(ankle[40:] - ankle[40], axis=1).max() < 1e-3  # the heel held where it landed
    assert np.linalg.norm(ankle[40] - ankle[39]) < 2e-3  # and it landed where the toe-held ankle stood
    X0 = fig.world_positions(P)[:, names.index("toe_l")][:, [0, 2]]
    assert np.linalg.norm(X0[-1] - X0[0]) > 0.09  # the clip's toe slides: the lock, not the clip, holds it
