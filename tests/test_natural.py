"""Natural reaching: the task Jacobians against central differences, masses against trimesh, the support polygon
against scipy's hull, and the priors measured on the answers (gaze, stiffness share, planted feet, balance, spread).
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit
from animkit.errors import IKError
from animkit.ik.natural import Priors
from animkit.ik.tasks import (
    body_from_figure,
    centres,
    com_jacobian,
    figure_state,
    gaze_error,
    gaze_jacobian,
    point_jacobian,
    polygon_margin,
    support_polygon,
)
from animkit.model.anatomy import RANGE_DEGREES
from animkit.motion.reach import bake_reach, priors_from_scene

from .conftest import SCENES

SCENE = animkit.load(SCENES / "humanoid.toml")
FIG = SCENE.figure
PRIORS = priors_from_scene(SCENE)
TARGET = np.asarray(SCENE.reach.target)


def _random_pose(rng: np.random.Generator) -> np.ndarray:
    lim = FIG.dof_limits()
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -0.3)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], 0.3)
    p = rng.uniform(lo, hi)
    p[:3] = rng.uniform(-0.3, 0.3, 3)  # the root's translation
    return p


def _fd(f, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = []
    for j in range(len(p)):
        a, b = p.copy(), p.copy()
        a[j] += h
        b[j] -= h
        cols.append((f(a) - f(b)) / (2 * h))
    return np.stack(cols, axis=-1)


@settings(max_examples=8)
@given(st.integers(0, 2 ** 31 - 1))
def test_com_jacobian_matches_central_differences(seed) -> None:
    body = body_from_figure(FIG)
    p = _random_pose(np.random.default_rng(seed))
    c, J = com_jacobian(FIG, body, figure_state(FIG, p))
    num = _fd(lambda q: com_jacobian(FIG, body, figure_state(FIG, q))[0], p)
    np.testing.assert_allclose(J, num, atol=1e-7)
    # and c is the mass-weighted mean of the segment centroids
    ci = centres(body, figure_state(FIG, p))
    np.testing.assert_allclose(c, (body.mass @ ci) / body.mass.sum())


@settings(max_examples=8)
@given(st.integers(0, 2 ** 31 - 1))
def test_gaze_and_point_jacobians_match_central_differences(seed) -> None:
    rng = np.random.default_rng(seed)
    body = body_from_figure(FIG)
    p = _random_pose(rng)
    head = FIG.compiled.node_names.index("head")
    fwd = np.array([0.0, 0.0, 1.0])
    target = rng.uniform(-1, 1, 3) + np.array([0, 1, 1.5])
    g, J = gaze_jacobian(FIG, body, figure_state(FIG, p), head, fwd, target)
    num = _fd(lambda q: gaze_error(figure_state(FIG, q), head, fwd, target)[0], p)
    np.testing.assert_allclose(J, num, atol=1e-7)
    hand = FIG.compiled.node_names.index("hand_r")
    s = figure_state(FIG, p)
    Jp = point_jacobian(FIG, body, s, hand, s.p[hand])
    np.testing.assert_allclose(Jp, _fd(lambda q: figure_state(FIG, q).p[hand], p), atol=1e-7)


def test_segment_masses_and_com_against_trimesh() -> None:
    """Oracle: trimesh's own volumes and centres of mass of the drawn meshes (capsules tessellated: ~2 %)."""
    body = body_from_figure(FIG)
    p = FIG.rest_pose()
    s = figure_state(FIG, p)
    W = FIG.world(p)
    vol, mom = 0.0, np.zeros(3)
    for name in FIG.node_names:
        node = FIG.node(name)
        if node.data is None:
            continue
        mesh = node.data.to_trimesh() if not hasattr(node.data, "length") else node.data.to_trimesh(sections=64)
        M = W[name] @ node.T
        mesh.apply_transform(M)
        vol += mesh.volume
        mom += mesh.volume * mesh.center_mass
    assert body.total == pytest.approx(1000.0 * vol, rel=0.02)
    c, _ = com_jacobian(FIG, body, s)
    np.testing.assert_allclose(c, mom / vol, atol=5e-3)


@settings(max_examples=20)
@given(st.lists(st.tuples(st.integers(-100, 100), st.integers(-100, 100)), min_size=3, max_size=30),
       st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)))
def test_support_polygon_and_margin_against_scipy(points, x) -> None:
    from scipy.spatial import ConvexHull, QhullError

    P = np.unique(np.array(points, dtype=float) / 100.0, axis=0)
    try:
        ref = ConvexHull(P)
    except QhullError:
        return  # degenerate (collinear) sets have no area to stand on
    hull = support_polygon(P)
    assert len(hull) == len(ref.vertices)
    assert {tuple(v) for v in hull} == {tuple(v) for v in P[ref.vertices]}
    # margin: inside, the smallest distance to the facet lines (scipy's equations: n·x + b <= 0 inside)
    eq = ref.equations
    d = -(eq[:, :2] @ np.asarray(x) + eq[:, 2])
    m = polygon_margin(hull, x)
    if np.all(d >= 0):
        assert m == pytest.approx(d.min(), abs=1e-9)
    else:
        assert m <= 1e-12 and m <= d.min() + 1e-9  # outside: at least as far as the worst facet line


