"""Scene files: the shipped scenes, write → read round trips, and clear errors for malformed input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import animkit
from animkit.errors import ParseError
from animkit.io.toml_scene import dumps_scene, loads_scene

from .conftest import SCENES

ARM = """
[figure]
name = "arm"
up = "z"

[nodes.base]

[nodes.upper]
parent = "base"
offset = [0, 0, 0.5]
joint = { kind = "hinge", axis = "y", limits = [-90, 45] }
geometry = { shape = "capsule", radius = 0.05, to = [0, 0, 0.4], color = "#ff8000" }

[nodes.hand]
parent = "upper"
offset = [0, 0, 0.4]

[chains]
arm = ["upper"]

[effectors]
hand = "hand"
"""


def test_shipped_scenes_load_with_their_promises() -> None:
    hum = animkit.load(SCENES / "humanoid.toml")
    fig = hum.figure
    assert fig.root.name == "hips"
    assert sum(1 for j in fig.joints if j.dof_count > 0) >= 20
    assert {"arm", "torso", "hips-up"} <= set(hum.figure.rig.chains)
    assert hum.figure.chain("arm") == ("shoulder_r", "elbow_r", "wrist_r")
    assert "hand_r" in fig.node_names and hum.figure.effector("hand_r") == "hand_r"
    assert set(hum.figure.chain("arm")) < set(hum.figure.chain("torso")) < set(hum.figure.chain("hips-up"))
    # hips-up is every joint above the hips: none of the legs', nor the root's
    legs = {"hip_r", "knee_r", "ankle_r", "toe_r", "hip_l", "knee_l", "ankle_l", "toe_l", "hips"}
    movable = {j.name for j in fig.joints if j.dof_count} - legs
    assert set(hum.figure.chain("hips-up")) == movable
    # human-like limits: elbows and knees bend one way only
    lim = dict(zip(fig.dof_names, fig.dof_limits(), strict=True))
    assert lim["elbow_r.rx"][1] == 0.0 and lim["knee_r.rx"][0] == 0.0
    np.testing.assert_allclose(lim["elbow_r.rx"][0], -150 * math.pi / 180)
    six = animkit.load(SCENES / "six_axis_arm.toml").figure
    assert six.dof_count == 6
    # the elbow rests at 90 degrees: forearm horizontal
    np.testing.assert_allclose(six.rest_pose()[2], math.pi / 2)
    assert animkit.load(SCENES / "three_axis_arm.toml").up == "z"


def test_degrees_in_files_radians_inside() -> None:
    s = loads_scene(ARM)
    np.testing.assert_allclose(s.figure.dof_limits()[0], np.radians([-90, 45]))
    assert s.figure.node("upper").color == pytest.approx((1.0, 128 / 255, 0.0))


@pytest.mark.parametrize("name", ["three_axis_arm", "six_axis_arm", "humanoid"])
def test_write_read_round_trip_gives_the_same_figure(name) -> None:
    scene = animkit.load(SCENES / f"{name}.toml")
    again = loads_scene(dumps_scene(scene))
    f1, f2 = scene.figure, again.figure
    assert f1.node_names == f2.node_names and f1.dof_names == f2.dof_names
    np.testing.assert_allclose(f1.dof_limits(), f2.dof_limits(), atol=1e-9)
    np.testing.assert_allclose(f1.rest_pose(), f2.rest_pose(), atol=1e-12)
    rng = np.random.default_rng(0)
    poses = f1.clip_to_limits(rng.uniform(-2, 2, (20, f1.dof_count)))
    np.testing.assert_allclose(f1.world_batch(poses), f2.world_batch(poses), atol=1e-9)
    for a, b in zip(f1.nodes(), f2.nodes(), strict=True):
        np.testing.assert_allclose(a.T, b.T, atol=1e-9)
        assert type(a.data) is type(b.data)
    assert scene.figure.rig == again.figure.rig and scene.figure.rig.chains  # the rig is written and read back
    assert scene.reach == again.reach


def _edit(old: str, new: str) -> str:
    assert old in ARM
    return ARM.replace(old, new)


@pytest.mark.parametrize(
    "text, line, expected",
    [
        (_edit('parent = "upper"', 'parent = "uper"'), 15, "unknown parent node 'uper'.*did you mean 'upper'"),
        (_edit('[nodes.hand]\nparent = "upper"', '[nodes.hand]\nparent = "hand"'), 15, "cycle"),
        (_edit('kind = "hinge"', 'kind = "spherical"'), 11, "unknown joint kind 'spherical'"),
        (_edit("limits = [-90, 45]", "limits = [45, -90]"), 11, "min > max"),
        (_edit('axis = "y"', "axis = [0, 0, 0]"), 11, "non-zero"),
        (_edit("offset = [0, 0, 0.5]", "offset = [0, 0]"), 10, "list of 3 numbers"),
        (_edit('shape = "capsule"', 'shape = "cone"'), 12, "unknown shape 'cone'"),
        (_edit('arm = ["upper"]', 'arm = ["elbow"]'), 19, "unknown joint 'elbow'"),
        (_edit('hand = "hand"', 'hand = "palm"'), 22, "unknown node 'palm'"),
        (_edit("[nodes.base]", "[nodes.base]\nparent = \"hand\""), None, "exactly one root"),
        (_edit('radius = 0.05', 'radius = -1'), 12, "positive"),
        (_edit("offset = [0, 0, 0.5]", "ofset = [0, 0, 0.5]"), 10, "unknown key 'ofset'.*offset"),
        (_edit('up = "z"', 'up = "w"'), 4, "expected 'y' or 'z'"),
        (ARM + "\n[nodes.upper]\n", 24, "not valid TOML"),
        (_edit('color = "#ff8000"', 'color = "#ff80"'), 12, "colour"),
        (_edit('kind = "hinge", axis = "y"', 'kind = "custom", channels = ["tx", "qy"]'), 11,
         "channels, each t, r or s"),
        (_edit('kind = "hinge", axis = "y"', 'kind = "custom"'), 11, "a custom joint lists its channels"),
        (_edit('kind = "hinge", axis = "y"', 'kind = "hinge", channels = ["rx"]'), 11, "only a custom joint"),
        (_edit('kind = "hinge", axis = "y", limits = [-90, 45]',
               'kind = "custom", channels = ["tx", "rz", "rx"], order = "xz"'), 11, "expected .*'zx', got 'xz'"),
    ],
)
def test_malformed_scene_errors_name_file_line_and_expectation(tmp_path, text, line, expected) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ParseError, match=expected) as info:
        animkit.load(path)
    err = info.value
    assert err.path == str(path)
    assert str(path) in str(err)
    if line is not None:
        assert err.line == line, str(err)


def test_duplicate_node_is_an_error_with_a_line(tmp_path) -> None:
    path = tmp_path / "dup.toml"
    path.write_text(ARM + '\n[nodes.hand]\nparent = "base"\n')
    with pytest.raises(ParseError, match="not valid TOML") as info:
        animkit.load(path)
    assert info.value.line is not None


def test_missing_and_unknown_files() -> None:
    with pytest.raises(ParseError, match="file not found"):
        animkit.load("no/such/scene.toml")
    with pytest.raises(ParseError, match=r"unknown file type '\.obj'"):
        animkit.load("figure.obj")


def test_a_scene_can_build_on_a_base_scene(tmp_path) -> None:
    (tmp_path / "arm.toml").write_text(ARM)
    (tmp_path / "more.toml").write_text('[figure]\nbase = "arm.toml"\nname = "arm2"\n\n[chains]\nall = ["upper"]\n'
                                        '\n[camera]\nazimuth = 90\n')
    s = animkit.load(tmp_path / "more.toml")
    assert s.figure.name == "arm2" and s.up == "z"
    assert dict(s.figure.rig.chains) == {"arm": ("upper",), "all": ("upper",)}
    assert s.figure.rig.effectors == {"hand": "hand"} and s.camera.azimuth_deg == 90
    (tmp_path / "bad.toml").write_text('[figure]\nbase = "arm.toml"\n\n[nodes.extra]\nparent = "hand"\n')
    with pytest.raises(ParseError, match="takes its nodes"):
        animkit.load(tmp_path / "bad.toml")
    (tmp_path / "self.toml").write_text('[figure]\nbase = "self.toml"\n')
    with pytest.raises(ParseError, match="its own base"):
        animkit.load(tmp_path / "self.toml")
    (tmp_path / "a.toml").write_text('[figure]\nbase = "b.toml"\n')
    (tmp_path / "b.toml").write_text('[figure]\nbase = "a.toml"\n')
    with pytest.raises(ParseError, match="cycle"):
        animkit.load(tmp_path / "a.toml")
    (tmp_path / "missing.toml").write_text('[figure]\nbase = "nope.toml"\n')
    with pytest.raises(ParseError, match="base scene .nope.toml.: file not found") as info:
        animkit.load(tmp_path / "missing.toml")
    assert info.value.line == 2


_SCENE_LINES = (SCENES / "three_axis_arm.toml").read_text().splitlines()
_JUNK = ["", "[", "]", "=", '"', "nan", "-1e309", "[[nodes]]", "parent = 3", 'kind = "ball"', "limits = [1, 0]",
         "axis = [0, 0, 0]", "offset = [1]", "x = {", "[nodes.j1]", "[chains]", 'arm = ["nobody"]', "radius = -2",
         "rest = 999", "shape = 7"]


@given(st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "junk", "cut"]), st.integers(0, 10_000),
                          st.sampled_from(_JUNK)), min_size=1, max_size=6))
def test_mangled_scene_files_raise_only_animkit_errors(edits) -> None:
    lines = list(_SCENE_LINES)
    for op, at, junk in edits:
        i = at % max(len(lines), 1)
        if op == "drop" and lines:
            del lines[i]
        elif op == "dup" and lines:
            lines.insert(i, lines[i])
        elif op == "swap" and len(lines) > 1:
            j = (i + 1) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "junk":
            lines.insert(i, junk)
        elif op == "cut" and lines:
            lines[i] = lines[i][: len(lines[i]) // 2]
    try:
        loads_scene("\n".join(lines), "fuzz.toml")
    except animkit.AnimkitError:
        pass


def test_custom_joints_round_trip_in_file_units() -> None:
    """A custom joint (translation, a ZYX ball and scale channels, as the glTF reader makes) is written as
    ``kind = "custom"`` with its channels and read back with the same DOFs, limits, rest values (degrees for the
    rotation channels, metres and factors for the others) and the same world matrices for any pose."""
    from animkit import Figure
    from animkit.model.joints import custom

    fig = Figure("root")
    chans = [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z"), ("revolute", "z"), ("revolute", "y"),
             ("revolute", "x"), ("scale", "x"), ("scale", "y"), ("scale", "z")]
    fig.add("bone", "root", offset=(0, 0.3, 0), joint=custom("bone", chans, order="zyx",
                                                            rest=[0.1, 0.2, 0.3, 0.4, -0.5, 0.6, 1.0, 2.0, 0.5],
                                                            limits={"rx": (-1.0, 1.0), "ty": (-0.5, 0.5)}))
    fig.add("tip", "bone", offset=(0.2, 0, 0), joint=custom("tip", [("revolute", "y"), ("scale", "z")]))
    text = dumps_scene(animkit.Scene(fig))
    assert 'channels = ["tx", "ty", "tz", "rz", "ry", "rx", "sx", "sy", "sz"], order = "zyx"' in text
    rest = [float(v) for v in text.split("rest = [")[1].split("]")[0].split(",")]
    np.testing.assert_allclose(rest, [0.1, 0.2, 0.3, *np.degrees([0.4, -0.5, 0.6]), 1.0, 2.0, 0.5], rtol=1e-15)
    again = loads_scene(text).figure
    assert again.dof_names == fig.dof_names and [d.kind for d in again.dofs] == [d.kind for d in fig.dofs]
    assert again.joint("bone").order == "zyx" and again.joint("bone").kind == "custom"
    np.testing.assert_allclose(again.rest_pose(), fig.rest_pose(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(again.dof_limits(), fig.dof_limits(), rtol=1e-15, atol=0)
    poses = np.random.default_rng(3).uniform(-1, 1, (25, fig.dof_count)) + fig.rest_pose()
    np.testing.assert_allclose(again.world_batch(fig.clip_to_limits(poses)),
                               fig.world_batch(fig.clip_to_limits(poses)), rtol=0, atol=1e-12)
