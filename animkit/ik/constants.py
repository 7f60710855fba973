"""The Levenberg–Marquardt loop's constants and the solve strategy's, in one place: the NumPy loops (:mod:`.lm`,
:mod:`.solvers`), the compiled kernels (:mod:`.lm_jit`, :mod:`.lm_batch_jit`; numba reads these module globals as
compile-time constants) and the strategy (:mod:`.strategy`) all read them from here (derivations in
docs/derivations.md)."""

from __future__ import annotations

__all__ = ["LAMBDA_DOWN", "LAMBDA_UP", "LAMBDA_MIN", "LAMBDA_MAX", "GAIN_REL", "GAIN_ABS", "HOMOTOPY_DECAY",
           "PULL_BACKOFF", "START_MARGIN", "STALL_MIN_ITER", "STATIONARY", "ORIENTATION_FIRST_WEIGHT",
           "ORIENTATION_STAGES"]

LAMBDA_DOWN, LAMBDA_UP = 0.1, 10.0  # λ's factor after a kept / a rejected step
LAMBDA_MIN = 1e-9  # λ never falls below this
LAMBDA_MAX = 1e10  # a run whose λ grew past this has stalled
GAIN_REL, GAIN_ABS = 1e-9, 1e-15  # a step improved when ‖WV‖_new < ‖WV‖ (1 − GAIN_REL) − GAIN_ABS
HOMOTOPY_DECAY = 0.95  # γ: the pull toward mid-range μ_k = μ₀ γᵏ βʳ min(1, ‖WV‖²)
PULL_BACKOFF = 0.1  # β: the pull's factor after a rejected step
START_MARGIN = 0.05  # the start is moved this fraction of a DOF's range inside its limits (cos φ ≠ 0)
STALL_MIN_ITER = 10  # the stall test (restarts) never stops a run before this many iterations
STATIONARY = 1e-3  # a result is first-order optimal when ‖P Jᵀ W V‖ ≤ STATIONARY · ‖P J‖_F ‖W V‖
ORIENTATION_FIRST_WEIGHT = 1e-3  # the position rows' weight of the orientation-first run (6D targets)
ORIENTATION_STAGES = 4  # stages of the orientation continuation (6D targets)