def test_smooth_margin_is_the_soft_minimum_of_the_edge_distances() -> None:
    """Known answers on a 0.29 × 0.24 m rectangle (the humanoid's feet): far from a corner m_τ is the plain margin
    (to τ e^(−15): the sides are 0.075 m farther); on a corner's bisector, d from both near edges, m_τ = d − τ ln 2;
    within [min s − τ ln 4, min s] everywhere inside; its gradient against central differences, across the kink of
    the plain minimum."""
    from animkit.ik.body import smooth_margin

    hull = np.array([[-0.145, -0.04], [0.145, -0.04], [0.145, 0.2], [-0.145, 0.2]])
    tau = 0.005
    m, g = smooth_margin(hull, [0.0, 0.03], tau)  # 0.07 from the heel, 0.145 from the sides
    assert m == pytest.approx(0.07, abs=1e-8) and np.allclose(g, [0.0, 1.0], atol=1e-6)
    m, g = smooth_margin(hull, [0.145 - 0.02, 0.2 - 0.02], tau)  # the toe's right corner, 2 cm in from both
    assert m == pytest.approx(0.02 - tau * math.log(2.0), abs=1e-8)  # the far edges add τ e^(−44)
    np.testing.assert_allclose(g, [-0.5, -0.5], atol=1e-9)
    rng = np.random.default_rng(5)
    h = 1e-7
    for x in np.column_stack([rng.uniform(-0.14, 0.14, 40), rng.uniform(-0.035, 0.195, 40)]):
        m, g = smooth_margin(hull, x, tau)
        plain = polygon_margin(hull, x)
        assert plain - tau * math.log(4.0) - 1e-12 <= m <= plain + 1e-12
        fd = [(smooth_margin(hull, x + h * e, tau)[0] - smooth_margin(hull, x - h * e, tau)[0]) / (2 * h)
              for e in np.eye(2)]
        np.testing.assert_allclose(g, fd, atol=1e-6)


def test_hips_up_head_aims_at_the_target_and_meets_it() -> None:
    problem = PRIORS.problem(FIG, "hand_r", "hips-up")
    r = problem.solve(TARGET)
    assert r.converged and r.position_error < 1e-4
    assert r.tasks is not None and r.tasks["gaze"] < 10.0
    b = bake_reach(FIG, "hand_r", TARGET, chain="hips-up", priors=PRIORS, duration=1.0, hold=0.5, quiet=True)
    assert b.gaze_deg is not None and b.gaze_deg < 10.0 and b.clip_final_error < 1e-4
    # without gaze the head does not follow (measured by the gaze task of the problem above)
    off = Priors(gaze=False).problem(FIG, "hand_r", "hips-up").solve(TARGET)
    assert off.tasks is not None and "gaze" not in off.tasks
    assert problem.retasked(TARGET, None, None).report(off.pose)["gaze"] > 30.0


@pytest.mark.parametrize("target", [TARGET, np.array([-0.35, 1.1, 0.5]), np.array([-0.1, 0.9, 0.55])])
def test_raising_a_joints_stiffness_lowers_its_share_of_the_rotation(target) -> None:
    p0 = FIG.rest_pose()
    shares = []
    for s in (0.0, 0.6, 0.95):
        prob = Priors(stiffness={"spine": s}, comfort=0.0, spread=0.0).problem(FIG, "hand_r", "torso")
        r = prob.solve(target)
        assert r.converged and np.linalg.norm(FIG.world(r.pose)["hand_r"][:3, 3] - target) < 1e-4
        d = np.abs(r.pose - p0)
        shares.append(d[list(FIG.joint_dofs["spine"])].sum() / d[prob.model.dofs].sum())
    assert shares[0] > shares[1] > shares[2], shares


