"""A pose prior learned from motion capture: a Gaussian mixture over canonical bone rotations.

A pose becomes a skeleton-independent vector x (3 per canonical bone, :data:`PRIOR_BONES`): each humanoid bone's
rotation relative to its canonical parent, measured from a canonical T-pose, in body axes (left, up, forward):

    L_b = K_pᵀ R_pᵀ R_b K_b,   K_b = R_b,restᵀ B A_b,   x_b = log(L_b)^∨

with R_b the world rotation of bone b's node, B = [left up forward] the figure's body axes at rest, and A_b the
shortest turn from the bone's canonical T-pose direction to its rest direction in body axes (so a rest in A-pose
reads as arms turned down from the T-pose, and CMU BVH and glTF characters share one x). The prior is the mixture

    p(x) = Σ_k π_k N(x; μ_k, Σ_k),   cost(x) = −log p(x),   ∂cost/∂x = Σ_k γ_k Σ_k⁻¹ (x − μ_k)

(γ_k the responsibilities), and through x = x(θ) the gradient in a figure's DOFs: with a_j the world axis of a
revolute DOF j and m_bj = 1 when j moves bone b's node,

    ∂x_b/∂θ_j = J_l⁻¹(x_b) K_pᵀ R_pᵀ a_j (m_bj − m_pj),   J_l⁻¹(φ) = I − ½[φ]× + (1/θ² − (1 + cos θ)/(2θ sin θ)) [φ]×²

(the inverse left Jacobian of SO(3)). Solvers use the dominant component's residual r = U_kᵀ(x − μ_k),
U_k U_kᵀ = Σ_k⁻¹ (Gauss–Newton on the nearest Gaussian, as SMPLify does). Bones a figure lacks are marginalised
(a Gaussian's marginal keeps the present rows and columns). See docs/prior.md.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.atomic import atomic_path
from animkit.errors import AnimkitError, IKError
from animkit.ik.prior_poses import placed_keys, pose_set
from animkit.ik.tasks import Configuration, Task, figure_state
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure
from animkit.model.transforms import matrix_aligning, rotation_vector_from_matrix

__all__ = ["PosePrior", "PriorBinding", "PRIOR_BONES", "CANONICAL_PARENT", "bind_figure", "pose_features",
           "feature_jacobian", "body_axes", "mirror_features", "ROOT_FEATURES", "fit_mixture", "Prior",
           "inverse_left_jacobian"]

Array = NDArray[np.float64]

_SIDED = ("clavicle", "upper_arm", "forearm", "hand", "upper_leg", "lower_leg", "foot", "toe")
#: The bones the prior describes (the hips' own rotation is the root's, left to the caller), 3 numbers each.
PRIOR_BONES: tuple[str, ...] = ("spine", "chest", "neck", "head") + tuple(f"{b}_{s}" for s in ("l", "r")
                                                                          for b in _SIDED)
#: Each bone's canonical parent bone.
CANONICAL_PARENT: dict[str, str] = {"spine": "hips", "chest": "spine", "neck": "chest", "head": "neck"}
for _s in ("l", "r"):
    CANONICAL_PARENT.update({f"clavicle_{_s}": "chest", f"upper_arm_{_s}": f"clavicle_{_s}",
                             f"forearm_{_s}": f"upper_arm_{_s}", f"hand_{_s}": f"forearm_{_s}",
                             f"upper_leg_{_s}": "hips", f"lower_leg_{_s}": f"upper_leg_{_s}",
                             f"foot_{_s}": f"lower_leg_{_s}", f"toe_{_s}": f"foot_{_s}"})
#: The root's numbers after the bones': the world up in the hips' canonical frame (its left and forward parts: the
#: hips' tilt) and the hips' height above the ground (the plane through the origin) over their height at rest above
#: the figure's lowest node (1: standing as at rest).
ROOT_FEATURES: tuple[str, ...] = ("tilt_left", "tilt_forward", "hips_height")
DIM = 3 * len(PRIOR_BONES) + len(ROOT_FEATURES)
# canonical T-pose directions in body axes (left, up, forward)
_UP, _DOWN, _FWD = (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, 1.0)
_DIRECTION: dict[str, tuple[float, float, float]] = {"hips": _UP, "spine": _UP, "chest": _UP, "neck": _UP,
                                                     "head": _UP}
for _s, _x in (("l", 1.0), ("r", -1.0)):
    _DIRECTION.update({f"{b}_{_s}": (_x, 0.0, 0.0) for b in ("clavicle", "upper_arm", "forearm", "hand")})
    _DIRECTION.update({f"upper_leg_{_s}": _DOWN, f"lower_leg_{_s}": _DOWN, f"foot_{_s}": _FWD, f"toe_{_s}": _FWD})
# the bone whose rest position gives a bone's rest direction
_NEXT: dict[str, str] = {"hips": "chest", "spine": "chest", "chest": "neck", "neck": "head"}
for _s in ("l", "r"):
    _NEXT.update({f"clavicle_{_s}": f"upper_arm_{_s}", f"upper_arm_{_s}": f"forearm_{_s}",
                  f"forearm_{_s}": f"hand_{_s}", f"upper_leg_{_s}": f"lower_leg_{_s}",
                  f"lower_leg_{_s}": f"foot_{_s}", f"foot_{_s}": f"toe_{_s}"})


def mirror_features(x: ArrayLike) -> Array:
    """x of the mirror pose (left ↔ right): each bone's rotation vector reflected in the body's sagittal plane,
    (l, u, f) → (l, −u, −f) (a rotation vector is axial), the sides' bones swapped, the hips' tilt mirrored."""
    Xa = np.asarray(x, dtype=float).reshape(-1, DIM)
    nb = 3 * len(PRIOR_BONES)
    X = Xa[:, :nb].reshape(-1, len(PRIOR_BONES), 3)
    index = {b: i for i, b in enumerate(PRIOR_BONES)}
    perm = [index[b[:-1] + ("r" if b.endswith("_l") else "l")] if b[-2:] in ("_l", "_r") else index[b]
            for b in PRIOR_BONES]
    bones = (X[:, perm] * np.array([1.0, -1.0, -1.0])).reshape(-1, nb)
    root = Xa[:, nb:] * np.array([-1.0, 1.0, 1.0])  # the tilt is a polar vector: its left part turns over
    return np.concatenate([bones, root], axis=1).reshape(np.shape(x))


def body_axes(figure: Figure, bones: Any, W: Array) -> Array:
    """B = [left up forward] (3×3, columns) of a figure at world matrices W (N, 4, 4): up from the hips to the head
    (or chest), left from the right to the left upper arm (or upper leg), made orthogonal; forward = left × up."""
    c = figure.compiled
    index = {n: i for i, n in enumerate(c.node_names)}

    def at(bone: str) -> Array | None:
        node = bones.get(bone)
        return None if node is None else W[index[node], :3, 3]

    hips = at("hips")
    top = at("head") if at("head") is not None else at("chest")
    if hips is None or top is None:
        raise IKError(f"pose prior: figure {figure.name!r} has no hips and head or chest to set its body axes")
    up = top - hips
    left = None
    for a, b in (("upper_arm_l", "upper_arm_r"), ("upper_leg_l", "upper_leg_r")):
        pa, pb = at(a), at(b)
        if pa is not None and pb is not None:
            left = pa - pb
            break
    if left is None or np.linalg.norm(up) < 1e-12:
        raise IKError(f"pose prior: figure {figure.name!r} has no left and right upper arms or legs")
    up = up / np.linalg.norm(up)
    left = left - up * (left @ up)
    if np.linalg.norm(left) < 1e-12:
        raise IKError(f"pose prior: figure {figure.name!r}: its sides lie along its spine at rest")
    left = left / np.linalg.norm(left)
    return np.stack([left, up, np.cross(left, up)], axis=1)


@dataclass(frozen=True, eq=False)
class PriorBinding:
    """A figure bound to the prior's bones, built once: which bones it has, their nodes and constant frames.

    ``bones``: the present :data:`PRIOR_BONES` (in that order); ``node`` / ``parent`` (node indices of each bone
    and of its nearest present canonical ancestor); ``K`` / ``Kp`` (3×3 per bone, R_restᵀ B A of the bone and of
    that ancestor); ``rows``: the features' indices in the full vector (3 per present bone); ``moves`` (N, D):
    DOF j moves node i (never for scale DOFs, which IK leaves alone); ``revolute`` (D,)."""

    figure: Figure
    bones: tuple[str, ...]
    node: NDArray[np.intp]
    parent: NDArray[np.intp]
    K: Array
    Kp: Array
    rows: NDArray[np.intp]
    moves: NDArray[np.bool_]
    revolute: NDArray[np.bool_]
    height: float  # rest height: the nodes' extent along the body's up axis (scene units)
    hips: int  # node index of the hips
    Kh: Array  # the hips' K (3, 3)
    up: Array  # the world up: the body's up axis at rest (3,)
    leg: float  # the hips' height above the lowest node at rest (scene units): the root height's unit
    chains: dict[Any, Any] = field(default_factory=dict, repr=False)  # pose_from_effectors' compiled chain


def bind_figure(figure: Figure) -> PriorBinding:
    """Match a figure's bones (:func:`animkit.model.humanoid.match_figure`) and compute each bone's K = R_restᵀ B A."""
    bones = match_figure(figure)
    c = figure.compiled
    index = {n: i for i, n in enumerate(c.node_names)}
    W = figure.world_batch(figure.rest_pose()[None])[0]
    B = body_axes(figure, bones, W)

    def rest_frame(bone: str) -> Array:
        node = index[bones.node(bone)]
        d = np.array(_DIRECTION[bone])
        nxt = _NEXT.get(bone)
        rest_dir = None
        if nxt is not None and bones.get(nxt) is not None:
            rest_dir = W[index[bones.node(nxt)], :3, 3] - W[node, :3, 3]
        else:  # hands, toes, head: toward the mean of the node's children, when they lie off it
            kids = np.flatnonzero(c.parent == node)
            if len(kids):
                rest_dir = W[kids, :3, 3].mean(axis=0) - W[node, :3, 3]
        if rest_dir is None or np.linalg.norm(rest_dir) < 1e-9 * max(1.0, float(np.abs(W[:, :3, 3]).max())):
            A = np.eye(3)
        else:
            A = matrix_aligning(d, B.T @ rest_dir)
        return np.asarray(W[node, :3, :3].T @ B @ A)

    present = [b for b in PRIOR_BONES if bones.get(b) is not None]
    if bones.get("hips") is None or not present:
        raise IKError(f"pose prior: figure {figure.name!r} is not a humanoid ({bones.report()})")
    node, parent, K, Kp = [], [], [], []
    rows: list[int] = []
    for b in present:
        p = CANONICAL_PARENT[b]
        while bones.get(p) is None:
            p = CANONICAL_PARENT[p]
        node.append(index[bones.node(b)])
        parent.append(index[bones.node(p)])
        K.append(rest_frame(b))
        Kp.append(rest_frame(p))
        k = PRIOR_BONES.index(b)
        rows.extend((3 * k, 3 * k + 1, 3 * k + 2))
    rows.extend(range(3 * len(PRIOR_BONES), DIM))
    moves = np.zeros((c.node_count, c.dof_count), dtype=bool)
    moves[np.asarray(c.dof_node, dtype=np.intp), np.arange(c.dof_count)] = True
    for i in range(c.node_count):
        if c.parent[i] >= 0:
            moves[i] |= moves[int(c.parent[i])]
    moves[:, np.asarray(c.dof_scale, dtype=bool)] = False  # scale DOFs (glTF) never move in IK
    heights = W[:, :3, 3] @ B[:, 1]
    height = float(np.ptp(heights))
    leg = float(heights[index[bones.node("hips")]] - heights.min())
    if not leg > 1e-9 * max(height, 1e-300):
        raise IKError(f"pose prior: figure {figure.name!r} has no legs below its hips at rest")
    return PriorBinding(figure, tuple(present), np.array(node, dtype=np.intp), np.array(parent, dtype=np.intp),
                        np.array(K), np.array(Kp), np.array(rows, dtype=np.intp), moves,
                        np.asarray(c.dof_revolute, dtype=bool), height, index[bones.node("hips")],
                        rest_frame("hips"), B[:, 1].copy(), leg)


def pose_features(binding: PriorBinding, W: ArrayLike) -> Array:
    """x (F, 3·bones + 3) of world matrices W (F, N, 4, 4): x_b = log(K_pᵀ R_pᵀ R_b K_b)^∨ per present bone, then
    the root's: u = (R_h K_h)ᵀ up (its left and forward parts) and h = up·p_h / leg (the hips' rest height above
    the lowest node: 1 when a figure stands as at rest on the ground through the origin)."""
    Wa = np.asarray(W, dtype=float)
    R = Wa[..., :3, :3]
    Rb = R[:, binding.node] @ binding.K  # (F, nb, 3, 3)
    Rp = R[:, binding.parent] @ binding.Kp
    L = np.swapaxes(Rp, -1, -2) @ Rb
    xb = rotation_vector_from_matrix(L).reshape(len(Wa), -1)
    Qh = R[:, binding.hips] @ binding.Kh
    u = np.swapaxes(Qh, -1, -2) @ binding.up  # (F, 3)
    h = Wa[:, binding.hips, :3, 3] @ binding.up / binding.leg
    x: Array = np.concatenate([xb, u[:, [0, 2]], h[:, None]], axis=1)
    return x


def _skew(v: Array) -> Array:
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return S


def inverse_left_jacobian(phi: Array) -> Array:
    """J_l⁻¹(φ) = I − ½[φ]× + (1/θ² − (1 + cos θ)/(2θ sin θ)) [φ]×² (..., 3, 3); the series 1/12 + θ²/720 near 0."""
    th = np.linalg.norm(phi, axis=-1)
    small = th < 1e-4
    ts = np.where(small, 1.0, th)
    coef = np.where(small, 1.0 / 12.0 + th * th / 720.0,
                    1.0 / (ts * ts) - (1.0 + np.cos(ts)) / (2.0 * ts * np.sin(ts)))
    S = _skew(phi)
    out: Array = np.eye(3) - 0.5 * S + coef[..., None, None] * (S @ S)
    return out


def feature_jacobian(binding: PriorBinding, R: Array, p: Array, r: Array, axes: Array) -> tuple[Array, Array]:
    """x (see :func:`pose_features`) and ∂x/∂θ (len(x), D) at one pose, from node rotations R (N, 3, 3), origins
    p (N, 3) and DOF world origins r and axes a (D, 3): ∂x_b/∂θ_j = J_l⁻¹(x_b) K_pᵀ R_pᵀ a_j (m_bj − m_pj) for
    revolute DOFs; ∂u/∂θ_j = Q_hᵀ (up × a_j) m_hj (revolute), ∂h/∂θ_j = up·(a_j × (p_h − r_j)) m_hj / leg
    (prismatic: up·a_j m_hj / leg)."""
    Rb = R[binding.node] @ binding.K
    Qp = R[binding.parent] @ binding.Kp  # (nb, 3, 3)
    x = rotation_vector_from_matrix(np.swapaxes(Qp, -1, -2) @ Rb)  # (nb, 3)
    rev = binding.revolute
    m = (binding.moves[binding.node] & ~binding.moves[binding.parent]) & rev  # (nb, D)
    local = np.einsum("bik,di->bkd", Qp, axes)  # K_pᵀ R_pᵀ a_j: (nb, 3, D)
    J = (inverse_left_jacobian(x) @ (local * m[:, None, :])).reshape(-1, axes.shape[0])
    h = binding.hips
    up = binding.up
    Qh = R[h] @ binding.Kh
    mh = binding.moves[h]
    u = Qh.T @ up
    Ju = (Qh.T @ np.cross(up, axes).T) * (mh & rev)
    dp = np.where(rev[:, None], np.cross(axes, p[h] - r), axes)
    Jh = (dp @ up) * mh / binding.leg
    xr = np.array([u[0], u[2], p[h] @ up / binding.leg])
    return np.concatenate([x.reshape(-1), xr]), np.vstack([J, Ju[[0, 2]], Jh[None]])


@dataclass(frozen=True, eq=False)
class _Marginal:
    """The mixture restricted to one figure's present features: means, precision factors, log weights."""

    mean: Array  # (K, d)
    U: Array  # (K, d, d): U Uᵀ = Σ⁻¹ (U = L⁻ᵀ of Σ = L Lᵀ)
    logw: Array  # (K,) log π_k − ½ log det Σ_k − d/2 log 2π
    precision: Array  # (K, d, d): Σ⁻¹ = U Uᵀ


