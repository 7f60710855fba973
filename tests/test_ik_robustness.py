from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from animkit import IKError
from animkit.ik import DLS, LM, SOLVERS, NullSpace, solve, solve_batch, solver_from_name
from animkit.model.figure import Figure
from animkit.model.joints import ball, hinge

from .ik_helpers import chain_dofs, load, natural_start, random_pose

ARM = load("six_axis_arm")
HUMAN = load("humanoid")

coords = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


@given(target=st.tuples(coords, coords, coords), seed=st.integers(0, 2 ** 16), six=st.booleans())
def test_default_solver_never_nan_and_never_worse_than_the_start(target, seed, six):
    fig = ARM.figure
    rng = np.random.default_rng(seed)
    start = random_pose(fig, np.arange(fig.dof_count), rng, margin=0.0)
    t = np.asarray(target)
    if six:
        from animkit.model.transforms import homogeneous, matrix_from_rotation_vector

        t = homogeneous(matrix_from_rotation_vector(rng.normal(size=3)), t)
    r = solve(fig, start, "tool", t, solver=LM(max_iter=60))
    assert np.all(np.isfinite(r.pose)) and np.all(np.isfinite(r.errors))
    assert r.errors[-1] <= r.errors[0] + 1e-12
    lim = fig.dof_limits()
    assert np.all(r.pose >= lim[:, 0]) and np.all(r.pose <= lim[:, 1])


@given(target=st.tuples(coords, coords, coords), seed=st.integers(0, 2 ** 16))
def test_humanoid_arm_random_starts_never_nan(target, seed):
    fig = HUMAN.figure
    rng = np.random.default_rng(seed)
    start = random_pose(fig, chain_dofs(HUMAN, "arm"), rng, base=fig.rest_pose(), margin=0.0)
    r = solve(fig, start, "hand_r", np.asarray(target) + (0, 1.2, 0), chain="arm", solver=LM(max_iter=40))
    assert np.all(np.isfinite(r.pose))
    assert r.errors[-1] <= r.errors[0] + 1e-12


def _opts(name: str, **options: object):
    """The named solver with some options changed."""
    return replace(solver_from_name(name), **options)


def _degenerate_figure():
    fig = Figure("base")
    fig.add("a", "base", joint=ball("shoulder", "zyx"))
    fig.add("b", "a", offset=(0, 0, 0), joint=hinge("twist", "z"))  # zero-length link
    fig.add("c", "b", offset=(0, 0, 1.0), joint=hinge("elbow", "x"))
    fig.add("d", "c", offset=(0, 0, 1.0))
    return fig


@pytest.mark.parametrize("solver", [s for s in SOLVERS if s != "two-bone"])
@pytest.mark.parametrize("target", [(0, 0, 2.0), (0, 0, 1.0), (0, 0, 0.0), (0, 0, -2.0), (0, 0, 5.0), (0, 1e-9, 2.0)])
def test_singular_starts_zero_links_and_targets_on_joints(solver, target):
    """Stretched start, target on the first axis, on a joint, at the base, behind, beyond reach."""
    fig = _degenerate_figure()
    for start in (np.zeros(fig.dof_count), np.array([0, 0, 0, 0, 0.3])):
        r = solve(fig, start, "d", np.asarray(target, dtype=float), solver=_opts(solver, max_iter=50))
        assert np.all(np.isfinite(r.pose)) and np.all(np.isfinite(r.errors))
        assert np.isfinite(r.position_error)
        if 0 < np.linalg.norm(target) <= 2.0 and solver in ("lm", "dls", "pinv", "ccd"):
            assert r.position_error < 1e-3 or r.reason != "converged"


def test_two_bone_degenerate_cases_stay_finite():
    fig = Figure("base")
    fig.add("a", "base", joint=ball("shoulder", "zxy"))
    fig.add("b", "a", offset=(0, 0, 1.0), joint=hinge("elbow", "x"))
    fig.add("c", "b", offset=(0, 0, 1.0))
    for target in ((0, 0, 2.0), (0, 0, 0.0), (0, 0, 5.0), (0, 0, -1.0), (1.0, 0, 0)):
        for start in (np.zeros(4), np.array([0.0, 0.0, 0.0, 0.5])):
            r = solve(fig, start, "c", np.asarray(target, dtype=float), solver="two-bone")
            assert np.all(np.isfinite(r.pose))


def test_batch_never_nan_on_degenerate_targets():
    fig = _degenerate_figure()
    T = np.array([[0, 0, 2.0], [0, 0, 0.0], [0, 0, 1.0], [0, 0, 9.0], [0.3, 0.2, 1.1]])
    b = solve_batch(fig, np.zeros(fig.dof_count), "d", T)
    assert np.all(np.isfinite(b.poses))
    assert b.reachable[3] is False and b.reason[3] == "unreachable"
    assert b.converged[4]


# --- IKError cases --------------------------------------------------------------------------------------


