"""Random restarts in a batch (``IKProblem.solve_batch(restarts=k)``): the lanes' restarts inside the kernel against
rounds of plain lanes runs from the same starts (bit for bit), ``restart_start`` against SplitMix64 written here in
Python integers, chunks against the whole batch, and the batch's answers (compiled lanes, NumPy rounds, another
solver) checked by the figure's own forward kinematics."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from animkit import jit
from animkit.errors import IKError
from animkit.ik import IKProblem, solve_batch
from animkit.ik.lm import (
    loop_chain,
    loop_settings,
    serial_chain,
)
from animkit.ik.lm_batch_jit import restart_start
from animkit.ik.strategy import RESTART_MAX_ITER, RESTART_PULL, RESTART_STALL

from .ik_helpers import assert_meets, panda_ready, random_targets

EFF = "panda_grasptarget"
M64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def panda():
    fig, start = panda_ready()
    problem = IKProblem(fig, EFF, "arm", pose=start, orientation=True)
    return fig, start, problem, random_targets(fig, EFF, problem.model.dofs, start, 96, 3)


def _splitmix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def test_restart_start_is_splitmix64_mapped_into_the_limits():
    lo = np.array([-1.0, 0.5, -np.inf, -2.0])
    hi = np.array([1.0, 2.5, np.inf, -2.0 + 1e-3])
    limited = np.isfinite(lo) & np.isfinite(hi)
    q0 = np.array([0.0, 1.0, 0.25, -2.0])
    seen = set()
    for seed, b, a in [(0, 0, 1), (0, 0, 2), (0, 1, 1), (7, 0, 1), (2**40 + 3, 4095, 8)]:
        out = np.empty(4)
        with np.errstate(over="ignore"):  # uncompiled (ANIMKIT_JIT=0), NumPy's scalars report the wrap mod 2⁶⁴
            restart_start(seed, b, a, q0, lo, hi, limited, out)
        z = _splitmix((_splitmix((_splitmix(seed) + b) & M64) + a) & M64)
        u = np.array([(_splitmix((z + j) & M64) >> 11) / 2.0**53 for j in range(4)])
        want = [lo[j] + u[j] * (hi[j] - lo[j]) if limited[j] else q0[j] + (2.0 * u[j] - 1.0) * math.pi
                for j in range(4)]
        np.testing.assert_array_equal(out, want)
        assert np.all(out[limited] >= lo[limited]) and np.all(out[limited] <= hi[limited])
        assert abs(out[2] - q0[2]) <= math.pi
        seen.add(tuple(out))
    assert len(seen) == 5  # every (seed, problem, attempt) draws its own start


def _lanes(problem, q0, P, R, opts, **kw):
    """lm_lanes on the problem's chain: the six outputs (and ``tries`` when given)."""
    from animkit.ik.lm_batch_jit import lm_lanes

    ch = serial_chain(problem.model)
    return lm_lanes(loop_chain(ch, opts), loop_settings(opts), q0, P, R, opts.row_weights, **kw)


def _restart_options(problem):
    o = problem.options
    return replace(o, max_iter=min(o.max_iter, RESTART_MAX_ITER), stall_window=RESTART_STALL[0],
                   stall_ratio=RESTART_STALL[1])


