"""A whole pose from a few effectors: damped Gauss–Newton on the effectors' targets and a learned pose prior.

With the effector residuals e_i (positions; rotation vectors for 4×4 targets) scaled by σ_p = 1 mm per 1.7 m of
figure height (σ_o = 0.01 rad), and the prior's residual r = U_kᵀ(x(θ) − μ_k) of its dominant mixture component
(:class:`animkit.ik.prior.PosePrior`), each step solves

    (Jᵀ J + λ I) Δθ = −Jᵀ [e/σ ; r],   J = [∂e/∂θ / σ ; U_kᵀ ∂x/∂θ]

over the DOFs that move an effector or a prior bone (the root's DOFs held at ``root`` when it is given), then
clamps to the joint limits and projects into the rig's human ranges (cones); a step that leaves a range is solved
again on its edge's tangent plane (:func:`animkit.ik.stack.edge_step`'s active set). The effectors are met to about
σ/(prior pull); the pose between them is the most probable one the prior knows. The loop's frames, normal equations,
Cholesky solves and cone projection are compiled (:mod:`.effectors_jit`); with ANIMKIT_JIT=0 the NumPy rows run
(their oracle). See docs/prior.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit
from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.ik import effectors_jit as ej
from animkit.ik import prior_poses
from animkit.ik.cones_jit import cone_arrays
from animkit.ik.limb_reach import Limbs, out_of_limb_reach
from animkit.ik.lm_jit import cholesky
from animkit.ik.prior import PosePrior, PriorBinding, feature_jacobian
from animkit.ik.prior_poses import nearest_mean, query_key
from animkit.ik.problem import ChainModel, compile_chain
from animkit.ik.result import IKResult, Reason
from animkit.ik.stack import edge_constraints, solve_on_edges
from animkit.model.figure import Figure
from animkit.model.fk import forward
from animkit.model.transforms import cross3, rotation_error

__all__ = ["pose_from_effectors", "EFFECTOR_TOL"]

Array = NDArray[np.float64]
EFFECTOR_TOL = 0.01 / 1.7  # effectors are met within 1 cm of a 1.7 m figure (as a fraction of its height)
PRIOR_FIRST = 3  # LM iterations on the prior alone before the effectors join (a start near the prior's mode)
SETTLED = 1e-2  # a phase ends when a step lowers the cost by less than this fraction (and the effectors are met)
MET = 0.5  # ... and the effectors within this fraction of EFFECTOR_TOL
TRIES = 8  # damping increases (× 4) a step may try before a phase ends
MAX_STEP = 0.5  # radians: the largest turn of any joint in one step
SIGMA_P = 1e-3  # metres of a 1.7 m figure: the effectors' residual scale
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


def _place_root(model: ChainModel, pose: Array, root: Array, dofs: NDArray[np.intp]) -> Array:
    """Set the root joint's DOFs so the root node's world frame is ``root``: Gauss–Newton on its 6D error
    [p* − p ; log(R* Rᵀ)] on ``model``, the root's DOFs alone with the root node as its effector (a few links: each
    step's frames cost microseconds, not a whole body's); J = [a × (p − r) (revolute) or a ; a (revolute)]."""
    q = pose.copy()
    rev = model.revolute
    qc = q[dofs]
    for _ in range(30):
        fr = model.frames(qc[None])
        p, R, r, a = fr.p[0, 0], fr.R[0, 0], fr.r[0], fr.a[0]
        e = np.concatenate([root[:3, 3] - p, rotation_error(root[:3, :3], R)])
        if not float(e @ e) >= 1e-24:
            break
        J = np.vstack([np.where(rev[:, None], cross3(a, p - r), a).T, (a * rev[:, None]).T])
        step = np.linalg.solve(J, e) if J.shape[0] == J.shape[1] else np.linalg.lstsq(J, e, rcond=None)[0]
        qc = qc + step
    q[dofs] = qc
    return q


def _root_model(figure: Figure, b: PriorBinding, q: Array, dofs: NDArray[np.intp]) -> ChainModel:
    """The root's DOFs compiled once as a chain whose effector is the root node (kept on the binding)."""
    c = figure.compiled
    path, i = [], index_of_root(figure)
    while i >= 0:
        path.append(i)
        i = int(c.parent[i])
    folded = np.setdiff1d(np.flatnonzero(np.isin(np.asarray(c.dof_node), path)), dofs)
    key = ("root", tuple(int(d) for d in dofs), q[folded].tobytes())
    hit = b.chains.get(key)
    if hit is None:
        for k in [k for k in b.chains if k[0] == "root"]:
            del b.chains[k]
        hit = compile_chain(figure, q, dofs, [c.node_names[path[0]]])
        b.chains[key] = hit
    model: ChainModel = hit
    return model