def test_whole_body_keeps_feet_planted_and_balance_and_crouches() -> None:
    b = bake_reach(FIG, "hand_r", TARGET, chain="whole-body", priors=PRIORS, duration=1.5, hold=0.5, quiet=True)
    assert b.feet_drift is not None and b.feet_drift < 1e-3
    assert b.clip_final_error < 1e-4 and b.result.position_error < 1e-4
    prob = PRIORS.problem(FIG, "hand_r", "whole-body").retasked(TARGET, None, None)
    margins = [prob.report(p)["balance"] for p in b.poses]
    assert min(margins) >= 0.0, min(margins)
    # crouches: the hips come down and the knees bend; the direct solve also keeps the feet and the balance
    hips = FIG.world_positions(b.poses)[:, FIG.node_names.index("hips")]
    assert hips[-1, 1] < hips[0, 1] - 0.02
    assert b.poses[-1, FIG.dof_index("knee_r.rx")] > math.radians(15)
    final = prob.report(b.result.pose)
    assert b.result.converged and final["balance"] >= 0.0
    assert final["plant foot_l"] < 1e-3 and final["plant foot_r"] < 1e-3
    # the torso alone folds instead: its centre of mass sits farther out, held by more torque
    t = bake_reach(FIG, "hand_r", TARGET, chain="torso", priors=PRIORS, duration=1.5, hold=0.5, quiet=True)
    assert t.effort is not None and b.effort is not None and b.com_margin is not None
    assert t.com_margin is not None and t.com_margin > b.com_margin  # the torso's stance is the rest stance


def test_spine_bend_is_spread_over_the_spine_joints() -> None:
    """With the spread term the spine and chest bend about x by nearly the same angle; without it, unequally."""
    target = np.array([-0.3, 0.9, 0.55])

    def bends(spread: float) -> tuple[float, float]:
        r = Priors(spread=spread, comfort=0.0, stiffness={"shoulder_r": 0.9}, ride=False).problem(
            FIG, "hand_r", "torso").solve(target)  # the torso alone (no neck or free arm riding on it)
        assert r.converged
        return r.pose[FIG.dof_index("spine.rx")], r.pose[FIG.dof_index("chest.rx")]

    a0, b0 = bends(0.0)
    a1, b1 = bends(5.0)
    assert abs(a1 - b1) < 0.5 * abs(a0 - b0) + 1e-3, (a0, b0, a1, b1)


def test_priors_round_trip_through_toml_and_are_checked(tmp_path) -> None:
    animkit.save(tmp_path / "h.toml", SCENE)
    back = animkit.load(tmp_path / "h.toml")
    assert back.reach is not None and SCENE.reach is not None
    a, b = priors_from_scene(back), PRIORS
    assert a is not None and b is not None
    assert dict(a.stiffness) == dict(b.stiffness) and a.planted == b.planted and a.up == b.up
    assert (a.comfort, a.spread, a.gaze, a.balance, a.margin) == (b.comfort, b.spread, b.gaze, b.balance, b.margin)
    assert dict(a.preferred) == pytest.approx(dict(b.preferred), abs=1e-12)
    with pytest.raises(IKError, match=r"stiffness\['spine'\]"):
        Priors(stiffness={"spine": 1.0})
    with pytest.raises(IKError, match="spline"):
        Priors(stiffness={"spline": 0.5}).problem(FIG, "hand_r", "torso")
    bad = (SCENES / "humanoid.toml").read_text().replace("spine = 0.9", "spine = 1.5")
    (tmp_path / "bad.toml").write_text(bad)
    with pytest.raises(animkit.AnimkitError, match=r"reach.priors.stiffness.spine"):
        animkit.load(tmp_path / "bad.toml")


def test_a_scene_sets_a_persons_ranges_and_bad_ones_name_their_key(tmp_path) -> None:
    """[reach.priors] ranges: a table overrides RANGE_DEGREES by name (the rest kept), false turns them off; an
    unknown name or degrees outside [0, 180] is an error naming the key; the writer keeps them."""
    text = (SCENES / "humanoid.toml").read_text()
    assert "[reach.priors]" in text
    scene_file = tmp_path / "r.toml"
    scene_file.write_text(text.replace("[reach.priors]\n", "[reach.priors]\nranges = { side_bend = 25.0 }\n", 1))
    a = priors_from_scene(animkit.load(scene_file))
    assert a is not None and dict(a.ranges) == {**RANGE_DEGREES, "side_bend": 25.0}
    animkit.save(tmp_path / "again.toml", animkit.load(scene_file))
    again = priors_from_scene(animkit.load(tmp_path / "again.toml"))
    assert again is not None and dict(again.ranges) == dict(a.ranges)
    scene_file.write_text(text.replace("[reach.priors]\n", "[reach.priors]\nranges = false\n", 1))
    off = priors_from_scene(animkit.load(scene_file))
    assert off is not None and dict(off.ranges) == {}
    for bad, key in (("{ side_bnd = 25.0 }", "reach.priors.ranges.side_bnd"),
                     ("{ twist = 200.0 }", "reach.priors.ranges.twist"), ("3", "reach.priors.ranges")):
        scene_file.write_text(text.replace("[reach.priors]\n", f"[reach.priors]\nranges = {bad}\n", 1))
        with pytest.raises(animkit.AnimkitError, match=re.escape(key)):
            animkit.load(scene_file)


