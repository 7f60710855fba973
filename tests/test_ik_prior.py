"""The pose prior (animkit.ik.PosePrior) and a full body from a few effectors (animkit.pose_from_effectors).

Oracles: central differences for the features' Jacobian and the cost's gradient; scipy's multivariate normal for the
mixture's density; a Gaussian recovered from its own samples; the mirror of a mirror; recorded motion-capture frames
of the two subjects the default prior never saw (tests/data/cmu_02_heldout.bvh, cmu_08_heldout.bvh: the benchmark's
51 frames) for the accuracy goals; the NumPy path for the compiled one; ChainModel.project_cones for the compiled
cone projection. The figures keep the human ranges IK gives a humanoid by default (animkit.anatomy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.errors import IKError
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
    """The CMU skeleton of subject 02 (with the human ranges IK gives a humanoid) and a walk of it."""
    scene = load(DATA / "cmu_02_01_walk.bvh")
    return scene.figure, next(iter(scene.clips.values())).sample_frames()


@pytest.fixture(scope="module")
def subjects():
    """The held-out frames: 3 a trial (evenly spaced) of every library trial of subjects 02 (6 trials: walks, runs,
    swordplay, washing) and 08 (11 walks), each subject on its own skeleton: 51 frames, the benchmark's."""
    out = []
    for name in ("cmu_02_heldout.bvh", "cmu_08_heldout.bvh"):
        scene = load(DATA / name)
        out.append((scene.figure, next(iter(scene.clips.values())).sample_frames()))
    return out


@pytest.fixture(scope="module")
def heldout(subjects):
    """Subject 02's held-out frames (they play on the `cmu` skeleton: the same HIERARCHY)."""
    return subjects[0][1]


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


def solve_frames(sets, effectors, pr=None, every=1):
    """pose_from_effectors on recorded frames (targets: the effectors' recorded positions; root given): per frame the
    mean per-joint error (21 humanoid joints, 1.7 m figure) and the largest effector miss, and every result."""
    errs, misses, results = [], [], []
    for fig, poses in sets:
        b = bind_figure(fig)
        names = fig.compiled.node_names
        joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
        root = names.index(fig.root_arc.child.name)
        scale = 1.7 / b.height
        for q in poses[::every]:
            W = fig.world_batch(q[None])[0]
            targets = {e: W[names.index(fig.rig.effectors[e]), :3, 3] for e in effectors}
            r = pose_from_effectors(fig, targets, root=W[root], prior=pr)
            W2 = fig.world_batch(r.pose[None])[0]
            errs.append(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean() * scale)
            misses.append(max(np.linalg.norm(W2[names.index(fig.rig.effectors[e]), :3, 3] - targets[e])
                              for e in effectors) * scale)
            results.append((fig, r))
    return np.array(errs), np.array(misses), results


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_hands_feet_head_within_3cm(subjects):
    """The issue's goal on all 51 held-out frames of both subjects: ≤ 3 cm per joint, effectors within 1 cm."""
    errs, misses, results = solve_frames(subjects, ("hand_l", "hand_r", "foot_l", "foot_r", "head"))
    assert all(r.converged for _, r in results)
    assert errs.mean() <= 0.030
    assert misses.max() <= 0.010


@pytest.mark.slow  # 77 s in a 2-worker run of the suite on the loaded 2-core machine: CI runs it (.ci/run)
def test_hands_head_within_6cm_and_half_plain_lm(subjects):
    """Hands and head only (a VR rig's trackers), positions: the issue's goal (6 cm) with margin on all 51 held-out
    frames of both subjects — 4.72 cm with the prior centred on the nearest stored poses (5.92 cm without), so
    5.2 cm — effectors within 1 cm; and against plain LM from the same start (every tenth frame: plain LM with the
    ranges takes seconds a pose) about half its error."""
    effs = ("hand_l", "hand_r", "head")
    errs, misses, results = solve_frames(subjects, effs)
    assert all(r.converged for _, r in results)
    assert misses.max() <= 0.010
    assert errs.mean() <= 0.052
    plain, mine = [], []
    k = 0
    for fig, poses in subjects:
        names = fig.compiled.node_names
        b = bind_figure(fig)
        joints = np.array(sorted(set(b.node.tolist()) | {b.hips}))
        root = np.asarray(fig.joint_dofs[fig.root_arc.joint.name])
        chain = [j.name for j in fig.joints if j.dof_count and j.name != fig.root_arc.joint.name]
        for i, q in enumerate(poses):
            if (k + i) % 10 == 0:
                W = fig.world_batch(q[None])[0]
                q0 = fig.rest_pose()
                q0[root] = q[root]
                r = animkit.IKProblem(fig, list(effs), chain, pose=q0).solve(
                    np.stack([W[names.index(fig.rig.effectors[e]), :3, 3] for e in effs]))
                W2 = fig.world_batch(r.pose[None])[0]
                plain.append(np.linalg.norm(W2[joints, :3, 3] - W[joints, :3, 3], axis=1).mean() * 1.7 / b.height)
                mine.append(errs[k + i])
        k += len(poses)
    assert float(np.mean(mine)) <= 0.6 * float(np.mean(plain))