def test_errors():
    fig = ARM.figure
    q = fig.rest_pose()
    cases = [
        dict(effector="tol", target=(0.3, 0.2, 0.5)),  # unknown effector: close match named
        dict(effector="tool", target=(np.nan, 0.2, 0.5)),
        dict(effector="tool", target=(0.3, 0.2)),
        dict(effector="tool", target=np.eye(3)),
        dict(effector="tool", target=np.diag([1.0, 1.0, -1.0, 1.0])),  # not a rotation
        dict(effector="tool", target="abc"),
        dict(effector="tool", target=(0.3, 0.2, 0.5), solver="newton"),
        dict(effector="tool", target=(0.3, 0.2, 0.5), chain="nope"),
        dict(effector="tool", target=(0.3, 0.2, 0.5), tol=-1),
        dict(effector="tool", target=(0.3, 0.2, 0.5), solver="two-bone"),  # six joints on the path
        dict(effector="tool", target=(0.3, 0.2, 0.5), time_budget=0.01),  # without restarts
        dict(effector="tool", target=(0.3, 0.2, 0.5), weights=[1.0, 2.0]),
        dict(effector=["tool"], target=(0.3, 0.2, 0.5), solver=DLS(priority=True)),
        dict(effector="tool", target=(0.3, 0.2, 0.5), solver=NullSpace(alpha=[1.0, 2.0])),  # not one per DOF
    ]
    for kw in cases:
        with pytest.raises(IKError):
            solve(fig, q, **kw)
    with pytest.raises(IKError, match="tool"):
        solve(fig, q, "tol", (0.3, 0.2, 0.5))
    with pytest.raises(IKError):
        solve(fig, q[:3], "tool", (0.3, 0.2, 0.5))  # bad pose shape
    with pytest.raises(IKError):
        solve(fig, np.full(fig.dof_count, np.nan), "tool", (0.3, 0.2, 0.5))
    with pytest.raises(IKError):
        solve_batch(fig, q, "tool", np.zeros((4, 2)))


def test_the_one_line_solves_hand_their_options_to_the_problem() -> None:
    """``solve``/``solve_batch``'s weights and tolerances (``**options``) reach IKProblem: the same answers as the
    problem built with them, a tolerance that changes the answer changes it; another keyword is named."""
    from animkit.ik import IKProblem

    fig, q = ARM.figure, ARM.figure.rest_pose()
    target = fig.world(random_pose(fig, chain_dofs(ARM, "arm"), np.random.default_rng(2)))["tool"]
    opts = dict(tol=1e-3, orientation_tol=1e-2, orientation_weight=0.5, weights=[2.0])
    want = IKProblem(fig, "tool", "arm", pose=q, orientation=True, **opts).solve(target, q)
    got = solve(fig, q, "tool", target, chain="arm", **opts)
    np.testing.assert_array_equal(got.pose, want.pose)
    assert got.iterations == want.iterations and got.position_error == want.position_error
    tight = solve(fig, q, "tool", target, chain="arm", tol=1e-9, orientation_tol=1e-9)
    assert tight.converged and got.converged and tight.iterations > got.iterations
    batch = solve_batch(fig, q, "tool", target[None], chain="arm", **opts)
    np.testing.assert_array_equal(batch.iterations, [want.iterations])
    for call, args in ((solve, target), (solve_batch, target[None])):
        with pytest.raises(IKError, match=r"unknown keyword 'restart'.*did you mean 'restarts'.*'tol'"):
            call(fig, q, "tool", args, restart=3)
        with pytest.raises(IKError, match=r"unknown keyword 'tols'.*did you mean 'tol'"):
            call(fig, q, "tool", args, tols=1e-3)


def test_a_set_that_cannot_move_the_effector_names_both():
    sc = HUMAN
    with pytest.raises(IKError, match=r"left-arm.*hand_r|hand_r.*left-arm"):
        solve(sc.figure, natural_start(sc), "hand_r", (0.0, 1.0, 0.3), chain="left-arm")
    with pytest.raises(IKError, match="hand_r"):
        solve(sc.figure, natural_start(sc), "hand_r", (0.0, 1.0, 0.3), chain=["knee_l"])


def test_batches_larger_than_a_chunk_equal_single_chunk_runs(monkeypatch) -> None:
    import animkit.ik.strategy as strategy

    rng = np.random.default_rng(5)
    dofs = chain_dofs(ARM, "arm")
    lim = ARM.figure.dof_limits()[dofs]
    targets = []
    for _ in range(12):
        q = ARM.figure.rest_pose()
        q[dofs] = rng.uniform(lim[:, 0], lim[:, 1])
        targets.append(ARM.figure.world(q)["tool"][:3, 3])
    whole = solve_batch(ARM.figure, ARM.figure.rest_pose(), "tool", np.array(targets), chain="arm")
    monkeypatch.setattr(strategy, "BATCH_CHUNK", 5)  # three chunks: 5, 5, 2
    chunked = solve_batch(ARM.figure, ARM.figure.rest_pose(), "tool", np.array(targets), chain="arm",
                          quiet=True)
    np.testing.assert_allclose(chunked.poses, whole.poses, atol=1e-12)
    assert chunked.reason == whole.reason and (chunked.iterations == whole.iterations).all()
    assert chunked.errors.shape[1] == 12