@pytest.mark.slow
@pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")
def test_restarts_inside_the_lanes_equal_rounds_of_plain_runs(panda):
    """The kernel's restarts (lanes that take a problem's next start at once, several starts of one problem side
    by side at the end) against the definition run round by round: attempt a of every problem not yet converged,
    from restart_start(seed, b, a), pull μ₀ = RESTART_PULL; returned: the lowest converged attempt, else the lowest
    error (the lower attempt on a tie). Bit for bit: q, iterations, reasons, errors, history, starts used."""
    fig, start, problem, T = panda
    opts = _restart_options(problem)
    model = problem.model
    B, k, seed = len(T), 6, 11
    q0 = np.repeat(start[model.dofs][None], B, 0)
    P, R = np.ascontiguousarray(T[:, :3, 3]), np.ascontiguousarray(T[:, :3, :3])
    tries = np.zeros(B, dtype=np.intp)
    got = _lanes(problem, q0, P, R, opts, restarts=k, seed=seed, restart_pull=RESTART_PULL, tries=tries)

    q, it, why, pos, ori, hist = (np.array(x) for x in _lanes(problem, q0, P, R, opts))
    cols = [hist[: it[b] + 1, b] for b in range(B)]
    used = np.zeros(B, dtype=np.intp)
    limited = np.isfinite(model.lower) & np.isfinite(model.upper)
    for a in range(1, k + 1):
        fail = np.flatnonzero(why != 0)
        if fail.size == 0:
            break
        starts = np.empty((fail.size, model.n))
        for j, b in enumerate(fail):
            with np.errstate(over="ignore"):
                restart_start(seed, int(b), a, q0[b], model.lower, model.upper, limited, starts[j])
        o = _lanes(problem, starts, P[fail], R[fail], replace(opts, pull=RESTART_PULL))
        used[fail] = a
        for j, b in enumerate(fail):
            if o[2][j] == 0 or o[5][o[1][j], j] < cols[b][-1]:
                q[b], it[b], why[b], pos[b], ori[b] = o[0][j], o[1][j], o[2][j], o[3][j], o[4][j]
                cols[b] = o[5][: o[1][j] + 1, j]
    assert (why != 0).sum() < (_lanes(problem, q0, P, R, opts)[2] != 0).sum()  # restarts did something
    assert used.max() >= 2
    for x, y, name in zip(got[:5], (q, it, why, pos, ori), ("q", "iterations", "reason", "position", "orientation"),
                          strict=True):
        np.testing.assert_array_equal(x, y, err_msg=name)
    for b in range(B):
        np.testing.assert_array_equal(got[5][: it[b] + 1, b], cols[b])
        assert np.all(got[5][it[b]:, b] == cols[b][-1])
    np.testing.assert_array_equal(tries, used)


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
@pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")
def test_a_chunk_draws_the_starts_the_whole_batch_would(panda):
    fig, start, problem, T = panda
    opts = _restart_options(problem)
    q0 = np.repeat(start[problem.model.dofs][None], len(T), 0)
    P, R = np.ascontiguousarray(T[:, :3, 3]), np.ascontiguousarray(T[:, :3, :3])
    whole = _lanes(problem, q0, P, R, opts, restarts=5, seed=2)
    part = _lanes(problem, q0[40:], P[40:], R[40:], opts, restarts=5, seed=2, index0=40)
    for x, y in zip(whole[:5], part[:5], strict=True):
        np.testing.assert_array_equal(x[40:], y)


def _check_by_fk(fig, problem, T, res):
    """Every converged answer meets its target by the figure's own FK; every pose lies inside the limits; the
    errors are (longest run + 1, B), each column held from its own run's end."""
    assert res.errors.shape == (int(res.iterations.max()) + 1, len(T))
    for i in range(len(T)):
        assert np.all(res.errors[res.iterations[i]:, i] == res.errors[-1, i])
    lim = fig.dof_limits()
    assert np.all(res.poses >= lim[:, 0] - 1e-12) and np.all(res.poses <= lim[:, 1] + 1e-12)
    opts = problem.options
    for i in np.flatnonzero(res.converged):
        assert_meets(fig, EFF, res.poses[i], T[i], opts.tol, opts.orientation_tol)


def test_solve_batch_with_restarts(panda, lm_path):
    """On both loops (the compiled lanes; NumPy's rounds): restarts raise the converged share, every answer checks
    by FK, a problem that converged on its first run used no restart, the same seed gives the same answers."""
    fig, start, problem, T = panda
    plain = problem.solve_batch(T, quiet=True)
    res = problem.solve_batch(T, restarts=8, seed=5, quiet=True)
    _check_by_fk(fig, problem, T, res)
    assert res.converged.mean() >= plain.converged.mean() - 0.02 and res.converged.mean() >= 0.95
    first = problem.solve_batch(T, restarts=8, seed=5, quiet=True)
    np.testing.assert_array_equal(first.poses, res.poses)
    assert res.restarts_used.max() <= 8 and res.restarts_used.sum() > 0
    assert np.all(res.restarts_used[~res.converged] == 8)  # a problem that never converged ran every start
    assert res.result(int(np.argmax(res.restarts_used))).restarts_used == int(res.restarts_used.max())
    np.testing.assert_array_equal(plain.restarts_used, 0)
    other = problem.solve_batch(T, restarts=8, seed=6, quiet=True)
    moved = res.restarts_used > 0
    assert not np.array_equal(other.poses[moved], res.poses[moved])
    one_line = solve_batch(fig, start, EFF, T, chain="arm", restarts=8, seed=5, quiet=True)  # the one-line form
    np.testing.assert_array_equal(one_line.poses, res.poses)


def test_restarts_in_rounds_for_another_solver(panda):
    """DLS (no lanes): the NumPy rounds; more problems converge than without restarts, and each checks by FK."""
    fig, start, problem, T = panda
    dls = problem.using("dls")
    plain = dls.solve_batch(T[:24], quiet=True)
    res = dls.solve_batch(T[:24], restarts=4, quiet=True)
    _check_by_fk(fig, dls, T[:24], res)
    assert res.converged.sum() > plain.converged.sum()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_restarts_must_be_a_count(panda, bad):
    with pytest.raises(IKError, match="restarts must be an integer"):
        panda[2].solve_batch(panda[3][:2], restarts=bad)
