"""A whole pose from a few effectors: damped Gauss–Newton on the effectors' targets and a learned pose prior.

With the effector residuals e_i (positions; rotation vectors for 4×4 targets) scaled by σ_p = 1 mm per 1.7 m of
figure height (σ_o = 0.01 rad), and the prior's residual r = U_kᵀ(x(θ) − μ_k) of its dominant mixture component
(:class:`animkit.ik.prior.PosePrior`), each step solves

    (Jᵀ J + λ I) Δθ = −Jᵀ [e/σ ; r],   J = [∂e/∂θ / σ ; U_kᵀ ∂x/∂θ]

over the DOFs that move an effector or a prior bone (the root's DOFs held at ``root`` when it is given), then
clamps to the joint limits. The effectors are met to about σ/(prior pull); the pose between them is the most
probable one the prior knows. See docs/prior.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import AnimkitError, IKError, unknown_name
from ..figure import Figure
from ..fk import forward
from ..transforms import cross3, rotation_error
from .prior import PosePrior, PriorBinding, feature_jacobian
from .problem import compile_chain
from .result import IKResult

__all__ = ["pose_from_effectors", "EFFECTOR_TOL"]

Array = NDArray[np.float64]
EFFECTOR_TOL = 0.01 / 1.7  # effectors are met within 1 cm of a 1.7 m figure (as a fraction of its height)
PRIOR_FIRST = 8  # LM iterations on the prior alone before the effectors join (a start near the prior's mode)
MAX_STEP = 0.25  # radians: the largest turn of any joint in one step
SIGMA_EXTRA = 0.1  # radians: how far a joint between the prior's bones may turn for free (its residual's scale)
_DEFAULT: list[PosePrior] = []


def _default_prior() -> PosePrior:
    if not _DEFAULT:
        _DEFAULT.append(PosePrior.load())
    return _DEFAULT[0]


def _state(figure: Figure, pose: Array) -> tuple[Array, Array, Array, Array]:
    """World node rotations (N, 3, 3), origins (N, 3), DOF origins and axes (D, 3) of one pose."""
    c = figure.compiled
    M, r, a = forward(c, pose[None], with_dof_frames=True)
    assert r is not None and a is not None
    W = M[c.row, :, :, 0]
    return W[:, :, :3], W[:, :, 3], r[:, :, 0], a[:, :, 0]


def _targets(figure: Figure, targets: Mapping[str, ArrayLike]) -> list[tuple[int, Array, Array | None]]:
    effs = figure.rig.effectors
    index = {n: i for i, n in enumerate(figure.compiled.node_names)}
    out = []
    if not isinstance(targets, Mapping) or not targets:
        raise IKError("pose_from_effectors: targets must be a non-empty mapping of effector name to a 3-vector or "
                      "a 4x4 pose")
    for name, t in targets.items():
        if name not in effs:
            raise IKError(unknown_name("effector", str(name), list(effs)))
        arr = np.asarray(t, dtype=float)
        if arr.shape == (3,):
            tp, tR = arr, None
        elif arr.shape == (4, 4):
            tp, tR = arr[:3, 3], arr[:3, :3]
        else:
            raise IKError(f"pose_from_effectors: target {name!r} must be a 3-vector or a 4x4 pose, got shape "
                          f"{arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise IKError(f"pose_from_effectors: target {name!r} is not finite")
        out.append((index[effs[name]], tp, tR))
    return out


def _place_root(frames: Callable[[Array], tuple[Array, Array, Array, Array]], node: int, pose: Array, root: Array,
                dofs: NDArray[np.intp], revolute: NDArray[np.bool_]) -> Array:
    """Set the root joint's DOFs so the root node's world frame is ``root`` (Gauss–Newton on its 6D error)."""
    q = pose.copy()
    rev = revolute[dofs]
    for _ in range(30):
        R, p, r, a = frames(q)
        e = np.concatenate([root[:3, 3] - p[node], rotation_error(root[:3, :3], R[node])])
        if np.linalg.norm(e) < 1e-12:
            break
        Jp = np.where(rev[:, None], cross3(a[dofs], p[node] - r[dofs]), a[dofs]).T
        Jo = (a[dofs] * rev[:, None]).T
        J = np.vstack([Jp, Jo])
        q[dofs] += np.linalg.lstsq(J, e, rcond=None)[0]
    return q


def _chain(figure: Figure, b: PriorBinding, q: Array, dofs: NDArray[np.intp]
           ) -> Callable[[Array], tuple[Array, Array, Array, Array]]:
    """The frames of the figure's nodes as a function of a pose whose DOFs outside ``dofs`` are those of ``q``: the
    movable set compiled once (ChainModel; kept on the binding per movable set and folded values), its nodes'
    frames per call in one pass, the other nodes' frames constant."""
    c = figure.compiled
    others = np.setdiff1d(np.arange(c.dof_count), dofs)
    key = (tuple(int(d) for d in dofs), q[others].tobytes())
    hit = b.chains.get(key)
    if hit is None:
        live = np.flatnonzero(np.any(b.moves[:, dofs], axis=1))
        model = compile_chain(figure, q, dofs, [c.node_names[i] for i in live])
        R0, p0, _, _ = _state(figure, q)
        b.chains.clear()  # one movable set at a time: a new root or start pose replaces the old one
        b.chains[key] = hit = (model, live, R0, p0)
    model, live, R0, p0 = hit
    D = c.dof_count

    def frames(q: Array) -> tuple[Array, Array, Array, Array]:
        fr = model.frames(q[model.dofs][None])
        R, p = R0.copy(), p0.copy()
        R[live], p[live] = fr.R[0], fr.p[0]
        r, a = np.zeros((D, 3)), np.zeros((D, 3))
        r[model.dofs], a[model.dofs] = fr.r[0], fr.a[0]
        return R, p, r, a

    return frames


