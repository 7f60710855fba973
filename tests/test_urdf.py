"""URDF reader, against independent oracles.

The FK oracle parses the XML itself with ElementTree and composes 4×4 matrices along
the chain with its own rpy (R = Rz(yaw) Ry(pitch) Rx(roll), the URDF spec's fixed-axis
roll-pitch-yaw) and Rodrigues helpers; it uses nothing from animkit.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from animkit.errors import ParseError
from animkit.io import allow_roots, load
from animkit.io.urdf import Mimic, MissingMeshWarning, apply_mimics, parse_urdf, read_urdf, read_urdf_model
from animkit.model.geometry import Box, Capsule, Cylinder, MeshFile, Sphere

DATA = Path(__file__).resolve().parent / "data"
PANDA = DATA / "franka_panda.urdf"
UR5 = DATA / "ur5_robot.urdf"
KUKA = DATA / "kuka_iiwa.urdf"


def quiet_read(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        return read_urdf(path)


def quiet_parse(text: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        return parse_urdf(text, **kw)


# --- the independent oracle -----------------------------------------------------------------------------


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], dtype=float)


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], dtype=float)


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=float)


def _rodrigues(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _vec(el: ET.Element | None, attr: str, default: str) -> np.ndarray:
    text = default if el is None else el.get(attr, default)
    return np.array([float(x) for x in text.split()])


def _oracle_joints(path: Path) -> dict[str, dict]:
    """child link → {name, type, parent, xyz, rpy, axis, lower, upper} straight from the XML."""
    out = {}
    for j in ET.parse(path).getroot().findall("joint"):
        o, ax, lim = j.find("origin"), j.find("axis"), j.find("limit")
        out[j.find("child").get("link")] = {
            "name": j.get("name"), "type": j.get("type"), "parent": j.find("parent").get("link"),
            "xyz": _vec(o, "xyz", "0 0 0"), "rpy": _vec(o, "rpy", "0 0 0"), "axis": _vec(ax, "xyz", "1 0 0"),
            "lower": None if lim is None else float(lim.get("lower", "0")),
            "upper": None if lim is None else float(lim.get("upper", "0")),
        }
    return out


def _oracle_world(path: Path, link: str, q: dict[str, float]) -> np.ndarray:
    """World matrix of ``link``: Π over the chain of [Rz Ry Rx | xyz] · motion(q)."""
    joints = _oracle_joints(path)
    chain = []
    while link in joints:
        chain.append(joints[link])
        link = joints[link]["parent"]
    M = np.eye(4)
    for j in reversed(chain):
        r, p, y = j["rpy"]
        L = np.eye(4)
        L[:3, :3] = _rz(y) @ _ry(p) @ _rx(r)
        L[:3, 3] = j["xyz"]
        A = np.eye(4)
        if j["type"] in ("revolute", "continuous"):
            A[:3, :3] = _rodrigues(j["axis"], q[j["name"]])
        elif j["type"] == "prismatic":
            A[:3, 3] = j["axis"] / np.linalg.norm(j["axis"]) * q[j["name"]]
        M = M @ L @ A
    return M


def _random_config(path: Path, rng: np.random.Generator) -> dict[str, float]:
    q = {}
    for j in _oracle_joints(path).values():
        if j["type"] in ("revolute", "prismatic"):
            q[j["name"]] = float(rng.uniform(j["lower"], j["upper"]))
        elif j["type"] == "continuous":
            q[j["name"]] = float(rng.uniform(-math.pi, math.pi))
    return q


# --- FK on real arms ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "links"), [
    (PANDA, ["panda_grasptarget", "panda_hand", "panda_leftfinger", "panda_rightfinger"]),
    (UR5, ["ee_link", "tool0", "base"]),
    (KUKA, ["lbr_iiwa_link_7"]),
])
def test_fk_matches_independent_oracle(path: Path, links: list[str]) -> None:
    fig = quiet_read(path).figure
    rng = np.random.default_rng(20240611)
    for _ in range(25):
        q = _random_config(path, rng)
        pose = np.array([q[name] for name in fig.dof_names])
        world = fig.world(pose)
        batch = fig.world_batch(pose[None])[0]
        for link in links:
            expected = _oracle_world(path, link, q)
            np.testing.assert_allclose(world[link], expected, atol=1e-12, rtol=0)
            np.testing.assert_allclose(batch[fig.node_names.index(link)], expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("path", [PANDA, UR5, KUKA])
def test_traversal_equals_world_batch(path: Path) -> None:
    fig = quiet_read(path).figure
    rng = np.random.default_rng(7)
    lim = fig.dof_limits()
    poses = rng.uniform(lim[:, 0], lim[:, 1], size=(12, fig.dof_count))
    batch = fig.world_batch(poses)
    for f, pose in enumerate(poses):
        world = fig.world(pose)
        for i, name in enumerate(fig.node_names):
            np.testing.assert_allclose(batch[f, i], world[name], atol=1e-12, rtol=0)


def test_ur5_zero_pose_matches_published_geometry() -> None:
    """UR5 DH constants: d1 0.089159, a2 0.425, a3 0.39225, d4 0.10915, d5 0.09465, d6 0.0823.

    By hand from the file's origins: shoulder_lift turns the frame by Ry(π/2), so the elbow's
    (0, −0.1197, 0.425) becomes (0.425, −0.1197, 0) and the forearm's (0, 0, 0.39225) becomes
    (0.39225, 0, 0); wrist_1 adds another Ry(π/2) (Ry(π) in all), so wrist_2's (0, 0.093, 0)
    stays and wrist_3's (0, 0, 0.09465) points down; ee_link is (0, 0.0823, 0) further:
      x = 0.425 + 0.39225 = 0.81725 = a2 + a3
      y = 0.13585 − 0.1197 + 0.093 + 0.0823 = 0.19145 = d4 + d6
      z = 0.089159 − 0.09465 = −0.005491 = d1 − d5
    the published zero-pose tool position (UR's base frame is base_link turned by π about z,
    where it reads (−0.81725, −0.19145, −0.005491)).
    """
    scene = quiet_read(UR5)
    fig = scene.figure
    W = fig.world(np.zeros(fig.dof_count))
    np.testing.assert_allclose(W["ee_link"][:3, 3], [0.81725, 0.19145, -0.005491], atol=1e-12)
    np.testing.assert_allclose(W["tool0"][:3, 3], [0.81725, 0.19145, -0.005491], atol=1e-12)
    in_ur_base = np.linalg.inv(W["base"]) @ W["ee_link"][:, 3]
    np.testing.assert_allclose(in_ur_base[:3], [-0.81725, -0.19145, -0.005491], atol=1e-12)
    assert scene.up == "z"


def test_rpy_is_fixed_axis_roll_then_pitch_then_yaw() -> None:
    """rpy = (π/2, π/2, 0): roll x about fixed x (x stays), then pitch about fixed y: x → −z.

    The intrinsic reading R_x R_y would take x to +y instead.
    """
    text = ('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
            '<parent link="a"/><child link="b"/><origin rpy="1.5707963267948966 1.5707963267948966 0"/>'
            '</joint></robot>')
    fig = parse_urdf(text).figure
    R = fig.world(np.zeros(0))["b"][:3, :3]
    np.testing.assert_allclose(R[:, 0], [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(R[:, 1], [1, 0, 0], atol=1e-12)


# --- DOFs, limits, chains, effectors --------------------------------------------------------------------


def _movable_in_traversal_order(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    children: dict[str, list[ET.Element]] = {}
    is_child = set()
    for j in root.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j)
        is_child.add(j.find("child").get("link"))
    (top,) = [link.get("name") for link in root.findall("link") if link.get("name") not in is_child]
    out: list[str] = []

    def visit(link: str) -> None:
        for j in children.get(link, []):
            if j.get("type") != "fixed":
                out.append(j.get("name"))
            visit(j.find("child").get("link"))

    visit(top)
    return out


@pytest.mark.parametrize("path", [PANDA, UR5, KUKA])
def test_dof_names_are_movable_joint_names_in_traversal_order(path: Path) -> None:
    fig = quiet_read(path).figure
    assert fig.dof_names == _movable_in_traversal_order(path)
    movable = set(fig.dof_names)
    for arc in fig.arcs()[1:]:
        assert arc.joint.name == _oracle_joints(path)[arc.child.name]["name"]
        assert (arc.joint.dof_count == 0) == (arc.joint.name not in movable)


def test_panda_names_limits_and_mimic() -> None:
    with pytest.warns(MissingMeshWarning):
        model = read_urdf_model(PANDA)
    fig = model.scene.figure
    assert fig.dof_names == [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"]
    lim = dict(zip(fig.dof_names, map(tuple, fig.dof_limits()), strict=True))
    # the values SOURCES.md lists (the hard <limit>, not the safety_controller soft limits)
    assert lim["panda_joint4"] == (-3.1416, 0.0)
    assert lim["panda_joint6"] == (-0.0873, 3.8223)
    assert lim["panda_joint1"] == (-2.9671, 2.9671)
    assert lim["panda_finger_joint1"] == (0.0, 0.04)
    assert lim["panda_finger_joint2"] == (0.0, 0.04)
    assert all(lo <= r <= hi for r, (lo, hi) in zip(fig.rest_pose(), fig.dof_limits(), strict=True))
    assert model.mimics == {"panda_finger_joint2": Mimic("panda_finger_joint1", 1.0, 0.0)}
    # the mimic joint keeps its own DOF; apply_mimics couples it: both fingers open symmetrically
    pose = fig.pose_from({"panda_finger_joint1": 0.03})
    coupled = apply_mimics(fig, pose, model.mimics)
    assert coupled[fig.dof_index("panda_finger_joint2")] == 0.03
    W = fig.world(coupled)
    hand_inv = np.linalg.inv(W["panda_hand"])
    left = (hand_inv @ W["panda_leftfinger"][:, 3])[:3]
    right = (hand_inv @ W["panda_rightfinger"][:, 3])[:3]
    np.testing.assert_allclose(left, [0, 0.03, 0.0584], atol=1e-12)
    np.testing.assert_allclose(right, [0, -0.03, 0.0584], atol=1e-12)
    batch = apply_mimics(fig, np.stack([pose, pose]), model.mimics)
    assert batch.shape == (2, 9) and np.all(batch[:, 8] == 0.03)


def test_kuka_limits() -> None:
    fig = quiet_read(KUKA).figure
    lim = fig.dof_limits()
    np.testing.assert_array_equal(lim[:, 1], [2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239,
                                              2.96705972839, 2.09439510239, 3.05432619099])
    np.testing.assert_array_equal(lim[:, 0], -lim[:, 1])


def test_chains_and_effectors() -> None:
    panda = quiet_read(PANDA)
    assert panda.figure.chain("arm") == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert panda.figure.chain("to_panda_leftfinger")[-1] == "panda_finger_joint1"
    assert set(panda.figure.rig.effectors) == {"panda_grasptarget", "panda_leftfinger", "panda_rightfinger"}
    assert list(panda.figure.rig.chains) == ["arm", "to_panda_leftfinger", "to_panda_rightfinger"]
    ur5 = quiet_read(UR5)
    arm6 = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
            "wrist_3_joint")
    assert dict(ur5.figure.rig.chains) == {"arm": arm6}  # to_tool0 and to_ee_link were the same joints: merged
    assert set(ur5.figure.rig.effectors) == {"ee_link", "tool0", "base"}
    assert ur5.figure.root.name == "world"
    kuka = quiet_read(KUKA)
    assert dict(kuka.figure.rig.chains) == {"arm": tuple(f"lbr_iiwa_joint_{i}" for i in range(1, 8))}
    assert dict(kuka.figure.rig.effectors) == {"lbr_iiwa_link_7": "lbr_iiwa_link_7"}
    assert kuka.figure.name == "lbr_iiwa"


def test_load_dispatches_urdf() -> None:
    with pytest.warns(MissingMeshWarning):
        scene = load(UR5)
    assert scene.source == str(UR5) and scene.figure.dof_count == 6


SMALL = """<?xml version="1.0"?>
<robot name="small">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base">
    <visual><origin xyz="0 0 0.1" rpy="0 0 0"/><geometry><cylinder radius="0.05" length="0.2"/></geometry>
      <material name="red"/></visual>
    <visual><geometry><sphere radius="0.03"/></geometry></visual>
  </link>
  <link name="a"><visual><geometry><box size="0.1 0.2 0.3"/></geometry>
      <material name="blue"><color rgba="0 0 1 0.5"/></material></visual></link>
  <link name="b"><visual><geometry><box size="0.1 0.1 0.1"/></geometry><material name="blue"/></visual></link>
  <link name="c"/>
  <link name="d"/>
  <joint name="spin" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 2"/></joint>
  <joint name="lift" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0 0 1"/>
    <axis xyz="0 0 0.5"/><limit lower="-0.5" upper="0.25"/></joint>
  <joint name="slide" type="planar"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/></joint>
  <joint name="fly" type="floating"><parent link="c"/><child link="d"/></joint>
