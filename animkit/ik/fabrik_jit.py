"""FABRIK's step (:func:`.fabrik.fabrik_step`) compiled with numba, for one problem: the same backward and forward
passes, the same halvings of a step that moves the effectors away, the same subtree fit where a published iteration
gains less than ``SLOW``, the slow step doubled while that gains more (``EXTEND``), the branches alone where nothing
else lowers the distance on a tree (the loop around it and its entries: :mod:`.fabrik_loop_jit`).

    backward:  b_g = mean_c [b_c − d_c ŵ_c]  (ball),   mean_c [b_c − h_c a − ρ_c ŵ⊥_c]  (hinge);  a universal joint
               whose clamped turn toward b_c ends on a limit: ŵ_c the direction it turns its child to (:func:`_limited`)
    forward:   hinge φ = atan2(Σ a·(u⊥ × v⊥), Σ u⊥·v⊥), clamped;  ball A′ = Jᵀ ΔR J A (Kabsch), Euler angles nearest,
               clamped to the box;  other: per-DOF turns, SWEEPS times (stopping after a sweep that turns ≤ SETTLED)

The NumPy functions of :mod:`.fabrik` are the reference this kernel's tests hold it to (to 1e-9 per iteration); they
also run with ``ANIMKIT_JIT=0`` and for chains the kernel does not take (swing–twist cones, a time budget). The
chain is one record (:class:`FabrikChain`, a named tuple of arrays) built once per model
(:func:`.fabrik.compiled_chain`); the
rotations (best turn, Euler angles) are :mod:`.fabrik_turns_jit`'s. Compile time is part of the design: scalar loops
into the caller's arrays (no array expressions, BLAS or small lists), no literal arguments (each would compile a
kernel again), and helpers without Python entry points (``kernel(..., internal=True)``). Run time: no allocation
inside a solve (one :class:`_Work` of views into one scratch buffer per call), the inner loop's helpers take the
arrays they need rather than the chain record (measured: placing a group took ~0.3 µs with the record, ~0.19 µs
without; numba passes a record's arrays as separate arguments, ~170 words for the chain and ~200 for the work
record), and the FK and the group carry compose each link's frame from its local frame held in scalars. An FK is
found once for a set of values: an iteration ends with the FK of its values, and a distance test or the loop's
measure at values bit-equal to ones whose frames the work record holds (``_Work.keys``) reads those frames (the
same bits as a new FK; full FKs in distance tests and measures 472 → 230 over bench_fabrik's 12 targets). Where
they differ from the NumPy path, by rounding only: a universal joint's sweeps stop once one turns it by ≤
``SETTLED`` (the NumPy path runs all ``SWEEPS``; poses equal to ~1e-14).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from animkit.ik.fabrik_turns_jit import (
    _into_frame,
    _ls_turn,
    _mm,
    _mtm,
    _mv,
    _out_of_frame,
    _relative,
    best_turn,
    best_turn_into,
    clamp_angle1,
    euler_near,
)
from animkit.jit import kernel

__all__ = ["FabrikChain", "step_one", "iteration", "best_turn", "clamp_angle1"]

Array = NDArray[Any]
HINGE, BALL, OTHER = 0, 1, 2
_X, _Y, _XL, _POS, _US, _VS = 0, 1, 2, 3, 4, 5  # the point sets in _Work.pts
BACKTRACK = 4  # as fabrik.BACKTRACK
SLOW = 0.8  # as fabrik.SLOW
SWEEPS = 4  # as fabrik.SWEEPS
#: a universal joint's sweeps stop after one whose largest turn is this small (rad): once its turns have aligned the
#: points they are rounding (measured on the humanoid's wrist: 1e-16–2e-15 after the first sweep, in 102 of 169
#: turns), and the next sweeps would only repeat it
SETTLED = 1e-12
EXTEND = 4  # as fabrik.EXTEND


class FabrikChain(NamedTuple):
    """A chain for the kernel: links (parent, axis, H0–H2, limits), effectors, and its groups (links of one node)
    with their kind, Euler axes (ball) and the groups and effectors below each, as CSR lists (ptr, idx)."""

    parent: Array
    axis: Array
    H0: Array
    H1: Array
    H2: Array
    lower: Array
    upper: Array
    eff_link: Array
    eff_C: Array
    gptr: Array  # (G + 1,) links of group g: gptr[g] .. gptr[g + 1] (consecutive)
    gparent: Array
    gkind: Array
    gorder: Array  # (G, 3) the ball's Euler axis indices (intrinsic order)
    child_g: tuple[Array, Array]
    child_e: tuple[Array, Array]
    sub_g: tuple[Array, Array]
    sub_e: tuple[Array, Array]


class _Work(NamedTuple):
    """Scratch arrays of one solve, allocated once (:func:`_work`): the kernel's helpers write into them instead of
    allocating their own (an allocation costs as much as a 4×4 product here)."""

    T: Array  # (n, 4, 4) link frames of the pose being turned
    p: Array  # (E, 3) its effectors
    T2: Array  # (n, 4, 4) and (E, 3): FK of the distance tests
    p2: Array
    T0: Array  # (n, 4, 4) and (E, 3): FK of the pose a step starts from (:func:`_measure`'s, reused by each iteration)
    p0: Array
    back: Array  # (G, 3) backward points
    dq: Array  # (n,) the step
    alt: Array  # (n,) the other step (the subtree fit, the branches alone)
    qt: Array  # (n,) trial values
    keys: Array  # (2, n) the values whose FK T, p ([0]) and T2, p2 ([1]) hold (NaN: none): :func:`_dist_at` and
    # :func:`_fk_of` reuse a frame set whose values are the ones asked, bit for bit
    pts: Array  # (6, K, 3), K the most points below any group: [_X] the points a group turns, [_Y] their
    # backward points, [_XL] X in its last link's frame, [_POS] X carried by its turn, [_US] pos − origin,
    # [_VS] Y − origin
    Ts: Array  # (m, 4, 4) the group's link frames, m its most links
    Tin: Array  # (4, 4) the frame the group hangs from
    M: Array  # (4, 3, 3) the ball's ΔR, J, ΔR R, A
    N: Array  # (3, 4, 4) Horn's turn's scratch (:func:`.fabrik_turns_jit.best_turn_into`)
    qg: Array  # (m,) the group's values
    v: Array  # (4, 3) the group's origin, a child's point, a sum, an axis
    u: Array  # (4, 3) :func:`_limited`'s turn: its origin [0], the child's direction [1], its axis [3]
    none: Array  # (G,) 0: every group turns
    shared: Array  # (G,) 1 where a group has several effectors below (a sub-base): held for the branches' step


def _work(ch: FabrikChain, n: int) -> _Work:
    """:class:`_Work` sized for the chain: views of one float buffer and one integer buffer (two allocations a
    call, not two dozen)."""
    G, E = ch.gparent.shape[0], ch.eff_link.shape[0]
    gp, ep = ch.sub_g[0], ch.sub_e[0]
    K, m = 1, 1
    for g in range(G):
        K = max(K, gp[g + 1] - gp[g] + ep[g + 1] - ep[g])
        m = max(m, ch.gptr[g + 1] - ch.gptr[g])
    buf = np.empty(48 * n + 9 * E + 3 * G + 5 * n + 18 * K + 17 * m + 16 + 36 + 48 + 24)
    o = 0
    T = buf[o:o + 16 * n].reshape((n, 4, 4))
    T2 = buf[o + 16 * n:o + 32 * n].reshape((n, 4, 4))
    T0 = buf[o + 32 * n:o + 48 * n].reshape((n, 4, 4))
    o += 48 * n
    p, p2, p0 = buf[o:o + 3 * E].reshape((E, 3)), buf[o + 3 * E:o + 6 * E].reshape((E, 3)), \
        buf[o + 6 * E:o + 9 * E].reshape((E, 3))
    o += 9 * E
    back = buf[o:o + 3 * G].reshape((G, 3))
    o += 3 * G
    dq, alt, qt = buf[o:o + n], buf[o + n:o + 2 * n], buf[o + 2 * n:o + 3 * n]
    keys = buf[o + 3 * n:o + 5 * n].reshape((2, n))
    keys[:, :] = np.nan
    o += 5 * n
    pts = buf[o:o + 18 * K].reshape((6, K, 3))
    o += 18 * K
    Ts = buf[o:o + 16 * m].reshape((m, 4, 4))
    qg = buf[o + 16 * m:o + 17 * m]
    o += 17 * m
    Tin = buf[o:o + 16].reshape((4, 4))
    M = buf[o + 16:o + 52].reshape((4, 3, 3))
    N = buf[o + 52:o + 100].reshape((3, 4, 4))
    v = buf[o + 100:o + 112].reshape((4, 3))
    u = buf[o + 112:o + 124].reshape((4, 3))
    flags = np.zeros(2 * G, dtype=np.int64)
    none, shared = flags[:G], flags[G:]
    for g in range(G):
        shared[g] = 1 if ep[g + 1] - ep[g] > 1 else 0
    return _Work(T, p, T2, p2, T0, p0, back, dq, alt, qt, keys, pts, Ts, Tin, M, N, qg, v, u, none, shared)


def _local(H0: Array, H1: Array, H2: Array, k: int, th: float) -> tuple[float, float, float, float, float, float,
                                                                          float, float, float, float, float, float]:
    """The top three rows of C_k E_k(θ) = H0 + sin θ H1 + (1 − cos θ) H2 (its last row is 0 0 0 1), row by row, as
    scalars: no 4×4 written and read back."""
    s, c = math.sin(th), 1.0 - math.cos(th)
    return (H0[k, 0, 0] + s * H1[k, 0, 0] + c * H2[k, 0, 0], H0[k, 0, 1] + s * H1[k, 0, 1] + c * H2[k, 0, 1],
            H0[k, 0, 2] + s * H1[k, 0, 2] + c * H2[k, 0, 2], H0[k, 0, 3] + s * H1[k, 0, 3] + c * H2[k, 0, 3],
            H0[k, 1, 0] + s * H1[k, 1, 0] + c * H2[k, 1, 0], H0[k, 1, 1] + s * H1[k, 1, 1] + c * H2[k, 1, 1],
            H0[k, 1, 2] + s * H1[k, 1, 2] + c * H2[k, 1, 2], H0[k, 1, 3] + s * H1[k, 1, 3] + c * H2[k, 1, 3],
            H0[k, 2, 0] + s * H1[k, 2, 0] + c * H2[k, 2, 0], H0[k, 2, 1] + s * H1[k, 2, 1] + c * H2[k, 2, 1],
            H0[k, 2, 2] + s * H1[k, 2, 2] + c * H2[k, 2, 2], H0[k, 2, 3] + s * H1[k, 2, 3] + c * H2[k, 2, 3])


def _fk(H0: Array, H1: Array, H2: Array, parent: Array, eff: Array, C: Array, q: Array, T: Array, p: Array,
        first: int) -> None:
    """World link frames T (n, 4, 4) and effector positions p (E, 3) for chain values q (n,), the links from
    ``first`` on (those before it hold their frames already: their values have not changed since). The product
    written out on T's rows in place (measured: a call a link with two frames as views took as long as the FK's own
    arithmetic). The chain's arrays are passed alone, not the chain record (numba passes a record's arrays as
    separate arguments, ~170 words for the chain: perf put the pushes of the calls at ~20 % of a solve)."""
    for k in range(first, q.shape[0]):
        l00, l01, l02, l03, l10, l11, l12, l13, l20, l21, l22, l23 = _local(H0, H1, H2, k, q[k])
        pk = parent[k]
        if pk < 0:
            T[k, 0, 0], T[k, 0, 1], T[k, 0, 2], T[k, 0, 3] = l00, l01, l02, l03
            T[k, 1, 0], T[k, 1, 1], T[k, 1, 2], T[k, 1, 3] = l10, l11, l12, l13
            T[k, 2, 0], T[k, 2, 1], T[k, 2, 2], T[k, 2, 3] = l20, l21, l22, l23
        else:
            for i in range(3):
                a0, a1, a2, a3 = T[pk, i, 0], T[pk, i, 1], T[pk, i, 2], T[pk, i, 3]
                T[k, i, 0] = a0 * l00 + a1 * l10 + a2 * l20
                T[k, i, 1] = a0 * l01 + a1 * l11 + a2 * l21
                T[k, i, 2] = a0 * l02 + a1 * l12 + a2 * l22
                T[k, i, 3] = a0 * l03 + a1 * l13 + a2 * l23 + a3
        T[k, 3, 0], T[k, 3, 1], T[k, 3, 2], T[k, 3, 3] = 0.0, 0.0, 0.0, 1.0
    for e in range(eff.shape[0]):
        k = eff[e]
        c0, c1, c2 = C[e, 0, 3], C[e, 1, 3], C[e, 2, 3]
        for i in range(3):
            p[e, i] = T[k, i, 0] * c0 + T[k, i, 1] * c1 + T[k, i, 2] * c2 + T[k, i, 3]


def _same(q: Array, key: Array) -> bool:
    """q == key, every value bit for bit (a NaN key matches nothing)."""
    for i in range(q.shape[0]):
        if q[i] != key[i]:
            return False
    return True


def _dist_at(ch: FabrikChain, q: Array, P: Array, W: _Work) -> float:
    """Σ_e |p_e(q) − P_e|: the measure a step never raises. The effectors p(q) are the iteration's (W.p, whose
    forward pass placed them: the first test of most steps) or the last test's (W.p2) where those were found for the
    same values bit for bit, else FK into W.T2, W.p2."""
    if _same(q, W.keys[0]):
        p = W.p
    else:
        p = W.p2
        if not _same(q, W.keys[1]):
            _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, q, W.T2, p, 0)
            for i in range(q.shape[0]):
                W.keys[1, i] = q[i]
    s = 0.0
    for e in range(p.shape[0]):
        s += math.sqrt((p[e, 0] - P[e, 0]) ** 2 + (p[e, 1] - P[e, 1]) ** 2 + (p[e, 2] - P[e, 2]) ** 2)
    return s


def _fk_of(ch: FabrikChain, q: Array, W: _Work) -> None:
    """W.T0, W.p0 ← the FK of q: copied from W.T, W.p or W.T2, W.p2 where those hold it (:func:`_dist_at`), else
    computed (the same bits either way)."""
    n, E = q.shape[0], W.p0.shape[0]
    if _same(q, W.keys[0]) or _same(q, W.keys[1]):
        T, p = (W.T, W.p) if _same(q, W.keys[0]) else (W.T2, W.p2)
        for k in range(n):
            for i in range(3):
                for j in range(4):
                    W.T0[k, i, j] = T[k, i, j]
        for e in range(E):
            for i in range(3):
                W.p0[e, i] = p[e, i]
    else:
        _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, q, W.T0, W.p0, 0)


def _unit3(x: float, y: float, z: float, fx: float, fy: float, fz: float) -> tuple[float, float, float]:
    """(x, y, z)/|(x, y, z)|, or the fallback where the norm is ≤ 1e-12."""
    n = math.sqrt(x * x + y * y + z * z)
    if n > 1e-12:
        return x / n, y / n, z / n
    return fx, fy, fz


def _backward_point(ch: FabrikChain, g: int, T: Array, pg: Array, bc: Array, pc: Array, acc: Array, turned: Array,
                    bit: bool) -> None:
    """One child's candidate for the group's backward point (module docstring), added into ``acc``; pg, pc: the
    group's and the child's current points, bc: the child's backward point; where ``bit``, the child's direction
    is ``turned``'s (a universal joint's limit: :func:`_limited`)."""
    k = ch.gptr[g]
    w0, w1, w2 = bc[0] - pg[0], bc[1] - pg[1], bc[2] - pg[2]
    r0, r1, r2 = pc[0] - pg[0], pc[1] - pg[1], pc[2] - pg[2]
    if ch.gkind[g] == HINGE:
        ax = ch.axis[k]
        a0 = T[k, 0, 0] * ax[0] + T[k, 0, 1] * ax[1] + T[k, 0, 2] * ax[2]
        a1 = T[k, 1, 0] * ax[0] + T[k, 1, 1] * ax[1] + T[k, 1, 2] * ax[2]
        a2 = T[k, 2, 0] * ax[0] + T[k, 2, 1] * ax[1] + T[k, 2, 2] * ax[2]
        h = r0 * a0 + r1 * a1 + r2 * a2
        p0, p1, p2 = r0 - a0 * h, r1 - a1 * h, r2 - a2 * h
        rho = math.sqrt(p0 ** 2 + p1 ** 2 + p2 ** 2)
        wa = w0 * a0 + w1 * a1 + w2 * a2
        f0, f1, f2 = _unit3(p0, p1, p2, 0.0, 0.0, 0.0)
        d0, d1, d2 = _unit3(w0 - a0 * wa, w1 - a1 * wa, w2 - a2 * wa, f0, f1, f2)
        acc[0] += bc[0] - h * a0 - rho * d0
        acc[1] += bc[1] - h * a1 - rho * d1
        acc[2] += bc[2] - h * a2 - rho * d2
    else:
        d = math.sqrt(r0 ** 2 + r1 ** 2 + r2 ** 2)
        f0, f1, f2 = _unit3(r0, r1, r2, 0.0, 0.0, 0.0)
        d0, d1, d2 = _unit3(w0, w1, w2, f0, f1, f2)
        if bit:
            d0, d1, d2 = _unit3(turned[0], turned[1], turned[2], d0, d1, d2)
        acc[0] += bc[0] - d * d0
        acc[1] += bc[1] - d * d1
        acc[2] += bc[2] - d * d2


def _limited(ch: FabrikChain, g: int, q: Array, T: Array, pc: Array, bc: Array, W: _Work) -> bool:
    """The constrained backward pass at a universal joint g (:func:`.fabrik.limited_turn`): its child pc turned
    toward bc by the group's clamped sweeps (:func:`_turn_group`) from its values in q, in its parent's current frame
    (T); pc′ − p_g into W.u[1]. Returns whether a DOF ends on a limit."""
    k1 = ch.gptr[g]
    m = ch.gptr[g + 1] - k1
    pk = ch.parent[k1]
    for i in range(4):
        for j in range(4):
            W.Tin[i, j] = T[pk, i, j] if pk >= 0 else (1.0 if i == j else 0.0)
    for i in range(3):
        W.pts[_X, 0, i], W.pts[_Y, 0, i] = pc[i], bc[i]
    _into_frame(W.pts[_X, :1], T[k1 + m - 1], W.pts[_XL, :1])
    qg = W.qg[:m]
    for i in range(m):
        qg[i] = q[k1 + i]
    _turn_group(ch, g, qg, 1, W.pts, W.Ts, W.Tin, W.u, W.M, W.N)
    bit = False
    for i in range(m):
        bit = bit or qg[i] <= ch.lower[k1 + i] or qg[i] >= ch.upper[k1 + i]
    for i in range(3):
        W.u[1, i] = W.pts[_POS, 0, i] - W.u[0, i]
    return bit


def _backward(ch: FabrikChain, q: Array, P: Array, limits: bool, W: _Work) -> bool:
    """The backward pass from values q (n,), children first, into W.back (G, 3), from their FK W.T0, W.p0; the
    base's point is its current origin; ``limits``: a universal joint's limits in the pass (:func:`_limited`).
    Returns whether one bit (else the pass is the free one)."""
    T, p, back, v = W.T0, W.p0, W.back, W.v
    G = ch.gparent.shape[0]
    for g in range(G):
        for i in range(3):
            back[g, i] = T[ch.gptr[g], i, 3]
    cgp, cgi = ch.child_g
    cep, cei = ch.child_e
    pg, pc, acc = v[0], v[1], v[2]
    any_bit = False
    for g in range(G - 1, -1, -1):
        if ch.gparent[g] < 0:
            continue
        for i in range(3):
            pg[i] = T[ch.gptr[g], i, 3]
            acc[i] = 0.0
        for t in range(cgp[g], cgp[g + 1]):
            h = cgi[t]
            for i in range(3):
                pc[i] = T[ch.gptr[h], i, 3]
            bit = limits and ch.gkind[g] == OTHER and _limited(ch, g, q, T, pc, back[h], W)
            _backward_point(ch, g, T, pg, back[h], pc, acc, W.u[1], bit)
            any_bit = any_bit or bit
        for t in range(cep[g], cep[g + 1]):
            j = cei[t]
            bit = limits and ch.gkind[g] == OTHER and _limited(ch, g, q, T, p[j], P[j], W)
            _backward_point(ch, g, T, pg, P[j], p[j], acc, W.u[1], bit)
            any_bit = any_bit or bit
        m = (cgp[g + 1] - cgp[g]) + (cep[g + 1] - cep[g])
        for i in range(3):
            back[g, i] = acc[i] / m
    return any_bit


def _carry(H0: Array, H1: Array, H2: Array, k1: int, first: int, qg: Array, T_in: Array, x_loc: Array, Ts: Array,
           pos: Array) -> None:
    """Frames Ts (m, 4, 4) of a group's links (from link k1) for its values qg (m,) hung from T_in, and its
    subtree's points pos (K, 3) carried along (x_loc: in the last link's frame); the frames before the group's
    ``first`` link are kept (their values have not changed). The chain's arrays are passed alone (a call passing
    the whole chain record costs more than the work here, in the forward pass's inner loop)."""
    m = qg.shape[0]
    for i in range(first, m):
        l00, l01, l02, l03, l10, l11, l12, l13, l20, l21, l22, l23 = _local(H0, H1, H2, k1 + i, qg[i])
        for r in range(3):  # Ts[i] = (T_in or Ts[i − 1]) C E(θ), as in _fk
            if i == 0:
                a0, a1, a2, a3 = T_in[r, 0], T_in[r, 1], T_in[r, 2], T_in[r, 3]
            else:
                a0, a1, a2, a3 = Ts[i - 1, r, 0], Ts[i - 1, r, 1], Ts[i - 1, r, 2], Ts[i - 1, r, 3]
            Ts[i, r, 0] = a0 * l00 + a1 * l10 + a2 * l20
            Ts[i, r, 1] = a0 * l01 + a1 * l11 + a2 * l21
            Ts[i, r, 2] = a0 * l02 + a1 * l12 + a2 * l22
            Ts[i, r, 3] = a0 * l03 + a1 * l13 + a2 * l23 + a3
        Ts[i, 3, 0], Ts[i, 3, 1], Ts[i, 3, 2], Ts[i, 3, 3] = 0.0, 0.0, 0.0, 1.0
    _out_of_frame(x_loc, Ts[m - 1], pos)


