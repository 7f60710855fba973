"""The body's volume for the free arm (animkit.ik.clear): capsule depths against their closed forms, the soft depth
against its formula, the task's Jacobian against central differences, the radii from drawn primitives and from
skinned vertices, and the natural reach's task list carrying one Clear per free arm."""

from __future__ import annotations

import math

import numpy as np
import pytest

from animkit.examples import load_file_or_example
from animkit.ik.body import point_jacobians
from animkit.ik.clear import (
    CLEARANCE,
    SOFT,
    SOFT_REACH,
    START_GAP,
    Clear,
    body_capsules,
    capsule_depth,
    drawn_radius,
    free_arm_clear,
    segment_distances,
    skinned_radii,
    soft_depth,
)
from animkit.ik.natural import Priors
from animkit.ik.tasks import configuration
from animkit.model.humanoid import match_figure

FIG = load_file_or_example("humanoid").figure
A, B = np.array([0.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])


def test_capsule_depth_against_its_closed_form() -> None:
    # beside the segment: the distance to its line, the normal straight out, t the foot's fraction
    depth, n, t = capsule_depth(np.array([0.3, 0.5, -0.4]), A, B, 1.0)
    assert depth == pytest.approx(1.0 - 0.5) and t == pytest.approx(0.25)
    np.testing.assert_allclose(n, [0.6, 0.0, -0.8], atol=1e-15)
    # past an end: the distance to that end's centre, t clamped
    depth, n, t = capsule_depth(np.array([0.0, 2.0 + 3.0, 4.0]), A, B, 1.0)
    assert depth == pytest.approx(1.0 - 5.0) and t == 1.0
    np.testing.assert_allclose(n, [0.0, 0.6, 0.8], atol=1e-15)
    depth, _, t = capsule_depth(np.array([1.0, -1.0, 0.0]), A, B, 2.0)
    assert depth == pytest.approx(2.0 - math.sqrt(2.0)) and t == 0.0
    # on the axis: the whole radius deep, some unit normal
    depth, n, _ = capsule_depth(np.array([0.0, 1.0, 0.0]), A, B, 0.25)
    assert depth == 0.25 and np.linalg.norm(n) == pytest.approx(1.0)


