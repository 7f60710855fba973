"""A ball joint's cone as inequality rows (animkit.ik.cone_rows) and the natural solver sliding along a cone's edge.

Oracles: the cone's own measures (:meth:`Cone.contains`, :meth:`Cone.project`, :func:`swing_twist_from_matrix`) for
the values; central differences of a turn exp([εω]×) R for the gradients, and of the Euler matrices for the turn
axes; a closed form (the point of a cone's rim nearest a target) for the solver.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from animkit.ik import IKProblem
from animkit.ik.cone_rows import cone_rows, euler_turn_axes, swing_excess, twist_angle
from animkit.ik.cones_jit import cone_arrays, project_rows
from animkit.ik.natural import Natural
from animkit.ik.problem import ConeLink
from animkit.ik.tasks import Gaze, Reach, configuration
from animkit.io.toml_scene import loads_scene
from animkit.model.joints import Cone, Dof, Joint
from animkit.model.transforms import (
    AXES,
    EULER_ORDERS,
    matrix_from_euler_intrinsic,
    matrix_from_rotation_vector,
    matrix_from_swing_twist,
    swing_twist_from_matrix,
)

T = np.array([0.3, 0.9, -0.2]) / np.linalg.norm([0.3, 0.9, -0.2])
F = np.cross(T, [1.0, 0.0, 0.0]) / np.linalg.norm(np.cross(T, [1.0, 0.0, 0.0]))
CONES = [Cone(0.6, (-0.5, 0.4), tuple(T)),
         Cone(0.6, (-0.5, 0.4), tuple(T), front=tuple(F), reach=(0.9, 0.09, 0.3, 0.5))]  # an elbow's 5° back reach
vectors = st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3).map(np.array)


def _turned(R: np.ndarray, w: np.ndarray, h: float) -> np.ndarray:
    return matrix_from_rotation_vector(h * w) @ R


@settings(max_examples=60)
@given(vectors)
def test_swing_excess_and_twist_are_the_cones_own_measures(v) -> None:  # type: ignore[no-untyped-def]
    """ρ ≤ 1 exactly where the swing alone lies in the cone (Cone.contains), ρ = 1 on the rim Cone.project puts an
    outside turn on, and τ is swing_twist_from_matrix's."""
    R = matrix_from_rotation_vector(v)
    s, tau = swing_twist_from_matrix(R, T)
    swing_only = matrix_from_swing_twist(s, 0.0, T)
    for cone in CONES:
        rho, _ = swing_excess(R, T, cone)
        if abs(rho - 1.0) > 1e-9:
            assert bool(cone.contains(swing_only, tol=0.0)) == (rho < 1.0)
        if rho > 1.0 + 1e-9:
            assert swing_excess(cone.project(R), T, cone)[0] == pytest.approx(1.0, abs=1e-9)
    assert twist_angle(R, T)[0] == pytest.approx(float(tau), abs=1e-12)


@settings(max_examples=60)
@given(vectors, vectors)
def test_gradients_match_central_differences(v, w) -> None:  # type: ignore[no-untyped-def]
    R = matrix_from_rotation_vector(v)
    h = 1e-6
    for cone in CONES:
        rho, g = swing_excess(R, T, cone)
        if math.acos(np.clip(T @ R @ T, -1, 1)) < 1e-3 or abs(math.acos(np.clip(T @ R @ T, -1, 1)) - math.pi) < 1e-3:
            continue  # at the axis (or its opposite) the swing's direction is undefined
        num = (swing_excess(_turned(R, w, h), T, cone)[0] - swing_excess(_turned(R, w, -h), T, cone)[0]) / (2 * h)
        assert g @ w == pytest.approx(num, rel=1e-5, abs=1e-6)
    tau, gt = twist_angle(R, T)
    if abs(tau) < 3.0:  # away from the ±π wrap
        num = (twist_angle(_turned(R, w, h), T)[0] - twist_angle(_turned(R, w, -h), T)[0]) / (2 * h)
        assert gt @ w == pytest.approx(num, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_turn_axes_are_the_angles_derivatives(order: str) -> None:
    rng = np.random.default_rng(3)
    th = rng.normal(size=3)
    A = matrix_from_euler_intrinsic(th, order)
    Om = euler_turn_axes(th, order)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        W = (matrix_from_euler_intrinsic(th + e, order) - matrix_from_euler_intrinsic(th - e, order)) / 2e-6 @ A.T
        np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], Om[:, k], atol=1e-8)


