"""Motion on the ground: root motion, loops and aligned blends.

The legs, their contacts and the foot lock's measures live in :mod:`animkit.motion.legs`, foot locking in
:mod:`animkit.motion.foot_lock` (the leg IK it drives in :mod:`animkit.motion.leg_ik`); the package
(``from animkit.motion import lock_feet, legs_of, detect_contacts, measure, in_place`` …) is where they are
imported from. The measures that
judge a clip as the eye does are :func:`animkit.motion.measures.measure_motion`.

**Root motion.** The root's ground trajectory (hips projected on the ground) and heading (the yaw of the hips'
rest forward direction) as a rigid ground transform M(f) = [R_up(ψ(f)), p(f)]. ``in_place`` applies
M(0)·M(f)⁻¹ to the root, ``with_root_motion`` puts a trajectory back; ``loop_poses`` repeats a cycle with
cycle k carried by Δᵏ, Δ = M(end)·M(0)⁻¹, so offsets and headings add up; ``aligned_crossfade`` carries the
second clip by M_a(start)·M_b(0)⁻¹ so the blend starts where and facing where the first clip is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit.model.figure import Figure
from animkit.model.transforms import matrix_about_axis
from animkit.motion.leg_ik import _carry, _hips
from animkit.motion.legs import MotionError, legs_of
from animkit.motion.retarget import RetargetError, retarget_full, up_index

if TYPE_CHECKING:
    from animkit.keyframes import Clip

__all__ = ["RootMotion", "root_motion", "in_place", "with_root_motion", "loop_poses", "aligned_crossfade"]

Array = NDArray[np.float64]


# --- root motion -------------------------------------------------------------------------------------------


def _forward(figure: Figure, hips: str) -> Array:
    """The hips' facing at rest in the hips' own frame: side × up, side from the right to the left hip."""
    up = figure.up
    W0 = figure.world_batch(figure.rest_pose()[None])[0]
    names = figure.node_names
    upv = np.eye(3)[up_index(up)]
    try:
        legs = {leg.side: leg for leg in legs_of(figure)}
        side = W0[names.index(legs["l"].hip), :3, 3] - W0[names.index(legs["r"].hip), :3, 3]
        f = np.cross(side, upv)
    except (MotionError, KeyError):
        f = np.eye(3)[2] if up == "y" else np.eye(3)[0]
    f = f - (f @ upv) * upv
    f /= np.linalg.norm(f)
    return W0[names.index(hips), :3, :3].T @ f


@dataclass(frozen=True, eq=False)
class RootMotion:
    """The root's ground trajectory (F, 3, on the ground plane) and heading ψ (F,), radians about up."""

    positions: Array
    heading: Array
    up: str

    def transforms(self) -> Array:
        """M(f) = [R_up(ψ(f)), p(f)]: (F, 4, 4)."""
        F = self.positions.shape[0]
        M = np.tile(np.eye(4), (F, 1, 1))
        M[:, :3, :3] = matrix_about_axis(np.eye(3)[up_index(self.up)], self.heading)  # type: ignore[arg-type]
        M[:, :3, 3] = self.positions
        return M


def root_motion(figure: Figure, poses: Array) -> RootMotion:
    """The hips projected on the ground (the figure's up), and the yaw of their rest facing, per frame (heading
    unwrapped)."""
    up = figure.up
    P = np.atleast_2d(figure.check_pose(poses))
    hips = _hips(figure)
    W = figure.world_batch(P)[:, figure.node_names.index(hips)]
    k = up_index(up)
    p = W[:, :3, 3].copy()
    p[:, k] = 0.0
    f = W[:, :3, :3] @ _forward(figure, hips)
    # ψ about the up axis, measured from the axis that up turns onto the forward axis of a y-up figure (+z)
    a, b = (2, 0) if up == "y" else (0, 1)
    psi = np.unwrap(np.arctan2(f[:, b], f[:, a]))
    return RootMotion(p, psi, up)



def in_place(figure: Figure, poses: Array) -> tuple[Array, RootMotion]:
    """(poses with the root held at its first ground position and heading, the root motion taken out)."""
    rm = root_motion(figure, poses)
    M = rm.transforms()
    return _carry(figure, poses, M[0] @ np.linalg.inv(M)), rm


def with_root_motion(figure: Figure, in_place_poses: Array, motion: RootMotion) -> Array:
    """The inverse of :func:`in_place`: the trajectory ``motion`` put back onto in-place poses."""
    M = motion.transforms()
    return _carry(figure, in_place_poses, M @ np.linalg.inv(M[0]))


def loop_poses(figure: Figure, cycle: Array, loops: int) -> Array:
    """``loops`` cycles one after another, cycle k carried by Δᵏ (Δ = M(last)·M(first)⁻¹): no jump, no turn back.

    ``cycle`` (F, D) includes both ends (its last frame is the next cycle's first); the result has
    loops·(F − 1) + 1 frames.
    """
    if loops < 1:
        raise MotionError(f"loops must be a whole number ≥ 1, got {loops}")
    P = np.atleast_2d(figure.check_pose(cycle))
    if loops == 1:
        return P.copy()
    M = root_motion(figure, P[[0, -1]]).transforms()
    delta = M[1] @ np.linalg.inv(M[0])
    parts = [P[:-1]]
    step = np.eye(4)
    for _ in range(1, loops):
        step = delta @ step
        parts.append(_carry(figure, P[:-1], np.broadcast_to(step, (P.shape[0] - 1, 4, 4))))
    parts.append(_carry(figure, P[-1:], step[None]))
    return np.concatenate(parts)


def aligned_crossfade(figure: Figure, a: Clip, b: Clip, start: float, length: float, *,
                      b_figure: Figure | None = None, name: str | None = None) -> Clip:
    """A crossfade from a to b with b carried so its root starts at a's ground position and heading at ``start``.

    b is carried by Δ = M_a(start)·M_b(0)⁻¹ (ground transforms of the root). When b is on another skeleton
    (``b_figure``, or b's layout when it is a Figure), it is retargeted onto ``figure`` first.
    """
    up = figure.up
    from animkit.keyframes import Clip, crossfade

    src = b_figure if b_figure is not None else b.layout
    if isinstance(src, Figure) and src is not figure and src.dof_names != figure.dof_names:
        from animkit.scene import Scene

        b = retarget_full(Scene(src, clips={b.name: b}, up=up), Scene(figure, up=up)).clip
    elif not isinstance(src, Figure) and list(b.layout.dof_names) != figure.dof_names:
        raise RetargetError(f"clip {b.name!r} is on another layout; pass b_figure to retarget it first")
    tb = b.frame_times()
    pb = b.sample(tb)
    Ma = root_motion(figure, a.sample(np.array([float(start)]))).transforms()[0]
    Mb = root_motion(figure, pb[:1]).transforms()[0]
    moved = _carry(figure, pb, np.broadcast_to(Ma @ np.linalg.inv(Mb), (pb.shape[0], 4, 4)))
    b2 = Clip.from_poses(figure, tb, moved, name=b.name, fps=b.fps)
    return crossfade(a, b2, start, length, name=name)