def index_of_root(figure: Figure) -> int:
    """Node index of the figure's root arc's child (the node ``root`` places)."""
    return figure.compiled.node_names.index(figure.root_arc.child.name)


def pose_from_effectors(figure: Figure, targets: Mapping[str, ArrayLike], root: ArrayLike | None = None,
                        prior: PosePrior | None = None, *, start: ArrayLike | None = None, max_iter: int = 50
                        ) -> IKResult:
    """The full pose that meets ``targets`` (rig effector name → position (3,) or pose (4×4)) and that the
    ``prior`` (None: the default prior, :meth:`PosePrior.load`) finds most probable; ``root`` (4×4) fixes the
    root's frame when known. Starts from ``start`` (None: the rest pose). ``converged``: every effector within
    1 cm of a 1.7 m figure (orientations within 0.02 rad)."""
    t0 = time.perf_counter()
    pr = _default_prior() if prior is None else prior
    if not isinstance(pr, PosePrior):
        raise IKError(f"pose_from_effectors: prior must be a PosePrior, got {type(pr).__name__}")
    tg = _targets(figure, targets)
    b = pr.bind(figure)
    c = figure.compiled
    try:
        q = figure.rest_pose() if start is None else figure.check_pose(start).astype(float).copy()
    except AnimkitError as exc:
        raise IKError(str(exc)) from None
    root_dofs = np.asarray(figure.joint_dofs[figure.root_arc.joint.name], dtype=np.intp)
    root_dofs = root_dofs[~np.asarray(c.dof_scale, dtype=bool)[root_dofs]]  # scale DOFs never move
    used = np.any(b.moves[[i for i, _, _ in tg] + list(b.node)], axis=0) & ~np.asarray(c.dof_scale, dtype=bool)
    if root is not None:
        Rt = np.asarray(root, dtype=float)
        if Rt.shape != (4, 4) or not np.all(np.isfinite(Rt)):
            raise IKError(f"pose_from_effectors: root must be a finite 4x4 pose, got shape {Rt.shape}")
    chain = np.flatnonzero(used | np.isin(np.arange(c.dof_count), root_dofs))
    frames = _chain(figure, b, q, chain)
    if root is not None:
        q = _place_root(frames, index_of_root(figure), q, Rt, root_dofs, c.dof_revolute)
        used[root_dofs] = False
    mov = np.flatnonzero(used)
    # DOFs of joints between the prior's bones (CMU's LHipJoint, Spine, Neck1; twist bones): the prior sees only
    # their sum with the bone's own joint, so they are held near rest (σ = 0.1 rad) and the bones' joints turn
    extra = np.zeros(c.dof_count, dtype=bool)
    bone_nodes = set(int(i) for i in b.node) | {b.hips}
    extra[c.dof_revolute & ~np.isin(np.asarray(c.dof_node), list(bone_nodes))] = True
    extra_rows = np.flatnonzero(extra[mov])
    rest = figure.rest_pose()[mov]
    lo, hi = c.lower[mov], c.upper[mov]
    sp = so = math.inf  # phase 1: the prior alone (the most probable pose given the root), from rest
    rev = c.dof_revolute
    errors: list[float] = []

    def evaluate(q: Array) -> tuple[Array, Array, float, float]:
        R, p, r, a = frames(q)
        rows_J, rows_e = [], []
        pe = oe = 0.0
        for node, tp, tR in tg:
            e = tp - p[node]
            pe = max(pe, float(np.linalg.norm(e)))
            m = b.moves[node, mov]
            Jp = np.where(rev[mov, None], cross3(a[mov], p[node] - r[mov]), a[mov]) * m[:, None]
            rows_J.append(Jp.T / sp)
            rows_e.append(e / sp)
            if tR is not None:
                eo = rotation_error(tR, R[node])
                oe = max(oe, float(np.linalg.norm(eo)))
                rows_J.append((a[mov] * (m & rev[mov])[:, None]).T / so)
                rows_e.append(eo / so)
        x, Jx = feature_jacobian(b, R, p, r, a)
        z, Ut = pr.residual(b, x)
        rows_J.append(Ut @ Jx[:, mov])
        rows_e.append(-z)
        if len(extra_rows):
            Je = np.zeros((len(extra_rows), len(mov)))
            Je[np.arange(len(extra_rows)), extra_rows] = 1.0 / SIGMA_EXTRA
            rows_J.append(Je)
            rows_e.append((rest[extra_rows] - q[mov][extra_rows]) / SIGMA_EXTRA)
        return np.vstack(rows_J), np.concatenate(rows_e), pe, oe

    def descend(q: Array, lam: float, iterations: int) -> tuple[Array, float, float, float]:
        """Levenberg–Marquardt: a step is kept only when it lowers the cost; returns q, λ and the errors."""
        J, e, pos_err, ori_err = evaluate(q)
        cost = float(e @ e)
        errors.append(pos_err)
        for _ in range(iterations):
            g = J.T @ e
            H = J.T @ J
            diag = np.diag_indices_from(H)
            improved = False
            for _ in range(8):
                Hl = H.copy()
                Hl[diag] += lam * (1.0 + H[diag])
                q_new = q.copy()
                dq = np.linalg.solve(Hl, g)
                big = float(np.max(np.abs(dq[rev[mov]]), initial=0.0))
                if big > MAX_STEP:  # a trust region: no joint turns more than MAX_STEP in one step
                    dq *= MAX_STEP / big
                q_new[mov] = np.clip(q[mov] + dq, lo, hi)
                J_new, e_new, pe, oe = evaluate(q_new)
                c_new = float(e_new @ e_new)
                if c_new < cost:
                    improved = True
                    lam = max(lam / 3.0, 1e-7)
                    break
                lam *= 4.0
            if not improved:
                break
            gain = cost - c_new
            q, J, e, cost, pos_err, ori_err = q_new, J_new, e_new, c_new, pe, oe
            errors.append(pos_err)
            if gain <= 1e-4 * cost and pos_err <= EFFECTOR_TOL * b.height and ori_err <= 0.02:
                break
        return q, lam, pos_err, ori_err

    q, lam, _, _ = descend(q, 1e-3, PRIOR_FIRST)
    sp, so = 1e-3 * b.height / 1.7, 0.01  # phase 2: the effectors (1 mm, 0.01 rad) and the prior together
    q, lam, pos_err, ori_err = descend(q, lam, max_iter)
    converged = pos_err <= EFFECTOR_TOL * b.height and ori_err <= 0.02
    return IKResult(q, converged, True if converged else None, len(errors) - 1, pos_err, ori_err, np.array(errors),
                    "converged" if converged else "max_iterations", "prior", 0, time.perf_counter() - t0)