def _targets(ch: FabrikChain, g: int, whole: bool, T: Array, p: Array, P: Array, W: _Work) -> int:
    """The points the group turns, into W.pts[_X] (the first links' origins, then the effectors, below it: every one
    when ``whole``, else its children), and their backward points, into W.pts[_Y]; returns how many (K)."""
    gp, gi = ch.sub_g if whole else ch.child_g
    ep, ei = ch.sub_e if whole else ch.child_e
    ng, ne = gp[g + 1] - gp[g], ep[g + 1] - ep[g]
    X, Y = W.pts[_X], W.pts[_Y]
    for t in range(ng):
        h = gi[gp[g] + t]
        for i in range(3):
            X[t, i], Y[t, i] = T[ch.gptr[h], i, 3], W.back[h, i]
    for t in range(ne):
        j = ei[ep[g] + t]
        for i in range(3):
            X[ng + t, i], Y[ng + t, i] = p[j, i], P[j, i]
    return ng + ne


def _turn_group(ch: FabrikChain, g: int, qg: Array, K: int, pts: Array, Ts: Array, T_in: Array, v: Array, M: Array,
                N: Array) -> None:
    """The forward pass's turn of group g (module docstring) from T_in toward pts[_Y, :K], the points pts[_XL, :K]
    (in its last link's frame) carried along; its values qg (m,) updated in place. Ts, v, M, N: _Work's scratch,
    passed alone (not the work record: numba passes a record's arrays as separate arguments)."""
    k1 = ch.gptr[g]
    m = ch.gptr[g + 1] - k1
    x_loc, Y = pts[_XL, :K], pts[_Y, :K]
    pos, us, vs = pts[_POS, :K], pts[_US, :K], pts[_VS, :K]
    H0, H1, H2 = ch.H0, ch.H1, ch.H2
    _carry(H0, H1, H2, k1, 0, qg, T_in, x_loc, Ts, pos)
    origin, a = v[0], v[3]
    for i in range(3):
        origin[i] = Ts[0, i, 3]
    _relative(pos, origin, us)
    _relative(Y, origin, vs)
    if ch.gkind[g] == HINGE:
        _mv(Ts[0], ch.axis[k1], a)
        qg[0] = clamp_angle1(qg[0] + _ls_turn(a, us, vs), ch.lower[k1], ch.upper[k1])
    elif ch.gkind[g] == BALL:
        dR, J, B, A = M[0], M[1], M[2], M[3]
        best_turn_into(us, vs, dR, N)
        _mm(T_in, ch.H0[k1], J)
        _mm(dR, Ts[m - 1], B)
        _mtm(J, B, A)
        euler_near(A, qg, ch.gorder[g])
        for i in range(m):
            qg[i] = min(max(qg[i], ch.lower[k1 + i]), ch.upper[k1 + i])
    else:
        for _ in range(SWEEPS):
            turned = 0.0
            for i in range(m):
                _mv(Ts[i], ch.axis[k1 + i], a)
                _relative(pos, origin, us)
                t = clamp_angle1(qg[i] + _ls_turn(a, us, vs), ch.lower[k1 + i], ch.upper[k1 + i])
                if t != qg[i]:  # else the frames and points stay as they are
                    dt = abs(t - qg[i])
                    turned = max(turned, dt)
                    qg[i] = t
                    if dt > SETTLED:  # a turn of rounding size leaves them (the sweeps stop after this one)
                        _carry(H0, H1, H2, k1, i, qg, T_in, x_loc, Ts, pos)
            if turned <= SETTLED:  # the sweeps after one that turned nothing (or rounding) would repeat it
                break


