"""FABRIK: forward-and-backward reaching IK (Aristidou & Lasenby 2011), mapped back onto the chain's DOFs.

On each effector's path the points are the origins of the nodes that carry movable DOFs, then the effector:
p_0 (the base, fixed) … p_k (the effector), with segment lengths d_i = |p_{i+1} − p_i| (constant: revolute DOFs only).
One iteration:

    backward   p'_k = t,        p'_i = p'_{i+1} + d_i (p_i − p'_{i+1}) / |p_i − p'_{i+1}|     (i = k−1 … 0)
    forward    p''_0 = p_0,     p''_i = p''_{i−1} + d_{i−1} (p'_i − p''_{i−1}) / |p'_i − p''_{i−1}|   (i = 1 … k)

On a tree (several effectors, e.g. both hands on a shared spine) each path runs its own passes and a point shared by
several paths takes the centroid of their answers (the paper's multi-end-effector rule, one level). The joint
positions are then mapped back onto the DOFs, parents first: each revolute DOF turns about its axis a (origin r) by
the angle that best carries the points after it on the path(s) through it, u_i, onto their FABRIK positions v_i
(projections ⊥ a, from r; a least-squares turn about a fixed axis),

    φ = atan2(Σ a·(u_i × v_i), Σ u_i·v_i),

clamped into the DOF's limits, and the chain's frames are recomputed before the next DOF (three passes over the
DOFs per iteration: a multi-axis joint's single-axis turns meet its point in turns). So hinge limits hold
exactly, and a ball joint's cone is held by its per-axis limits (an Euler-angle box, not a true cone). A hinge or a
limit cannot always follow the points; a mapped step that moves the effectors away from their targets is halved
(up to four times, then dropped), so the distance never grows.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import IKError
from .problem import ChainModel, Frames

__all__ = ["fabrik_step", "check_fabrik"]

Array = NDArray[np.float64]
BACKTRACK = 4  # halvings of a step that moved the effectors away
SWEEPS = 3  # passes of the mapping per iteration: a ball joint's three axes align its child point in turns


def check_fabrik(model: ChainModel, orientation: bool) -> None:
    """FABRIK moves points: revolute DOFs and position targets only."""
    if not model.revolute.all():
        raise IKError("FABRIK needs revolute DOFs only (segment lengths must stay constant); this movable set has "
                      f"prismatic DOFs at {[model.link_node[k] for k in np.flatnonzero(~model.revolute)]}")
    if orientation:
        raise IKError("FABRIK reaches positions; for a 4x4 (6D) target use LM, DLS or the pseudoinverse")


def _paths(model: ChainModel) -> list[list[int]]:
    """Per effector: the first link of each node group along its path (base first)."""
    out = []
    for j in range(len(model.effectors)):
        links = [int(k) for k in np.flatnonzero(model.eff_mask[j])]
        firsts = [k for i, k in enumerate(links) if i == 0 or model.link_node[k] != model.link_node[links[i - 1]]]
        out.append(firsts)
    return out


def _reach_points(pts: Array, target: Array) -> Array:
    """One FABRIK iteration on points (b, P, 3) toward target (b, 3); the base pts[:, 0] stays."""
    d = np.linalg.norm(np.diff(pts, axis=1), axis=2)  # (b, P − 1)
    back = pts.copy()
    back[:, -1] = target
    for i in range(pts.shape[1] - 2, -1, -1):
        v = pts[:, i] - back[:, i + 1]
        n = np.linalg.norm(v, axis=1, keepdims=True)
        back[:, i] = back[:, i + 1] + d[:, i:i + 1] * v / np.maximum(n, 1e-300)
    fwd = back.copy()
    fwd[:, 0] = pts[:, 0]
    for i in range(1, pts.shape[1]):
        v = back[:, i] - fwd[:, i - 1]
        n = np.linalg.norm(v, axis=1, keepdims=True)
        fwd[:, i] = fwd[:, i - 1] + d[:, i - 1:i] * v / np.maximum(n, 1e-300)
    return fwd


def fabrik_step(model: ChainModel, q: Array, fr: Frames, P: Array) -> Array:
    """Δθ (b, n) of one FABRIK iteration (see the module docstring) toward positions P (b, E, 3)."""
    paths = _paths(model)
    b = q.shape[0]
    # desired positions of every point, keyed by link (a node group's origin) or ("eff", j); centroids on a tree
    want: dict[object, list[Array]] = {}
    for j, firsts in enumerate(paths):
        pts = np.concatenate([fr.r[:, firsts], fr.p[:, j:j + 1]], axis=1)
        new = _reach_points(pts, P[:, j])
        for i, k in enumerate(firsts):
            want.setdefault(k, []).append(new[:, i])
        want.setdefault(("eff", j), []).append(new[:, -1])
    goal = {key: np.mean(v, axis=0) for key, v in want.items()}
    # the points each link carries: every later group's origin and the effector, on every path through it
    children: dict[int, list[object]] = {}
    for j, firsts in enumerate(paths):
        links = [int(k) for k in np.flatnonzero(model.eff_mask[j])]
        after: dict[int, list[object]] = {g: [*firsts[i + 1:], ("eff", j)] for i, g in enumerate(firsts)}
        g = links[0]
        for k in links:
            if k in after:
                g = k
            for nxt in after[g]:
                if nxt not in children.setdefault(k, []):
                    children[k].append(nxt)
    q_new = q.copy()
    cur = fr
    for k in [k for _ in range(SWEEPS) for k in range(model.n)]:
        if k not in children:
            continue
        a = cur.a[:, k]
        r = cur.r[:, k]
        num = np.zeros(b)
        den = np.zeros(b)
        for key in children[k]:
            if isinstance(key, tuple):
                u = cur.p[:, int(key[1])] - r
            else:
                u = cur.r[:, int(key)] - r  # type: ignore[call-overload,index]
            v = goal[key] - r
            u = u - a * np.sum(u * a, 1, keepdims=True)
            v = v - a * np.sum(v * a, 1, keepdims=True)
            num += np.sum(a * np.cross(u, v), 1)
            den += np.sum(u * v, 1)
        phi = np.where((np.abs(num) + np.abs(den)) > 1e-300, np.arctan2(num, den), 0.0)
        q_new[:, k] = np.clip(q_new[:, k] + phi, model.lower[k], model.upper[k])
        cur = model.frames(q_new)
    # a hinge or a limit cannot always follow the points: never return a step that moves the effectors away
    # (halved up to four times, then none)
    before = np.linalg.norm(fr.p - P, axis=2).sum(axis=1)
    dq = q_new - q
    for _ in range(BACKTRACK):
        after = np.linalg.norm(cur.p - P, axis=2).sum(axis=1)
        worse = after > before
        if not worse.any():
            break
        dq = np.where(worse[:, None], 0.5 * dq, dq)
        cur = model.frames(q + dq)
    else:
        dq = np.where((np.linalg.norm(cur.p - P, axis=2).sum(axis=1) > before)[:, None], 0.0, dq)
    return dq
