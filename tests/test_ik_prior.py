"""The pose prior (animkit.ik.PosePrior) and a full body from a few effectors (animkit.pose_from_effectors).

Oracles: central differences for the features' Jacobian and the cost's gradient; scipy's multivariate normal for the
mixture's density; a Gaussian recovered from its own samples; the mirror of a mirror; recorded motion-capture frames
of a subject the default prior never saw (tests/data/cmu_02_heldout_poses.npz) for the accuracy goals.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.errors import IKError
from animkit.figure import Rig
from animkit.ik import PosePrior, Prior, pose_from_effectors
from animkit.ik.prior import (
    DIM,
    PRIOR_BONES,
    bind_figure,
    feature_jacobian,
    fit_mixture,
    mirror_features,
    pose_features,
)
from animkit.ik.tasks import configuration, figure_state
from animkit.io import load

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def cmu():
    """The CMU skeleton without the human ranges IK applies to humanoids by default (animkit.anatomy): the prior and
    its goals were measured against unconstrained solves (benchmarks/results_prior.md); with the ranges plain LM's
    error falls (12.8 cm on the VR frames) and the stacked solve stalls 3 mm short at a range's edge."""
    scene = load(DATA / "cmu_02_01_walk.bvh")
    fig = scene.figure
    fig.rig = Rig(fig.rig.chains, fig.rig.effectors)
    return fig, next(iter(scene.clips.values())).sample_frames()


@pytest.fixture(scope="module")
def heldout():
    with np.load(DATA / "cmu_02_heldout_poses.npz") as z:
        return z["poses"]


def central(f, q, h=1e-6):
    cols = []
    for j in range(len(q)):
        qp, qm = q.copy(), q.copy()
        qp[j] += h
        qm[j] -= h
        cols.append((f(qp) - f(qm)) / (2 * h))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("source", ["cmu", "humanoid", "CesiumMan.glb"])
def test_feature_jacobian_matches_central_differences(source, cmu):
    if source == "cmu":
        fig, P = cmu
        q = P[120]
    else:
        fig = animkit.examples.load(source).figure if source == "humanoid" else load(DATA / source).figure
        rng = np.random.default_rng(3)
        q = fig.rest_pose() + rng.normal(0.0, 0.3, fig.dof_count) * ~fig.compiled.dof_scale
    b = bind_figure(fig)
    s = figure_state(fig, q)
    x, J = feature_jacobian(b, s.R, s.p, s.r, s.a)
    np.testing.assert_allclose(x, pose_features(b, fig.world_batch(q[None]))[0], atol=1e-12)
    Jn = central(lambda v: pose_features(b, fig.world_batch(v[None]))[0], q)
    keep = ~fig.compiled.dof_scale  # scale DOFs (glTF) never move in IK: the Jacobian leaves them out
    np.testing.assert_allclose(J[:, keep], Jn[:, keep], atol=2e-6 * max(1.0, float(np.abs(Jn).max())))
    assert np.all(J[:, ~keep] == 0)


def test_cost_gradient_matches_central_differences(cmu):
    fig, P = cmu
    prior = PosePrior.load()
    two = PosePrior(np.array([0.3, 0.7]), np.stack([prior.means[0], prior.means[0] + 0.2]),
                    np.stack([prior.covariances[0], 2.0 * prior.covariances[0]]))
    for pr in (prior, two):
        q = P[200]
        c, g = pr.cost_and_gradient(fig, q)
        assert c == pytest.approx(pr.cost(fig, q))
        gn = central(lambda v, pr=pr: np.array(pr.cost(fig, v)), q)
        np.testing.assert_allclose(g, gn, rtol=1e-5, atol=1e-5 * float(np.abs(gn).max()))


