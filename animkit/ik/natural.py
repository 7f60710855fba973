"""Natural reaching: a prioritised, stiffness-weighted least-squares solver with human priors.

With W = diag(w_j), w_j = 1/(1 − s_j) (s_j ∈ [0, 1): joint j's stiffness, Blender's ik_stiffness), the step is
taken in scaled coordinates φ = W^½ θ, J̃ = J W^−½, and the tasks are solved level by level, each in the null
space of those before it (damped):

    Δφ_k = (J̃_k P_k)ᵀ (J̃_k P_k (J̃_k P_k)ᵀ + λ_k² I)⁻¹ (V_k − J̃_k Δφ_<k),   P_{k+1} = P_k − (J̃_k P_k)⁺ J̃_k P_k
    Δθ = W^−½ (Σ_k Δφ_k − γ P_last W^−½ ∇H)

Levels: (1) the planted feet keep their start frames and the centre of mass stays over the support polygon (its
ground projection pushed inward when its margin falls below ``margin``); (2) the effector's target;
(3) gaze: the head's forward axis toward the target (or a look-at point of its own), and its ear-to-ear axis e
level (e · u = 0: the head turns by yaw and pitch, never ear to shoulder; only when a neck/head DOF moves that does
not move the effector); then the comfort objective H = ½ k_c Σ_j (θ_j − θc_j)² + ½ k_s Σ_groups Σ_i (θ_i − θ̄_g)²
+ k_h Σ_free u · c_arm (the comfort pose, the spine bend spread: each spine DOF pulled toward the mean of the spine
DOFs about the same axis, and gravity on each free arm: the arm that is not reaching hangs, its centre of mass c_arm
lowered along the up axis u, ∂/∂θ = k_h uᵀ ∂c_arm/∂θ; its DOFs leave the comfort term). For one weighted task alone,
Δθ = W⁻¹Jᵀ(JW⁻¹Jᵀ + λ²I)⁻¹V, the weighted damped least squares. See docs/derivations.md ("Natural reaching")
and animkit/ik/tasks.py for the task Jacobians.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import AnimkitError, IKError, unknown_name
from ..figure import Figure
from ..humanoid import match_figure
from ..transforms import cross3
from .jacobian import rotation_error
from .prior import PosePrior, feature_jacobian
from .problem import check_effectors, compile_chain, movable_dofs
from .tasks import (
    Body,
    FigureState,
    body_from_figure,
    com_jacobian,
    figure_state,
    gaze_angle,
    gaze_jacobian,
    ground_basis,
    point_jacobian,
    polygon_margin,
    support_at,
)

__all__ = ["Priors", "NaturalProblem", "NaturalResult"]

Array = NDArray[np.float64]
STALL = 10  # a solve stops when its best error over this many iterations (above 100 tol) fell by less than 0.1 %
NULL_STEP = 0.02  # the largest change (scaled coordinates) per iteration from the comfort and spread terms


@dataclass(frozen=True)
class Priors:
    """What makes a reach look human (each measurable; see the module docstring).

    ``stiffness``: joint (or DOF) name → s in [0, 1) (w = 1/(1 − s)); ``comfort``: k_c, the pull toward the
    comfort pose θc (the rest pose, with ``preferred``: DOF name → value, Maya's preferred angle: a knee that rests
    straight, at its limit and at the leg's singularity, bends when its preferred angle is bent) in the null space;
    ``spread``: k_s, the spine-spread weight; ``gaze``: turn the
    head toward the target when the neck/head may move; ``planted``: effectors (feet) that keep their start frames
    when the movable set moves them; ``balance``: keep the centre of mass ``margin`` inside the support polygon
    (the feet's contact points on the ground) whenever feet are planted; ``up``: the world up axis; ``prior``: a
    learned :class:`~animkit.ik.PosePrior` whose cost, times ``prior_weight``, joins the null-space objective (the
    posture term: the reach's other joints go where people put them); ``hang``: k_h, gravity on each free arm (an arm
    the effector is not on, whose DOFs move): it hangs rather than keeping its pose relative to a bending chest."""

    stiffness: Mapping[str, float] = field(default_factory=dict)
    preferred: Mapping[str, float] = field(default_factory=dict)  # DOF name → its comfort value (radians)
    comfort: float = 0.1
    spread: float = 1.0
    gaze: bool = True
    planted: tuple[str, ...] = ()
    balance: bool = True
    margin: float = 0.02
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    prior: PosePrior | None = None
    prior_weight: float = 0.01
    hang: float = 1.0

    def __post_init__(self) -> None:
        for k, v in dict(self.stiffness).items():
            try:
                ok = isinstance(k, str) and 0.0 <= float(v) < 1.0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise IKError(f"Priors: stiffness[{k!r}] must be a number in [0, 1), got {v!r}")
        if self.prior is not None and not isinstance(self.prior, PosePrior):
            raise IKError(f"Priors: prior must be a PosePrior or None, got {type(self.prior).__name__}")
        for name in ("comfort", "spread", "margin", "prior_weight", "hang"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise IKError(f"Priors: {name} must be a finite number >= 0, got {v!r}")
        u = np.asarray(self.up, dtype=float)
        if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) == 0:
            raise IKError(f"Priors: up must be a non-zero 3-vector, got {self.up!r}")
        object.__setattr__(self, "planted", tuple(self.planted))


@dataclass(frozen=True)
class NaturalResult:
    """One natural solve: the pose, the primary task's state and the priors' measures."""

    pose: Array
    converged: bool
    iterations: int
    position_error: float
    orientation_error: float
    errors: Array  # position error before the first step and after every iteration
    gaze_deg: float | None  # angle between the head's forward axis and the target direction (None: no head)
    com_margin: float | None  # signed distance of the ground-projected CoM to the support polygon's boundary
    feet_drift: float  # largest distance a planted foot moved from its start (0 when none is planted)
    time_s: float


class NaturalProblem:
    """A reach with priors, checked once: effector, movable set, stiffness weights, head, feet and support.

        problem = NaturalProblem(figure, "hand_r", "whole-body", Priors(planted=("foot_l", "foot_r")), pose=p0)
        r = problem.solve(target)            # from p0; the planted feet keep their frames at p0

    ``pose`` (the rest pose when None) fixes the DOFs outside the movable set, the planted feet's frames and the
    support polygon."""

    def __init__(self, figure: Figure, effector: str, chain: str | Iterable[str] | None, priors: Priors, *,
                 pose: ArrayLike | None = None, tol: float = 1e-5, orientation: bool = False) -> None:
        if not isinstance(priors, Priors):
            raise IKError(f"expected Priors, got {type(priors).__name__}")
        self.figure = figure
        self.priors = priors
        self.tol = float(tol)
        self.orientation = bool(orientation)
        (eff_node,) = check_effectors(figure, effector)
        c = figure.compiled
        self._index = {n: i for i, n in enumerate(c.node_names)}
        self.effector = eff_node
        self._eff = self._index[eff_node]
        try:
            p0 = figure.rest_pose() if pose is None else figure.check_pose(pose).astype(float)
        except AnimkitError as exc:
            raise IKError(str(exc)) from None
        self.pose = np.asarray(p0, dtype=float).copy()
        self.dofs = movable_dofs(figure, chain, (eff_node,))
        self.body: Body = body_from_figure(figure)
        mv = self.body.moves
        # the chain compiled once (everything outside the movable set folded in at ``pose``): its nodes' frames
        # per iteration in one pass; the other nodes keep their frames at ``pose``
        mov_mask = np.zeros(c.dof_count, dtype=bool)
        mov_mask[self.dofs] = True
        self._live = np.flatnonzero(np.any(mv & mov_mask, axis=1))
        self._model = compile_chain(figure, self.pose, self.dofs, [c.node_names[i] for i in self._live])
        self._dofs_model = self._model.dofs
        names = figure.dof_names
        w = np.ones(len(self.dofs))
        for key, s in dict(priors.stiffness).items():
            if key in figure.joint_dofs:
                idx = list(figure.joint_dofs[key])
            elif key in names:
                idx = [names.index(key)]
            else:
                raise IKError(unknown_name("joint (stiffness)", key, figure.joint_names))
            for d in idx:
                hit = np.flatnonzero(self.dofs == d)
                w[hit] = 1.0 / (1.0 - float(s))
        self.weights = w
        self._scale = 1.0 / np.sqrt(w)
        self._lo = c.lower[self.dofs]
        self._hi = c.upper[self.dofs]
        comfort = figure.rest_pose()
        for key, v in dict(priors.preferred).items():
            if key not in names:
                raise IKError(unknown_name("DOF (preferred)", key, names))
            comfort[names.index(key)] = float(v)
        self.comfort_pose = comfort[self.dofs]
        bones = match_figure(figure)
        up = np.asarray(priors.up, dtype=float)
        self._up = up / np.linalg.norm(up)
        s0 = figure_state(figure, self.pose)
        self._s0 = s0
        # head: the rig's 'head' effector or the matched head bone; forward = up × right at the start pose
        head_name = figure.rig.effectors.get("head") or bones.get("head")
        self._head = -1 if head_name is None else self._index[head_name]
        self._fwd = np.zeros(3)
        self._ear = np.zeros(3)
        if self._head >= 0:
            right = self._right(bones, s0)
            if right is not None:
                ahead = np.cross(self._up, right)
                self._fwd = s0.R[self._head].T @ (ahead / np.linalg.norm(ahead))
                self._ear = s0.R[self._head].T @ right
            else:
                self._head = -1
        self._neck = (mv[self._head] & ~mv[self._eff])[self.dofs].astype(float) if self._head >= 0 else \
            np.zeros(len(self.dofs))
        self.gaze_active = bool(priors.gaze and self._head >= 0 and
                                np.any(mv[self._head] & ~mv[self._eff] & mov_mask))
        # planted feet: those the movable set moves
        feet = []
        for f in priors.planted:
            (node,) = check_effectors(figure, f)
            i = self._index[node]
            if np.any(mv[i] & mov_mask):
                feet.append(i)
        self._feet = feet
        self._feet_p = s0.p[feet].copy()
        self._feet_R = s0.R[feet].copy()
        self._basis = ground_basis(self._up)
        self._hull = self._support(figure, bones, s0, [self._index[check_effectors(figure, f)[0]]
                                                       for f in priors.planted])
        self.balance_active = bool(priors.balance and feet and self._hull is not None)
        self._groups = self._spine_groups(figure, bones)
        self._arms = self._free_arms(figure, bones, mov_mask) if priors.hang > 0 else []
        self._arm_dofs = np.zeros(len(self.dofs), dtype=bool)
        for _, cols in self._arms:
            self._arm_dofs |= cols
        self._extra: Array | None = None
        self._prior = None if priors.prior is None or priors.prior_weight == 0 else priors.prior.bind(figure)

    # --- set-up -----------------------------------------------------------------------------------------

    def _right(self, bones: object, s0: FigureState) -> Array | None:
        """The figure's right direction at the start: from its left to its right shoulder (or hip)."""
        get = bones.get  # type: ignore[attr-defined]
        for a, b in (("upper_arm_l", "upper_arm_r"), ("upper_leg_l", "upper_leg_r")):
            na, nb = get(a), get(b)
            if na is not None and nb is not None:
                v = s0.p[self._index[nb]] - s0.p[self._index[na]]
                v = v - self._up * (v @ self._up)
                if np.linalg.norm(v) > 1e-9:
                    return v / np.linalg.norm(v)
        return None

    def _support(self, figure: Figure, bones: object, s0: FigureState, feet: Sequence[int]) -> Array | None:
        """Ground points of the feet's geometry (box corners, capsule/sphere bottoms within 2 cm of the lowest),
        projected on the ground: the support polygon (K, 2); None with fewer than 3 points."""
        return support_at(figure, s0, feet, self._up, self._basis)

    def _spine_groups(self, figure: Figure, bones: object) -> list[NDArray[np.intp]]:
        """Positions (in the movable set) of the spine DOFs, grouped by axis letter: the joints from the spine bone
        to the chest bone."""
        get = bones.get  # type: ignore[attr-defined]
        top, bottom = get("spine"), get("chest")
        if top is None or bottom is None:
            return []
        path = [a for a in figure.path_to(bottom)]
        names = [a.child.name for a in path]
        if top not in names:
            return []
        joints = [a.joint.name for a in path[names.index(top):] if a.joint.dof_count]
        groups: dict[str, list[int]] = {}
        pos = {int(d): k for k, d in enumerate(self.dofs)}
        for j in joints:
            for d in figure.joint_dofs[j]:
                if d in pos:
                    groups.setdefault(figure.dof_names[d].rsplit(".", 1)[-1], []).append(pos[d])
        return [np.array(g, dtype=np.intp) for g in groups.values() if len(g) >= 2]

    def _free_arms(self, figure: Figure, bones: object, mov_mask: NDArray[np.bool_]
                   ) -> list[tuple[Body, NDArray[np.bool_]]]:
        """Each free arm (the effector is not on it, some of its DOFs move): its segments as a :class:`Body` of their
        own and its movable columns (the DOFs of its joints, from the clavicle or upper arm down)."""
        get = bones.get  # type: ignore[attr-defined]
        c = figure.compiled
        eff_path = {a.child.name for a in figure.path_to(self.effector)}
        out = []
        for side in ("l", "r"):
            top = get(f"clavicle_{side}") or get(f"upper_arm_{side}")
            if top is None or top in eff_path:
                continue
            i0 = self._index[top]
            below = [i for i in range(c.node_count) if i == i0 or self._is_below(i, i0)]
            seg = np.isin(self.body.node, below)
            own = np.zeros(c.dof_count, dtype=bool)
            own[[d for d in range(c.dof_count) if int(c.dof_node[d]) in below]] = True
            cols = (own & mov_mask)[self.dofs]
            if seg.any() and cols.any():
                b = self.body
                out.append((Body(b.node[seg], b.mass[seg], b.centroid[seg], b.moves), cols))
        return out

    def _is_below(self, i: int, top: int) -> bool:
        parent = self.figure.compiled.parent
        while i >= 0:
            if i == top:
                return True
            i = int(parent[i])
        return False

    def _state(self, q_full: Array) -> FigureState:
        """The frames of one pose from the compiled chain (same values as :func:`figure_state`; the DOF frames of
        DOFs outside the movable set are left zero: no task uses them)."""
        fr = self._model.frames(q_full[self._dofs_model][None])
        s0 = self._s0
        R, p = s0.R.copy(), s0.p.copy()
        R[self._live], p[self._live] = fr.R[0], fr.p[0]
        r = np.zeros_like(s0.r)
        a = np.zeros_like(s0.a)
        r[self._dofs_model], a[self._dofs_model] = fr.r[0], fr.a[0]
        return FigureState(R, p, r, a)

    # --- measures ---------------------------------------------------------------------------------------

    def com_margin(self, pose: Array) -> float | None:
        """Signed distance (scene units, positive inside) of the ground-projected centre of mass to the support
        polygon's boundary; None without a support polygon. (DOFs outside the movable set: the problem's pose.)"""
        if self._hull is None:
            return None
        return self._margin_of(self._state(np.asarray(pose, dtype=float)))

    def _margin_of(self, s: FigureState) -> float | None:
        """:meth:`com_margin` of the frames s of a pose."""
        if self._hull is None:
            return None
        c, _ = com_jacobian(self.figure, self.body, s)
        return polygon_margin(self._hull, self._basis @ c)

    @property
    def active(self) -> bool:
        """Whether a task of its own is on for this movable set (gaze, planted feet, spine spread); without one the
        problem is a stiffness-weighted reach with a comfort pull, which ``LM(stiffness=...)`` solves faster."""
        return bool(self.gaze_active or self._feet or (self._groups and self.priors.spread > 0) or
                    self._prior is not None)

    @property
    def feet_planted(self) -> bool:
        """Whether the movable set moves a planted foot (which then keeps its start frame)."""
        return bool(self._feet)

    def feet_drift(self, poses: Array) -> float:
        """The largest distance any planted foot (the priors' ``planted``, moved or not) is from its start over
        poses (F, D)."""
        c = self.figure.compiled
        feet = [c.node_names.index(check_effectors(self.figure, f)[0]) for f in self.priors.planted]
        if not feet:
            return 0.0
        P = self.figure.world_positions(np.atleast_2d(poses))[:, feet]
        return float(np.max(np.linalg.norm(P - self._s0.p[feet], axis=2)))

    def effort(self, pose: Array, gravity: float = 9.81) -> float:
        """Σ_j |τ_j| over the DOFs of every joint but the root's: the static torque that holds the pose against
        gravity, τ_j = M g ∂(u·c)/∂θ_j (virtual work; u the up axis, c the centre of mass), in N·m for a figure in
        metres with masses in kg."""
        _, Jc = com_jacobian(self.figure, self.body, figure_state(self.figure, pose))
        tau = self.body.total * gravity * (self._up @ Jc)
        root = np.asarray(self.figure.joint_dofs[self.figure.root_arc.joint.name], dtype=np.intp)
        keep = np.ones(len(tau), dtype=bool)
        keep[root] = False
        return float(np.sum(np.abs(tau[keep])))

    def gaze_deg(self, pose: Array, target: Array) -> float | None:
        """Degrees between the head's forward axis and the direction to ``target`` (None: no head found)."""
        if self._head < 0:
            return None
        return self._gaze_of(self._state(np.asarray(pose, dtype=float)), target)

    def head_position(self, pose: Array) -> Array:
        """The head's world origin at ``pose`` (IKError without a head)."""
        if self._head < 0:
            raise IKError("this figure has no head the natural solver found (a 'head' effector or humanoid bone)")
        return np.asarray(self._state(np.asarray(pose, dtype=float)).p[self._head], dtype=float)

    def looking_at(self, pose: Array, distance: float) -> Array:
        """p_h + ρ R_h f_h: the point ``distance`` ahead of the head along its forward axis at ``pose``."""
        s = self._state(np.asarray(pose, dtype=float))
        if self._head < 0:
            raise IKError("this figure has no head the natural solver found (a 'head' effector or humanoid bone)")
        return np.asarray(s.p[self._head] + distance * (s.R[self._head] @ self._fwd), dtype=float)

    def _gaze_of(self, s: FigureState, target: Array) -> float | None:
        """:meth:`gaze_deg` of the frames s of a pose."""
        if self._head < 0:
            return None
        return math.degrees(gaze_angle(s, self._head, self._fwd, target))

    # --- solving ----------------------------------------------------------------------------------------

    def solve(self, target: ArrayLike, start: ArrayLike | None = None, *, max_iter: int = 200,
              settle: bool = True, look_at: ArrayLike | None = None) -> NaturalResult:
        """Iterate the prioritised step from ``start`` (a full pose; None: the problem's pose) until the target is
        met (``tol``) and, with ``settle``, the secondary tasks have settled (no DOF moves 1e-3 in a step), or
        ``max_iter`` iterations. Without ``settle`` (a bake's frames) the loop stops once the target is met after at
        least one step: the secondary tasks then advance a step per frame. ``look_at``: the point the head turns to
        (None: the target's position; a bake leads with the gaze on a timeline of its own)."""
        t0 = time.perf_counter()
        t = np.asarray(target, dtype=float)
        if t.shape == (4, 4):
            tp, tR = t[:3, 3], t[:3, :3]
        elif t.shape == (3,):
            tp, tR = t, None
        else:
            raise IKError(f"a target is a 3-vector or a 4x4 pose, got shape {t.shape}")
        look = tp if look_at is None else np.asarray(look_at, dtype=float)
        q_full = self.pose.copy() if start is None else np.asarray(start, dtype=float).copy()
        q = q_full[self.dofs]
        errors = []
        it = 0
        pos_err = ori_err = math.inf
        feet_err = 0.0
        converged = False
        for it in range(max_iter + 1):
            q_full[self.dofs] = q
            s = self._state(q_full)
            levels, pos_err, ori_err, feet_err = self._levels(s, tp, tR, look)
            errors.append(pos_err)
            met = pos_err <= self.tol and ori_err <= 1e-4 and feet_err <= self.tol
            if it == max_iter:
                converged = met
                break
            if met and not settle and it >= 1:
                converged = True
                break
            if it >= STALL and min(errors[-STALL:]) > max(100 * self.tol, (1.0 - 1e-3) * errors[-1 - STALL]):
                break  # stalled: the target is out of reach (or the tasks above it hold the effector back)
            dq = self._step(s, q, levels)
            if met and float(np.max(np.abs(dq), initial=0.0)) < 1e-3:
                converged = True
                break
            q = np.clip(q + dq, self._lo, self._hi)
            if self._model.cones:  # limits, then cones (ChainModel.project_cones), as in the shared loop
                q_full[self.dofs] = q
                q_full[self._dofs_model] = self._model.project_cones(q_full[self._dofs_model][None])[0]
                q = q_full[self.dofs]
        q_full[self.dofs] = q  # every exit leaves q as the pose of the last frames s: the measures reuse them
        return NaturalResult(q_full, converged, it, pos_err, ori_err if tR is not None else 0.0, np.array(errors),
                             self._gaze_of(s, tp), self._margin_of(s), feet_err, time.perf_counter() - t0)

    def _levels(self, s: FigureState, tp: Array, tR: Array | None, look: Array
                ) -> tuple[list[tuple[Array, Array, float]], float, float, float]:
        fig, body, mov = self.figure, self.body, self.dofs
        levels: list[tuple[Array, Array, float]] = []
        # level 1: planted feet and balance
        rows_J, rows_V = [], []
        feet_err = 0.0
        rev = fig.compiled.dof_revolute
        for k, i in enumerate(self._feet):
            dp = self._feet_p[k] - s.p[i]
            dr = rotation_error(self._feet_R[k], s.R[i])
            feet_err = max(feet_err, float(np.linalg.norm(dp)))
            rows_J += [point_jacobian(fig, body, s, i, s.p[i])[:, mov],
                       (s.a * (body.moves[i] & rev)[:, None]).T[:, mov]]
            rows_V += [dp, dr]
        if self.balance_active:
            assert self._hull is not None
            c, Jc = com_jacobian(fig, body, s)
            c2 = self._basis @ c
            m = polygon_margin(self._hull, c2)
            if m < self.priors.margin:
                centre = self._hull.mean(axis=0)
                d = centre - c2
                d = d / max(float(np.linalg.norm(d)), 1e-12)
                rows_J.append(self._basis @ Jc[:, mov])
                rows_V.append(d * (self.priors.margin - m + 1e-3))
        if rows_J:
            levels.append((np.vstack(rows_J), np.concatenate(rows_V), 1e-3))
        # level 2: the effector's target
        e = self._eff
        ve = tp - s.p[e]
        pos_err = float(np.linalg.norm(ve))
        Je = point_jacobian(fig, body, s, e, s.p[e])[:, mov]
        ori_err = 0.0
        ve = ve * min(1.0, 0.1 / max(pos_err, 1e-300))
        lam = min(0.01, max(pos_err, 1e-6))  # damped far from the target, nearly exact close to it
        if tR is not None:
            vo = rotation_error(tR, s.R[e])
            ori_err = float(np.linalg.norm(vo))
            Jo = (s.a * (body.moves[e] & rev)[:, None]).T[:, mov]
            levels.append((np.vstack([Je, Jo]), np.concatenate([ve, vo * min(1.0, 0.3 / max(ori_err, 1e-300))]), lam))
        else:
            levels.append((Je, ve, lam))
        # level 3: gaze, the head level
        if self.gaze_active:  # the neck and head turn, not the spine: only DOFs that leave the effector
            g, Jg = gaze_jacobian(fig, body, s, self._head, self._fwd, look)
            v = -g * min(1.0, 0.3 / max(float(np.linalg.norm(g)), 1e-300))  # the look-at point moves smoothly
            ear = s.R[self._head] @ self._ear  # e · u = 0: ∂(e · u)/∂θ_j = u · (a_j × e) (revolute, above the head)
            Jl = (cross3(s.a, ear) @ self._up) * (body.moves[self._head] & rev)
            levels.append((np.vstack([Jg[:, mov], Jl[None, mov]]) * self._neck,
                           np.concatenate([v, [-float(ear @ self._up)]]), 0.05))
        return levels, pos_err, ori_err, feet_err

    def _step(self, s: FigureState, q: Array, levels: list[tuple[Array, Array, float]]) -> Array:
        sc = self._scale.copy()
        extra = None
        if self._prior is not None:  # ∇(w·cost) of the learned posture in the movable DOFs
            pr = self.priors.prior
            assert pr is not None
            x, J = feature_jacobian(self._prior, s.R, s.p, s.r, s.a)
            _, g = pr.feature_cost(x, self._prior.rows)
            extra = self.priors.prior_weight * (J.T @ g[0])[self.dofs]
        for arm, cols in self._arms:  # gravity on a free arm: ∇(k_h u · c_arm)
            _, Jc = com_jacobian(self.figure, arm, s)
            hang = np.where(cols, self.priors.hang * (self._up @ Jc[:, self.dofs]), 0.0)
            extra = hang if extra is None else extra + hang
        self._extra = extra
        dq = self._prioritised(q, levels, sc)
        blocked = ((q + dq <= self._lo) & (dq < 0)) | ((q + dq >= self._hi) & (dq > 0))
        if blocked.any():  # re-solve without the DOFs pressed on a limit
            sc[blocked] = 0.0
            dq = self._prioritised(q, levels, sc)
        big = float(np.max(np.abs(dq), initial=0.0))
        return dq * min(1.0, 0.3 / big) if big > 0 else dq

    def _prioritised(self, q: Array, levels: list[tuple[Array, Array, float]], sc: Array) -> Array:
        n = len(q)
        dphi = np.zeros(n)
        P = np.eye(n)
        for J, V, lam in levels:
            Jt = J * sc
            JP = Jt @ P
            eye = np.eye(len(V))
            dphi = dphi + JP.T @ np.linalg.solve(JP @ JP.T + lam * lam * eye, V - Jt @ dphi)
            P = P - JP.T @ np.linalg.solve(JP @ JP.T + 1e-8 * eye, JP)  # the projector nearly exact (eigenvalues
            # σ²/(σ² + 1e-8) ∈ [0, 1]): the lower tasks may not leak into this one
        grad = np.where(self._arm_dofs, 0.0, self.priors.comfort * (q - self.comfort_pose))
        if self._extra is not None:
            grad = grad + self._extra
        for g in self._groups:
            grad[g] += self.priors.spread * (q[g] - q[g].mean())
        dz = 0.5 * P @ (sc * grad)
        big = float(np.max(np.abs(dz), initial=0.0))
        if big > NULL_STEP:  # a small step: its second-order effect on the tasks stays below what they correct
            dz *= NULL_STEP / big
        return sc * (dphi - dz)