def test_results_keep_the_human_ranges(subjects):
    """Every joint with a human range (animkit.model.anatomy) ends inside it (ChainModel.project_cones leaves it alone),
    though the recorded frames themselves leave the ranges (CMU's wrists twist past ±10°)."""
    from animkit.ik.problem import compile_chain

    fig, poses = subjects[1]
    c = fig.compiled
    model = compile_chain(fig, fig.rest_pose(), np.flatnonzero(~c.dof_scale), list(c.node_names))
    assert len(model.cones) == len(fig.rig.limits) > 0
    recorded = poses[:, model.dofs]
    assert np.abs(model.project_cones(recorded) - recorded).max() > 0.1
    _, _, results = solve_frames([(fig, poses)], ("hand_l", "hand_r", "head"), every=6)
    for _, r in results:
        v = r.pose[model.dofs][None]
        np.testing.assert_allclose(model.project_cones(v), v, atol=1e-9)


def test_compiled_path_matches_numpy(subjects, monkeypatch):
    """The compiled loop (animkit.ik.effectors_jit) and the NumPy one (ANIMKIT_JIT=0) reach the same pose (with
    numba off, both runs take the NumPy path)."""
    from animkit import jit

    fig, poses = subjects[0]
    sets = [(fig, poses[[7]])]
    effs = ("hand_l", "hand_r", "foot_l", "foot_r", "head")
    _, _, fast = solve_frames(sets, effs)
    monkeypatch.setattr(jit, "ENABLED", False)
    _, _, slow = solve_frames(sets, effs)
    assert all(r.converged for _, r in fast + slow)
    h = bind_figure(fig).height
    for (_, a), (_, b) in zip(fast, slow, strict=True):
        Wa, Wb = fig.world_batch(a.pose[None])[0], fig.world_batch(b.pose[None])[0]
        assert np.abs(Wa[:, :3, 3] - Wb[:, :3, 3]).max() <= 1e-3 * h


def test_compiled_cone_projection_is_chain_models(cmu):
    """effectors_jit.project_cones against ChainModel.project_cones (swing–twist, ellipse, Euler angles nearest):
    the same angles on random poses, and a second pass moves nothing."""
    from animkit.ik import effectors_jit as ej
    from animkit.ik.problem import compile_chain

    fig, P = cmu
    c = fig.compiled
    model = compile_chain(fig, fig.rest_pose(), np.flatnonzero(~c.dof_scale), list(c.node_names))
    C = len(model.cones)
    links = np.array([cl.links for cl in model.cones], dtype=np.intp)
    axes = np.stack([model.axis[list(cl.links)] for cl in model.cones])
    Ar = np.stack([cl.rest if cl.cone.reference is None else np.asarray(cl.cone.reference) for cl in model.cones])
    t = np.stack([cl.axis / np.linalg.norm(cl.axis) for cl in model.cones])
    front = np.stack([np.zeros(3) if cl.cone.front is None else np.asarray(cl.cone.front) for cl in model.cones])
    reach = np.stack([np.full(4, -1.0) if cl.cone.reach is None else np.asarray(cl.cone.reach)
                      for cl in model.cones])
    swing = np.array([cl.cone.swing for cl in model.cones])
    twist = np.array([cl.cone.twist for cl in model.cones])
    cones = ej.Cones(links, axes, Ar, t, front, reach, swing, twist)
    rng = np.random.default_rng(7)
    hit = np.zeros(C, dtype=np.bool_)
    moved = 0
    for q in P[::60]:
        v = q[model.dofs] + rng.normal(0.0, 0.4, model.n)
        mine = v.copy()
        moved += ej.project_cones(mine, cones, 1e-12, hit)
        np.testing.assert_allclose(mine, model.project_cones(v[None])[0], atol=1e-8)
        again = mine.copy()
        assert ej.project_cones(again, cones, 1e-9, hit) == 0
    assert moved > 10


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
    from animkit.apps.cli import main

    out = tmp_path / "prior.npz"
    assert main(["prior", "fit", str(DATA / "cmu_02_01_walk.bvh"), str(DATA / "cmu_09_01_run.bvh"), "-o", str(out),
                 "--every", "8"]) == 0
    pr = PosePrior.load(out)
    assert "2 files" in pr.source and pr.means.shape == (1, DIM)
    assert main(["prior", "fit", str(tmp_path / "none"), "-o", str(out)]) == 2