CONE_STICK = """
[figure]
name = "cone_stick"
up = "y"

[nodes.base]

[nodes.shoulder]
parent = "base"
joint = { kind = "ball", order = "zxy", cone = 45, twist = [-30, 30] }

[nodes.tip]
parent = "shoulder"
offset = [0, 0.5, 0]
"""


def _stick():  # type: ignore[no-untyped-def]
    return loads_scene(CONE_STICK).figure


def test_a_step_along_the_edge_leaves_the_cone_only_to_second_order() -> None:
    """On the rim (swing 45° toward −x), rows J Δθ ≤ room; a step in their null space (tangent to the rim) ends out
    of the cone by O(|Δθ|²): quartered when the step is halved."""
    fig = _stick()
    model = IKProblem(fig, "tip", None).model
    (cl,) = model.cones
    q = np.zeros(3)
    q[0] = math.radians(45.0)  # zxy: the first angle about z tips the stick toward −x, onto the rim
    J, room = cone_rows(cl, q)
    assert len(room) == 1 and room[0] == pytest.approx(0.0, abs=1e-12)  # the swing row only (no twist)
    R0 = matrix_from_euler_intrinsic(q, "zxy") @ cl.rest.T
    twist_row = twist_angle(R0, cl.axis)[1] @ euler_turn_axes(q, "zxy")
    tangent = np.linalg.svd(np.vstack([J, twist_row]))[2][-1]  # along the rim, without twisting
    outs = []
    for s in (0.2, 0.1, 0.05):
        v = q + s * tangent
        R = matrix_from_euler_intrinsic(v, "zxy") @ cl.rest.T
        outs.append(swing_excess(R, cl.axis, cl.cone)[0] - 1.0)
    assert outs[0] > 0 and outs[1] / outs[0] == pytest.approx(0.25, abs=0.02)
    assert outs[2] / outs[1] == pytest.approx(0.25, abs=0.02)
    assert len(cone_rows(cl, np.zeros(3))[1]) == 0  # at rest, far inside: no rows


def test_the_natural_solver_slides_along_a_cone_to_the_nearest_point_of_its_rim() -> None:
    """The stick starts on its 45° rim toward −x; the target lies 60° from the axis toward +z, beyond the rim. The
    nearest point the tip can reach is the rim's point toward +z (closed form); the solver gets there by sliding
    along the rim (the hold before this slid it there too: a goal's own joint was slid to its projection)."""
    fig = _stick()
    L = 0.5
    target = L * np.array([0.0, math.cos(math.radians(60)), math.sin(math.radians(60))])
    best = L * np.array([0.0, math.cos(math.radians(45)), math.sin(math.radians(45))])
    start = fig.rest_pose()
    start[fig.dof_index("shoulder.rz")] = math.radians(45.0)
    p = IKProblem(fig, ["shoulder.rz", "shoulder.rx", "shoulder.ry"], tasks=[Reach(effector="tip")], pose=start,
                  solver=Natural(max_iter=200, settle=False), tol=1e-4)
    r = p.solve(target)
    tip = fig.world_positions(r.pose)[0, fig.node_names.index("tip")]
    assert np.linalg.norm(tip - best) <= 2e-3  # the rim's nearest point (an optimum on a curved edge, to 2 mm)
    assert r.position_error == pytest.approx(np.linalg.norm(target - best), abs=1e-3)
    (cl,) = p.model.cones
    R = matrix_from_euler_intrinsic(r.pose[[fig.dof_index(n) for n in ("shoulder.rz", "shoulder.rx",
                                                                          "shoulder.ry")]], "zxy") @ cl.rest.T
    assert bool(cl.cone.contains(R, tol=1e-6))