@dataclass(frozen=True, eq=False)
class _Chain:
    """The movable set compiled once (a ChainModel whose effectors are every node it moves, ``live``), the other
    nodes' constant frames, and the arrays the compiled loop reads (:mod:`.effectors_jit`)."""

    model: ChainModel
    live: NDArray[np.intp]  # (E,) node index of each of the model's effectors
    R0: Array  # (N, 3, 3) node rotations at the start pose (constant outside ``live``)
    p0: Array  # (N, 3)
    cones: ej.Cones  # the cones' arrays (effectors_jit.project_cones)

    def frames(self, q: Array) -> tuple[Array, Array, Array, Array]:
        """World node rotations (N, 3, 3), origins (N, 3), DOF origins and axes (D, 3) of a full pose q."""
        model = self.model
        D = model.figure.compiled.dof_count
        r, a = np.zeros((D, 3)), np.zeros((D, 3))
        R, p = self.R0.copy(), self.p0.copy()
        if ej.chain_frames is not None and jit.enabled():
            n = model.n
            rc, ac = np.empty((n, 3)), np.empty((n, 3))
            ej.chain_frames(q[model.dofs], links_of(model), self.live, ej.State(R, p, rc, ac, np.empty((n, 4, 4))))
            r[model.dofs], a[model.dofs] = rc, ac
            return R, p, r, a
        fr = model.frames(q[model.dofs][None])
        R[self.live], p[self.live] = fr.R[0], fr.p[0]
        r[model.dofs], a[model.dofs] = fr.r[0], fr.a[0]
        return R, p, r, a


def links_of(model: ChainModel) -> ej.Links:
    """The model's link arrays as :func:`.effectors_jit.chain_frames` reads them."""
    return ej.Links(model.H0, model.H1, model.H2, model.H3, model.parent, model.revolute, model.axis, model.eff_link,
                    model.eff_C)


def _chain(figure: Figure, b: PriorBinding, q: Array, dofs: NDArray[np.intp]) -> _Chain:
    """The movable set ``dofs`` compiled once with the DOFs outside it at ``q``'s values (kept on the binding per
    movable set and folded values: one at a time, a new root or start pose replaces the old one)."""
    c = figure.compiled
    others = np.setdiff1d(np.arange(c.dof_count), dofs)
    key = ("body", tuple(int(d) for d in dofs), q[others].tobytes())
    hit = b.chains.get(key)
    if hit is None:
        live = np.flatnonzero(np.any(b.moves[:, dofs], axis=1))
        model = compile_chain(figure, q, dofs, [c.node_names[i] for i in live])
        R0, p0, _, _ = _state(figure, q)
        for k in [k for k in b.chains if k[0] != "root"]:
            del b.chains[k]
        b.chains[key] = hit = _Chain(model, live, R0, p0, cone_arrays(model.cones, model.axis))
    chain: _Chain = hit
    return chain


def index_of_root(figure: Figure) -> int:
    """Node index of the figure's root arc's child (the node ``root`` places)."""
    return figure.compiled.node_names.index(figure.root_arc.child.name)