</robot>
"""


def test_joint_kinds_visuals_and_colours() -> None:
    fig = parse_urdf(SMALL).figure
    assert fig.dof_names == ["spin", "lift", "slide.tx", "slide.ty", "slide.rz",
                             "fly.tx", "fly.ty", "fly.tz", "fly.rz", "fly.ry", "fly.rx"]
    lim = fig.dof_limits()
    assert np.all(np.isinf(lim[0])) and tuple(lim[1]) == (-0.5, 0.25)
    np.testing.assert_allclose(fig.joint("spin").dofs[0].axis, [0, 0, 1])  # normalised
    # a continuous joint turns about its axis without limit
    W = fig.world(fig.pose_from({"spin": 7.0, "lift": 0.2}))
    np.testing.assert_allclose(W["b"][:3, 3], [0, 0, 1.2], atol=1e-12)
    np.testing.assert_allclose(W["a"][:3, :3], _rz(7.0), atol=1e-12)
    # the first visual on the link node; a centred URDF cylinder becomes z ∈ [0, length] shifted by −length/2
    base = fig.node("base")
    assert base.data == Cylinder(0.05, 0.2) and base.color == (1.0, 0.0, 0.0)
    np.testing.assert_allclose(base.T[:3, 3], [0, 0, 0.0], atol=1e-15)
    extra = fig.node("base__visual1")
    assert extra.data == Sphere(0.03) and fig.parent_of("base__visual1") == "base"
    assert extra.parent_arc.joint.dof_count == 0
    assert fig.node("a").data == Box((0.1, 0.2, 0.3)) and fig.node("a").color == (0.0, 0.0, 1.0)
    assert fig.node("b").color == (0.0, 0.0, 1.0)  # an inline material referenced by name elsewhere
    scene = parse_urdf(SMALL)
    assert "base__visual1" not in scene.figure.rig.effectors and set(scene.figure.rig.effectors) == {"d"}


def test_missing_meshes_warn_and_draw_stand_ins() -> None:
    with pytest.warns(MissingMeshWarning, match="not found"):
        fig = read_urdf(PANDA).figure
    for name in ["panda_link0", "panda_link1", "panda_link3", "panda_hand", "panda_leftfinger"]:
        node = fig.node(name)
        assert isinstance(node.data, Capsule | Sphere)
        assert node.data.to_trimesh().vertices.shape[1] == 3
    # a capsule from the link origin to its child joint's origin: link0 → joint1 at (0, 0, 0.333)
    link0 = fig.node("panda_link0")
    assert isinstance(link0.data, Capsule) and link0.data.length == pytest.approx(0.333)
    np.testing.assert_allclose(link0.T[:3, :3] @ [0, 0, 1], [0, 0, 1], atol=1e-12)
    assert fig.node("panda_link8").data is None  # no visual at all: nothing to draw


def test_existing_mesh_becomes_meshfile(tmp_path: Path) -> None:
    (tmp_path / "meshes").mkdir()
    obj = tmp_path / "meshes" / "tri.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    sub = tmp_path / "urdf"
    sub.mkdir()
    text = """<robot name="m">
      <link name="a"><visual><geometry><mesh filename="package://mypkg/meshes/tri.obj" scale="2 2 2"/>
        </geometry></visual></link>
      <link name="b"><visual><geometry><mesh filename="../meshes/tri.obj"/></geometry></visual></link>
      <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>
    </robot>"""
    path = sub / "m.urdf"
    path.write_text(text)
    # outside the URDF's folder: not looked at unless the user allows that folder
    with pytest.warns(MissingMeshWarning, match="2 mesh file"):
        assert read_urdf(path).figure.node("a").data.__class__ is not MeshFile
    with warnings.catch_warnings(), allow_roots(tmp_path):
        warnings.simplefilter("error")
        fig = read_urdf(path).figure
    a = fig.node("a").data
    assert a == MeshFile(str(obj), (2.0, 2.0, 2.0))
    assert Path(fig.node("b").data.path).resolve() == obj.resolve()
    assert a.to_trimesh().vertices.max() == pytest.approx(2.0)


# --- malformed inputs -----------------------------------------------------------------------------------

GOOD = """<?xml version="1.0"?>
<robot name="t">
  <link name="a"/>
  <link name="b"/>
  <link name="c"/>
  <joint name="j1" type="revolute">
    <parent link="a"/>
    <child link="b"/>
    <origin xyz="0 0 1" rpy="0 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1"/>
  </joint>
  <joint name="j2" type="fixed">
    <parent link="b"/>
    <child link="c"/>
  </joint>