LOOK = """
[figure]
name = "look"
up = "y"

[nodes.base]

[nodes.arm]
parent = "base"
joint = { kind = "hinge", axis = "z" }

[nodes.hand]
parent = "arm"
offset = [0.5, 0, 0]

[nodes.neck]
parent = "base"
joint = { kind = "ball", order = "zxy", cone = 45, twist = [-30, 30] }

[nodes.head]
parent = "neck"
offset = [0, 0.2, 0]
"""


def test_a_gaze_on_a_coned_neck_slides_along_its_rim_instead_of_freezing() -> None:
    """A neck that moves no goal (the hand reaches by its own hinge) starts on its 45° rim toward −x; the gaze looks
    at a far point 60° from the neck's axis toward +z. The nearest look the cone allows is along the rim's point
    toward +z, 15° off (closed form; the head's 0.2 m offset against 100 m shifts it by under 0.1°). Before, the
    neck was held wherever a step pushed it out of its cone, and the look stayed 40° off."""
    fig = loads_scene(LOOK).figure
    start = fig.rest_pose()
    start[fig.dof_index("neck.rz")] = math.radians(45.0)
    look = 100.0 * np.array([0.0, math.cos(math.radians(60)), math.sin(math.radians(60))])
    neck = tuple(fig.dof_index(n) for n in ("neck.rz", "neck.rx", "neck.ry"))
    hand = np.array([0.5 * math.cos(0.5), 0.5 * math.sin(0.5), 0.0])
    gaze = Gaze(head="head", forward=(0.0, 1.0, 0.0), target=look, dofs=neck)
    p = IKProblem(fig, ["arm.rz", "neck.rz", "neck.rx", "neck.ry"], tasks=[Reach(effector="hand"), gaze],
                  pose=start, solver=Natural(max_iter=200), tol=1e-5)
    r = p.solve(hand)
    # it settles on the rim: before, the trust region's rows (asked as equalities beside the rim's own) 2-cycled the
    # neck along it by ±2.9° to max_iter (200), and the solve still said converged
    assert r.converged and r.reason == "converged" and r.iterations < 60
    assert gaze.report(configuration(fig, r.pose)) == pytest.approx(15.0, abs=0.1)
    (cl,) = p.model.cones
    R = matrix_from_euler_intrinsic(r.pose[list(neck)], "zxy") @ cl.rest.T
    assert bool(cl.cone.contains(R, tol=1e-6))



def _projected_both_ways(order: str, t: np.ndarray, front: np.ndarray | None, cone_shape: tuple, rest: np.ndarray,
                         v: np.ndarray) -> None:
    """ChainModel.project_cones' two paths on one cone (``cone_shape``: (reach or None, twist lo, hi)) and turn: the
    compiled one (cones_jit, run compiled or as Python) and the Cone model's (ConeLink.project: Cone.project, then
    the Euler angles nearest the turn's) agree to 1e-9, inside the cone: the same turn, and the same angles except at
    the order's lock, where only the sum or difference of the outer two is defined (xyx at β = 0, v = (0, 0, 1): one
    path answers (0, 0, 1), the other (1, 0, 0))."""
    reach, lo, hi = cone_shape
    cone = Cone(1.0 if reach else 0.9, (lo, hi), tuple(t), front=None if reach is None else tuple(front),
                reach=None if reach is None else tuple(reach))
    joint = Joint("j", "ball", tuple(Dof(f"r{k}", "revolute", AXES[a].copy()) for k, a in enumerate(order)),
                  order=order)
    link = ConeLink(joint, (0, 1, 2), t, cone, matrix_from_euler_intrinsic(rest, order))
    want = link.project(v[None])
    got = v[None].copy()
    project_rows(got, cone_arrays([link], np.array([AXES[a] for a in order])))
    np.testing.assert_allclose(matrix_from_euler_intrinsic(got[0], order),
                               matrix_from_euler_intrinsic(want[0], order), rtol=0, atol=1e-9)
    middle = float(want[0, 1])  # at the lock (β = 0, π for xyx-like orders; ±π/2 for xyz-like) only α ± γ is defined
    # the two Euler branches of one turn as near the given angles as each other (‖·‖ to v equal to 1e-9: xzx, v = (1,
    # 0, 0) turned into a cone about a z-less axis gives (α, β, γ) and (α − π, −β, γ + π) at the same distance): each
    # path may keep either, both answers are the nearest
    tie = abs(float(np.sum((got - v) ** 2)) - float(np.sum((want - v) ** 2))) <= 1e-9
    if (abs(math.sin(middle)) if order[0] == order[2] else abs(math.cos(middle))) > 1e-6 and not tie:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    R = matrix_from_euler_intrinsic(got[0], order) @ link.rest.T
    assert bool(cone.contains(R, tol=1e-9))