def pose_from_effectors(figure: Figure, targets: Mapping[str, ArrayLike], root: ArrayLike | None = None,
                        prior: PosePrior | None = None, *, start: ArrayLike | None = None, max_iter: int = 50
                        ) -> IKResult:
    """The full pose that meets ``targets`` (rig effector name → position (3,) or pose (4×4)) and that the
    ``prior`` (None: the default prior, :meth:`PosePrior.load`) finds most probable; ``root`` (4×4) fixes the
    root's frame when known; with the root, the prior is centred on its nearest stored poses
    (:mod:`animkit.ik.prior_poses`). Starts from ``start`` (None: the rest pose, then a few steps on the prior
    alone). ``converged``: every effector within 1 cm of a 1.7 m figure (orientations within 0.02 rad)."""
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
    ch = _chain(figure, b, q, chain)
    centre = None
    if root is not None:
        q = _place_root(_root_model(figure, b, q, root_dofs), q, Rt, root_dofs)
        used[root_dofs] = False
        centre = _nearest_centre(figure, pr, b, q, targets)
    mov = np.flatnonzero(used)
    # DOFs of joints between the prior's bones (CMU's LHipJoint, Spine, Neck1; twist bones): the prior sees only
    # their sum with the bone's own joint, so they are held near rest (σ = 0.1 rad) and the bones' joints turn
    extra = np.zeros(c.dof_count, dtype=bool)
    bone_nodes = set(int(i) for i in b.node) | {b.hips}
    extra[c.dof_revolute & ~np.isin(np.asarray(c.dof_node), list(bone_nodes))] = True
    fast = ej.normal_equations is not None and jit.enabled()
    project = _cone_projector(ch, fast)
    st = _Setting(ch, b, pr, tg, extra, fast, project, centre)
    d = _descent(st, mov, Limbs.none(b, tg), [])

    project(q)
    wp, wo = 1.7 / (SIGMA_P * b.height), 100.0  # the effectors: σ = 1 mm of a 1.7 m figure, 0.01 rad
    first = PRIOR_FIRST if start is None else 0  # a given start replaces the prior's phase
    q1, q2, pos_err, ori_err = _two_phases(d, q, max_iter, (wp, wo), first)
    converged = pos_err <= EFFECTOR_TOL * b.height and ori_err <= 0.02
    if not converged and centre is not None:  # stalled from the nearest poses' centre (a knee held behind its
        st2 = replace(st, centre=None)  # range): the plain prior's pose instead where it meets the effectors better
        d2 = _descent(st2, mov, Limbs.none(b, tg), d.errors)
        again = _two_phases(d2, q, max_iter, (wp, wo), first)
        if again[2] < pos_err:
            st, d, (q1, q2, pos_err, ori_err) = st2, d2, again
            converged = pos_err <= EFFECTOR_TOL * b.height and ori_err <= 0.02
    q = q2
    # targets no pose meets (the root given: beyond the bones' length from it), which would drag the body after them
    far = out_of_limb_reach(figure, tg, q, from_root=True) if root is not None and not converged else \
        np.zeros(len(tg), dtype=bool)
    if far.any():
        q = _far_last(figure, st, d, q1, far, (wp, wo), max_iter)
        pos_err, ori_err = _misses(figure, tg, q)
    why: Reason = "converged" if converged else "unreachable" if far.any() else "max_iterations"
    return IKResult(q, converged, True if converged else False if why == "unreachable" else None, len(d.errors) - 1,
                    pos_err, ori_err, np.array(d.errors), why, "prior", 0, time.perf_counter() - t0)


@dataclass(frozen=True, eq=False)
class _Setting:
    """What every descent of one :func:`pose_from_effectors` call shares: the chain, the prior and its binding, the
    targets, the DOFs held near rest (``extra``, (D,)), whether kernels run and the cones' projection."""

    ch: _Chain
    b: PriorBinding
    pr: PosePrior
    tg: list[tuple[int, Array, Array | None]]
    extra: NDArray[np.bool_]
    fast: bool
    project: Callable[[Array], list[NDArray[np.intp]]]
    centre: Array | None  # the prior's Gaussian moved to the nearest stored poses' mean (present rows), or None


