"""FABRIK: forward-and-backward reaching IK (Aristidou & Lasenby 2011) with the model constraints of Aristidou,
Chrysanthou & Lasenby 2016 (hinges, cones, joint limits inside the passes), on a tree of joints.

The points are the origins p_g of the *groups* (the nodes that carry movable DOFs, all revolute) and the
effectors. A child c of group g (the next group's origin or an effector) sits at p_c = p_g + R_g o_c with a
constant offset o_c, so d_c = |p_c − p_g| is constant; for a single-DOF group (a hinge, axis a) so are its axial
part h_c = (p_c − p_g)·a and its radius ρ_c = |(p_c − p_g)⊥a|. One iteration:

    backward (children first; an effector's point is its target, b_e = t_e)
        ball:   b_g = mean_c [ b_c − d_c ŵ_c ],                 w_c = b_c − p_g,  ŵ = w/|w|
        hinge:  b_g = mean_c [ b_c − h_c a − ρ_c ŵ⊥_c ],         w⊥ = w − a (a·w)   (a: the axis in its current frame)
        cone:   ŵ_c ← t_w cos σ + n̂ sin σ  when ∠(ŵ_c, t_w) > σ  (n̂: ŵ's part ⊥ t_w; t_w the cone's axis in the
                joint's current frame; for the child bone that defines the cone)
        limits: ŵ_c ← (R(θ′) o_c)^  at a universal joint (neither a hinge nor a whole ball) where θ′, its values turned
                toward b_c by the forward pass's clamped sweeps in its parent's current frame, end on a limit: the
                constrained pass with the joint's reachable directions in the cone's place (a wrist at its limit
                otherwise sends the backward points where the hand cannot point, and the passes fight the limit);
                the paper's iteration only (the subtree fit, and ``FABRIK(published=False)``, keep these limits to
                their forward pass)
    forward (parents first, on angles; every ancestor already placed; the base stays)
        the group turns its subtree (every point below it, carried rigidly: u_i = x_i − p_g) toward the backward
        points (v_i = b_i − p_g):
        hinge:  φ = atan2(Σ_i a·(u⊥_i × v⊥_i), Σ_i u⊥_i·v⊥_i),  θ ← clamp(θ + φ) into [lower, upper],
                x_i ← p_g + R_a(θ_new − θ_old) u_i                    (Rodrigues)
                (one point: v's projection onto the hinge's circle ⊥ a, stopped at the limit)
        ball:   ΔR = argmax_R Σ_i v̂_iᵀ R u_i |u_i| (Kabsch; the shortest turn u → v for one point), then
                A′ = Jᵀ ΔR J A in the joint's Euler angles (J: its frame before the turn), clamped to its box or
                projected into its cone (swing–twist, :class:`animkit.model.joints.Cone`);
        other:  (a universal joint, part of a ball) each DOF in turn, SWEEPS times, by the hinge's φ, clamped.

On a tree (both hands on a shared spine, or branches at several levels) the backward pass reaches each sub-base
from all its branches and takes the centroid (the paper's multi-end-effector rule, at every level), and the forward
pass turns each group toward all the points below it at once. The forward pass works on angles, so every limit
(hinge interval, Euler box, cone) holds inside the pass and the points it places are the mapped pose's FK
(:func:`fabrik_iteration` returns both). A constrained iteration that moves the effectors away from their targets
is halved (up to four times, then dropped), so the distance never grows; where nothing is left on a tree with
sub-bases, the branches turn alone with the sub-bases held (one target out of reach: the shared joints' compromise
stays, the reachable effectors still reach).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.errors import IKError
from animkit.ik import fabrik_jit as fj
from animkit.ik import fabrik_loop_jit as fl
from animkit.ik.problem import ChainModel, Frames
from animkit.ik.solvers import LoopOutput, Options
from animkit.model.joints import Joint
from animkit.model.transforms import matrix_aligning

__all__ = ["fabrik_step", "fabrik_iteration", "FabrikIteration", "check_fabrik", "clamp_angle", "compiled_chain",
           "solve_compiled", "fabrik_params", "solve_packed", "best_turn"]

Array = NDArray[np.float64]
BACKTRACK = 4  # halvings of a step that moved the effectors away
SLOW = 0.8  # a published iteration lowering the distance by less than this part of it is set against the subtree fit
SWEEPS = 4  # per-DOF turns of a multi-DOF group in the forward pass: a ball's three axes align its child in turns
EXTEND = 4  # doublings of a slow step while each lowers the distance (the tail converges linearly, 0.75–0.9 a step)


def check_fabrik(model: ChainModel, orientation: bool) -> None:
    """FABRIK moves points: revolute DOFs and position targets only."""
    if not model.revolute.all():
        raise IKError("FABRIK needs revolute DOFs only (segment lengths must stay constant); this movable set has "
                      f"prismatic DOFs at {[model.link_node[k] for k in np.flatnonzero(~model.revolute)]}")
    if orientation:
        raise IKError("FABRIK reaches positions; for a 4x4 (6D) target use LM, DLS or the pseudoinverse")


@dataclass(frozen=True)
class _Tree:
    """The chain's groups (links of one node, parent first), their parent group and children, compiled once."""

    groups: tuple[tuple[int, ...], ...]
    gparent: tuple[int, ...]
    child_groups: tuple[tuple[int, ...], ...]
    child_effs: tuple[tuple[int, ...], ...]
    hinge: tuple[bool, ...]
    ball: tuple[Joint | None, ...]  # the ball joint a group turns whole (its three DOFs, in order), else None
    sub_groups: tuple[tuple[int, ...], ...]  # every group below
    sub_effs: tuple[tuple[int, ...], ...]  # every effector below


