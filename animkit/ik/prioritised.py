"""The task-priority step (Siciliano & Slotine 1991; Chiaverini 1997), stiffness-weighted, with inequality rows held as
an active set: the linear algebra :class:`~animkit.ik.natural.Natural` takes each iteration,

    Δφ_k = (J̃_k P_k)ᵀ (J̃_k P_k (J̃_k P_k)ᵀ + λ_k² I)⁻¹ (V_k − J̃_k Δφ_<k),   P_{k+1} = P_k − (J̃_k P_k)⁺ J̃_k P_k
    Δθ = W^−½ (Σ_k Δφ_k − ½ P_last W^−½ ∇H)

(J̃ = J W^−½, ``sc`` = W^−½ per DOF) and J Δθ ≤ BOUND_GAIN · room for the inequality tasks' rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import jit

__all__ = ["Level", "Bounds", "prioritised_step", "bounded_step", "NULL_STEP", "BOUND_GAIN"]

Array = NDArray[np.float64]
Level = tuple[Array, Array, float]  # a priority level: its rows J over the movable set, the velocity V asked, its λ
Bounds = tuple[Array, Array]  # the inequality tasks' rows J (m, n) over the movable set and their room (m,)
NULL_STEP = 0.02  # the largest change (scaled coordinates) per iteration from the null-space terms


BOUND_ROUNDS, BOUND_DAMPING = 3, 1e-3  # an inequality's active set: solves added at most; its level's λ
BOUND_GAIN = 0.2  # a step may close this share of the room left to a bound (a velocity damper: the quantity slows
# as it nears its bound instead of stopping dead there, which kinked the joints' paths: 0.5° a frame of jitter)


def bounded_step(levels: Sequence[Level], bounds: Bounds | None, grad: Array, sc: Array, null: float) -> Array:
    """The prioritised step with the inequality rows J Δθ ≤ room held: the rows the step would break (or already
    past their bound: room < 0) join as a first level asking J Δθ = room (the quantity stops at its bound), and
    the step is solved again, up to BOUND_ROUNDS times as more rows join (an active set; a row once in stays in for
    the step). The C extension's ``prio_step`` takes the same steps in one call where it is built
    (:func:`_native_step`); this is its reference, and the path where it is not."""
    got = _native_step(levels, bounds, grad, sc, null)
    if got is not None:
        return got
    dq = prioritised_step(levels, grad, sc, null)
    if bounds is None:
        return dq
    J, room = bounds
    room = np.where(room < 0, room, BOUND_GAIN * room)  # a bound already passed (a warm start beyond it) is met
    active = np.zeros(len(room), dtype=bool)
    for _ in range(BOUND_ROUNDS):
        want = active | (room < 0) | (J @ dq > room + 1e-12)
        if (want == active).all():
            break
        active = want
        dq = prioritised_step([(J[active], room[active], BOUND_DAMPING), *levels], grad, sc, null)
    return dq


def _native_step(levels: Sequence[Level], bounds: Bounds | None, grad: Array, sc: Array, null: float
                 ) -> Array | None:
    """:func:`bounded_step` by ``animkit._native.prio_step`` (the same levels, rows and rounds, its sums in another
    order: equal to NumPy's to ~1e-15), or None where the extension is off (ANIMKIT_JIT=0), not built, or leaves
    the step to NumPy (an exactly singular level, a number not finite: NumPy's answer or its LinAlgError then)."""
    fn = getattr(jit.native_kernels(), "prio_step", None)
    n = len(sc)
    if fn is None or n == 0:
        return None
    f64 = np.float64
    J = np.ascontiguousarray(np.vstack([j for j, _, _ in levels]) if levels else np.empty((0, n)), dtype=f64)
    V = np.ascontiguousarray(np.concatenate([v for _, v, _ in levels]) if levels else np.empty(0), dtype=f64)
    counts = np.array([len(v) for _, v, _ in levels], dtype=np.int64)
    lams = np.array([lam for _, _, lam in levels], dtype=f64)
    Jb, room = (np.empty((0, n)), np.empty(0)) if bounds is None else bounds
    Jb, room = np.ascontiguousarray(Jb, dtype=f64), np.ascontiguousarray(room, dtype=f64)
    out = np.empty(n)
    ok = fn(J, V, counts, lams, np.ascontiguousarray(grad, dtype=f64), np.ascontiguousarray(sc, dtype=f64), Jb,
            room, out, n, len(levels), len(room), float(null))
    return out if ok else None


def prioritised_step(levels: Sequence[Level], grad: Array, sc: Array, bound: float = NULL_STEP) -> Array:
    """Σ_k Δφ_k − ½ P ∇H (the module docstring) in θ; the same numbers, bit for bit, as every level's full update
    from P₀ = I, Δφ₀ = 0: the first level's J̃P and residual taken as J̃ and V, each level's Gram matrix formed
    once, and the last projector not formed where ∇H = 0 (nothing reads it: the null-space step is P · 0)."""
    n = len(sc)
    dphi = np.zeros(n)
    P: Array | None = None  # I until the first level
    null = bool(grad.any())
    last = len(levels) - 1
    for k, (J, V, lam) in enumerate(levels):
        Jt = J * sc
        JP = np.ascontiguousarray(Jt) if P is None else Jt @ P  # J̃ I: the same numbers, laid out as a product's
        G = JP @ JP.T
        eye = _eye(len(V))
        x, Y = solve_pair(G + lam * lam * eye, V if k == 0 else V - Jt @ dphi,
                          (G + 1e-8 * eye, JP) if null or k < last else None)
        dphi = dphi + JP.T @ x
        if Y is not None:
            # the projector nearly exact (eigenvalues σ²/(σ² + 1e-8) ∈ [0, 1]): the lower tasks may not leak in
            P = (_eye(n) if P is None else P) - JP.T @ Y
    if not null:
        return np.asarray(sc * dphi, dtype=float)
    dz = 0.5 * (_eye(n) if P is None else P) @ (sc * grad)
    big = float(np.abs(dz).max(initial=0.0))
    if big > bound:  # a small step: its second-order effect on the tasks stays below what they correct
        dz *= bound / big
    return np.asarray(sc * (dphi - dz), dtype=float)


_EYES: dict[int, Array] = {}


def _eye(m: int) -> Array:
    """I (m, m), made once per size and read-only (np.eye's numbers, without its allocation on every call)."""
    got = _EYES.get(m)
    if got is None:
        got = _EYES[m] = np.eye(m)
        got.flags.writeable = False
    return got


def _singular(*_: object) -> None:
    raise np.linalg.LinAlgError("Singular matrix")


def solve_pair(A: Array, b: Array, second: tuple[Array, Array] | None) -> tuple[Array, Array | None]:
    """(A⁻¹b, B⁻¹C) for ``second`` = (B, C), else (A⁻¹b, None): np.linalg.solve's own LAPACK calls (its gufuncs,
    the same numbers bit for bit, a singular matrix the same LinAlgError) under one error state, without its
    per-call checks (≈ 25 µs a call: a bake makes thousands)."""
    if _GUFUNCS is None:
        return np.asarray(np.linalg.solve(A, b), float), (None if second is None else
                                                          np.asarray(np.linalg.solve(*second), float))
    one, many = _GUFUNCS
    if _ERRSTATE is None:  # pragma: no cover - a NumPy without the context variable: np.errstate itself
        with np.errstate(**_SOLVE_ERRORS):
            x = (one if b.ndim == 1 else many)(A, b, signature="dd->d")
            Y = None if second is None else many(second[0], second[1], signature="dd->d")
        return x, Y
    state, make = _ERRSTATE
    token = state.set(make(**_SOLVE_ERRORS))  # np.errstate's own two steps (≈ 0.6 µs; the context manager ≈ 6 µs)
    try:
        x = (one if b.ndim == 1 else many)(A, b, signature="dd->d")
        Y = None if second is None else many(second[0], second[1], signature="dd->d")
    finally:
        state.reset(token)
    return x, Y


_SOLVE_ERRORS: dict[str, Any] = {"call": _singular, "invalid": "call", "over": "ignore", "divide": "ignore",
                                 "under": "ignore"}  # a singular matrix raises (np.linalg.solve's LinAlgError)


def _errstate() -> tuple[Any, Any] | None:
    """(the context variable holding NumPy's error state, the function that makes one): what np.errstate's
    __enter__ and __exit__ do, without building the context manager on every solve; None where absent."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar  # type: ignore[attr-defined]
        from numpy._core.umath import _make_extobj
    except ImportError:  # pragma: no cover - another NumPy: np.errstate itself
        return None
    return _extobj_contextvar, _make_extobj


def _linalg_gufuncs() -> tuple[Any, Any] | None:
    """NumPy's solve gufuncs (vector and matrix right-hand side), those np.linalg.solve calls; None where absent."""
    try:
        from numpy.linalg import _umath_linalg
    except ImportError:  # pragma: no cover - a NumPy without them: np.linalg.solve itself
        return None
    return (_umath_linalg.solve1, _umath_linalg.solve) if hasattr(_umath_linalg, "solve1") else None


_GUFUNCS = _linalg_gufuncs()
_ERRSTATE = _errstate()
