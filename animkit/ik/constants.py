"""The Levenberg–Marquardt loop's constants and the solve strategy's, in one place: the NumPy loops (:mod:`.lm`,
:mod:`.solvers`), the compiled kernels (:mod:`.lm_jit`, :mod:`.lm_batch_jit`; numba reads these module globals as
compile-time constants) and the strategy (:mod:`.strategy`) all read them from here (derivations in
docs/derivations.md)."""

from __future__ import annotations

__all__ = ["LAMBDA_DOWN", "LAMBDA_UP", "LAMBDA_MIN", "LAMBDA_MAX", "GAIN_REL", "GAIN_ABS", "HOMOTOPY_DECAY",
           "PULL_BACKOFF", "START_MARGIN", "STALL_MIN_ITER", "STATIONARY", "ORIENTATION_FIRST_WEIGHT",
           "ORIENTATION_STAGES", "SLIDE_ITERS", "RESTART_BATCH", "RESTART_MAX_ITER", "RESTART_STALL", "RESTART_PULL",
           "BATCH_CHUNK", "FOLD_ESCAPES", "FOLD_STEP", "FOLD_CURVATURE", "POLISH_ITERS",
           "POLISH_DAMPING"]

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
POLISH_ITERS = 20  # lm: the most projected steps in θ that finish an answer left short (lm.polish; within max_iter)
SLIDE_ITERS = 50  # lm on a coned chain: the most steps along the cones' edges that finish an answer (lm_cones.slide)
POLISH_DAMPING = 1e-3  # lm: the polish's starting λ (Gauss–Newton's step nearly: the φ loop has done the far part)

# the solve strategy (:mod:`.strategy`, which reads them as its own module globals)
RESTART_BATCH = 8  # random restarts run this many starts at once (vectorised), unless the B = 1 path applies
RESTART_MAX_ITER = 100  # iteration cap of each run (the first included) when restarts are on
RESTART_STALL = (8, 0.7)  # with restarts, lm's B = 1 runs stop when ‖WV‖ fell < 30 % over 8 iterations
RESTART_PULL = 0.1  # lm's μ₀ for the random restarts (the first run keeps Options.pull = 1): a random start is
# already away from the limits, and a strong pull keeps it from solutions near them (Panda 6D, the hardest of 500
# targets: a median 183 restarts to converge with μ₀ = 1, 14.5 with 0.1, 10 with 0 at twice the time per restart)
BATCH_CHUNK = 4096  # problems iterated together: bounds memory, and lets the progress bar move
FOLD_ESCAPES = 3  # runs from a fold, each FOLD_STEP along its direction of negative curvature
FOLD_STEP = 0.3  # radians (scene units for sliders) along the unit direction
FOLD_CURVATURE = 1e-3  # a stationary point is a fold when ∇²f has an eigenvalue below −FOLD_CURVATURE · ‖J‖_F²
