"""The range-of-motion task (animkit.ik.ranges): its values and rows, computed with every point Jacobian at once and
both knees side by side, against the same equations written point by point with ``point_jacobian`` (the path it
replaced), to 1e-12, at random poses and through a stack's partial frames; and ``point_jacobians`` against
``point_jacobian`` bit for bit."""

from __future__ import annotations

import math
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.ik.body import point_jacobian, point_jacobians
from animkit.ik.ranges import RANGE_DEGREES, Ranges, ranges_task
from animkit.ik.tasks import configuration
from animkit.model.humanoid import match_figure

from .conftest import SCENES
from .ik_helpers import whole_pose

FIG = animkit.load(SCENES / "humanoid.toml").figure
UP = np.array([0.0, 1.0, 0.0])
TASK = ranges_task(FIG, match_figure(FIG), UP, RANGE_DEGREES)


def _per_point(task: Ranges, c) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The module docstring's quantities, one point Jacobian and one leg at a time."""
    s = c.state
    hip = c.node(task.hips)
    rev = c.figure.compiled.dof_revolute
    moves = (c.body.moves[hip] & rev)[:, None]
    p, h = (s.R[hip] @ np.asarray(v, dtype=float) for v in task.pelvis)
    u = np.asarray(task.up, dtype=float)
    u = u / np.linalg.norm(u)

    def turned(v):
        return (np.cross(s.a, v) * moves).T

    def pj(i):
        return point_jacobian(c.figure, c.body, s, i, s.p[i])

    names, vals, rows = [], [], []
    b = task.bounds_deg
    if task.arms is not None and ("side_bend" in b or "twist" in b):
        il, ir = c.node(task.arms[0]), c.node(task.arms[1])
        d = s.p[ir] - s.p[il]
        Jd = pj(ir) - pj(il)
        if "side_bend" in b:
            n = np.linalg.norm(d)
            sv = d / n
            sig = sv @ p
            ds = (np.eye(3) - np.outer(sv, sv)) @ Jd / n
            names.append("side_bend")
            vals.append(math.asin(np.clip(sig, -1, 1)))
            rows.append((p @ ds + sv @ turned(p)) / max(math.sqrt(max(1 - sig * sig, 0)), 1e-9))
        if "twist" in b:
            g = np.cross(p, h)
            X, Y = d @ h, d @ g
            dX, dY = h @ Jd + d @ turned(h), g @ Jd + d @ turned(g)
            names.append("twist")
            vals.append(math.atan2(Y, X))
            rows.append((X * dY - Y * dX) / max(X * X + Y * Y, 1e-300))
    if "pelvis_roll" in b:
        r = h @ u
        names.append("pelvis_roll")
        vals.append(math.asin(np.clip(r, -1, 1)))
        rows.append((u @ turned(h)) / max(math.sqrt(max(1 - r * r, 0)), 1e-9))
    if "knee_in" in b:
        for leg in task.legs:
            k, a, t, o = (c.node(x) for x in leg)
            va = s.p[k] - s.p[a]
            la = np.linalg.norm(va)
            ah = va / la
            m = np.cross(u, s.p[t] - s.p[a])
            lm = max(np.linalg.norm(m), 1e-300)
            sign = -1.0 if m @ (s.p[o] - s.p[a]) < 0 else 1.0
            n = sign * m / lm
            dah = (np.eye(3) - np.outer(ah, ah)) @ (pj(k) - pj(a)) / la
            dn = sign * (np.eye(3) - np.outer(n, n)) @ np.cross(u, (pj(t) - pj(a)).T).T / lm
            x = ah @ n
            names.append("knee_in")
            vals.append(math.asin(np.clip(x, -1, 1)))
            rows.append((n @ dah + ah @ dn) / max(math.sqrt(max(1 - x * x, 0)), 1e-9))
    return names, np.array(vals), np.array(rows).reshape(-1, c.figure.dof_count)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.sampled_from([dict(RANGE_DEGREES), {"knee_in": 5.0},
                                                     {"side_bend": 30.0, "pelvis_roll": 5.0}, {"twist": 40.0}]))
def test_values_match_the_per_point_equations(seed, bounds) -> None:
    """values() (and bounds(), compute(), report() built on it) equal the point-by-point equations to 1e-12, for
    every subset of bounds, at random poses; a task pickled and loaded gives the same."""
    rng = np.random.default_rng(seed)
    task = ranges_task(FIG, match_figure(FIG), UP, bounds)
    assert task is not None
    for _ in range(3):
        c = configuration(FIG, whole_pose(FIG, rng))
        names, v, J = task.values(c)
        want_names, want_v, want_J = _per_point(task, c)
        assert names == want_names
        np.testing.assert_allclose(v, want_v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, want_J, rtol=0, atol=1e-12 * max(1.0, float(np.abs(want_J).max())))
    again = pickle.loads(pickle.dumps(task))
    np.testing.assert_array_equal(again.values(c)[2], J)


def test_values_follow_the_figure_they_are_given() -> None:
    """One task asked about two figures (the same rig rebuilt, and a stack's frames) reads each one's nodes."""
    rng = np.random.default_rng(7)
    p = whole_pose(FIG, rng)
    other = animkit.load(SCENES / "humanoid.toml").figure
    for fig in (FIG, other, FIG):
        c = configuration(fig, p)
        np.testing.assert_allclose(TASK.values(c)[2], _per_point(TASK, c)[2], rtol=0, atol=1e-12)


def test_values_in_a_natural_stack_match_on_its_partial_frames() -> None:
    """Through a natural problem's stack (frames only for the nodes its movable set reaches, zero DOF frames
    elsewhere) the task gives the point-by-point numbers too."""
    from animkit.ik.natural import Priors
    from animkit.ik.stack import TaskStack, stack_tasks
    from animkit.ik.tasks import body_from_figure

    p0 = FIG.rest_pose()
    prob = Priors().problem(FIG, "hand_r", "whole-body", pose=p0)
    body = body_from_figure(FIG)
    stack = TaskStack(FIG, body, prob.model, p0, tuple(stack_tasks(prob.tasks, configuration(FIG, p0, body))),
                      prob.tol, prob.orientation_tol)
    task = next(t for t in stack.tasks if isinstance(t, Ranges))
    rng = np.random.default_rng(3)
    for _ in range(3):
        c = stack.config(stack.clamp(whole_pose(FIG, rng)[stack.dofs] * 0.5))
        names, v, J = task.values(c)
        want = _per_point(task, c)
        assert names == want[0]
        np.testing.assert_allclose(v, want[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, want[2], rtol=0, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_point_jacobians_are_point_jacobian_bit_for_bit(seed) -> None:
    rng = np.random.default_rng(seed)
    c = configuration(FIG, whole_pose(FIG, rng))
    nodes = rng.integers(0, len(FIG.node_names), 6)
    x = c.state.p[nodes] + rng.normal(size=(6, 3))
    got = point_jacobians(FIG, c.body, c.state, nodes, x)
    for i, (n, xi) in enumerate(zip(nodes, x, strict=True)):
        assert np.array_equal(got[i], point_jacobian(FIG, c.body, c.state, int(n), xi))