def _iterate(ch: FabrikChain, q: Array, P: Array, subtree: bool, held: Array, W: _Work, out: Array) -> None:
    """The forward pass from q (n,) toward P (E, 3) after the backward pass (:func:`_backward` into W.back, from
    W.T0, W.p0: the caller's, once for a step's iterations, which share it), the new values into ``out`` (n,); the
    groups where ``held`` (G,) is nonzero stay (:func:`.fabrik.fabrik_iteration`'s ``hold``). W.T0, W.p0 hold the
    FK of q (:func:`_measure` leaves it there: a step's iterations start from a copy, not an FK each)."""
    T, p = W.T, W.p
    W.keys[0, 0] = np.nan  # T, p become the FK of the values being turned
    for k in range(q.shape[0]):
        for i in range(4):
            for j in range(4):
                T[k, i, j] = W.T0[k, i, j]
    for e in range(p.shape[0]):
        for i in range(3):
            p[e, i] = W.p0[e, i]
    for i in range(q.shape[0]):
        out[i] = q[i]
    dirty = q.shape[0]  # T, p are the FK of out up to this link
    for g in range(ch.gparent.shape[0]):
        if held[g]:
            continue
        if dirty < q.shape[0]:
            _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, out, T, p, dirty)
            dirty = q.shape[0]
        k1, kl = ch.gptr[g], ch.gptr[g + 1] - 1
        pk = ch.parent[k1]
        for i in range(4):
            for j in range(4):
                W.Tin[i, j] = T[pk, i, j] if pk >= 0 else (1.0 if i == j else 0.0)
        K = _targets(ch, g, subtree or ch.gkind[g] == HINGE, T, p, P, W)
        _into_frame(W.pts[_X, :K], T[kl], W.pts[_XL, :K])
        qg = W.qg[:kl + 1 - k1]
        for i in range(kl + 1 - k1):
            qg[i] = out[k1 + i]
        _turn_group(ch, g, qg, K, W.pts, W.Ts, W.Tin, W.v, W.M, W.N)
        for i in range(kl + 1 - k1):
            if out[k1 + i] != qg[i]:
                dirty = min(dirty, k1 + i)
            out[k1 + i] = qg[i]
    if dirty < q.shape[0]:  # T, p: the FK of out (the step's first distance test reads it)
        _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, out, T, p, dirty)
    for i in range(q.shape[0]):
        W.keys[0, i] = out[i]


