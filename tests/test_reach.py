"""The main job: baked reaches and movable-set comparisons, against the solver's own results and FK."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

import animkit
from animkit.apps.commands import panel_clips
from animkit.errors import IKError
from animkit.ik import LM, solve
from animkit.ik.natural import Natural
from animkit.motion.reach import (
    NATURAL_DIRECT_ITERATIONS,
    bake_reach,
    compare,
    priors_from_scene,
    smoothstep,
)

from .cli_helpers import run_cli
from .conftest import ROOT, SCENES


@pytest.fixture(scope="module")
def humanoid():
    return animkit.load(SCENES / "humanoid.toml")


@pytest.fixture(scope="module")
def comparison(humanoid):
    return compare(humanoid)


def test_smoothstep_starts_and_ends_at_rest() -> None:
    u = np.linspace(0, 1, 101)
    s = smoothstep(u)
    assert s[0] == 0 and s[-1] == 1 and np.all(np.diff(s) >= 0)
    h = 1e-6
    assert abs((smoothstep(h) - smoothstep(0)) / h) < 1e-5 and abs((smoothstep(1) - smoothstep(1 - h)) / h) < 1e-5


def test_baked_reach_ends_at_a_reachable_target(humanoid) -> None:
    fig = humanoid.figure
    goal_pose = fig.pose_from({"shoulder_r.rx": -1.2, "elbow_r.rx": -0.6, "shoulder_r.rz": -0.3})
    target = fig.world(goal_pose)["hand_r"][:3, 3]  # FK of an in-limit pose: reachable by construction
    r = bake_reach(fig, "hand_r", target, chain="arm", duration=1.0, hold=0.5, fps=30)
    assert r.result.converged and r.result.reachable
    assert r.clip_final_error < 1e-3
    assert len(r.times) == 46 and r.clip.duration == pytest.approx(1.5)
    np.testing.assert_allclose(r.clip.sample(r.times), r.poses)  # an ordinary clip, sampled at its frames
    lim = fig.dof_limits()
    assert np.all(r.poses >= lim[:, 0] - 1e-12) and np.all(r.poses <= lim[:, 1] + 1e-12)


def test_effector_path_has_no_jumps_and_follows_the_waypoints(comparison) -> None:
    for p in comparison.panels:
        steps = np.linalg.norm(np.diff(p.trail, axis=0), axis=1)
        # the waypoints move at most this far in a frame (smoothstep peaks at 1.5x the mean speed)
        bound = 1.5 * np.linalg.norm(comparison.target - p.trail[0]) / (2.0 * comparison.fps) * 1.5
        assert steps.max() <= bound, (p.label, steps.max(), bound)
        joint_steps = np.abs(np.diff(p.poses, axis=0)).max()
        assert joint_steps <= 2 * np.pi / comparison.fps + 1e-12  # the speed limit


def test_dofs_outside_the_set_never_move(humanoid, comparison) -> None:
    fig = humanoid.figure
    priors = priors_from_scene(humanoid)
    for p in comparison.panels:  # a natural panel's set: its chain and what carries posture (Priors.movable)
        joints = set(humanoid.figure.chain(p.chain)) | set(priors.movable(fig, "hand_r", p.chain)[1])
        outside = [i for i, d in enumerate(fig.dof_names) if d.split(".")[0] not in joints]
        assert outside
        np.testing.assert_array_equal(p.poses[:, outside], np.broadcast_to(comparison.start_pose[outside],
                                                                           (len(p.poses), len(outside))))


def test_arm_alone_cannot_reach_but_hips_up_can(comparison) -> None:
    by = {p.chain: p for p in comparison.panels}
    assert [p.chain for p in comparison.panels] == ["arm", "torso", "hips-up", "whole-body"]
    assert by["arm"].result.reachable is False and not by["arm"].result.converged
    assert by["hips-up"].result.converged and by["hips-up"].result.reachable
    assert by["torso"].result.converged
    # out of reach: the best pose points the arm at the target
    fig = by["arm"].clip.layout
    W = fig.world(by["arm"].result.pose)
    sh, hand = W["shoulder_r"][:3, 3], W["hand_r"][:3, 3]
    d1, d2 = hand - sh, comparison.target - sh
    assert d1 @ d2 / np.linalg.norm(d1) / np.linalg.norm(d2) > 0.99


def test_metrics_equal_the_solver_results(humanoid, comparison) -> None:
    data = json.loads(json.dumps(comparison.metrics()))  # JSON-ready
    assert [p["label"] for p in data["panels"]] == ["arm", "torso +neck +free arm", "hips-up", "whole-body"]
    # the riders are the panel's own field, apart from its label: the clips saved from it carry the movable set's name
    assert [(p.label, p.riders) for p in comparison.panels][:2] == [("arm", ""), ("torso", "+neck +free arm")]
    assert [c.name for c in panel_clips(comparison)] == ["arm", "torso", "hips-up", "whole-body"]
    for p, m in zip(comparison.panels, data["panels"], strict=True):
        r = p.result
        assert m["reached"] == r.converged and m["reachable"] == r.reachable and m["reason"] == r.reason
        assert m["final_error"] == r.position_error and m["iterations"] == r.iterations
        assert m["solve_time_s"] == r.time_s and m["errors"] == [float(e) for e in r.errors]
        # and the result is what the solver gives for the same problem, solved independently here
        # (the humanoid scene reaches naturally, its [reach.priors]; the arm has no task of its own: plain lm)
        nat = priors_from_scene(humanoid).problem(humanoid.figure, "hand_r", p.chain, pose=comparison.start_pose,
                                                  tol=1e-4)
        if any(t.weight > 0 and t.priority < 3 and t.name != "reach hand_r" for t in nat.tasks):  # levels beyond
            # the reach (gaze, planted feet): the natural solver
            again = nat.using(Natural(stiffness=nat.solver.stiffness, max_iter=NATURAL_DIRECT_ITERATIONS,
                                      settle=False)).solve(comparison.target)
        else:  # the reach alone, stiffness-weighted: LM with the stiffness of the joints in the set
            stiff = {k: v for k, v in nat.solver.stiffness.items() if k in humanoid.figure.chain(p.chain)} or None
            again = solve(humanoid.figure, comparison.start_pose, "hand_r", comparison.target, chain=p.chain,
                          solver=LM(max_iter=200, stiffness=stiff), tol=1e-4)
        np.testing.assert_allclose(again.pose, r.pose, atol=1e-12)
        assert m["total_rotation_deg"] == pytest.approx(sum(d for _, d in p.moved))
    assert "arm" in comparison.table() and "hips-up" in comparison.table()


def test_baked_clip_saves_to_toml_and_bvh(tmp_path, humanoid) -> None:
    fig = humanoid.figure
    r = bake_reach(fig, "hand_r", [-0.3, 1.2, 0.5], chain="torso", duration=0.5,
                   hold=0.0, fps=20)
    animkit.save(tmp_path / "reach.toml", humanoid, r.clip)
    back = animkit.load(tmp_path / "reach.toml")
    np.testing.assert_allclose(back.clip(r.clip.name).sample(r.times), r.poses, atol=1e-9)


def test_moving_target_path_is_followed(humanoid) -> None:
    fig = humanoid.figure
    times = np.array([0.0, 1.0, 2.0])
    ball = np.array([[-0.35, 1.0, 0.35], [-0.2, 1.2, 0.4], [-0.05, 1.0, 0.45]])
    r = bake_reach(fig, "hand_r", ball[-1], chain="torso", path=(times, ball),
                   duration=2.0, hold=0.0, fps=15)
    expected = np.stack([np.interp(r.times, times, ball[:, k]) for k in range(3)], axis=1)
    np.testing.assert_allclose(r.waypoints, expected)
    assert np.linalg.norm(r.trail[5:] - expected[5:], axis=1).max() < 0.05  # caught up after the start


def test_bad_reach_input_is_an_ik_error(humanoid) -> None:
    fig = humanoid.figure
    with pytest.raises(IKError, match="finite"):
        bake_reach(fig, "hand_r", [0, np.nan, 0])
    with pytest.raises(IKError, match="unknown effector 'hand_x'"):
        bake_reach(fig, "hand_x", [0, 1, 0])
    with pytest.raises(animkit.AnimkitError, match="unknown chain 'legs'"):
        compare(humanoid, chains=["legs"])


def test_cli_compare_writes_panels_table_and_json(tmp_path) -> None:
    gif, js = tmp_path / "c.gif", tmp_path / "m.json"
    r = run_cli("compare", "scenes/humanoid.toml", "-o", str(gif), "--json", str(js), "--size", "96x96",
             "--duration", "0.5", "--hold", "0", "--fps", "10", "-q")
    assert r.returncode == 0, r.stderr
    assert "arm" in r.stdout and "hips-up" in r.stdout and "reached" in r.stdout
    im = Image.open(gif)
    # one labelled panel per set, in a row, as long as the longest (0.5 s at 10 fps, after the natural reaches'
    # gaze lead: the hand waits for the head, lead_s in the JSON)
    frames = [1 + round((p["lead_s"] + p["duration_s"]) * 10) for p in json.loads(js.read_text())["panels"]]
    assert min(frames) == 6 and im.n_frames == max(frames) and im.size[0] >= 3 * 96
    m = json.loads(js.read_text())
    assert [p["chain"] for p in m["panels"]] == ["arm", "torso", "hips-up", "whole-body"]
    assert m["panels"][0]["reachable"] is False and m["panels"][2]["reached"] is True
    for p in m["panels"]:  # the motion measures of each reach: joint speeds, limits (the solvers respect them)
        motion = p["motion"]
        assert motion["limit_violations"] == 0 and motion["penetration_mm"] == 0.0
        assert motion["angular_speed_peak_deg_per_s"] == max(motion["angular_speed_by_joint_deg_per_s"].values())
    assert m["panels"][2]["motion"]["angular_speed_peak_deg_per_s"] > 0


def test_cli_reach_and_errors(tmp_path) -> None:
    out = tmp_path / "r.gif"
    r = run_cli("reach", "scenes/three_axis_arm.toml", "--target", "0.5,0.5,1.5", "--chain", "arm", "-o", str(out),
             "--size", "64x64", "--duration", "0.3", "--hold", "0", "-q", "--save", str(tmp_path / "r.toml"))
    assert r.returncode == 0, r.stderr
    assert out.exists() and (tmp_path / "r.toml").exists()
    for bad in (["reach", "scenes/three_axis_arm.toml", "--target", "1,2", "-o", str(tmp_path / "x.gif")],
                ["reach", "scenes/three_axis_arm.toml", "--chain", "legs", "-o", str(tmp_path / "x.gif")],
                ["compare", "scenes/humanoid.toml", "--solvers", "magic", "-o", str(tmp_path / "x.gif")]):
        r = run_cli(*bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.count("animkit: error") == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "x.gif").exists()


def test_cli_target_with_a_negative_first_component(tmp_path) -> None:
    """``--target -0.5,0.5,1.5`` (no ``=``) is the vector, not an unknown option; the arm's hand ends on it."""
    out = tmp_path / "r.gif"
    r = run_cli("reach", "scenes/three_axis_arm.toml", "--target", "-0.5,0.5,1.5", "--chain", "arm", "-o", str(out),
             "--size", "64x64", "--duration", "0.3", "--hold", "0", "-q", "--save", str(tmp_path / "r.toml"))
    assert r.returncode == 0, r.stderr
    scene = animkit.load(tmp_path / "r.toml")
    clip = scene.clip()
    fig = scene.figure
    last = fig.world_positions(clip.sample([clip.duration]))[0]
    tip = last[fig.node_names.index(fig.effector("tip"))]
    assert np.linalg.norm(tip - [-0.5, 0.5, 1.5]) < 1e-3