angles = st.lists(st.floats(-math.pi, math.pi), min_size=3, max_size=3).map(np.array)
reaches = st.lists(st.floats(0.05, 2.5), min_size=4, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(EULER_ORDERS), vectors.filter(lambda v: np.linalg.norm(v) > 0.1), vectors, angles, angles,
       st.floats(-math.pi, 0.0), st.floats(0.0, math.pi), st.one_of(st.none(), reaches))
@example(order="xzx", t=np.array([0.25, 2.0, 0.0]), f=np.zeros(3), rest=np.zeros(3), v=np.array([1.0, 0.0, 0.0]),
         lo=0.0, hi=0.0, reach=None)  # --hypothesis-seed=7: the two branches tie (see _projected_both_ways)
def test_the_compiled_projection_is_the_cones_own(order, t, f, rest, v, lo, hi, reach) -> None:  # type: ignore[no-untyped-def]
    """Random cones (circular or four-reach, any twist range), Euler orders, rests and turns: both paths of the
    projection agree (:func:`_projected_both_ways`)."""
    t = t / np.linalg.norm(t)
    side = np.cross(t, f)
    if reach is not None and np.linalg.norm(side) < 1e-3:
        return  # no front direction off the axis
    _projected_both_ways(order, t, side, (reach, lo, hi), rest, v)


@pytest.mark.xfail(strict=True, reason="open: at xzx's lock, with the rest turned about the middle axis, both paths "
                   "answer outside the cone (the NumPy path 0.0085 rad past the swing limit, the compiled one π)")
def test_the_projection_at_a_lock_with_the_rest_turned_about_the_middle_axis() -> None:
    """Found by a random run of the test above (ik26, nineteenth session): xzx, the cone about z (0.9 rad, twist
    [−2, 0]), the rest β = 1.984 (a turn about z itself) and the turn (0, 0, 1) about x, 1 rad off the axis. The Cone
    model's projection answers (0.9085, −1.5e-8, 0): its swing 0.9085 rad, past the limit; the compiled one (0, 2e-8,
    π), a half turn. Both should land on the cone's edge, at the same turn."""
    _projected_both_ways("xzx", np.array([0.0, 0.0, 1.0]), np.zeros(3), (None, -2.0, 0.0),
                         np.array([0.0, 1.984375, 0.0]), np.array([0.0, 0.0, 1.0]))


def test_the_compiled_projection_near_a_proper_orders_lock() -> None:
    """The case that told them apart (found by 3000 random draws): a zyz joint turned to β = −0.21, near its lock at
    β = 0, projected onto a four-reach cone's edge and its twist's lower end. The compiled path found the angles by
    Newton from the turn's, which wandered through the lock past its 30 iterations and answered 3.6° off, outside
    the cone (ρ 0.85 where the edge is 1); it now reads them in closed form, as the NumPy path does."""
    t = np.array([0.07176710051107235, -0.1841089690781463, -0.980282291377956])
    front = np.array([0.4766879352416309, -0.8569781527851297, 0.19584958014776946])
    reach = (1.0554048287381463, 1.362511855192706, 0.21460557996774376, 0.16692349424345443)
    rest = np.array([-3.0725805311715697, 0.5399208636865194, 2.8462839338685773])
    v = np.array([-1.5745875191301457, -0.20823956443139124, 2.684892272009604])
    _projected_both_ways("zyz", t, front, (reach, -0.2239743475043805, 1.6821563758802462), rest, v)