def chain_tree(model: ChainModel) -> _Tree:
    memo = model.memo.get("fabrik_tree")
    if isinstance(memo, _Tree):
        return memo
    group_of: dict[int, int] = {}
    groups: list[list[int]] = []
    gparent: list[int] = []
    for k in range(model.n):
        p = int(model.parent[k])
        if p >= 0 and model.link_node[p] == model.link_node[k]:
            group_of[k] = group_of[p]
            groups[group_of[k]].append(k)
        else:
            group_of[k] = len(groups)
            groups.append([k])
            gparent.append(-1 if p < 0 else group_of[p])
    cg: list[list[int]] = [[] for _ in groups]
    for g, pg in enumerate(gparent):
        if pg >= 0:
            cg[pg].append(g)
    ce: list[list[int]] = [[] for _ in groups]
    for j, k in enumerate(model.eff_link):
        ce[group_of[int(k)]].append(j)
    balls: list[Joint | None] = []
    for links in groups:
        arc = model.figure.node(model.link_node[links[0]]).parent_arc
        joint = None if arc is None else arc.joint
        whole = joint is not None and joint.kind == "ball" and joint.order is not None and \
            [int(model.dofs[k]) for k in links] == [model.figure.dof_index(d.name) for d in joint.dofs]
        balls.append(joint if whole else None)
    sg: list[list[int]] = [[] for _ in groups]
    se: list[list[int]] = [[] for _ in groups]
    for h in range(len(groups)):
        g = gparent[h]
        while g >= 0:
            sg[g].append(h)
            g = gparent[g]
    for j, k in enumerate(model.eff_link):
        g = group_of[int(k)]
        while g >= 0:
            se[g].append(j)
            g = gparent[g]
    t = _Tree(tuple(map(tuple, groups)), tuple(gparent), tuple(map(tuple, cg)), tuple(map(tuple, ce)),
              tuple(len(g) == 1 for g in groups), tuple(balls), tuple(map(tuple, sg)), tuple(map(tuple, se)))
    model.memo["fabrik_tree"] = t
    return t


def clamp_angle(theta: Array, lower: float, upper: float) -> Array:
    """θ if it lies in [lower, upper]; else θ ± 2π if that does (the same rotation); else the limit nearest to θ
    on the circle (a hinge stopped by its limit stops at the near side)."""
    if lower <= -math.pi and upper >= math.pi or not (math.isfinite(lower) and math.isfinite(upper)):
        return np.clip(theta, lower, upper)
    out = np.clip(theta, lower, upper)
    for shift in (-2 * math.pi, 2 * math.pi):
        alt = theta + shift
        out = np.where((alt >= lower) & (alt <= upper) & ((theta < lower) | (theta > upper)), alt, out)
    inside = (out >= lower) & (out <= upper) & (np.abs(out - theta) % (2 * math.pi) < 1e-12)
    wrap = lambda x: np.abs((x + math.pi) % (2 * math.pi) - math.pi)  # noqa: E731
    near = np.where(wrap(theta - lower) <= wrap(theta - upper), lower, upper)
    return np.where(inside, out, near)


