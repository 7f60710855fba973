"""Scene graph and FK: closed forms, traversal against the vectorised FK, structure and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import animkit
import animkit.jit
from animkit.errors import PoseError, SceneError
from animkit.model import fk
from animkit.model import joints as J
from animkit.model import transforms as tf
from animkit.model.figure import Figure
from animkit.model.geometry import Capsule

from .conftest import SCENES


def three_axis_end(t1: float, t2: float, t3: float, l1=1.0, l2=0.8, l3=0.5) -> np.ndarray:
    """Rx(θ1) L(l1) Ry(θ2) L(l2) Rx(θ3) L(l3) (0,0,0,1), written out with textbook matrices."""
    def Rx(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])

    def Ry(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]])

    def Lz(d):
        M = np.eye(4)
        M[2, 3] = d
        return M

    return (Rx(t1) @ Lz(l1) @ Ry(t2) @ Lz(l2) @ Rx(t3) @ Lz(l3) @ np.array([0, 0, 0, 1.0]))[:3]


def test_three_axis_arm_end_point_equals_closed_form() -> None:
    fig = animkit.load(SCENES / "three_axis_arm.toml").figure
    assert fig.dof_names == ["j1.rx", "j2.ry", "j3.rx"]
    rng = np.random.default_rng(3)
    poses = rng.uniform(-np.pi, np.pi, (300, 3))
    tip = fig.node_names.index("tip")
    batch = fig.world_batch(poses)[:, tip, :3, 3]
    expected = np.array([three_axis_end(*p) for p in poses])
    np.testing.assert_allclose(batch, expected, atol=1e-12)
    for p, e in zip(poses[:20], expected[:20], strict=True):
        np.testing.assert_allclose(fig.world(p)["tip"][:3, 3], e, atol=1e-12)


# --- random figures: traversal == vectorised FK --------------------------------------------------------

KINDS = ["fixed", "hinge", "slider", "universal", "ball", "planar", "free", "axis", "trs", "scale"]


@st.composite
def figures(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 14))
    root_kind = draw(st.sampled_from(["fixed", "free", "ball"]))
    fig = Figure("n0", joint=_joint(root_kind, "n0", rng), L=_rand_rigid(rng))
    for i in range(1, n):
        parent = f"n{draw(st.integers(0, i - 1))}"
        kind = draw(st.sampled_from(KINDS))
        L = _rand_rigid(rng) if draw(st.booleans()) else _rand_scaled(rng)  # glTF: L may carry scale
        fig.add(f"n{i}", parent, L=L, joint=_joint(kind, f"n{i}", rng),
                T=_rand_rigid(rng), data=Capsule(0.1, 0.5))
    return fig, rng


def _rand_rigid(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return tf.homogeneous(tf.matrix_from_quaternion(q), rng.normal(size=3))


def _rand_scaled(rng) -> np.ndarray:
    M = _rand_rigid(rng)
    M[:3, :3] = M[:3, :3] * rng.uniform(-2.0, 2.0, size=3)  # non-uniform, may mirror
    return M


def _joint(kind: str, name: str, rng) -> J.Joint:
    orders = ["xyz", "xzy", "yxz", "yzx", "zxy", "zyx"]
    if kind == "fixed":
        return J.fixed(name)
    if kind == "hinge":
        return J.hinge(name, rng.choice(["x", "y", "z"]))
    if kind == "slider":
        return J.slider(name, rng.normal(size=3))
    if kind == "universal":
        return J.universal(name, ("z", "x"))
    if kind == "ball":
        return J.ball(name, str(rng.choice(orders)))
    if kind == "planar":
        return J.planar(name, str(rng.choice(["x", "y", "z"])))
    if kind == "free":
        return J.free(name, str(rng.choice(orders)))
    if kind == "trs":  # a glTF node: translation, rotation (ball), scale, each along x, y, z
        return J.custom(name, [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z"), ("revolute", "z"),
                               ("revolute", "y"), ("revolute", "x"), ("scale", "x"), ("scale", "y"), ("scale", "z")],
                        order="zyx")
    if kind == "scale":
        return J.custom(name, [("scale", rng.normal(size=3)), ("revolute", "x"), ("scale", "y")])
    return J.custom(name, [("revolute", rng.normal(size=3)), ("prismatic", "y"), ("revolute", rng.normal(size=3))])


@given(figures(), st.integers(1, 5))
def test_traversal_equals_vectorised_fk(fig_rng, frames) -> None:
    fig, rng = fig_rng
    poses = rng.uniform(-3, 3, (frames, fig.dof_count))
    batch = fig.world_batch(poses)
    assert batch.shape == (frames, len(fig.node_names), 4, 4)
    for f in range(frames):
        world = fig.world(poses[f])
        assert list(world) == fig.node_names  # the traversal visits in node_names order
        for i, name in enumerate(fig.node_names):
            np.testing.assert_allclose(batch[f, i], world[name], atol=1e-12, rtol=0)
    np.testing.assert_allclose(fig.world_positions(poses), batch[:, :, :3, 3], atol=1e-12)


@pytest.mark.skipif(fk.fk_frames_kernel is None, reason="numba is off or missing")
@given(figures(), st.integers(0, 5))
def test_compiled_fk_equals_numpy_fk(fig_rng, frames) -> None:
    """The numba kernel of world_batch / world_positions against the NumPy path (the oracle), every joint kind,
    scale DOFs and scaled L included."""
    fig, rng = fig_rng
    poses = rng.uniform(-3, 3, (frames, fig.dof_count))
    c = fig.compiled
    animkit.jit.ENABLED = False
    try:
        want_M, want_p = fk.world_batch(c, poses), fk.world_positions(c, poses)
    finally:
        animkit.jit.ENABLED = True
    assert fk.fk_compiled(c, poses, 3) is not None  # the kernel runs below, not the NumPy path again
    got_M, got_p = fk.world_batch(c, poses), fk.world_positions(c, poses)
    assert got_M.shape == want_M.shape and got_p.shape == want_p.shape
    np.testing.assert_allclose(got_M, want_M, atol=1e-12, rtol=0)
    np.testing.assert_allclose(got_p, want_p, atol=1e-12, rtol=0)


@pytest.mark.skipif(animkit.jit.native_kernels() is None or fk.fk_frames_kernel is None,
                    reason="needs the C extension built at install and numba")
@given(figures(), st.integers(0, 5), st.sampled_from([3, 16]))
def test_the_c_fk_kernel_equals_numbas_bit_for_bit(fig_rng, frames, width) -> None:
    """animkit._native.fk_frames (built at install) is a port of the Python reference numba compiles: the same
    bits, every joint kind, scale DOFs and scaled L included; buffers of the wrong size are refused, not read."""
    fig, rng = fig_rng
    poses = rng.uniform(-3, 3, (frames, fig.dof_count))
    c = fig.compiled
    tan_half = np.tan(poses * 0.5)
    rotated, first, kind = c.kernel_tables
    args = (tan_half, poses, c.parent, c.L, rotated, first, kind, c.dof_letter, c.dof_axis)
    got, want = np.full((frames, c.node_count, width), np.nan), np.full((frames, c.node_count, width), np.nan)
    animkit.jit.native_kernels().fk_frames(*args, got, frames, c.node_count, fig.dof_count, width)
    fk.fk_frames_kernel(*args, want)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    with pytest.raises(ValueError, match="size"):
        animkit.jit.native_kernels().fk_frames(*args, got, frames + 1, c.node_count, fig.dof_count, width)


def test_compiled_figures_with_children_before_parents_are_refused() -> None:
    """The compiled kernels index without bounds checks, so their tables are checked once, in Python."""
    c = fk.compile_figure(node_names=["a", "b"], parent=[1, -1], L=np.tile(np.eye(4), (2, 1, 1)),
                          T=np.tile(np.eye(4), (2, 1, 1)), dof_counts=[0, 0],
                          dofs=fk.DofArrays([], [], np.zeros((0, 3)), [], [], [], []))
    with pytest.raises(SceneError, match="parents must come before"):
        c.kernel_tables  # noqa: B018


@given(figures())
def test_traversal_is_m_parent_l_a(fig_rng) -> None:
    """Each node's M equals its parent's M · L · A(θ), A from the joint's own matrix()."""
    fig, rng = fig_rng
    pose = rng.uniform(-3, 3, fig.dof_count)
    world = fig.world(pose)
    i = 0
    for arc in fig.arcs():
        k = arc.joint.dof_count
        A = arc.joint.matrix(pose[i:i + k])
        parent = np.eye(4) if arc.parent is None else world[arc.parent.name]
        np.testing.assert_allclose(world[arc.child.name], parent @ arc.L @ A, atol=1e-12)
        i += k