def test_segment_distances_are_capsule_depth_s_for_many_points() -> None:
    # the closed-form cases above (beside, past either end, on the axis) and random points against the one-point form
    rng = np.random.default_rng(3)
    p = np.vstack([[[0.3, 0.5, -0.4], [0.0, 5.0, 4.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0]], rng.normal(size=(500, 3))])
    np.testing.assert_allclose(segment_distances(p[:4], A, B), [0.5, 5.0, math.sqrt(2.0), 0.0], atol=1e-15)
    a, b = rng.normal(size=3), rng.normal(size=3)
    one = np.array([-capsule_depth(x, a, b, 0.0)[0] for x in p])
    np.testing.assert_allclose(segment_distances(p, a, b), one, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(segment_distances(p, a, a), np.linalg.norm(p - a, axis=1), rtol=1e-14)  # a point


def test_soft_depth_is_softplus_with_its_slope() -> None:
    s = 0.01
    assert soft_depth(0.0, s) == (pytest.approx(s * math.log(2.0)), pytest.approx(0.5))
    assert soft_depth(0.5, s)[0] == 0.5 and soft_depth(0.5, s)[1] == 1.0  # well inside: the depth itself
    assert soft_depth(-0.1, s)[0] == pytest.approx(s * math.exp(-10.0), rel=1e-4)  # well outside: nearly nothing
    for x in (-0.03, -0.004, 0.0, 0.007, 0.02):
        h = 1e-7
        fd = (soft_depth(x + h, s)[0] - soft_depth(x - h, s)[0]) / (2 * h)
        assert soft_depth(x, s)[1] == pytest.approx(fd, rel=1e-6)
        assert soft_depth(x, s)[0] == pytest.approx(s * math.log1p(math.exp(x / s)))


CAPS = (("hips", "spine", 0.11), ("spine", "chest", 0.085), ("chest", "neck", 0.124), ("hip_l", "knee_l", 0.06))
OWN = [d for j in ("clavicle_l", "shoulder_l", "elbow_l", "wrist_l") for d in FIG.joint_dofs[j]]


def _arm_across_the_body() -> np.ndarray:
    """A pose with the left arm swung in across the belly and thigh (several pairs inside, some near the knee)."""
    pose = FIG.rest_pose()
    rng = np.random.default_rng(3)
    pose[OWN] = rng.uniform(-0.2, 0.2, len(OWN))
    names = FIG.dof_names
    pose[names.index("shoulder_l.rz")] = -0.45
    pose[names.index("shoulder_l.rx")] = -0.3
    pose[names.index("elbow_l.rx")] = -0.9
    return pose


def test_clear_jacobian_against_finite_differences() -> None:
    task = Clear(top="clavicle_l", points=("elbow_l", "wrist_l"), capsules=CAPS, weight=3.0)
    pose = _arm_across_the_body()
    c = configuration(FIG, pose)
    e, J = task.compute(c)
    assert e.shape == (2 * len(CAPS),) and (e > SOFT).sum() >= 2, e  # the arm is inside somewhere
    # e is the soft depth of each pair, from the closed form at the world positions
    P = c.state.p
    names = FIG.compiled.node_names
    for k, pt in enumerate(("elbow_l", "wrist_l")):
        for j, (a, b, r) in enumerate(CAPS):
            d, _, _ = capsule_depth(P[names.index(pt)], P[names.index(a)], P[names.index(b)], r + CLEARANCE)
            want = soft_depth(d, SOFT)[0] if d > -12 * SOFT else 0.0
            assert e[k * len(CAPS) + j] == pytest.approx(want, rel=1e-12, abs=1e-15)
    h = 1e-6
    for dof in OWN:
        p1, p2 = pose.copy(), pose.copy()
        p1[dof] += h
        p2[dof] -= h
        fd = (task.error(configuration(FIG, p1)) - task.error(configuration(FIG, p2))) / (2 * h)
        np.testing.assert_allclose(J[:, dof], fd, rtol=1e-5, atol=1e-8)
    others = np.setdiff1d(np.arange(FIG.dof_count), OWN)
    assert np.all(J[:, others] == 0.0)  # the arm is moved out, the trunk is not bent away
    np.testing.assert_allclose(task.gradient(c), 3.0 * J.T @ e, rtol=1e-12)


def _clear_by_pairs(task: Clear, c) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """Clear's e and J one (point, capsule) pair at a time, from the one-pair closed forms (capsule_depth,
    soft_depth): the loop Clear.compute replaced."""
    names = FIG.compiled.node_names
    P = c.state.p
    pts = np.array([names.index(n) for n in task.points])
    Jp = point_jacobians(c.figure, c.body, c.state, pts, P[pts])
    R = task.radii(len(pts), [r for *_, r in task.capsules])
    own = np.zeros(FIG.dof_count, dtype=bool)
    own[OWN] = True
    e, J = np.zeros(len(pts) * len(task.capsules)), np.zeros((len(pts) * len(task.capsules), FIG.dof_count))
    for k, i in enumerate(pts):
        for j, (a, b, _) in enumerate(task.capsules):
            depth, n, _ = capsule_depth(P[i], P[names.index(a)], P[names.index(b)], float(R[k, j]))
            if depth > -SOFT_REACH * task.soft:
                row = k * len(task.capsules) + j
                e[row], slope = soft_depth(depth, task.soft)
                J[row] = np.where(own, -slope * (n @ Jp[k]), 0.0)
    return e, J


def test_clear_computes_every_pair_at_once_as_the_one_pair_forms_do() -> None:
    """The vectorised task equals the pair-by-pair loop within 1e-12 on random arm poses (pairs inside, on the
    knee of the softplus, deep past its linear end, and too far out to count), with and without start radii, and
    for a capsule of zero length (a point) and a point on a segment's axis."""
    rng = np.random.default_rng(11)
    caps = CAPS + (("hips", "hips", 0.05),)
    base = _arm_across_the_body()
    seen = {"inside": 0, "deep": 0, "far": 0}
    for trial in range(40):
        pose = base.copy()
        pose[OWN] += rng.normal(scale=0.6, size=len(OWN))
        c = configuration(FIG, pose)
        task = Clear(top="clavicle_l", points=("elbow_l", "wrist_l"), capsules=caps, soft=[0.01, 0.001][trial % 2])
        if trial % 3 == 0:
            task = task.resolved(configuration(FIG, FIG.rest_pose()))
        e, J = task.compute(c)
        want_e, want_J = _clear_by_pairs(task, c)
        np.testing.assert_allclose(e, want_e, rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, want_J, rtol=0, atol=1e-12)
        seen["inside"] += int((e > task.soft).sum())
        seen["deep"] += int((e > 30 * task.soft).sum())
        seen["far"] += int((e == 0.0).sum())
    assert min(seen.values()) > 0, seen  # every branch was taken
    rest = configuration(FIG, FIG.rest_pose())  # the elbow on its own capsule's end: d = 0, the normal +x
    tight = Clear(top="clavicle_l", points=("elbow_l",), capsules=(("elbow_l", "wrist_l", 0.05),))
    e, J = tight.compute(rest)
    want_e, want_J = _clear_by_pairs(tight, rest)
    assert np.isfinite(J).all() and e[0] > 0.05
    np.testing.assert_allclose(e, want_e, rtol=0, atol=1e-12)
    np.testing.assert_allclose(J, want_J, rtol=0, atol=1e-12)


def test_the_start_pose_is_clear() -> None:
    """A pair nearer at the start than r + m takes d₀ − START_GAP s as its radius: at the start it pulls (nearly)
    nothing, and still pushes back once it goes deeper."""
    rest = configuration(FIG, FIG.rest_pose())
    task = Clear(top="clavicle_l", points=("elbow_l", "wrist_l"), capsules=CAPS).resolved(rest)
    assert isinstance(task, Clear) and task.start is not None
    R = task.radii(2, [r for *_, r in CAPS])
    d0 = np.reshape(task.start, R.shape)
    np.testing.assert_allclose(R, np.minimum(np.array([r for *_, r in CAPS]) + CLEARANCE, d0 - START_GAP * SOFT))
    assert (R < np.array([r for *_, r in CAPS]) + CLEARANCE).any()  # the humanoid's wrist hangs beside its thigh
    assert task.error(rest).max() < SOFT * math.exp(-START_GAP) * 1.01
    assert task.error(configuration(FIG, _arm_across_the_body())).max() > 0.02


def test_radii_from_drawn_primitives_and_skinned_vertices() -> None:
    assert drawn_radius(FIG, "spine", "chest") == 0.085  # a capsule's own
    assert drawn_radius(FIG, "hips", "spine") == pytest.approx(math.sqrt(0.15 * 0.08))  # the box across its bone
    assert drawn_radius(FIG, "hand_l", "wrist_l") is None
    caps = body_capsules(FIG, match_figure(FIG))
    assert [c[:2] for c in caps] == [("hips", "spine"), ("spine", "chest"), ("chest", "neck")]
    assert caps[1][2] == 0.085
    # vertices on a ring of radius 0.1 around the hips → spine bone (and further ones owned by another node)
    W = FIG.world_batch(FIG.rest_pose()[None])[0]
    names = FIG.compiled.node_names
    a, b = W[names.index("hips"), :3, 3], W[names.index("spine"), :3, 3]
    u = (b - a) / np.linalg.norm(b - a)
    x = np.cross(u, [1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(u, x)
    ang = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    ring = a + 0.5 * (b - a) + 0.1 * (np.cos(ang)[:, None] * x + np.sin(ang)[:, None] * y)
    far = ring + 0.5 * x
    got = skinned_radii(FIG, np.vstack([ring, far]), ["hips"] * 40 + ["spine"] * 40,
                        [("hips", "spine"), ("neck", "head")])
    assert got == {"hips": pytest.approx(0.1)}  # the spine's vertices are not the hips' part; the neck owns none


def test_the_natural_reach_keeps_each_free_arm_clear() -> None:
    pri = Priors()
    dofs, _ = pri.movable(FIG, "hand_r", "torso")
    tasks = pri.tasks(FIG, "hand_r", [FIG.dof_names[d] for d in dofs], FIG.rest_pose())
    (clear,) = [t for t in tasks if isinstance(t, Clear)]
    assert clear.top == "clavicle_l" and clear.points == ("elbow_l", "wrist_l") and clear.weight == pri.clear
    assert clear.priority >= 3  # a null-space term beside gravity
    off = Priors(clear=0.0).tasks(FIG, "hand_r", [FIG.dof_names[d] for d in dofs], FIG.rest_pose())
    assert not any(isinstance(t, Clear) for t in off)
    given = Priors(volumes={"spine": 0.2}).tasks(FIG, "hand_r", [FIG.dof_names[d] for d in dofs], FIG.rest_pose())
    (c2,) = [t for t in given if isinstance(t, Clear)]
    assert dict(((a, b), r) for a, b, r in c2.capsules)[("spine", "chest")] == 0.2


def test_the_free_arm_keeps_clear_of_its_own_thigh_unless_it_starts_against_it() -> None:
    """The near thigh joins the trunk where the free hand starts clear of it; the humanoid's hand is drawn hanging
    against its thigh (the wrist 9.0 cm from the bone, r + m = 9 cm), so there it is left out and its reaches are
    the trunk-only ones; raised, the same arm keeps clear of that thigh (and never of the far one)."""
    bones = match_figure(FIG)
    names = FIG.compiled.node_names
    rest = configuration(FIG, FIG.rest_pose()).state.p
    hanging = free_arm_clear(FIG, bones, "clavicle_l", ("elbow_l", "wrist_l"), rest, weight=30.0)
    assert hanging is not None and [c[:2] for c in hanging.capsules] == [("hips", "spine"), ("spine", "chest"),
                                                                           ("chest", "neck")]
    wrist, hip, knee = (rest[names.index(n)] for n in ("wrist_l", "hip_l", "knee_l"))
    r = drawn_radius(FIG, "hip_l", "knee_l")
    assert r is not None
    assert capsule_depth(wrist, hip, knee, r + CLEARANCE + START_GAP * SOFT)[0] > 0  # why: it starts against it
    raised = FIG.rest_pose()
    raised[FIG.dof_names.index("shoulder_l.rz")] = -1.2  # the arm out sideways: the hand 30+ cm off the thigh
    up = configuration(FIG, raised).state.p
    task = free_arm_clear(FIG, bones, "clavicle_l", ("elbow_l", "wrist_l"), up, weight=30.0)
    assert task is not None and [c[:2] for c in task.capsules][-1] == ("hip_l", "knee_l")
    assert ("hip_r", "knee_r") not in [c[:2] for c in task.capsules]
    assert task.capsules[-1][2] == r and task.weight == 30.0
    gone = np.linalg.norm(up[names.index("wrist_l")] - rest[names.index("wrist_l")])
    assert gone > 0.1, gone