def _unit(v: Array, fallback: Array) -> Array:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = n > 1e-12
    return np.where(ok, v / np.where(ok, n, 1.0), fallback)


def _rotate(a: Array, phi: Array, u: Array) -> Array:
    """R_a(φ) u (Rodrigues): u cos φ + (a × u) sin φ + a (a·u)(1 − cos φ); a unit (b, 3), φ (b,), u (b, K, 3)."""
    c, s = np.cos(phi)[:, None, None], np.sin(phi)[:, None, None]
    A = a[:, None, :]
    return u * c + np.cross(A, u) * s + A * np.sum(A * u, 2, keepdims=True) * (1.0 - c)


def _local(model: ChainModel, theta: Array, k: int) -> Array:
    """C_k E_k(θ) of one revolute link for values θ (b,): H0 + sin θ H1 + (1 − cos θ) H2."""
    return model.H0[k] + np.sin(theta)[:, None, None] * model.H1[k] + (1.0 - np.cos(theta))[:, None, None] * model.H2[k]


def best_turn(u: Array, v: Array) -> Array:
    """ΔR (b, 3, 3) turning the points' directions u_i onto v_i (b, K, 3): the shortest turn for one point; for
    several the orthogonal Procrustes (Kabsch) rotation maximising Σ_i v̂_iᵀ ΔR u_i |u_i| + ε tr ΔR (ε small: among
    equal fits, the least turn)."""
    if u.shape[1] == 1:
        return matrix_aligning(u[:, 0], v[:, 0])
    nu = np.linalg.norm(u, axis=2, keepdims=True)
    vn = v / np.maximum(np.linalg.norm(v, axis=2, keepdims=True), 1e-300) * nu
    H = np.einsum("bki,bkj->bij", u, vn) + 1e-9 * np.sum(nu * nu, axis=1)[:, :, None] * np.eye(3)
    U, _, Vt = np.linalg.svd(H)
    V, Ut = np.swapaxes(Vt, 1, 2), np.swapaxes(U, 1, 2)
    D = np.broadcast_to(np.eye(3), H.shape).copy()
    D[:, 2, 2] = np.sign(np.linalg.det(V @ Ut))
    return V @ D @ Ut


def _ls_turn(a: Array, u: Array, v: Array) -> Array:
    """φ* = atan2(Σ_i a·(u⊥_i × v⊥_i), Σ_i u⊥_i·v⊥_i): the turn about a (b, 3) carrying the points u (b, K, 3) nearest
    the v's (least squares); 0 where the points lie (nearly) on the axis (their turn would be noise)."""
    scale = np.sum(np.linalg.norm(u, axis=2) * np.linalg.norm(v, axis=2), axis=1)
    A = a[:, None, :]
    u = u - A * np.sum(u * A, 2, keepdims=True)
    v = v - A * np.sum(v * A, 2, keepdims=True)
    num = np.einsum("bi,bi->b", a, np.cross(u, v).sum(axis=1))
    den = np.einsum("bki,bki->b", u, v)
    return np.where(np.hypot(num, den) > 1e-12 * scale, np.arctan2(num, den), 0.0)


def _place(model: ChainModel, links: tuple[int, ...], T_in: Array, x_loc: Array, qg: Array
           ) -> tuple[list[Array], Array]:
    """Frames of a group's links (b, 4, 4) for its values qg (b, m) hung from T_in, and the points x_loc (b, K, 3),
    given in its last link's frame, carried along (world)."""
    Ts = []
    Tk = T_in
    for i, k in enumerate(links):
        Tk = Tk @ _local(model, qg[:, i], k)
        Ts.append(Tk)
    return Ts, np.einsum("bij,bkj->bki", Ts[-1][:, :3, :3], x_loc) + Ts[-1][:, None, :3, 3]