def _nearest_centre(figure: Figure, pr: PosePrior, b: PriorBinding, q: Array, targets: Mapping[str, ArrayLike]
                    ) -> Array | None:
    """The mean features of the prior's stored poses nearest the targets (in the hips' frame, the root placed at
    ``q``) and the root's features (:func:`animkit.ik.prior_poses.nearest_mean`), on the figure's present rows;
    None when the prior keeps no poses or no key effector is given."""
    keys = pr.placed_poses(b)
    if keys is None or prior_poses.NEIGHBOURS < 1:
        return None
    W = figure.world_batch(q[None])[0]
    Rh, ph = W[b.hips, :3, :3], W[b.hips, :3, 3]
    pos = {n: (np.asarray(t, dtype=float)[:3, 3] if np.shape(t) == (4, 4) else np.asarray(t, dtype=float))
           for n, t in targets.items()}
    key, given = query_key(b, Rh, ph, pos)
    if not given.any():
        return None
    u = (Rh @ b.Kh).T @ b.up
    rootf = np.array([u[0], u[2], float(ph @ b.up) / b.leg])
    assert pr.poses is not None
    return nearest_mean(pr.poses, keys, key, given, rootf, prior_poses.NEIGHBOURS)[b.rows]


def _two_phases(d: _Descent, q: Array, max_iter: int, w: tuple[float, float], first: int
                ) -> tuple[Array, Array, float, float]:
    """Phase 1, ``first`` steps on the prior alone (the most probable pose given the root) from ``q``; phase 2, the
    effectors and the prior together from there: phase 1's pose, phase 2's and its position and orientation errors."""
    q1, lam = (_descend(d, q, 1e-3, first, (0.0, 0.0))[:2]) if first else (q, 1e-3)
    q2, _, pos_err, ori_err = _descend(d, q1, lam, max_iter, w)
    return q1, q2, pos_err, ori_err


def _descent(st: _Setting, mov: NDArray[np.intp], limbs: Limbs, errors: list[float]) -> _Descent:
    """The descent over the DOFs ``mov`` (its evaluator, box, columns), the targets as ``limbs`` says."""
    fig_c = st.b.figure.compiled
    rest = st.b.figure.rest_pose()[mov]
    evaluator = _compiled_evaluator if st.fast else _numpy_evaluator
    evaluate = evaluator(st.ch, st.b, st.pr, st.tg, mov, np.flatnonzero(st.extra[mov]), rest, limbs, st.centre)
    lo, hi = fig_c.lower[mov], fig_c.upper[mov]
    column = np.full(fig_c.dof_count, -1, dtype=np.intp)
    column[mov] = np.arange(len(mov))
    return _Descent(evaluate, st.project, mov, lo, hi, bool(np.isfinite(lo).any() or np.isfinite(hi).any()),
                    np.asarray(fig_c.dof_revolute, dtype=bool)[mov], column, st.fast, float(st.b.height), errors)


def _far_last(figure: Figure, st: _Setting, d: _Descent, q: Array, far: NDArray[np.bool_], w: tuple[float, float],
              max_iter: int) -> Array:
    """Targets out of their limbs' reach (``far``) last, so that they never drag the body: the pose again from the
    prior's (``q``: phase 1's) without them (the other effectors and the prior; from phase 2's pose, bent after the far
    target, the descent stalls centimetres short), then each far limb alone (its own DOFs, the rest held) pointed at
    its target: sought at the limb's length along the line from the limb's root (:class:`Limbs`), which holds still."""
    dropped = Limbs.far(figure, st.b, st.tg, far, drop=True)
    q, lam, _, _ = _descend(_descent(st, d.mov, dropped, d.errors), q, 1e-3, max_iter, w)
    limbs = Limbs.far(figure, st.b, st.tg, far)
    own = d.mov[np.any(limbs.mask[far][:, d.mov], axis=0)]
    q, _, _, _ = _descend(_descent(st, own, limbs, d.errors), q, lam, max_iter, w)
    return q


def _misses(figure: Figure, tg: list[tuple[int, Array, Array | None]], q: Array) -> tuple[float, float]:
    """The largest position and orientation misses over every target at pose ``q`` (the far ones included)."""
    W = figure.world_batch(q[None])[0]
    pe = max(float(np.linalg.norm(tp - W[i, :3, 3])) for i, tp, _ in tg)
    oe = max((float(np.linalg.norm(rotation_error(tR, W[i, :3, :3]))) for i, _, tR in tg if tR is not None),
             default=0.0)
    return pe, oe


