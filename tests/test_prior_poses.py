"""The pose prior's stored training poses (animkit.ik.prior_poses): placed on a figure by canonical FK, looked up by
the effectors' positions in the hips' frame.

Oracles: the figure's own FK (animkit's world matrices) for the placed keys, on poses whose in-between joints are at
rest (where canonical FK is exact), and on recorded motion capture within the in-between joints' motion; a sort of
all distances for the nearest poses; a save/load round trip.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.errors import IKError
from animkit.ik import PosePrior
from animkit.ik.prior import DIM, bind_figure, pose_features
from animkit.ik.prior_poses import KEY_EFFECTORS, nearest_mean, placed_keys, pose_set, query_key
from animkit.io import load

DATA = Path(__file__).parent / "data"


def keys_by_fk(fig, b, W):
    """query_key of each pose's own effector positions (the rig's effectors): what the stored keys must be."""
    names = fig.compiled.node_names
    out = []
    for Wf in W:
        tg = {e: Wf[names.index(fig.rig.effectors[e]), :3, 3] for e in KEY_EFFECTORS}
        key, given = query_key(b, Wf[b.hips, :3, :3], Wf[b.hips, :3, 3], tg)
        assert given.all()
        out.append(key)
    return np.array(out)


def test_placed_keys_are_the_figures_fk_when_in_between_joints_rest():
    """On the humanoid example, random poses that turn only the prior's bones (and the root): canonical FK from the
    features alone gives each effector exactly where the figure's FK puts it, in the hips' frame over its height."""
    fig = animkit.examples.load("humanoid").figure
    b = bind_figure(fig)
    c = fig.compiled
    on_bones = np.isin(np.asarray(c.dof_node), list(b.node) + [b.hips]) & ~c.dof_scale
    rng = np.random.default_rng(11)
    Q = fig.rest_pose()[None] + rng.normal(0.0, 0.5, (12, fig.dof_count)) * on_bones
    W = fig.world_batch(Q)
    X = np.zeros((len(Q), DIM))
    X[:, b.rows] = pose_features(b, W)
    np.testing.assert_allclose(placed_keys(b, X), keys_by_fk(fig, b, W), atol=1e-9)


def test_placed_keys_on_recorded_frames_within_the_in_between_joints():
    """On CMU frames (whose in-between joints, LHipJoint and the like, move a little): within 8 cm of a 1.7 m
    figure, and the root's own motion (translation, turn) changes nothing."""
    scene = load(DATA / "cmu_02_01_walk.bvh")
    fig = scene.figure
    P = next(iter(scene.clips.values())).sample_frames()[::40]
    b = bind_figure(fig)
    W = fig.world_batch(P)
    X = np.zeros((len(P), DIM))
    X[:, b.rows] = pose_features(b, W)
    err = np.linalg.norm(placed_keys(b, X) - keys_by_fk(fig, b, W), axis=-1) * 1.7
    assert err.max() <= 0.08 and np.median(err) <= 0.03


def test_nearest_mean_is_the_sorted_distances_mean():
    rng = np.random.default_rng(2)
    M = 300
    poses = rng.normal(size=(M, DIM))
    keys = rng.normal(size=(M, len(KEY_EFFECTORS), 3))
    key = rng.normal(size=(len(KEY_EFFECTORS), 3))
    given = np.array([True, True, False, False, True])
    root = rng.normal(size=3)
    d2 = ((keys[:, given] - key[given]) ** 2).sum(axis=(1, 2)) + ((poses[:, -3:] - root) ** 2).sum(axis=1)
    for k in (1, 5, 40):
        np.testing.assert_allclose(nearest_mean(poses, keys, key, given, root, k),
                                   poses[np.argsort(d2)[:k]].mean(axis=0), atol=1e-12)
    # a stored pose's own key finds it
    given = np.ones(len(KEY_EFFECTORS), dtype=bool)
    np.testing.assert_array_equal(nearest_mean(poses, keys, keys[17], given, poses[17, -3:], 1), poses[17])


def test_pose_set_and_round_trip(tmp_path):
    X = np.arange(10 * DIM, dtype=float).reshape(10, DIM)
    np.testing.assert_array_equal(pose_set(X, 4), X[[0, 3, 6, 9]])
    assert pose_set(X, 100).shape == (10, DIM)
    pr = PosePrior.load()
    assert pr.poses is not None and pr.poses.shape[1] == DIM
    path = tmp_path / "p.npz"
    pr.save(path)
    back = PosePrior.load(path)
    assert back.poses is not None
    np.testing.assert_allclose(back.poses, pr.poses, atol=1e-6)
    plain = PosePrior(pr.weights, pr.means, pr.covariances, "no poses")
    plain.save(path)
    assert PosePrior.load(path).poses is None
    with pytest.raises(IKError, match="poses"):
        PosePrior(pr.weights, pr.means, pr.covariances, poses=np.full((3, DIM), np.nan))