def _sweeps(model: ChainModel, links: tuple[int, ...], T_in: Array, x_loc: Array, qg: Array, origin: Array,
            vs: Array) -> tuple[Array, Array]:
    """A group's per-DOF least-squares turns (a universal joint, a part of a ball), SWEEPS times, each DOF θ_i ←
    clamp(θ_i + φ*_i) into its limits, carrying the points x_loc toward vs (b, K, 3, relative to ``origin``): the
    values qg (b, m) (a copy) and the points where they end (b, K, 3)."""
    qg = qg.copy()
    Ts, pos = _place(model, links, T_in, x_loc, qg)
    for _ in range(SWEEPS):
        for i, k in enumerate(links):
            a = Ts[i][:, :3, :3] @ model.axis[k]
            phi = _ls_turn(a, pos - origin[:, None], vs)
            qg[:, i] = clamp_angle(qg[:, i] + phi, float(model.lower[k]), float(model.upper[k]))
            Ts, pos = _place(model, links, T_in, x_loc, qg)
    return qg, pos


def limited_turn(model: ChainModel, tree: _Tree, fr: Frames, q: Array, g: int, pc: Array, bc: Array
             ) -> tuple[Array, NDArray[np.bool_]]:
    """The constrained backward pass's direction at a universal joint (group g, neither a hinge nor a whole ball):
    its child pc (b, 3) turned toward bc by the group's clamped sweeps (:func:`_sweeps`) in its parent's current
    frame, pc′ − p_g (b, 3); and where a DOF ends on a limit (b,) (elsewhere the free direction b_c − p_g holds)."""
    links = tree.groups[g]
    k1, kl = links[0], links[-1]
    b = q.shape[0]
    T_in = np.broadcast_to(np.eye(4), (b, 4, 4)) if model.parent[k1] < 0 else fr.T[model.parent[k1]]
    Tl = fr.T[kl]
    x_loc = np.einsum("bji,bj->bi", Tl[:, :3, :3], pc - Tl[:, :3, 3])[:, None]
    origin = fr.r[:, k1]
    qg, pos = _sweeps(model, links, T_in, x_loc, q[:, list(links)], origin, (bc - origin)[:, None])
    lo, hi = model.lower[list(links)], model.upper[list(links)]
    return pos[:, 0] - origin, np.any((qg <= lo) | (qg >= hi), axis=1)


@dataclass(frozen=True)
class FabrikIteration:
    """One FABRIK iteration: the pose ``q`` (b, n) its forward pass set, the points it placed (group origins
    ``groups`` (b, G, 3), effectors ``effectors`` (b, E, 3)) and the backward pass's points ``backward``."""

    q: Array
    groups: Array
    effectors: Array
    backward: Array


def _backward_pass(model: ChainModel, tree: _Tree, fr: Frames, q: Array, P: Array, cur: Array, limits: bool
                   ) -> Array:
    """The backward pass (module docstring), children first: each group's point (b, G, 3) from its children's
    (an effector's: its target) at values q (b, n); the base keeps its current origin ``cur``; ``limits``: a
    universal joint's limits in the pass."""
    b = P.shape[0]
    G = len(tree.groups)
    back = cur.copy()
    cones = {c.links[0]: c for c in model.cones}
    for g in range(G - 1, -1, -1):  # a group's children come after it in link order
        if tree.gparent[g] < 0:
            continue  # the base stays; its backward point is never used
        pg = cur[:, g]
        k = tree.groups[g][0]
        cands = []
        kids = [(back[:, h], cur[:, h], model.H0[tree.groups[h][0], :3, 3]) for h in tree.child_groups[g]] + \
               [(P[:, j], fr.p[:, j], model.eff_C[j, :3, 3]) for j in tree.child_effs[g]]
        cone = cones.get(k)
        for bc, pc, offset in kids:
            w = bc - pg
            if tree.hinge[g]:
                a = fr.a[:, k]
                rel = pc - pg
                h = np.sum(rel * a, 1, keepdims=True)
                rperp = rel - a * h
                rho = np.linalg.norm(rperp, axis=1, keepdims=True)
                wperp = w - a * np.sum(w * a, 1, keepdims=True)
                cands.append(bc - h * a - rho * _unit(wperp, _unit(rperp, np.zeros_like(w))))
            else:
                d = np.linalg.norm(pc - pg, axis=1, keepdims=True)
                dirn = _unit(w, _unit(pc - pg, np.zeros_like(w)))
                if cone is not None and cone.defines(offset):  # Aristidou's conic constraint, in the pass
                    pk = int(model.parent[k])
                    J = model.H0[k, :3, :3] if pk < 0 else fr.T[pk][:, :3, :3] @ model.H0[k, :3, :3]
                    dirn = cone.clamp_direction(np.broadcast_to(J, (b, 3, 3)), dirn)
                elif limits and tree.ball[g] is None:  # a universal joint's limits, in the pass (as a cone's)
                    turned, bit = limited_turn(model, tree, fr, q, g, pc, bc)
                    dirn = np.where(bit[:, None], _unit(turned, dirn), dirn)
                cands.append(bc - d * dirn)
        back[:, g] = np.mean(cands, axis=0)
    return back