def test_traverse_visits_data_with_m_times_t() -> None:
    fig = Figure("a")
    T = tf.translation([0, 0, 0.25])
    fig.add("b", "a", offset=(1, 0, 0), joint=J.hinge("b", "z"), data=Capsule(0.1, 0.5), T=T)
    placed = {}
    fig.traverse([np.pi / 2], lambda node, M: placed.__setitem__(node.name, M @ node.T))
    np.testing.assert_allclose(placed["b"][:3, 3], [1, 0, 0.25], atol=1e-12)


def test_sibling_order_and_dof_order_are_depth_first() -> None:
    fig = Figure("root")
    fig.add("a", "root", joint=J.hinge("a", "x"))
    fig.add("b", "root", joint=J.hinge("b", "y"))
    fig.add("a1", "a", joint=J.ball("a1", "zxy"))
    assert fig.node_names == ["root", "a", "a1", "b"]
    assert fig.dof_names == ["a.rx", "a1.rz", "a1.rx", "a1.ry", "b.ry"]
    assert [a.child.name for a in fig.node("root").arcs()] == ["a", "b"]
    assert fig.node("root").first_arc.sibling.child.name == "b"


def test_joint_kinds_dof_counts_and_names() -> None:
    assert J.fixed("f").dof_count == 0
    assert [d.name for d in J.hinge("e", "z").dofs] == ["e.rz"]
    assert [d.name for d in J.slider("s", "y").dofs] == ["s.ty"]
    assert [d.name for d in J.universal("u").dofs] == ["u.rx", "u.ry"]
    assert [d.name for d in J.ball("b", "zxy").dofs] == ["b.rz", "b.rx", "b.ry"]
    assert [d.name for d in J.planar("p", "y").dofs] == ["p.tx", "p.tz", "p.ry"]
    assert [d.name for d in J.free("r").dofs] == ["r.tx", "r.ty", "r.tz", "r.rz", "r.ry", "r.rx"]
    assert [d.name for d in J.hinge("h", [1, 1, 0]).dofs] == ["h.r"]
    b = J.ball("b", "zyx")
    v = np.array([0.3, -0.2, 0.9])
    np.testing.assert_allclose(b.matrix(v)[:3, :3], tf.matrix_from_euler_intrinsic(v, "zyx"), atol=1e-12)
    p = J.planar("p", "z")
    np.testing.assert_allclose(p.matrix([1.0, 2.0, 0.5]),
                               tf.translation([1, 0, 0]) @ tf.translation([0, 2, 0]) @ tf.rotation_z(0.5))


