"""FABRIK's loop compiled (:func:`animkit.ik.solvers.run` with ``keep_last`` and FABRIK's step, :mod:`.fabrik_jit`),
and its two entries: :func:`solve_all` (B problems one after another: batches, bakes, the checked solve) and
:func:`solve_packed` (one problem in one call: :meth:`animkit.ik.IKProblem.solve`'s compiled path, as LM's
:func:`~animkit.ik.lm_strategy_jit.lm_packed`). Both take the chain and the settings as one float64 array
(:func:`pack`, built once per model and options): numba's dispatch costs about a microsecond an array argument,
and the chain record holds 21 arrays; :func:`_unpack` reads it back as views (the integer parts copied once).

    loop:  q ← clamp(q0);  until max_i |p_i − P_i| ≤ tol, ``patience`` steps that do not move q, or max_iter:
           q ← clamp(q + s Δθ),  Δθ = FABRIK's step (never raising Σ_i |p_i − P_i|),  s capping |Δθ| at max_step

The NumPy loop (:func:`animkit.ik.solvers.run` with :func:`.fabrik.fabrik_step`) is the reference the tests hold
both entries to (the same iterations, reasons and poses).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.ik.fabrik_jit import FabrikChain, _fk_of, _step, _Work, _work
from animkit.jit import kernel

__all__ = ["FabrikSettings", "pack", "out_size", "solve_all", "solve_packed", "CONVERGED", "STALLED",
           "MAX_ITERATIONS"]

Array = NDArray[Any]
CONVERGED, STALLED, MAX_ITERATIONS = 0, 1, 2


class FabrikSettings(NamedTuple):
    """The loop's settings: ``tol``, ``max_iter``, ``patience``, ``published``, ``max_step`` (≤ 0: no cap), row
    weights ``w`` (3E,)."""

    tol: float
    max_iter: int
    patience: int
    published: bool
    max_step: float
    w: Array



def _measure(ch: FabrikChain, q: Array, P: Array, w: Array, W: _Work) -> tuple[float, float, float]:
    """‖W(P − p)‖, the worst effector's distance (:func:`animkit.ik.solvers.evaluate` without orientation) and
    the summed distance Σ_e |p_e − P_e| (:func:`_dist_at`); the FK of q stays in W.T0, W.p0 (the next step's)."""
    p = W.p0
    _fk_of(ch, q, W)
    err2, worst, total = 0.0, 0.0, 0.0
    for e in range(p.shape[0]):
        d2 = 0.0
        for i in range(3):
            d = P[e, i] - p[e, i]
            d2 += d * d
            err2 += (d * w[3 * e + i]) ** 2
        worst = max(worst, d2)
        total += math.sqrt((p[e, 0] - P[e, 0]) ** 2 + (p[e, 1] - P[e, 1]) ** 2 + (p[e, 2] - P[e, 2]) ** 2)
    return math.sqrt(err2), math.sqrt(worst), total


def _advance(ch: FabrikChain, st: FabrikSettings, q: Array, dq: Array) -> bool:
    """q ← clamp(q + s dq) in place, s capping the largest change at ``max_step``; a value that would not be finite
    keeps its old one. Returns whether q moved (by more than 1e-14 anywhere)."""
    s = 1.0
    if st.max_step > 0.0:
        big = 0.0
        for i in range(q.shape[0]):
            big = max(big, abs(dq[i]))
        s = min(1.0, st.max_step / max(big, 1e-300))
    moved = False
    for i in range(q.shape[0]):
        x = q[i] + dq[i] * s
        x = x if x != x else min(max(x, ch.lower[i]), ch.upper[i])
        if math.isfinite(x):
            moved = moved or abs(x - q[i]) > 1e-14
            q[i] = x
    return moved


_HEAD = 12  # header slots of pack(): n, E, G, the four CSR index lengths, tol, max_iter, patience, published, max_step


def pack(ch: FabrikChain, st: FabrikSettings) -> Array:
    """The chain and settings as one float64 array (:func:`_unpack` reads it back; its float parts as views): numba's
    dispatch costs about a microsecond an array argument, and the record holds 21 arrays."""
    head = [ch.parent.shape[0], ch.eff_link.shape[0], ch.gparent.shape[0], ch.child_g[1].shape[0],
            ch.child_e[1].shape[0], ch.sub_g[1].shape[0], ch.sub_e[1].shape[0], st.tol, st.max_iter, st.patience,
            float(st.published), st.max_step]
    parts = [head, ch.axis, ch.H0, ch.H1, ch.H2, ch.lower, ch.upper, ch.eff_C, st.w, ch.parent, ch.eff_link, ch.gptr,
             ch.gparent, ch.gkind, ch.gorder, *ch.child_g, *ch.child_e, *ch.sub_g, *ch.sub_e]
    return np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for x in parts])


def out_size(prm: Array) -> int:
    """Length of :func:`solve_packed`'s output for :func:`pack`'s array: q (n), the position error, the iterations,
    the reason, the error history (max_iter + 1)."""
    return int(prm[0]) + 4 + int(prm[8])