@dataclass(frozen=True, eq=False)
class PosePrior:
    """A Gaussian mixture over canonical bone rotations (:data:`PRIOR_BONES`, 3 numbers each); see the module
    docstring. ``weights`` (K,), ``means`` (K, d), ``covariances`` (K, d, d) over the d = 3·len(PRIOR_BONES) + 3
    features (:func:`pose_features`); ``source``: provenance text; ``poses`` (M, d): training poses kept for
    :func:`animkit.pose_from_effectors`'s nearest-pose centre (:mod:`animkit.ik.prior_poses`), or None."""

    weights: Array
    means: Array
    covariances: Array
    source: str = ""
    poses: Array | None = None  # (M, d) stored training features (animkit.ik.prior_poses), or None
    _marginals: dict[tuple[int, ...], _Marginal] = field(default_factory=dict, repr=False)
    _bindings: dict[int, PriorBinding] = field(default_factory=dict, repr=False)
    _placed: dict[int, Array] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        d = DIM
        w, m, c = (np.asarray(a, dtype=float) for a in (self.weights, self.means, self.covariances))
        K = len(w)
        if K < 1 or w.shape != (K,) or m.shape != (K, d) or c.shape != (K, d, d):
            raise IKError(f"PosePrior: expected weights (K,), means (K, {d}), covariances (K, {d}, {d}); got "
                          f"{w.shape}, {m.shape}, {c.shape}")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and abs(w.sum() - 1.0) < 1e-6):
            raise IKError("PosePrior: weights must be non-negative and sum to 1")
        if not (np.all(np.isfinite(m)) and np.all(np.isfinite(c))):
            raise IKError("PosePrior: means and covariances must be finite")
        if self.poses is not None:
            ps = np.asarray(self.poses, dtype=float)
            if ps.ndim != 2 or ps.shape[1] != d or len(ps) < 1 or not np.all(np.isfinite(ps)):
                raise IKError(f"PosePrior: poses must be finite (M, {d}), got {ps.shape}")
            object.__setattr__(self, "poses", ps)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "means", m)
        object.__setattr__(self, "covariances", 0.5 * (c + np.swapaxes(c, 1, 2)))

    # --- fitting --------------------------------------------------------------------------------------------

    @classmethod
    def fit(cls, clips: Iterable[Any], *, components: int = 8, every: int = 4, mirror: bool = True,
            reg: float = 1e-3, iterations: int = 100, seed: int = 0, source: str = "") -> PosePrior:
        """Fit by EM (k-means++ start) on the features of every ``every``-th frame of ``clips``.

        Each item is a scene (its figure and all its clips, sampled at their frames), a ``(figure, clip)`` pair or
        a ``(figure, poses (F, D))`` pair. ``mirror`` adds each frame's mirror pose (left ↔ right); ``reg`` (rad²)
        is added to every covariance's diagonal."""
        parts = [cls.features_of(item, every=every) for item in clips]
        X = np.concatenate(parts) if parts else np.zeros((0, DIM))
        if len(X) == 0:
            raise IKError("PosePrior.fit: no frames")
        if mirror:
            X = np.concatenate([X, mirror_features(X)])
        w, m, c = fit_mixture(X, components, reg=reg, iterations=iterations, seed=seed)
        return cls(w, m, c, source, pose_set(X))

    @staticmethod
    def features_of(item: Any, *, every: int = 1) -> Array:
        """Features (F, 3B) of every ``every``-th frame of a scene, a (figure, clip) or a (figure, poses) pair
        (NaN in the rows of bones the figure lacks)."""
        if isinstance(item, tuple) and len(item) == 2:
            figure, data = item
            poses = [data.sample_frames() if hasattr(data, "sample_frames") else np.asarray(data, dtype=float)]
        elif hasattr(item, "figure") and hasattr(item, "clips"):
            figure = item.figure
            poses = [c.sample_frames() for c in item.clips.values()]
        else:
            raise IKError(f"PosePrior.fit: expected a scene or a (figure, clip or poses) pair, got "
                          f"{type(item).__name__}")
        binding = bind_figure(figure)
        out = []
        for P in poses:
            P = np.atleast_2d(P)[:: max(1, int(every))]
            if len(P) == 0:
                continue
            x = np.full((len(P), DIM), np.nan)
            x[:, binding.rows] = pose_features(binding, figure.world_batch(P))
            out.append(x)
        if not out:
            return np.zeros((0, DIM))
        X = np.concatenate(out)
        return X[np.all(np.isfinite(X[:, binding.rows]), axis=1)]

    # --- a figure's cost ------------------------------------------------------------------------------------

    def bind(self, figure: Figure) -> PriorBinding:
        """The figure's binding (built once per figure object and kept)."""
        key = id(figure)
        b = self._bindings.get(key)
        if b is None or b.figure is not figure:
            b = bind_figure(figure)
            self._bindings[key] = b
        return b

    def placed_poses(self, binding: PriorBinding) -> Array | None:
        """The stored poses' effector keys on a bound figure (:func:`animkit.ik.prior_poses.placed_keys`; built once
        per binding and kept), or None when the prior keeps no poses."""
        if self.poses is None:
            return None
        keys = self._placed.get(id(binding))
        if keys is None:
            keys = placed_keys(binding, self.poses)
            self._placed.clear()
            self._placed[id(binding)] = keys
        return keys

    def _marginal(self, rows: NDArray[np.intp]) -> _Marginal:
        key = tuple(int(r) for r in rows)
        mg = self._marginals.get(key)
        if mg is None:
            S = self.covariances[:, rows][:, :, rows]
            Lc = np.linalg.cholesky(S)
            eye = np.broadcast_to(np.eye(len(rows)), S.shape)
            U = np.swapaxes(np.linalg.solve(Lc, eye), 1, 2)  # L⁻ᵀ: U Uᵀ = L⁻ᵀ L⁻¹ = Σ⁻¹
            logdet = 2.0 * np.log(np.diagonal(Lc, axis1=1, axis2=2)).sum(axis=1)
            with np.errstate(divide="ignore"):
                logw = np.log(self.weights) - 0.5 * logdet - 0.5 * len(rows) * math.log(2.0 * math.pi)
            mg = _Marginal(self.means[:, rows], U, logw, U @ np.swapaxes(U, 1, 2))
            self._marginals[key] = mg
        return mg

    def feature_cost(self, x: ArrayLike, rows: ArrayLike | None = None) -> tuple[Array, Array]:
        """cost = −log p(x) (F,) and ∂cost/∂x (F, d) for features x (F, d) on ``rows`` of the full vector (all
        when None): the marginal mixture of those rows."""
        X = np.atleast_2d(np.asarray(x, dtype=float))
        r = np.arange(self.means.shape[1]) if rows is None else np.asarray(rows, dtype=np.intp)
        mg = self._marginal(r)
        diff = X[:, None, :] - mg.mean[None]  # (F, K, d)
        z = np.einsum("fki,kij->fkj", diff, mg.U)  # Uᵀ(x − μ)
        logp = mg.logw[None] - 0.5 * np.einsum("fkj,fkj->fk", z, z)
        top = logp.max(axis=1, keepdims=True)
        gamma = np.exp(logp - top)
        total = gamma.sum(axis=1, keepdims=True)
        gamma /= total
        cost = -(top[:, 0] + np.log(total[:, 0]))
        grad = np.einsum("fk,fkj,kij->fi", gamma, z, mg.U)  # Σ_k γ_k U_k U_kᵀ (x − μ_k)
        return cost, grad

    def marginal(self, binding: PriorBinding, centre: Array | None = None) -> tuple[Array, Array, Array]:
        """The mixture on a figure's present features: means (K, d), precisions Σ_k⁻¹ (K, d, d) and log weights
        log π_k − ½ log det Σ_k − d/2 log 2π (K,); with a ``centre`` (d,): one Gaussian, the component most
        probable there moved to it."""
        mg = self._centred(binding, centre)
        return mg.mean, mg.precision, mg.logw

    def _centred(self, binding: PriorBinding, centre: Array | None) -> _Marginal:
        mg = self._marginal(binding.rows)
        if centre is None:
            return mg
        z = np.einsum("ki,kij->kj", centre[None] - mg.mean, mg.U)
        k = int(np.argmax(mg.logw - 0.5 * np.einsum("kj,kj->k", z, z)))
        return _Marginal(np.asarray(centre, dtype=float)[None], mg.U[k:k + 1], mg.logw[k:k + 1],
                         mg.precision[k:k + 1])

    def residual(self, binding: PriorBinding, x: Array, centre: Array | None = None) -> tuple[Array, Array]:
        """The dominant component k's residual r = U_kᵀ(x − μ_k) and U_kᵀ (Gauss–Newton's prior rows); with a
        ``centre``, that of :meth:`marginal`'s one moved Gaussian."""
        mg = self._centred(binding, centre)
        diff = x[None] - mg.mean
        z = np.einsum("ki,kij->kj", diff, mg.U)
        k = int(np.argmax(mg.logw - 0.5 * np.einsum("kj,kj->k", z, z)))
        return z[k], mg.U[k].T

    def cost(self, figure: Figure, pose: ArrayLike) -> float:
        """−log p(x(θ)) of one pose (D,) of ``figure``."""
        b = self.bind(figure)
        W = figure.world_batch(np.asarray(pose, dtype=float)[None])
        return float(self.feature_cost(pose_features(b, W), b.rows)[0][0])

    def cost_and_gradient(self, figure: Figure, pose: ArrayLike) -> tuple[float, Array]:
        """−log p(x(θ)) and its gradient (D,) in the figure's DOFs: (∂x/∂θ)ᵀ ∂cost/∂x."""
        b = self.bind(figure)
        s = figure_state(figure, figure.check_pose(pose))
        x, J = feature_jacobian(b, s.R, s.p, s.r, s.a)
        c, g = self.feature_cost(x, b.rows)
        return float(c[0]), J.T @ g[0]

    def task(self, weight: float = 1.0, priority: int = 3) -> Prior:
        """This prior as an IK task (:class:`Prior`)."""
        return Prior(prior=self, weight=weight, priority=priority)

    # --- files ----------------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a .npz (float32 arrays, the bone names and the source text), atomically."""
        buf = io.BytesIO()
        extra: dict[str, Any] = {} if self.poses is None else {"poses": self.poses.astype(np.float32)}
        np.savez_compressed(buf, weights=self.weights, means=self.means.astype(np.float32),
                            covariances=self.covariances.astype(np.float32), bones=np.array(PRIOR_BONES),
                            source=np.array(self.source), **extra)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                f.write(buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> PosePrior:
        """Read a prior written by :meth:`save`; None: the default prior shipped in ``animkit/examples``."""
        if path is None:
            from importlib import resources

            ref = resources.files("animkit.examples").joinpath(DEFAULT_FILE)
            with resources.as_file(ref) as p:
                return cls.load(p)
        try:
            with np.load(os.fspath(path), allow_pickle=False) as z:
                bones = tuple(str(b) for b in z["bones"])
                if bones != PRIOR_BONES:
                    raise IKError(f"{os.fspath(path)}: expected the bones {PRIOR_BONES}, got {bones}")
                return cls(z["weights"].astype(float), z["means"].astype(float), z["covariances"].astype(float),
                           str(z["source"]), z["poses"].astype(float) if "poses" in z.files else None)
        except (OSError, KeyError, ValueError) as exc:
            raise IKError(f"{os.fspath(path)}: not a pose prior (.npz with weights, means, covariances, bones): "
                          f"{exc}") from None
        except AnimkitError:
            raise


DEFAULT_FILE = "pose_prior.npz"


def _kmeans_pp(X: Array, k: int, rng: np.random.Generator) -> Array:
    centres = [X[rng.integers(len(X))]]
    d2 = np.sum((X - centres[0]) ** 2, axis=1)
    for _ in range(1, k):
        i = rng.choice(len(X), p=d2 / d2.sum()) if d2.sum() > 0 else rng.integers(len(X))
        centres.append(X[i])
        d2 = np.minimum(d2, np.sum((X - X[i]) ** 2, axis=1))
    return np.array(centres)


def fit_mixture(X: ArrayLike, components: int, *, reg: float = 1e-3, iterations: int = 100, seed: int = 0,
                tol: float = 1e-6) -> tuple[Array, Array, Array]:
    """EM for a full-covariance Gaussian mixture (weights, means, covariances + reg·I), started from k-means++
    centres and hard assignments; stops when the mean log-likelihood gains less than ``tol``."""
    Xa = np.asarray(X, dtype=float)
    n, d = Xa.shape
    K = int(components)
    if K < 1 or n < K * 2:
        raise IKError(f"fit_mixture: need at least {2 * max(K, 1)} frames for {K} components, got {n}")
    rng = np.random.default_rng(seed)
    mu = _kmeans_pp(Xa, K, rng)
    lab = np.argmin(((Xa[:, None, :] - mu[None]) ** 2).sum(-1), axis=1)
    resp = np.eye(K)[lab]
    last = -math.inf
    eye = np.eye(d)
    w = np.full(K, 1.0 / K)
    cov = np.broadcast_to(eye, (K, d, d)).copy()
    for _ in range(iterations):
        nk = resp.sum(axis=0) + 1e-10
        w = nk / n
        mu = (resp.T @ Xa) / nk[:, None]
        for k in range(K):
            D = Xa - mu[k]
            cov[k] = (D * resp[:, k:k + 1]).T @ D / nk[k] + reg * eye
        L = np.linalg.cholesky(cov)
        logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        logp = np.empty((n, K))
        for k in range(K):
            z = np.linalg.solve(L[k], (Xa - mu[k]).T)
            logp[:, k] = np.log(w[k]) - 0.5 * (logdet[k] + np.sum(z * z, axis=0) + d * math.log(2 * math.pi))
        top = logp.max(axis=1, keepdims=True)
        ll = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
        resp = np.exp(logp - ll[:, None])
        mean_ll = float(ll.mean())
        if mean_ll - last < tol:
            break
        last = mean_ll
    return w, mu, cov


@dataclass(frozen=True, eq=False, kw_only=True)
class Prior(Task):
    """A pose prior as an IK task: e = U_kᵀ(x(θ) − μ_k), ∂e/∂θ = U_kᵀ ∂x/∂θ for the dominant mixture component k
    (½‖e‖² is the cost of that Gaussian up to its constant; Gauss–Newton on it is SMPLify's step on the prior)."""

    kind: ClassVar[str] = "prior"
    prior: PosePrior
    priority: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.prior, PosePrior):
            raise IKError(f"Prior: expected a PosePrior, got {type(self.prior).__name__}")

    def compute(self, c: Configuration) -> tuple[Array, Array]:
        b = self.prior.bind(c.figure)
        s = c.state
        x, J = feature_jacobian(b, s.R, s.p, s.r, s.a)
        z, Ut = self.prior.residual(b, x)
        return z, Ut @ J

    def gradient(self, c: Configuration) -> Array:
        """w ∇c(θ) = w (∂x/∂θ)ᵀ ∇_x c: the whole mixture's cost gradient (not only the dominant component's), the
        prioritised solver's posture pull."""
        b = self.prior.bind(c.figure)
        s = c.state
        x, J = feature_jacobian(b, s.R, s.p, s.r, s.a)
        _, g = self.prior.feature_cost(x, b.rows)
        return np.asarray(self.weight * (J.T @ g[0]), dtype=float)