def test_dof_dmatrix_against_finite_differences() -> None:
    for dof in [*J.hinge("h", [0.2, 0.3, 0.9]).dofs, *J.slider("s", "z").dofs]:
        for t in (-1.0, 0.2, 2.5):
            h = 1e-6
            np.testing.assert_allclose(dof.dmatrix(t), (dof.matrix(t + h) - dof.matrix(t - h)) / (2 * h),
                                       atol=1e-8)


def test_rest_pose_limits_and_pose_helpers() -> None:
    fig = Figure("r")
    fig.add("e", "r", joint=J.hinge("e", "x", limits=(-2.0, 0.0), rest=-1.0))
    fig.add("s", "e", joint=J.slider("s", "y", limits=(0.0, 0.5)))
    np.testing.assert_array_equal(fig.rest_pose(), [-1.0, 0.0])
    np.testing.assert_array_equal(fig.dof_limits(), [[-2.0, 0.0], [0.0, 0.5]])
    np.testing.assert_array_equal(fig.clip_to_limits([1.0, 9.0]), [0.0, 0.5])
    assert fig.pose_dict([-0.5, 0.1]) == {"e.rx": -0.5, "s.ty": 0.1}
    np.testing.assert_array_equal(fig.pose_from({"s.ty": 0.2}), [-1.0, 0.2])


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda f: f.add("a", "nobody"), "unknown parent 'nobody'"),
        (lambda f: (f.add("a", "root"), f.add("a", "root")), "duplicate node name 'a'"),
        (lambda f: f.add("a", "root", L=np.diag([2.0, 1, 1, 0])), "affine"),  # L may scale (glTF), not project
        (lambda f: f.add("a", "root", T=np.ones((4, 4))), "rigid"),
        (lambda f: f.add("a", "root", joint=J.hinge("a", [0, 0, 0])), "non-zero"),
        (lambda f: f.add("a", "root", joint=J.hinge("a", "x", limits=(1.0, -1.0))), "min > max"),
        (lambda f: J.make_joint("spherical", "a"), "unknown joint kind 'spherical'"),
        (lambda f: f.add("a b", "root"), "without spaces"),
        (lambda f: f.add("a", "root", offset=(1, 2)), "offset must be 3"),
    ],
)
def test_malformed_figures_raise_scene_error(build, message) -> None:
    fig = Figure("root")
    with pytest.raises(SceneError, match=message):
        build(fig)