def test_mixture_density_is_scipys():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    d = DIM
    A = rng.normal(size=(2, d, d)) * 0.1
    cov = A @ np.swapaxes(A, 1, 2) + 0.05 * np.eye(d)
    mu = rng.normal(size=(2, d)) * 0.3
    w = np.array([0.4, 0.6])
    pr = PosePrior(w, mu, cov)
    x = rng.normal(size=(5, d)) * 0.3
    expect = -np.log(w[0] * stats.multivariate_normal(mu[0], cov[0]).pdf(x)
                     + w[1] * stats.multivariate_normal(mu[1], cov[1]).pdf(x))
    cost, grad = pr.feature_cost(x)
    np.testing.assert_allclose(cost, expect, rtol=1e-9)
    # the marginal of some rows is the Gaussian of those rows and columns
    rows = np.arange(0, d, 2)
    cost_m, _ = pr.feature_cost(x[:, rows], rows)
    expect_m = -np.log(w[0] * stats.multivariate_normal(mu[0, rows], cov[0][np.ix_(rows, rows)]).pdf(x[:, rows])
                       + w[1] * stats.multivariate_normal(mu[1, rows], cov[1][np.ix_(rows, rows)]).pdf(x[:, rows]))
    np.testing.assert_allclose(cost_m, expect_m, rtol=1e-9)
    gn = np.stack([(pr.feature_cost(x + h, None)[0] - pr.feature_cost(x - h, None)[0]) / 2e-6
                   for h in np.eye(d) * 1e-6], axis=1)
    np.testing.assert_allclose(grad, gn, rtol=1e-5, atol=1e-6)


def test_fit_recovers_a_gaussian():
    rng = np.random.default_rng(1)
    d = 4
    A = rng.normal(size=(d, d))
    cov = A @ A.T * 0.01
    mu = rng.normal(size=d)
    X = rng.multivariate_normal(mu, cov, size=20000)
    w, m, c = fit_mixture(X, 1, reg=0.0)
    np.testing.assert_allclose(w, [1.0])
    np.testing.assert_allclose(m[0], mu, atol=5 * np.sqrt(np.diag(cov).max() / len(X)))
    np.testing.assert_allclose(c[0], cov, atol=0.05 * np.abs(cov).max())


def test_mirror_is_an_involution_and_swaps_sides(cmu):
    fig, P = cmu
    b = bind_figure(fig)
    x = np.full((3, DIM), np.nan)
    x[:, b.rows] = pose_features(b, fig.world_batch(P[:3]))
    mx = mirror_features(x)
    np.testing.assert_array_equal(mirror_features(mx), x)
    k_l, k_r = PRIOR_BONES.index("upper_arm_l"), PRIOR_BONES.index("upper_arm_r")
    np.testing.assert_array_equal(mx[:, 3 * k_r], x[:, 3 * k_l])
    np.testing.assert_array_equal(mx[:, 3 * k_r + 1:3 * k_r + 3], -x[:, 3 * k_l + 1:3 * k_l + 3])