def fabrik_iteration(model: ChainModel, q: Array, P: Array, fr: Frames | None = None, *, subtree: bool = False,
                     hold: bool = False, limits: bool = True) -> FabrikIteration:
    """One backward and one forward pass (see the module docstring) from chain values q (b, n) toward effector
    positions P (b, E, 3). The forward pass turns each joint toward its children's backward points (the paper's
    pass: with free ball joints, exactly its positions, each turn the shortest, so no twist about a bone) and each
    hinge toward every backward point below it (its one angle fitted to its whole subtree, least squares);
    ``subtree``: every joint toward every backward point below it (which turns a hinge chain's plane toward the
    target but spins bones about their axes); ``hold``: the sub-bases (groups with several effectors below) stay
    as they are, only the branches below them turn; ``limits``: a universal joint's limits in the backward pass
    (module docstring; without, they hold in the forward pass only)."""
    tree = chain_tree(model)
    fr = model.frames(q) if fr is None else fr
    b = q.shape[0]
    cur = np.stack([fr.r[:, g[0]] for g in tree.groups], axis=1)  # (b, G, 3) current group origins
    back = _backward_pass(model, tree, fr, q, P, cur, limits)
    # forward: parents first, on angles
    q_new = q.copy()
    placed = cur.copy()
    eff_pts = fr.p.copy()
    for g, links in enumerate(tree.groups):
        k1, kl = links[0], links[-1]
        lk = list(links)
        F = fr if g == 0 else model.frames(q_new)  # ancestors placed, this group and below as they were
        T_in = np.broadcast_to(np.eye(4), (b, 4, 4)) if model.parent[k1] < 0 else F.T[model.parent[k1]]
        whole = subtree or tree.hinge[g]  # a hinge fits its one angle to every point below it
        hs, js = (tree.sub_groups[g], tree.sub_effs[g]) if whole else (tree.child_groups[g], tree.child_effs[g])
        X = np.concatenate([F.r[:, [tree.groups[h][0] for h in hs]], F.p[:, list(js)]], axis=1)  # (b, K, 3)
        Y = np.concatenate([back[:, list(hs)], P[:, list(js)]], axis=1)
        Tl = F.T[kl]
        x_loc = np.einsum("bji,bkj->bki", Tl[:, :3, :3], X - Tl[:, None, :3, 3])  # in the last link's frame

        qg = q_new[:, lk].copy()
        Ts, pos = _place(model, links, T_in, x_loc, qg)
        if hold and len(tree.sub_effs[g]) > 1:  # a sub-base held: its points stay where they are
            _record(tree, g, hs, js, pos, placed, eff_pts)
            continue
        origin = Ts[0][:, :3, 3]
        us = pos - origin[:, None]
        vs = Y - origin[:, None]
        if tree.hinge[g]:
            a = Ts[0][:, :3, :3] @ model.axis[k1]
            phi = _ls_turn(a, us, vs)
            theta = clamp_angle(qg[:, 0] + phi, float(model.lower[k1]), float(model.upper[k1]))
            # the points the pass placed: each turned about the hinge by the clamped angle (Rodrigues)
            new_pos = origin[:, None] + _rotate(a, theta - qg[:, 0], us)
            qg[:, 0] = theta
        else:
            dR = best_turn(us, vs)
            ball = tree.ball[g]
            if ball is not None:  # exact: A' = Jᵀ ΔR J A, in the joint's Euler angles, then the box or the cone
                J = T_in[:, :3, :3] @ model.H0[k1, :3, :3]
                A = np.swapaxes(J, 1, 2) @ dR @ Ts[-1][:, :3, :3]
                qg = ball.angles_from_matrix(A, qg)
                qg = np.clip(qg, model.lower[lk], model.upper[lk])
                qg = ball.project_to_cone(qg)
            else:  # per-DOF least-squares turns (a universal joint, a part of a ball)
                qg = _sweeps(model, links, T_in, x_loc, qg, origin, vs)[0]
            Ts, new_pos = _place(model, links, T_in, x_loc, qg)
        q_new[:, lk] = qg
        _record(tree, g, hs, js, new_pos, placed, eff_pts)
    return FabrikIteration(q_new, placed, eff_pts, back)


