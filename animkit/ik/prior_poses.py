"""Nearest training poses: a pose prior's stored canonical poses, placed on a figure, looked up by its effectors.

A prior may carry a set of its training poses x_m (their features, :func:`animkit.ik.prior.pose_features`). Placed
on a figure through canonical FK in the hips' canonical frame Q_h (the in-between joints at rest),

    Q_b = Q_p exp(x_b),   p_b = p_p + Q_p v_b,   v_b = Q_p,restᵀ (p_b,rest − p_p,rest),   Q_h = I, p_h = 0,

each stored pose gives its effectors' positions in that frame (over the figure's rest height: the figure's own
proportions, not the training subjects'). Given targets and the root, the key of a query is the same numbers,
k_e = Q_hᵀ (t_e − p_h) / height, beside the root's features (tilt, hips height); the mean of the k nearest stored
poses' features (Euclidean distance over the given effectors and the root's features) is the centre the prior's
Gaussian is moved to (:func:`nearest_mean`): the body's completion follows the nearest recorded people rather than
the global mean. See docs/prior.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit.model.transforms import matrix_from_rotation_vector

__all__ = ["KEY_EFFECTORS", "pose_set", "placed_keys", "query_key", "nearest_mean", "NEIGHBOURS", "KEPT"]

Array = NDArray[np.float64]
#: The effectors a key holds (each a rig effector name and a prior bone of that name).
KEY_EFFECTORS: tuple[str, ...] = ("hand_l", "hand_r", "foot_l", "foot_r", "head")
NEIGHBOURS = 16  # k: the stored poses averaged (chosen by cross-validation within the training subjects)
KEPT = 4096  # the stored poses a fitted prior keeps at most (evenly over its training frames)


def pose_set(X: Array, kept: int = KEPT) -> Array:
    """At most ``kept`` rows of the training features X (N, d), evenly spaced over them (float32)."""
    Xa = np.asarray(X, dtype=float)
    if len(Xa) <= kept:
        return Xa.astype(np.float32)
    idx = np.linspace(0, len(Xa) - 1, kept).round().astype(np.intp)
    return Xa[idx].astype(np.float32)


def placed_keys(binding: Any, poses: Array) -> Array:
    """Each stored pose's :data:`KEY_EFFECTORS` positions (M, 5, 3) on the bound figure (``binding``: a
    :class:`animkit.ik.prior.PriorBinding`, whose module imports this one): its rig's effector nodes, carried by their
    nearest prior bone at its rest offset, in the hips' canonical frame over the figure's rest height (canonical FK,
    the module docstring's); NaN for an effector the rig lacks."""
    b = binding
    fig = b.figure
    c = fig.compiled
    W = fig.world_batch(fig.rest_pose()[None])[0]
    M = len(poses)
    Qrest = {int(n): W[int(n), :3, :3] @ K for n, K in zip(b.node, b.K, strict=True)}
    Qrest[b.hips] = W[b.hips, :3, :3] @ b.Kh
    Q = {b.hips: np.broadcast_to(np.eye(3), (M, 3, 3))}
    p = {b.hips: np.zeros((M, 3))}
    for i in range(len(b.bones)):  # PRIOR_BONES' order: a bone's canonical parent before it
        node, par = int(b.node[i]), int(b.parent[i])
        L = matrix_from_rotation_vector(np.asarray(poses[:, b.rows[3 * i:3 * i + 3]], dtype=float))
        p[node] = p[par] + Q[par] @ (Qrest[par].T @ (W[node, :3, 3] - W[par, :3, 3]))
        Q[node] = Q[par] @ L
    out = np.full((M, len(KEY_EFFECTORS), 3), np.nan)
    index = {n: i for i, n in enumerate(c.node_names)}
    effs = fig.rig.effectors
    for j, e in enumerate(KEY_EFFECTORS):
        if e not in effs:
            continue
        a = index[effs[e]]
        while a >= 0 and a not in p:  # the nearest prior bone (or the hips) at or above the effector
            a = int(c.parent[a])
        if a < 0:
            continue
        out[:, j] = (p[a] + Q[a] @ (Qrest[a].T @ (W[index[effs[e]], :3, 3] - W[a, :3, 3]))) / b.height
    return out


def query_key(binding: Any, R_h: Array, p_h: Array, targets: Mapping[str, Array]
              ) -> tuple[Array, NDArray[np.bool_]]:
    """The query's key (5, 3) (NaN for effectors not given) and which of :data:`KEY_EFFECTORS` it holds (5,), from
    the hips' world rotation R_h and origin p_h and the targets' positions (rig effector name → (3,))."""
    Qh = R_h @ binding.Kh
    key = np.full((len(KEY_EFFECTORS), 3), np.nan)
    for j, e in enumerate(KEY_EFFECTORS):
        t = targets.get(e)
        if t is not None:
            key[j] = Qh.T @ (np.asarray(t, dtype=float) - p_h) / binding.height
    given: NDArray[np.bool_] = np.all(np.isfinite(key), axis=1)
    return key, given


def nearest_mean(poses: Array, keys: Array, key: Array, given: NDArray[np.bool_], root: Array,
                 k: int = NEIGHBOURS) -> Array:
    """The mean features (d,) of the ``k`` stored poses nearest the query: squared distance Σ_e ‖k_e − key_e‖² over
    the given effectors plus ‖x_root − root‖² over the root's features (the last len(root) numbers of x)."""
    d2 = np.zeros(len(poses))
    if given.any():
        diff = keys[:, given] - key[given][None]
        d2 += np.einsum("mij,mij->m", diff, diff)
    nr = len(root)
    d2 += np.sum((poses[:, -nr:] - root[None]) ** 2, axis=1)
    d2 = np.where(np.isfinite(d2), d2, np.inf)
    kk = max(1, min(int(k), len(poses)))
    near = np.argpartition(d2, kk - 1)[:kk]
    mean: Array = np.asarray(poses[near], dtype=float).mean(axis=0)
    return mean