def iteration(ch: FabrikChain, q: Array, P: Array, subtree: bool) -> Array:
    """One backward and one forward pass from q (n,) toward P (E, 3): the new values (:func:`.fabrik.fabrik_iteration`'s
    ``q`` for one problem)."""
    W = _work(ch, q.shape[0])
    out = np.empty(q.shape[0])
    _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, q, W.T0, W.p0, 0)
    _backward(ch, q, P, subtree or not subtree, W)  # True, not a literal (as fabrik_iteration's default)
    _iterate(ch, q, P, subtree, W.none, W, out)
    return out


def _kept(ch: FabrikChain, q: Array, P: Array, before: float, dq: Array, W: _Work) -> float:
    """A step dq (changed in place) that never moves the effectors away: halved up to BACKTRACK times where it
    does, then none. Returns the summed distance at q + dq."""
    qt = W.qt
    for r in range(BACKTRACK + 1):
        for i in range(q.shape[0]):
            qt[i] = q[i] + dq[i]
        d = _dist_at(ch, qt, P, W)
        if d <= before:
            return d
        for i in range(q.shape[0]):
            dq[i] = 0.5 * dq[i] if r < BACKTRACK else 0.0
    return before  # dq is zero: q itself


def step_one(ch: FabrikChain, q: Array, P: Array, published: bool) -> Array:
    """Δθ (n,) of one FABRIK step (:func:`.fabrik.fabrik_step` for one problem without cones)."""
    W = _work(ch, q.shape[0])
    _fk(ch.H0, ch.H1, ch.H2, ch.parent, ch.eff_link, ch.eff_C, q, W.T0, W.p0, 0)
    _step(ch, q, P, published, _dist_at(ch, q, P, W), W)
    return W.dq.copy()