def _record(tree: _Tree, g: int, hs: tuple[int, ...], js: tuple[int, ...], new_pos: Array, placed: Array,
            eff_pts: Array) -> None:
    """The points group g placed (its subtree's, in the order of ``hs`` then ``js``): its children's into
    ``placed`` and ``eff_pts``."""
    for h in tree.child_groups[g]:
        placed[:, h] = new_pos[:, hs.index(h)]
    for j in tree.child_effs[g]:
        eff_pts[:, j] = new_pos[:, len(hs) + js.index(j)]


def fabrik_step(model: ChainModel, q: Array, fr: Frames, P: Array, *, published: bool = True) -> Array:
    """Δθ (b, n) of one FABRIK iteration (see the module docstring) toward positions P (b, E, 3) that never moves
    the effectors away (their summed distance): the paper's iteration (``published``) and, where that lowers the
    distance by less than ``SLOW`` of itself (a joint held at a limit, a hinge whose plane the shortest turns never
    bring to the target), the subtree fit instead when it does better, and the slow step doubled while that
    gains more (:data:`EXTEND`); without ``published`` the subtree fit, with the limits in the forward pass only
    (the constrained backward pass cost it reaches: 22 of 40 random arm targets from rest against 28)."""
    before = np.linalg.norm(fr.p - P, axis=2).sum(axis=1)
    it = fabrik_iteration(model, q, P, fr, subtree=not published, limits=published)
    dq = _kept(model, q, P, before, it.q - q)
    if published:
        _slow_steps(model, q, fr, P, before, dq)
    return _branches(model, q, fr, P, before, dq, published)


def _branches(model: ChainModel, q: Array, fr: Frames, P: Array, before: Array, dq: Array, limits: bool) -> Array:
    """Where no step lowers the summed distance (dq is zero) on a tree with sub-bases, the paper's iteration with
    the sub-bases held (only the branches below them turn): on a tree where one target is out of reach, a move of
    the shared joints that brings one effector nearer takes the other away, while its own branch alone still
    brings the reachable effector to its target."""
    stuck: NDArray[np.bool_] = ~np.any(dq, axis=1)
    if not stuck.any() or all(len(e) <= 1 for e in chain_tree(model).sub_effs):
        return dq
    held = fabrik_iteration(model, q[stuck], P[stuck], _frames_of(fr, stuck), hold=True, limits=limits).q - q[stuck]
    dq[stuck] = _kept(model, q[stuck], P[stuck], before[stuck], held)
    return dq


def _slow_steps(model: ChainModel, q: Array, fr: Frames, P: Array, before: Array, dq: Array) -> None:
    """dq (changed in place) where the paper's step gains less than :data:`SLOW`: the better of it and the subtree
    fit (its backward pass free of the universal joints' limits: with them its shoulder's twist reversed within a
    12-frame bake), doubled while that gains more (:func:`_extended`)."""
    after = np.linalg.norm(model.frames(q + dq).p - P, axis=2).sum(axis=1)
    slow = after > (1.0 - SLOW) * before
    if slow.any():
        it = fabrik_iteration(model, q[slow], P[slow], _frames_of(fr, slow), subtree=True, limits=False)
        sub = _kept(model, q[slow], P[slow], before[slow], it.q - q[slow])
        d_sub = np.linalg.norm(model.frames(q[slow] + sub).p - P[slow], axis=2).sum(axis=1)
        better = d_sub < after[slow]
        dq[slow] = _extended(model, q[slow], P[slow], np.where(better, d_sub, after[slow]),
                             np.where(better[:, None], sub, dq[slow]))