def test_bad_poses_raise_pose_error() -> None:
    fig = animkit.load(SCENES / "three_axis_arm.toml").figure
    with pytest.raises(PoseError, match=r"expected \(3,\)"):
        fig.world([0.0, 1.0])
    with pytest.raises(PoseError, match="NaN"):
        fig.world_batch([[0.0, np.nan, 0.0]])
    with pytest.raises(PoseError):
        fig.world("abc")


def test_scale_dof_closed_form() -> None:
    """M = L · T(t) · R_z(θ) · S(sx, sy, sz): a child offset (1, 0, 0) lands at t + R_z(θ) (sx, 0, 0)."""
    fig = Figure("root")
    fig.add("a", "root", joint=J.custom("a", [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z"),
                                              ("revolute", "z"), ("scale", "x"), ("scale", "y"), ("scale", "z")]))
    fig.add("b", "a", offset=(1, 0, 0))
    assert fig.dof_names == ["a.tx", "a.ty", "a.tz", "a.rz", "a.sx", "a.sy", "a.sz"]
    assert fig.rest_pose()[4:].tolist() == [1.0, 1.0, 1.0]
    pose = np.array([0.5, -1.0, 2.0, np.pi / 2, 3.0, 0.5, 2.0])
    want = np.array([0.5, -1.0 + 3.0, 2.0])
    np.testing.assert_allclose(fig.world_batch(pose[None])[0, 2, :3, 3], want, atol=1e-12)
    np.testing.assert_allclose(fig.world(pose)["b"][:3, 3], want, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(fig.world(pose)["a"][:3, :3]), 3.0, atol=1e-12)


def test_l_may_scale_but_not_collapse() -> None:
    fig = Figure("root")
    fig.add("a", "root", L=np.diag([2.0, 2.0, 2.0, 1.0]))
    with pytest.raises(SceneError, match="invertible"):
        fig.add("b", "root", L=np.diag([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(SceneError, match="affine"):
        fig.add("c", "root", L=np.ones((4, 4)))


def test_joint_dofs_follow_the_figure_as_it_grows_and_are_the_callers_own() -> None:
    fig = Figure("base")
    fig.add("upper", parent="base", offset=(0, 0, 1), joint=J.hinge("upper", "x"))
    assert fig.joint_dofs == {"base": [], "upper": [0]}
    got = fig.joint_dofs
    got["upper"].append(7)  # the caller's copy: the figure's answer is unchanged
    assert fig.joint_dofs["upper"] == [0]
    fig.add("lower", parent="upper", offset=(0, 0, 1), joint=J.ball("lower"))
    assert fig.joint_dofs == {"base": [], "upper": [0], "lower": [1, 2, 3]}
    assert sum(len(v) for v in fig.joint_dofs.values()) == fig.dof_count


@given(st.lists(st.floats(-1e3, 1e3), min_size=6, max_size=6))
def test_cross3_is_np_cross_bit_for_bit(v) -> None:
    a, b = np.array(v[:3]), np.array(v[3:])
    many = np.stack([a, b, a + b])
    for x, y in ((a, b), (many, b), (a, many), (many, many[::-1])):
        got, want = tf.cross3(x, y), np.cross(x, y)
        assert got.shape == want.shape and np.array_equal(got, want)