def _try(ch: FabrikChain, q: Array, P: Array, subtree: bool, held: Array, before: float, W: _Work) -> float:
    """W.alt ← the kept step (:func:`_kept`) of an iteration (:func:`_iterate`); returns the distance it ends at."""
    _iterate(ch, q, P, subtree, held, W, W.alt)
    for i in range(q.shape[0]):
        W.alt[i] -= q[i]
    return _kept(ch, q, P, before, W.alt, W)


def _step(ch: FabrikChain, q: Array, P: Array, published: bool, before: float, W: _Work) -> None:
    """:func:`step_one` with the summed distance at q known (``before``), into W.dq (returned through W: a kernel
    compiled without reference counts returns no array)."""
    dq, n = W.dq, q.shape[0]
    limited = _backward(ch, q, P, published, W)  # the paper's iteration's backward pass (its limits bit: ``limited``)
    _iterate(ch, q, P, not published, W.none, W, dq)
    for i in range(n):
        dq[i] -= q[i]
    after = _kept(ch, q, P, before, dq, W)
    off = published and not published  # False, not a literal (a literal compiles a kernel again)
    if published and after > (1.0 - SLOW) * before:
        if limited:  # the subtree fit's, free of the universal joints' limits (.fabrik._slow_steps)
            _backward(ch, q, P, off, W)
        d_sub = _try(ch, q, P, published, W.none, before, W)  # published is True: the subtree fit (not a literal)
        if d_sub < after:
            after = d_sub
            for i in range(n):
                dq[i] = W.alt[i]
        _extend(ch, q, P, after, dq, W)
    for i in range(n):
        if dq[i] != 0.0:
            return
    for g in range(W.shared.shape[0]):
        if W.shared[g]:  # nothing lowers the distance on a tree: the branches alone (.fabrik._branches)
            if limited:  # the paper's backward pass again (the subtree fit's may be in W.back)
                _backward(ch, q, P, published, W)
            _try(ch, q, P, off, W.shared, before, W)
            for i in range(n):
                dq[i] = W.alt[i]
            break