def _extended(model: ChainModel, q: Array, P: Array, d: Array, dq: Array) -> Array:
    """A slow step dq (the better of the paper's and the subtree fit's) doubled, inside the limits and cones, while
    that lowers the summed distance ``d`` further, up to :data:`EXTEND` times: near a limit both converge linearly
    (each step gains 10–25 %) along a direction that holds from one step to the next."""
    live = np.ones(len(q), dtype=bool)
    for _ in range(EXTEND):
        trial = model.project_cones(np.clip(q + 2.0 * dq, model.lower, model.upper)) - q
        d2 = np.linalg.norm(model.frames(q + trial).p - P, axis=2).sum(axis=1)
        live &= d2 < d
        if not live.any():
            break
        dq = np.where(live[:, None], trial, dq)
        d = np.where(live, d2, d)
    return dq


def _frames_of(fr: Frames, mask: NDArray[np.bool_]) -> Frames:
    return Frames(fr.T[:, mask], fr.r[mask], fr.a[mask], fr.p[mask], fr.R[mask])


def _kept(model: ChainModel, q: Array, P: Array, before: Array, dq: Array) -> Array:
    """A step that never moves the effectors away (``before``: their summed distance at q): halved up to four times
    where it does, then none."""
    cur = model.frames(q + dq)
    for _ in range(BACKTRACK):
        worse = np.linalg.norm(cur.p - P, axis=2).sum(axis=1) > before
        if not worse.any():
            return dq
        dq = np.where(worse[:, None], 0.5 * dq, dq)
        q_try = model.project_cones(q + dq)
        dq = q_try - q
        cur = model.frames(q_try)
    return np.where((np.linalg.norm(cur.p - P, axis=2).sum(axis=1) > before)[:, None], 0.0, dq)