Evaluator = Callable[[Array, float, float], tuple[Array, Array, float, float, float]]


def _numpy_evaluator(ch: _Chain, b: PriorBinding, pr: PosePrior, tg: list[tuple[int, Array, Array | None]],
                     mov: NDArray[np.intp], extra_rows: NDArray[np.intp], rest: Array, limbs: Limbs,
                     centre: Array | None) -> Evaluator:
    """H = JᵀJ, g = Jᵀe, the cost ‖e‖² and the largest position and orientation misses at a pose q, with the
    effectors' rows weighted by wp = 1/σ_p and wo = 1/σ_o (0: the prior alone), from the stacked rows
    J = [∂e/∂θ w ; U_kᵀ ∂x/∂θ ; I/σ_x] in NumPy (the compiled evaluator's oracle)."""
    rev = np.asarray(b.revolute, dtype=bool)

    def evaluate(q: Array, wp: float, wo: float) -> tuple[Array, Array, float, float, float]:
        R, p, r, a = ch.frames(q)
        rows_J, rows_e = [], []
        pe = oe = 0.0
        for k, (node, tp, tR) in enumerate(tg):
            if limbs.base[k] == -2:
                continue
            full = limbs.base[k] < 0
            if not full:  # out of the limb's reach: sought at the limb's length along the line from its root
                d = tp - p[limbs.base[k]]
                tp = p[limbs.base[k]] + d * min(1.0, limbs.reach[k] / max(float(np.linalg.norm(d)), 1e-300))
            e = tp - p[node]
            if full:
                pe = max(pe, float(np.linalg.norm(e)))
            m = limbs.mask[k, mov]
            Jp = np.where(rev[mov, None], cross3(a[mov], p[node] - r[mov]), a[mov]) * m[:, None]
            rows_J.append(Jp.T * wp)
            rows_e.append(e * wp)
            if tR is not None:
                eo = rotation_error(tR, R[node])
                if full:
                    oe = max(oe, float(np.linalg.norm(eo)))
                rows_J.append((a[mov] * (m & rev[mov])[:, None]).T * wo)
                rows_e.append(eo * wo)
        x, Jx = feature_jacobian(b, R, p, r, a)
        z, Ut = pr.residual(b, x, centre)
        rows_J.append(Ut @ Jx[:, mov])
        rows_e.append(-z)
        if len(extra_rows):
            Je = np.zeros((len(extra_rows), len(mov)))
            Je[np.arange(len(extra_rows)), extra_rows] = 1.0 / SIGMA_EXTRA
            rows_J.append(Je)
            rows_e.append((rest[extra_rows] - q[mov][extra_rows]) / SIGMA_EXTRA)
        J, e = np.vstack(rows_J), np.concatenate(rows_e)
        return J.T @ J, J.T @ e, float(e @ e), pe, oe

    return evaluate