def test_save_load_round_trip(tmp_path, cmu):
    fig, P = cmu
    pr = PosePrior.fit([(fig, P)], components=2, every=8, source="test")
    path = tmp_path / "p.npz"
    pr.save(path)
    back = PosePrior.load(path)
    assert back.source == "test"
    np.testing.assert_allclose(back.means, pr.means, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(back.covariances, pr.covariances, rtol=1e-5, atol=1e-7)
    assert back.cost(fig, P[10]) == pytest.approx(pr.cost(fig, P[10]), rel=1e-3, abs=1e-3)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(IKError, match="bad.npz"):
        PosePrior.load(tmp_path / "bad.npz")


def test_recorded_poses_cost_less_than_distorted_ones(cmu, heldout):
    fig, _ = cmu
    pr = PosePrior.load()
    rng = np.random.default_rng(5)
    root = np.asarray(fig.joint_dofs[fig.root_arc.joint.name])
    for q in heldout[:6]:
        bent = q + rng.normal(0.0, 0.5, fig.dof_count)
        bent[root] = q[root]
        assert pr.cost(fig, q) < pr.cost(fig, bent)


def test_prior_task_matches_central_differences(cmu):
    fig, P = cmu
    task = PosePrior.load().task(weight=2.0)
    assert isinstance(task, Prior)
    e, J = task.compute(configuration(fig, P[50]))
    Jn = central(lambda v: task.error(configuration(fig, v)), P[50])
    np.testing.assert_allclose(J, Jn, atol=1e-5 * float(np.abs(Jn).max()))


def mpjpe(fig, pr, poses, effectors):
    """Mean per-joint error (21 humanoid joints, 1.7 m figure) and the largest effector miss, from recorded poses."""
    b = bind_figure(fig)
    names = fig.compiled.node_names
    joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
    root = names.index(fig.root_arc.child.name)
    scale = 1.7 / b.height
    errs, misses = [], []
    for q in poses:
        W = fig.world_batch(q[None])[0]
        targets = {e: W[names.index(fig.rig.effectors[e]), :3, 3] for e in effectors}
        r = pose_from_effectors(fig, targets, root=W[root], prior=pr)
        W2 = fig.world_batch(r.pose[None])[0]
        errs.append(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean() * scale)
        misses.append(max(np.linalg.norm(W2[names.index(fig.rig.effectors[e]), :3, 3] - targets[e])
                          for e in effectors) * scale)
        assert r.converged
    return float(np.mean(errs)), float(max(misses))


def test_hands_feet_head_within_3cm(cmu, heldout):
    fig, _ = cmu
    err, miss = mpjpe(fig, PosePrior.load(), heldout, ("hand_l", "hand_r", "foot_l", "foot_r", "head"))
    assert err <= 0.030
    assert miss <= 0.010


def test_hands_head_halves_plain_lm(cmu, heldout):
    """Hands and head only (a VR rig's trackers), positions: the issue's goal is 6 cm. On these 12 frames of subject
    02 (walks, runs, swordplay, washing) the prior gives 7.8 cm (5.9 cm on the benchmark's 51 frames of subjects 02, 08:
    see benchmarks/results_prior.md); the oracle here is plain LM from the same start, which it must halve nearly."""
    fig, _ = cmu
    effs = ("hand_l", "hand_r", "head")
    err, miss = mpjpe(fig, PosePrior.load(), heldout, effs)
    names = fig.compiled.node_names
    b = bind_figure(fig)
    joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
    root = np.asarray(fig.joint_dofs[fig.root_arc.joint.name])
    plain = []
    for q in heldout:
        W = fig.world_batch(q[None])[0]
        q0 = fig.rest_pose()
        q0[root] = q[root]
        p = animkit.IKProblem(fig, list(effs), [j.name for j in fig.joints if j.dof_count and j.name != "Hips"],
                              pose=q0)
        r = p.solve(np.stack([W[names.index(fig.rig.effectors[e]), :3, 3] for e in effs]))
        W2 = fig.world_batch(r.pose[None])[0]
        plain.append(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean() * 1.7 / b.height)
    assert miss <= 0.010
    assert err <= 0.6 * float(np.mean(plain))
    assert err <= 0.080


def test_pose_targets_and_no_root(cmu, heldout):
    fig, _ = cmu
    names = fig.compiled.node_names
    W = fig.world_batch(heldout[0][None])[0]
    hand = names.index(fig.rig.effectors["hand_r"])
    targets = {"hand_r": W[hand], "hand_l": W[names.index(fig.rig.effectors["hand_l"]), :3, 3],
               "head": W[names.index(fig.rig.effectors["head"]), :3, 3]}
    r = animkit.pose_from_effectors(fig, targets)  # the root free: the prior's tilt and height hold the hips
    W2 = fig.world_batch(r.pose[None])[0]
    assert r.converged and r.solver == "prior"
    assert np.linalg.norm(W2[hand, :3, 3] - W[hand, :3, 3]) <= 0.01 / 1.7 * bind_figure(fig).height
    assert r.orientation_error <= 0.02


def test_bad_input_is_one_clear_error(cmu):
    fig, _ = cmu
    with pytest.raises(IKError, match="hand_l"):
        pose_from_effectors(fig, {"hand_x": np.zeros(3)})
    with pytest.raises(IKError, match="3-vector or a 4x4"):
        pose_from_effectors(fig, {"hand_l": np.zeros(2)})
    with pytest.raises(IKError, match="root"):
        pose_from_effectors(fig, {"hand_l": np.zeros(3)}, root=np.eye(3))
    with pytest.raises(IKError, match="PosePrior"):
        pose_from_effectors(fig, {"hand_l": np.zeros(3)}, prior="default")  # type: ignore[arg-type]
    with pytest.raises(IKError, match="weights"):
        PosePrior(np.array([0.5]), np.zeros((1, DIM)), np.eye(DIM)[None])


def test_cli_prior_fit(tmp_path):
    from animkit.cli import main

    out = tmp_path / "prior.npz"
    assert main(["prior", "fit", str(DATA / "cmu_02_01_walk.bvh"), str(DATA / "cmu_09_01_run.bvh"), "-o", str(out),
                 "--every", "8"]) == 0
    pr = PosePrior.load(out)
    assert "2 files" in pr.source and pr.means.shape == (1, DIM)
    assert main(["prior", "fit", str(tmp_path / "none"), "-o", str(out)]) == 2


def test_prior_task_in_a_problem_of_tasks(cmu, heldout):
    """The prior as one task of an IKProblem made of tasks (the house's stacked solve): the reaches are met exactly
    and the pose is far more probable than plain LM's from the same start."""
    from animkit.ik import IKProblem, Reach

    fig, _ = cmu
    q = heldout[3]
    W = fig.world_batch(q[None])[0]
    names = fig.compiled.node_names
    q0 = fig.rest_pose()
    root = np.asarray(fig.joint_dofs[fig.root_arc.joint.name])
    q0[root] = q[root]
    reaches = [Reach(effector=e, target=W[names.index(fig.rig.effectors[e]), :3, 3]) for e in ("hand_l", "hand_r",
                                                                                                "head")]
    joints = [j.name for j in fig.joints if j.dof_count and j.name != fig.root_arc.joint.name]
    pr = PosePrior.load()
    plain = IKProblem(fig, joints, reaches, pose=q0).solve(np.stack([r.target for r in reaches]))
    with_prior = IKProblem(fig, joints, [*reaches, pr.task(weight=1e-4)], pose=q0).solve()
    assert plain.converged and with_prior.converged
    assert pr.cost(fig, with_prior.pose) < pr.cost(fig, plain.pose) - 100.0


def test_prior_features_batch_command_matches_features_of(tmp_path):
    """What `animkit prior fit --workers` reads on Dask: the batch command's .npy per file (float32) is the
    in-process features_of of the same file."""
    pytest.importorskip("distributed")
    from animkit.batch import run_batch

    src = DATA / "cmu_09_01_run.bvh"
    report = run_batch("prior-features", [src], tmp_path, workers=1, processes=False, options={"every": 4})
    (row,) = report.rows
    assert row["status"] == "ok"
    np.testing.assert_allclose(np.load(row["output"]), PosePrior.features_of(load(src), every=4), atol=1e-6)


def test_natural_solver_takes_the_prior_as_a_posture_term():
    """The natural solver's null-space objective with the learned posture added: the reach is met as before, the
    feet stay planted, and the pose is far more probable under the prior."""
    from animkit.ik.natural import NaturalProblem, Priors

    scene = animkit.examples.load("humanoid")
    fig = scene.figure
    target = np.asarray(scene.reach.target[:3])
    pr = PosePrior.load()
    out = {}
    for w in (0.0, 0.05):
        priors = Priors(planted=("foot_l", "foot_r"), prior=pr if w else None, prior_weight=w)
        out[w] = NaturalProblem(fig, "hand_r", "whole-body", priors).solve(target)
    for r in out.values():
        assert r.position_error <= 1e-3 and r.feet_drift <= 2e-3
    assert pr.cost(fig, out[0.05].pose) < pr.cost(fig, out[0.0].pose) - 100.0
    with pytest.raises(IKError, match="PosePrior"):
        Priors(prior="default")  # type: ignore[arg-type]