def _csr(lists: tuple[tuple[int, ...], ...]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    return ptr, np.array([i for x in lists for i in x], dtype=np.int64)


def compiled_chain(model: ChainModel) -> fj.FabrikChain | None:
    """The chain as :mod:`.fabrik_jit`'s record, built once per model; None where the kernel does not take it
    (swing–twist cones, a ball joint with a cone of its own, a group whose links are not consecutive)."""
    if "fabrik_chain" in model.memo:
        return model.memo["fabrik_chain"]  # type: ignore[return-value]
    tree = chain_tree(model)
    ok = not model.cones and all(list(g) == list(range(g[0], g[0] + len(g))) for g in tree.groups) and \
        all(b is None or b.cone is None for b in tree.ball)
    out = None
    if ok:
        axes = {"x": 0, "y": 1, "z": 2}
        kind = [fj.HINGE if h else fj.BALL if b is not None else fj.OTHER for h, b in zip(tree.hinge, tree.ball,
                                                                                         strict=True)]
        order = np.array([[axes[c] for c in b.order] if b is not None and b.order else [0, 0, 0] for b in tree.ball],
                         dtype=np.int64).reshape(-1, 3)
        i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
        f64 = lambda x: np.ascontiguousarray(x, dtype=np.float64)  # noqa: E731
        out = fj.FabrikChain(i64(model.parent), f64(model.axis), f64(model.H0), f64(model.H1), f64(model.H2),
                             f64(model.lower), f64(model.upper), i64(model.eff_link), f64(model.eff_C),
                             i64([g[0] for g in tree.groups] + [model.n]), i64(tree.gparent), i64(kind), order,
                             _csr(tree.child_groups), _csr(tree.child_effs), _csr(tree.sub_groups),
                             _csr(tree.sub_effs))
    model.memo["fabrik_chain"] = out
    return out


REASONS = ("converged", "stalled", "max_iterations")  # fabrik_loop_jit's reason codes
#: Problems from which the compiled solve pays for compiling it (an empty numba cache: ~10–30 s of one core, against
#: ~0.1–0.2 s a NumPy solve on the humanoid's arm), and for loading it from numba's disk cache once numba is up (a
#: few tenths of a second): :func:`animkit.jit.pays` adds up the problems a process sends to NumPy until then, so a
#: first solve never waits for the compiler (issue 24), and a long-lived process switches once it has paid.
COMPILE_PAYS = 100
LOAD_PAYS = 3


def solve_compiled(model: ChainModel, q0: Array, P: Array, opts: Options, published: bool) -> LoopOutput | None:
    """The shared loop with FABRIK's step (``keep_last``) run by :func:`.fabrik_loop_jit.solve_all`, one problem after
    another (a time budget is checked between runs, not inside one); None where compiled kernels are off, do not
    pay yet (:data:`COMPILE_PAYS`) or the chain is not one the kernel takes (the NumPy loop then runs: the
    reference, the same iterations and poses to 1e-7)."""
    ch = compiled_chain(model)
    if ch is None or (opts.alpha is not None and opts.alpha != 1.0) or \
            not jit.pays(fl.solve_all, q0.shape[0], COMPILE_PAYS, LOAD_PAYS):
        return None
    B = q0.shape[0]
    # the kernel moves q in place: a copy of the starts
    q = q0.copy() if q0.flags.c_contiguous and q0.dtype == np.float64 else np.array(q0, dtype=np.float64, order="C")
    iters = np.empty(B, dtype=np.int64)
    reason = np.empty(B, dtype=np.int64)
    pos = np.empty(B)
    hist = np.empty((opts.max_iter + 1, B))
    if not (P.flags.c_contiguous and P.dtype == np.float64):
        P = np.ascontiguousarray(P, dtype=np.float64)
    fl.solve_all(_packed(model, opts, published), q, P, iters, reason, pos, hist)
    done = iters.tolist()
    return LoopOutput(q, iters.astype(np.intp), [REASONS[r] for r in reason.tolist()], pos, np.zeros(B),
                      hist[:max(done) + 1])


def fabrik_params(model: ChainModel, opts: Options, published: bool) -> Array | None:
    """The one parameter array of :func:`solve_packed` (one problem in one compiled call) for ``model`` and ``opts``;
    None where the kernel does not take the chain (:func:`compiled_chain`) or the options (a step size)."""
    if compiled_chain(model) is None or (opts.alpha is not None and opts.alpha != 1.0):
        return None
    return _packed(model, opts, published)


def solve_packed(prm: Array, target: Array, q0: Array) -> tuple[Array, float, int, Array] | None:
    """One problem from q0 (n,) toward ``target`` (E, 3) by :func:`.fabrik_loop_jit.solve_packed` (``prm``:
    :func:`fabrik_params`): the values, the worst effector's distance, the iterations and the error history where
    it converged; None where it did not (the checked path runs it again and judges it: stalled or out of reach),
    the target is not E finite positions, or the compiled kernel is off or does not pay yet (:data:`COMPILE_PAYS`)."""
    k = fl.solve_packed
    if isinstance(k, jit.Kernel) and k.ready and jit.enabled():
        run = k.compiled()
    elif jit.pays(k, 1, COMPILE_PAYS, LOAD_PAYS):
        run = k
    else:
        return None
    flat = target.reshape(-1)
    if flat.shape[0] != 3 * int(prm[1]) or not math.isfinite(sum(flat.tolist())):
        return None
    if not flat.flags.c_contiguous or flat.dtype != np.float64:
        flat = np.ascontiguousarray(flat, dtype=np.float64)
    n = q0.shape[0]
    out = np.empty(fl.out_size(prm))
    run(prm, flat, q0, out)
    pos, it, why = out[n:n + 3].tolist()
    if why != 0.0:
        return None
    return out[:n], pos, int(it), out[n + 3:n + 4 + int(it)]


def _packed(model: ChainModel, opts: Options, published: bool) -> Array:
    """:func:`.fabrik_loop_jit.pack`'s array of the chain and settings for ``opts``, kept on the model for the last
    options seen (a problem solved again and again passes the same ones: no set-up per solve)."""
    memo = model.memo.get("fabrik_packed")
    if isinstance(memo, tuple) and memo[0] is opts and memo[1] == published:
        return memo[2]
    E = len(model.eff_link)
    st = fl.FabrikSettings(float(opts.tol), int(opts.max_iter), int(opts.patience), bool(published),
                           -1.0 if opts.max_step is None else float(opts.max_step),
                           np.ascontiguousarray(np.broadcast_to(opts.row_weights, (3 * E,)), dtype=float))
    ch = compiled_chain(model)
    assert ch is not None
    prm = fl.pack(ch, st)
    model.memo["fabrik_packed"] = (opts, published, prm)
    return prm