def _extend(ch: FabrikChain, q: Array, P: Array, d: float, dq: Array, W: _Work) -> None:
    """dq doubled in place (inside the limits) while that lowers the summed distance d, up to EXTEND times
    (:func:`.fabrik._extended`)."""
    n = q.shape[0]
    qt = W.qt
    for _ in range(EXTEND):
        for i in range(n):
            qt[i] = min(max(q[i] + 2.0 * dq[i], ch.lower[i]), ch.upper[i])
        d2 = _dist_at(ch, qt, P, W)
        if not d2 < d:
            return
        d = d2
        for i in range(n):
            dq[i] = qt[i] - q[i]


_NUMPY_ERRORS = "numpy"  # no ZeroDivisionError paths: every division here is guarded or by a positive count
# refcounts=False: helpers that allocate nothing and return no array (numba's reference counts, atomic operations on
# every array taken from a record, sliced or passed on, were ~60 % of a solve's time: perf)
_work = kernel(_work, internal=True) or _work
_local = kernel(_local, internal=True, refcounts=False) or _local
_fk = kernel(_fk, calls=(_local,), internal=True, refcounts=False) or _fk
_same = kernel(_same, internal=True, refcounts=False) or _same
_dist_at = kernel(_dist_at, calls=(_same, _fk), internal=True, refcounts=False) or _dist_at
_fk_of = kernel(_fk_of, calls=(_same, _fk), internal=True, refcounts=False) or _fk_of
_unit3 = kernel(_unit3, error_model=_NUMPY_ERRORS, internal=True, refcounts=False) or _unit3
_backward_point = kernel(_backward_point, calls=(_unit3,), internal=True, refcounts=False) or _backward_point
_carry = kernel(_carry, calls=(_local, _out_of_frame), internal=True, refcounts=False) or _carry
_targets = kernel(_targets, internal=True, refcounts=False) or _targets
_turn_group = kernel(_turn_group, calls=(_carry, _relative, _mv, _mm, _mtm, _ls_turn, clamp_angle1, best_turn_into,
                                         euler_near), internal=True, refcounts=False) or _turn_group
_limited = kernel(_limited, calls=(_into_frame, _turn_group), internal=True, refcounts=False) or _limited
_backward = kernel(_backward, calls=(_backward_point, _limited), error_model=_NUMPY_ERRORS, internal=True,
                   refcounts=False) or _backward
_iterate = kernel(_iterate, calls=(_fk, _targets, _into_frame, _turn_group), internal=True,
                  refcounts=False) or _iterate
iteration = kernel(iteration, calls=(_work, _fk, _backward, _iterate)) or iteration
_kept = kernel(_kept, calls=(_dist_at,), internal=True, refcounts=False) or _kept
_try = kernel(_try, calls=(_iterate, _kept), internal=True, refcounts=False) or _try
_extend = kernel(_extend, calls=(_dist_at,), internal=True, refcounts=False) or _extend
_step = kernel(_step, calls=(_backward, _kept, _extend, _iterate, _try), internal=True, refcounts=False) or _step
step_one = kernel(step_one, calls=(_work, _fk, _dist_at, _step)) or step_one