def test_gaze_on_a_motion_capture_skeleton() -> None:
    """The head and forward axis come from animkit.model.humanoid on a CMU BVH (no geometry: unit masses per bone)."""
    from animkit.model.figure import Rig

    from .conftest import ROOT

    fig = animkit.load(ROOT / "tests" / "data" / "cmu_02_01_walk.bvh").figure
    p0 = fig.rest_pose()
    hand = fig.world(p0)[fig.effector("hand_r")][:3, 3]
    target = hand + np.array([0.0, 0.0, 5.0])  # in front (the skeleton faces +z, Y up)
    # with the human ranges IK keeps by default (animkit.anatomy) the head turns as far as a neck can: the gaze
    # improves but this target, 69° to the side of the T-posed head, stays about 30° off
    human = Priors().problem(fig, "hand_r", "hips-up", pose=p0)
    start = human.retasked(target, None, None).report(p0)["gaze"]
    limited = human.solve(target)
    assert limited.converged and limited.tasks is not None and limited.tasks["gaze"] < start - 10.0
    fig.rig = Rig(fig.rig.chains, fig.rig.effectors)  # the gaze mechanics themselves: no ranges
    prob = Priors().problem(fig, "hand_r", "hips-up", pose=p0)
    assert "gaze" in [t.name for t in prob.tasks] and prob.retasked(target, None, None).report(p0)["gaze"] > 20.0
    r = prob.solve(target)
    assert r.converged and r.position_error < 1e-4 and r.tasks is not None and r.tasks["gaze"] < 10.0
    assert body_from_figure(fig).total == len(fig.node_names) - 1  # one unit per bone


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_ranges_task_measures_what_reach_measures_does_and_its_jacobian_matches_differences(seed) -> None:
    """The Ranges task's side bend, twist, pelvis roll and knees (animkit.ik.ranges) against the measures of
    animkit.motion.reach_measures (written separately, from world frames) and its Jacobian against central
    differences, at random poses within the limits."""
    from animkit.ik.ranges import RANGE_DEGREES, ranges_task
    from animkit.ik.tasks import configuration
    from animkit.model.humanoid import match_figure
    from animkit.motion.reach_measures import knee_in, pelvis_roll, trunk_side_bend, trunk_twist

    rng = np.random.default_rng(seed)
    p = _random_pose(rng) * 0.5
    bones = match_figure(FIG)
    up = np.array([0.0, 1.0, 0.0])
    task = ranges_task(FIG, bones, up, RANGE_DEGREES)
    assert task is not None
    names, v, J = task.values(configuration(FIG, p))
    assert names == ["side_bend", "twist", "pelvis_roll", "knee_in", "knee_in"]
    W = FIG.world_batch(p[None])
    rest = FIG.world_batch(FIG.rest_pose()[None])[0]
    x = W[:, :, :3, 3]
    ix = FIG.node_names.index
    knees = [knee_in(x[:, ix(f"knee_{s}")], x[:, ix(f"ankle_{s}")], x[:, ix(f"toe_{s}")], x[:, ix(f"ankle_{o}")], up)[0]
             for s, o in (("l", "r"), ("r", "l"))]
    want = [trunk_side_bend(FIG, W, bones, up, rest)[0], trunk_twist(FIG, W, bones, up, rest)[0],
            pelvis_roll(FIG, W, bones, up, rest)[0], *knees]
    got = np.degrees(v)
    got[:3] = np.abs(got[:3])  # the measures are unsigned
    np.testing.assert_allclose(got, want, atol=1e-9)
    fd = _fd(lambda q: task.values(configuration(FIG, q))[1], p)
    np.testing.assert_allclose(J, fd, atol=2e-6)


def test_ranges_hold_the_trunk_and_pelvis_where_the_reach_would_pass_them() -> None:
    """Priors(ranges=...) bounds the side bend (and the pelvis's roll) of a natural solve by what the world frames
    show, and the reach still converges; without ranges the same solve bends further."""
    from animkit.motion.reach_measures import reach_measures

    p0 = FIG.rest_pose()
    out = {}
    for name, ranges in (("bounded", {"side_bend": 25.0}), ("free", {})):
        pri = dataclasses.replace(PRIORS, ranges=ranges)
        r = pri.problem(FIG, "hand_r", "torso", pose=p0, tol=1e-4).solve(TARGET)
        assert r.converged, name
        P = np.stack([p0, r.pose, r.pose])
        out[name] = reach_measures(FIG, P, 30.0, "hand_r", TARGET, 1).side_bend_deg
    assert out["bounded"] <= 25.0 + 0.05 < out["free"]
    with pytest.raises(IKError, match="side_bnd"):
        Priors(ranges={"side_bnd": 30.0}).problem(FIG, "hand_r", "torso")