</robot>
"""


def _line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if marker in line)


def test_good_template_parses() -> None:
    assert parse_urdf(GOOD, path="t.urdf").figure.dof_names == ["j1"]
    no_axis = parse_urdf(GOOD.replace('<axis xyz="0 1 0"/>', "")).figure
    np.testing.assert_array_equal(no_axis.joint("j1").dofs[0].axis, [1.0, 0.0, 0.0])  # the URDF default


@pytest.mark.parametrize(("old", "new", "marker", "words"), [
    ('<parent link="b"/>', '<parent link="bb"/>', '<parent link="bb"/>', "unknown parent link 'bb'"),
    ('<link name="c"/>', '<link name="c"/>\n  <link name="b"/>', '<link name="b"/>\n</robot', "duplicate link"),
    ('<link name="c"/>', '<link name="c"/>\n  <link name="e"/>', '<link name="e"/>', "more than one root"),
    ('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>', '<axis xyz', "zero length"),
    ('xyz="0 0 1"', 'xyz="0 0 1x"', 'xyz="0 0 1x"', "expected 3 numbers"),
    ('xyz="0 0 1"', 'xyz="0 1"', 'xyz="0 1"', "expected 3 finite numbers"),
    ('lower="-1"', 'lower="2"', '<limit', "lower=2 > upper=1"),
    ('type="fixed"', 'type="weld"', 'type="weld"', "unknown joint type 'weld'"),
    ('<limit lower="-1" upper="1"/>', '', 'name="j1"', "needs a <limit"),
    ('<child link="c"/>', '<child link="c"/>\n    <mimic joint="nope"/>', '<mimic', "unknown movable joint 'nope'"),
    ('<joint name="j2" type="fixed">', '<joint name="j1" type="fixed">', 'type="fixed"', "duplicate joint name"),
])
def test_malformed_inputs_name_the_line(old: str, new: str, marker: str, words: str) -> None:
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    if marker == '<link name="b"/>\n</robot':  # the second b
        line = _line_of(text, '<link name="c"/>') + 1
    else:
        line = _line_of(text, marker)
    with pytest.raises(ParseError) as info:
        quiet_parse(text, path="t.urdf")
    assert info.value.line == line, str(info.value)
    assert words in str(info.value)
    assert str(info.value).startswith(f"t.urdf:{line}: ")


def test_cycle_is_an_error_with_a_line() -> None:
    text = GOOD.replace("</robot>", """  <link name="x"/>
  <link name="y"/>
  <joint name="jx" type="fixed"><parent link="y"/><child link="x"/></joint>
  <joint name="jy" type="fixed"><parent link="x"/><child link="y"/></joint>