def _compiled_evaluator(ch: _Chain, b: PriorBinding, pr: PosePrior, tg: list[tuple[int, Array, Array | None]],
                        mov: NDArray[np.intp], extra_rows: NDArray[np.intp], rest: Array, limbs: Limbs,
                        centre: Array | None) -> Evaluator:
    """The same H, g, cost and misses from :func:`.effectors_jit.normal_equations` (frames by
    :func:`.effectors_jit.chain_frames`)."""
    assert ej.chain_frames is not None and ej.normal_equations is not None
    model = ch.model
    n, m = model.n, len(mov)
    link_of = {int(d): k for k, d in enumerate(model.dofs)}
    cols = np.array([link_of[int(d)] for d in mov], dtype=np.intp)
    tnode = np.array([i for i, _, _ in tg], dtype=np.intp)
    tmask = limbs.mask[:, model.dofs]
    tp = np.array([t for _, t, _ in tg], dtype=float).reshape(-1, 3)
    tR = np.array([np.eye(3) if R is None else R for _, _, R in tg], dtype=float).reshape(-1, 3, 3)
    has_R = np.array([R is not None for _, _, R in tg], dtype=bool)
    rev = np.asarray(b.revolute, dtype=bool)[model.dofs]
    mb = b.moves[b.node][:, model.dofs] & ~b.moves[b.parent][:, model.dofs] & rev[None]
    hmask = b.moves[b.hips][model.dofs]
    means, P, logw = pr.marginal(b, centre)
    xcol = extra_rows.astype(np.intp)
    xrest = rest[extra_rows].astype(float)
    st = ej.State(ch.R0.copy(), ch.p0.copy(), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 4, 4)))
    links = links_of(model)
    tgt = ej.Targets(tmask, tnode, tp, tR, has_R, limbs.base, limbs.reach)
    bones = ej.Bones(b.node, b.parent, b.K, b.Kp, mb, int(b.hips), hmask, b.Kh, b.up, float(b.leg))
    mix = ej.Mixture(means, P, logw)
    held = ej.Held(xcol, xrest, 1.0 / SIGMA_EXTRA)
    x, Jx = np.empty(len(b.rows)), np.empty((len(b.rows), m))

    def evaluate(q: Array, wp: float, wo: float) -> tuple[Array, Array, float, float, float]:
        qc = q[model.dofs]
        ej.chain_frames(qc, links, ch.live, st)
        H, g = np.empty((m, m)), np.empty(m)
        cost, pe, oe = ej.normal_equations(qc, cols, rev, st, tgt, (wp, wo), bones, mix, held, ej.Work(H, g, x, Jx))
        return H, g, cost, pe, oe

    return evaluate


def _cone_projector(ch: _Chain, fast: bool) -> Callable[[Array], list[NDArray[np.intp]]]:
    """A function that moves a full pose's coned ball joints (the rig's human ranges) into their cones, in place,
    and returns the pose indices (3,) of each joint it moved."""
    model = ch.model
    dofs3 = [model.dofs[list(cl.links)] for cl in model.cones]
    if not model.cones:
        return lambda q: []
    if fast and ej.project_cones is not None:
        arrays = ch.cones
        hit = np.zeros(len(dofs3), dtype=np.bool_)

        def project(q: Array) -> list[NDArray[np.intp]]:
            qc = q[model.dofs]
            if not ej.project_cones(qc, arrays, 1e-12, hit):
                return []
            q[model.dofs] = qc
            return [d for d, h in zip(dofs3, hit, strict=True) if h]
        return project

    def project_numpy(q: Array) -> list[NDArray[np.intp]]:
        before = q.copy()
        q[model.dofs] = model.project_cones(q[model.dofs][None])[0]
        return [d for d in dofs3 if np.any(q[d] != before[d])]
    return project_numpy


class _Factor:
    """A symmetric positive definite A factored once (Cholesky; compiled when kernels run) for several solves."""

    def __init__(self, A: Array, fast: bool) -> None:
        self.fast = fast
        if fast:
            self.L = A.copy()
            self.ok = bool(cholesky(self.L))
        else:
            try:
                self.L = np.asarray(np.linalg.cholesky(A), dtype=float)
                self.ok = True
            except np.linalg.LinAlgError:
                self.ok = False

    def solve(self, B: Array) -> Array:
        """A⁻¹ B for B (n,) or (n, k)."""
        B2 = np.ascontiguousarray(B.reshape(len(B), -1))
        if self.fast:
            assert ej.cholesky_solve is not None
            X = np.empty_like(B2)
            ej.cholesky_solve(self.L, B2, X)
        else:
            X = np.linalg.solve(self.L.T, np.linalg.solve(self.L, B2))
        return X.reshape(B.shape)


class _Solves:
    """B ↦ A⁻¹B for one step's rounds on the ranges' edges: A⁻¹g once, and of the constraints' columns N (which only
    grow, round by round) only the new ones (the earlier rounds' are kept)."""

    def __init__(self, F: _Factor, g: Array) -> None:
        self.F, self.g = F, g
        self.Ag = F.solve(g)
        self.AN = np.zeros((len(g), 0))

    def __call__(self, B: Array) -> Array:
        if B is self.g:
            return self.Ag
        k = self.AN.shape[1]
        if B.ndim == 2 and B.shape[1] > k:
            self.AN = np.hstack([self.AN, self.F.solve(np.ascontiguousarray(B[:, k:]))])
            return self.AN
        return self.F.solve(B)