@pytest.mark.slow  # 117 s in a 2-worker run of the suite on the loaded 2-core machine: CI runs it (.ci/run)
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
    from animkit.apps.batch import run_batch

    src = DATA / "cmu_09_01_run.bvh"
    report = run_batch("prior-features", [src], tmp_path, workers=1, processes=False, options={"every": 4})
    (row,) = report.rows
    assert row["status"] == "ok"
    np.testing.assert_allclose(np.load(row["output"]), PosePrior.features_of(load(src), every=4), atol=1e-6)


def test_natural_solver_takes_the_prior_as_a_posture_term():
    """The natural solver's null-space objective with the learned posture added: the reach is met as before, the
    feet stay planted, and the pose is far more probable under the prior."""
    from animkit.ik.natural import Priors

    scene = animkit.examples.load("humanoid")
    fig = scene.figure
    target = np.asarray(scene.reach.target[:3])
    pr = PosePrior.load()
    out = {}
    for w in (0.0, 0.05):
        priors = Priors(planted=("foot_l", "foot_r"), prior=pr if w else None, prior_weight=w)
        out[w] = priors.problem(fig, "hand_r", "whole-body").solve(target)
    for r in out.values():
        assert r.position_error <= 1e-3 and r.tasks is not None
        assert r.tasks["plant foot_l"] <= 2e-3 and r.tasks["plant foot_r"] <= 2e-3
    assert pr.cost(fig, out[0.05].pose) < pr.cost(fig, out[0.0].pose) - 100.0
    with pytest.raises(IKError, match="PosePrior"):
        Priors(prior="default")  # type: ignore[arg-type]


def test_scene_names_a_prior(tmp_path):
    """[reach.priors] prior = "default" or a file relative to the scene (docs/scene-format.md): read into the
    natural solver's Priors (the same means as the file's), written back as given; a missing file or a bad value is
    one ParseError naming the scene and the key."""
    from animkit.errors import ParseError
    from animkit.io.toml_scene import dumps_scene
    from animkit.motion.reach import priors_from_scene

    text = animkit.examples.path("humanoid").read_text()
    mine = PosePrior(np.array([1.0]), PosePrior.load().means[:1] + 0.01, PosePrior.load().covariances[:1], "mine")
    (tmp_path / "priors").mkdir()
    mine.save(tmp_path / "priors" / "mine.npz")
    scene_path = tmp_path / "scene.toml"
    scene_path.write_text(text.replace("[reach.priors]\n", '[reach.priors]\nprior = "priors/mine.npz"\n'
                                       "prior_weight = 0.05\n"))
    scene = load(scene_path)
    pri = priors_from_scene(scene)
    assert pri is not None and pri.prior_weight == 0.05 and pri.prior.source == "mine"
    np.testing.assert_allclose(pri.prior.means, mine.means, atol=1e-6)
    assert 'prior = "priors/mine.npz"' in dumps_scene(scene)
    scene_path.write_text(text.replace("[reach.priors]\n", '[reach.priors]\nprior = "default"\n'))
    pri = priors_from_scene(load(scene_path))
    np.testing.assert_array_equal(pri.prior.means, PosePrior.load().means)
    assert pri.prior_weight == 0.01  # Priors' default
    for bad, match in (('prior = "none.npz"', "none.npz"), ("prior = 3", "reach.priors.prior"),
                       ("prior_weight = -1", "reach.priors.prior_weight")):
        scene_path.write_text(text.replace("[reach.priors]\n", f"[reach.priors]\n{bad}\n"))
        with pytest.raises(ParseError, match=match) as info:
            load(scene_path)
        assert "scene.toml" in str(info.value)