</robot>""")
    with pytest.raises(ParseError, match="cycle") as info:
        parse_urdf(text, path="t.urdf")
    assert info.value.line in (_line_of(text, 'name="jx"'), _line_of(text, 'name="jy"'))
    # a whole-robot cycle: no root at all
    ring = """<robot name="r">
<link name="a"/>
<link name="b"/>
<joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
<joint name="ba" type="fixed"><parent link="b"/><child link="a"/></joint>
</robot>"""
    with pytest.raises(ParseError, match="cycle") as info:
        parse_urdf(ring, path="r.urdf")
    assert info.value.line == 4
    # a link that is the child of two joints
    two = GOOD.replace("</robot>", """  <joint name="j3" type="fixed"><parent link="a"/><child link="c"/></joint>
</robot>""")
    with pytest.raises(ParseError, match="child of joints") as info:
        parse_urdf(two, path="t.urdf")
    assert info.value.line == _line_of(two, 'name="j3"')


def test_broken_xml_names_the_line() -> None:
    text = GOOD.replace('<child link="c"/>', '<child link="c">')
    with pytest.raises(ParseError, match="malformed XML") as info:
        parse_urdf(text, path="t.urdf")
    # expat reports the mismatched closing tag: the </joint> after the unclosed <child>
    assert info.value.line == _line_of(text, '<child link="c">') + 1


def test_other_structural_errors() -> None:
    with pytest.raises(ParseError, match="expected <robot>"):
        parse_urdf("<robots/>")
    with pytest.raises(ParseError, match="no <link>"):
        parse_urdf('<robot name="x"/>')
    bad_material = GOOD.replace('<link name="a"/>', '<link name="a"><visual><geometry><sphere radius="1"/>'
                                                   '</geometry><material name="teal"/></visual></link>')
    with pytest.raises(ParseError, match="unknown material 'teal'") as info:
        parse_urdf(bad_material, path="t.urdf")
    assert info.value.line == _line_of(bad_material, "teal")
    bad_shape = GOOD.replace('<link name="a"/>', '<link name="a"><visual><geometry><cone radius="1"/>'
                                                '</geometry></visual></link>')
    with pytest.raises(ParseError, match="unknown geometry 'cone'"):
        parse_urdf(bad_shape)
    bad_size = GOOD.replace('<link name="a"/>', '<link name="a"><visual><geometry><box size="0 1 1"/>'
                                               '</geometry></visual></link>')
    with pytest.raises(ParseError, match="positive"):
        parse_urdf(bad_size)


def test_read_urdf_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="cannot read"):
        read_urdf(tmp_path / "nope.urdf")