@dataclass(frozen=True, eq=False)
class _Descent:
    """What :func:`_descend` reads: the evaluator, the cones' projection, the moving DOFs (``mov``) with their box
    and revolute flags, each DOF's column, whether kernels run, the figure's height; ``errors`` collects the
    position error of each accepted pose."""

    evaluate: Evaluator
    project: Callable[[Array], list[NDArray[np.intp]]]
    mov: NDArray[np.intp]
    lo: Array
    hi: Array
    boxed: bool
    rev_mov: NDArray[np.bool_]
    column: NDArray[np.intp]
    fast: bool
    height: float
    errors: list[float]


def _step_on_edges(d: _Descent, F: _Factor, g: Array, q: Array) -> Array | None:
    """The pose after one damped step (≤ MAX_STEP a joint, clamped to the box, projected into the cones); a step
    that leaves a range is solved again on its edge's tangent (up to three times); None: no solution."""
    N, beta = np.zeros((len(d.mov), 0)), np.zeros(0)
    held: set[int] = set()
    q_new = q
    solve = _Solves(F, g)
    for active in range(4):
        sol = solve_on_edges(solve, g, N, beta)
        if sol is None:
            return None
        big = float(np.abs(sol[d.rev_mov]).max()) if d.rev_mov.any() else 0.0
        step = sol * (MAX_STEP / big) if big > MAX_STEP else sol  # a trust region: ≤ MAX_STEP a joint
        q_new = q.copy()
        q_new[d.mov] = np.clip(q[d.mov] + step, d.lo, d.hi) if d.boxed else q[d.mov] + step
        outside = q_new.copy()
        moved = d.project(q_new)
        if not moved or active == 3:
            break
        fresh = [d3 for d3 in moved if int(d3[0]) not in held]  # a joint's first edge only: a thin range's edge
        if not fresh:  # curves away from its tangent (the knee), and a second plane would pin it to a corner
            break
        held.update(int(d3[0]) for d3 in fresh)
        Nk, bk = edge_constraints(q, q_new, outside, fresh, d.column)
        N, beta = np.hstack([N, Nk]), np.concatenate([beta, bk])
    return q_new


def _descend(d: _Descent, q: Array, lam: float, iterations: int, w: tuple[float, float]
             ) -> tuple[Array, float, float, float]:
    """Levenberg–Marquardt with the effectors' rows weighted w = (1/σ_p, 1/σ_o): a step is kept only when it lowers
    the cost; returns q, λ and the position and orientation errors."""
    wp, wo = w
    H, g, cost, pos_err, ori_err = d.evaluate(q, wp, wo)
    d.errors.append(pos_err)
    for _ in range(iterations):
        improved = False
        dH = np.diagonal(H).copy()
        for _ in range(TRIES):
            A = H.copy()
            A.flat[:: len(dH) + 1] += lam * (1.0 + dH)  # the diagonal
            F = _Factor(A, d.fast)
            if not F.ok:
                lam *= 4.0
                continue
            q_try = _step_on_edges(d, F, g, q)
            if q_try is None:
                lam *= 4.0
                continue
            q_new = q_try
            H_new, g_new, c_new, pe, oe = d.evaluate(q_new, wp, wo)
            if c_new < cost:
                improved = True
                lam = max(lam / 3.0, 1e-7)
                break
            lam *= 4.0
        if not improved:
            break
        gain = cost - c_new
        q, H, g, cost, pos_err, ori_err = q_new, H_new, g_new, c_new, pe, oe
        d.errors.append(pos_err)
        if gain <= SETTLED * cost and (wp == 0.0 or (pos_err <= MET * EFFECTOR_TOL * d.height and ori_err <= 0.02)):
            break
    return q, lam, pos_err, ori_err