def _unpack(prm: Array) -> tuple[FabrikChain, FabrikSettings]:
    """:func:`pack`'s array back as the chain and settings records (the integer parts copied once into one array)."""
    n, E, G = int(prm[0]), int(prm[1]), int(prm[2])
    o = _HEAD
    axis = prm[o:o + 3 * n].reshape((n, 3))
    o += 3 * n
    H0 = prm[o:o + 16 * n].reshape((n, 4, 4))
    H1 = prm[o + 16 * n:o + 32 * n].reshape((n, 4, 4))
    H2 = prm[o + 32 * n:o + 48 * n].reshape((n, 4, 4))
    o += 48 * n
    lower, upper = prm[o:o + n], prm[o + n:o + 2 * n]
    o += 2 * n
    eff_C = prm[o:o + 16 * E].reshape((E, 4, 4))
    w = prm[o + 16 * E:o + 19 * E]
    o += 19 * E
    iv = np.empty(prm.shape[0] - o, dtype=np.int64)
    for i in range(iv.shape[0]):
        iv[i] = int(prm[o + i])
    parent, eff_link, gptr = iv[:n], iv[n:n + E], iv[n + E:n + E + G + 1]
    j = n + E + G + 1
    gparent, gkind, gorder = iv[j:j + G], iv[j + G:j + 2 * G], iv[j + 2 * G:j + 5 * G].reshape((G, 3))
    j += 5 * G
    csr = []
    for t in range(4):
        k = int(prm[3 + t])
        csr.append((iv[j:j + G + 1], iv[j + G + 1:j + G + 1 + k]))
        j += G + 1 + k
    ch = FabrikChain(parent, axis, H0, H1, H2, lower, upper, eff_link, eff_C, gptr, gparent, gkind, gorder, csr[0],
                     csr[1], csr[2], csr[3])
    return ch, FabrikSettings(prm[7], int(prm[8]), int(prm[9]), prm[10] != 0.0, prm[11], w)


def _solve_one(ch: FabrikChain, st: FabrikSettings, q: Array, P: Array, W: _Work, h: Array) -> tuple[int, int, float]:
    """The shared loop with ``keep_last`` for one problem: q (n,) in place toward P (E, 3), h[:it + 1] the error
    before the first step and after each; returns the iterations, the reason and the worst effector's distance."""
    for i in range(q.shape[0]):
        q[i] = min(max(q[i], ch.lower[i]), ch.upper[i])
    err, pe, total = _measure(ch, q, P, st.w, W)
    h[0] = err
    flat, it, why = 0, 0, MAX_ITERATIONS
    while True:
        if pe <= st.tol:
            why = CONVERGED
            break
        if flat >= st.patience:
            why = STALLED
            break
        if it == st.max_iter:
            break
        it += 1
        _step(ch, q, P, st.published, total, W)
        flat = 0 if _advance(ch, st, q, W.dq) else st.patience
        err, pe, total = _measure(ch, q, P, st.w, W)
        h[it] = err
    return it, why, pe


def solve_all(prm: Array, q: Array, P: Array, iters: Array, reason: Array, pos: Array, hist: Array) -> None:
    """The shared loop with ``keep_last`` for each of B problems: q (B, n) in place toward P (B, E, 3); iters,
    reason, pos (B,); hist (max_iter + 1, B) the error after each iteration, each problem's last error carried to
    the end. ``prm``: the chain and settings, :func:`pack`'s array."""
    ch, st = _unpack(prm)
    h = np.empty(st.max_iter + 1)
    W = _work(ch, q.shape[1])
    for b in range(q.shape[0]):
        it, why, pe = _solve_one(ch, st, q[b], P[b], W, h)
        iters[b], reason[b], pos[b] = it, why, pe
        for t in range(st.max_iter + 1):
            hist[t, b] = h[min(t, it)]


def solve_packed(prm: Array, target: Array, q0: Array, out: Array) -> None:
    """One problem in one call (:meth:`animkit.ik.IKProblem.solve`'s compiled path): ``prm`` :func:`pack`'s array,
    target (3E,) the effectors' positions, q0 (n,) the start; out (:func:`out_size`): the values, the worst
    effector's distance, the iterations, the reason, then the error history (up to the last iteration)."""
    ch, st = _unpack(prm)
    n = q0.shape[0]
    W = _work(ch, n)
    q = out[:n]
    for i in range(n):
        q[i] = q0[i]
    it, why, pe = _solve_one(ch, st, q, target.reshape((ch.eff_link.shape[0], 3)), W, out[n + 3:n + 4 + st.max_iter])
    out[n], out[n + 1], out[n + 2] = pe, it, why


_NUMPY_ERRORS = "numpy"  # no ZeroDivisionError paths: every division is guarded
# refcounts=False: helpers that allocate nothing and return no array (as in .fabrik_jit)
_measure = kernel(_measure, calls=(_fk_of,), internal=True, refcounts=False) or _measure
_advance = kernel(_advance, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _advance
_unpack = kernel(_unpack, internal=True) or _unpack
_solve_one = kernel(_solve_one, calls=(_measure, _step, _advance), internal=True, refcounts=False) or _solve_one
solve_all = kernel(solve_all, calls=(_unpack, _work, _solve_one)) or solve_all
solve_packed = kernel(solve_packed, calls=(_unpack, _work, _solve_one)) or solve_packed