def _chains_through(fig, node: str) -> list[str]:
    """The oracle for the default chains: those naming a joint (or a DOF of one) on the root-to-node path."""
    on_path = {a.joint.name for a in fig.path_to(node)} | {a.child.name for a in fig.path_to(node)}
    return [c for c, members in fig.rig.chains.items()
            if any(m in on_path or m.rpartition(".")[0] in on_path for m in members)]


@pytest.mark.parametrize("side", ["r", "l"])
def test_the_effector_decides_the_default_chains_side_on_a_gltf_character(side) -> None:
    scene = animkit.load(ROOT / "tests" / "data" / "RiggedFigure.glb")
    fig = scene.figure
    node = fig.effector(f"hand_{side}")
    start = fig.world_positions(fig.rest_pose())[0, fig.node_names.index(node)]
    target = start + np.array([0.0, 0.0, 0.05]) * fig.size()
    c = compare(scene, effector=f"hand_{side}", target=target, duration=0.2, hold=0.0, fps=10, quiet=True)
    chains = [p.chain for p in c.panels]
    other = "l" if side == "r" else "r"
    assert chains[0] == f"arm_{side}" and f"arm_{other}" not in chains and chains == _chains_through(fig, node)
    assert not {"leg_l", "leg_r", "neck"} & set(chains)
    for p in c.panels:  # each set moves the named hand (its surface: animkit.motion.reach_surface) toward the target
        assert p.effector == node and p.clip_error < 0.5 * np.linalg.norm(target - start)


def test_panel_label_tells_where_the_clip_ends(humanoid) -> None:
    """A panel's label says what its clip shows: a bake whose last frame lost the solve's pose (here its trail moved
    12 cm off by hand) is labelled by where the clip ends, beside the solve's error; an arriving clip keeps the
    solve's outcome."""
    from dataclasses import replace

    from animkit.apps.reach_panels import panel_label

    fig = humanoid.figure
    goal_pose = fig.pose_from({"shoulder_r.rx": -1.2, "elbow_r.rx": -0.6})
    target = fig.world(goal_pose)["hand_r"][:3, 3]
    r = bake_reach(fig, "hand_r", target, chain="arm", duration=0.5, hold=0.2, fps=15, label="arm")
    assert panel_label(r) == "arm: reached"
    trail = r.trail.copy()
    trail[-1] = target + [0.0, 0.12, 0.0]
    lost = replace(r, trail=trail)
    assert lost.clip_final_error == pytest.approx(0.12)
    assert panel_label(lost) == f"arm: clip ends 12.0 cm off (solve {r.result.position_error * 100:.1f} cm)"
