"""BVH import and export, checked against an independent reference reader written here from the BVH definition."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from animkit.errors import AnimkitError, ParseError, SceneError
from animkit.io.bvh import BvhData, dumps_bvh, parse_bvh
from animkit.model.figure import Figure
from animkit.model.joints import ball, custom, fixed, free, hinge, slider

DATA = Path(__file__).parent / "data"
WALK = DATA / "cmu_02_01_walk.bvh"
HOP = DATA / "cmu_131_03_hop_3dsmax.bvh"
RUN = DATA / "cmu_09_01_run.bvh"


# --- an independent reference: a tiny recursive BVH reader and per-frame FK with 4x4 matrices ---------------


def _ref_rot(axis: str, deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    M = np.eye(4)
    i, j = {"X": (1, 2), "Y": (2, 0), "Z": (0, 1)}[axis]
    M[i, i], M[i, j], M[j, i], M[j, j] = c, -s, s, c
    return M


def _ref_move(axis: str, v: float) -> np.ndarray:
    M = np.eye(4)
    M["XYZ".index(axis), 3] = v
    return M


def ref_read(text: str) -> tuple[list[dict], list[list[float]]]:
    """Joints in file order (End Sites included): name, parent index, offset, channels; and the frame rows."""
    lines = text.replace("\r", "").split("\n")
    words = [w for ln in lines[: next(i for i, ln in enumerate(lines) if ln.strip() == "MOTION")] for w in ln.split()]
    joints: list[dict] = []

    def block(k: int, parent: int, name: str) -> int:  # k points at "{"
        me = len(joints)
        joints.append({"name": name, "parent": parent, "offset": None, "channels": []})
        k += 1
        while words[k] != "}":
            if words[k] == "OFFSET":
                joints[me]["offset"] = [float(w) for w in words[k + 1:k + 4]]
                k += 4
            elif words[k] == "CHANNELS":
                n = int(words[k + 1])
                joints[me]["channels"] = words[k + 2:k + 2 + n]
                k += 2 + n
            elif words[k] == "JOINT":
                k = block(k + 2, me, words[k + 1])
            else:  # End Site
                k = block(k + 2, me, joints[me]["name"] + "_end")
        return k + 1

    block(3, -1, words[2])  # HIERARCHY ROOT name {
    m = next(i for i, ln in enumerate(lines) if ln.strip() == "MOTION")
    count = int(lines[m + 1].split(":")[1])
    rows = [[float(v) for v in ln.split()] for ln in lines[m + 3:] if ln.strip()]
    assert len(rows) == count
    return joints, rows


def ref_positions(joints: list[dict], row: list[float]) -> np.ndarray:
    """World position of every joint for one frame: M = M_parent · T(offset) · Π channel matrices."""
    world: list[np.ndarray] = []
    k = 0
    for j in joints:
        M = np.eye(4) if j["parent"] < 0 else world[j["parent"]].copy()
        M = M @ _ref_move("X", j["offset"][0]) @ _ref_move("Y", j["offset"][1]) @ _ref_move("Z", j["offset"][2])
        for ch in j["channels"]:
            v = row[k]
            k += 1
            M = M @ (_ref_rot(ch[0], v) if ch.endswith("rotation") else _ref_move(ch[0], v))
        world.append(M)
    return np.array([M[:3, 3] for M in world])


def figure_scale(P: np.ndarray) -> float:
    return float(np.linalg.norm(P - P[:, :1], axis=-1).max())


# --- real files ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [WALK, HOP, RUN], ids=lambda p: p.stem)
def test_world_positions_match_reference(path: Path) -> None:
    text = path.read_text()
    data = parse_bvh(text, path)
    joints, rows = ref_read(text)
    assert data.figure.node_names == [j["name"] for j in joints]
    picks = sorted({0, 1, len(rows) // 3, len(rows) // 2, len(rows) - 1} | set(range(0, len(rows), 97)))
    P = data.figure.world_positions(data.frames[picks])
    R = np.array([ref_positions(joints, rows[i]) for i in picks])
    assert np.abs(P - R).max() <= 1e-9 * figure_scale(R)


def test_walk_counts_and_timing() -> None:
    data = parse_bvh(WALK.read_text(), WALK)
    fig = data.figure
    assert data.frames.shape == (344, 96)
    assert fig.dof_count == 96
    ends = [n for n in fig.node_names if n.endswith("_end")]
    assert len(fig.node_names) == 31 + 7 and len(ends) == 7
    assert data.frame_time == pytest.approx(0.0083333)
    assert data.fps == pytest.approx(120.0, rel=1e-4)
    assert data.duration == pytest.approx(343 * 0.0083333)
    assert fig.dof_names[:6] == ["Hips.tx", "Hips.ty", "Hips.tz", "Hips.rz", "Hips.ry", "Hips.rx"]
    assert fig.joint("Hips").kind == "free"
    # the first frame's root position, straight from the file; angles become radians
    np.testing.assert_allclose(data.frames[0, :3], [10.4194, 16.7048, -30.1003])
    assert data.frames[0, fig.dof_index("LHipJoint.rz") + 3] == pytest.approx(math.radians(-21))


def test_walk_frame0_is_the_mb_t_pose() -> None:
    """cgspeed's MB release puts a T-pose first: arms out along ±X, feet on the ground (Y up)."""
    data = parse_bvh(WALK.read_text(), WALK)
    fig = data.figure
    P = fig.world_positions(data.frames[:1])[0]
    at = {n: P[i] for i, n in enumerate(fig.node_names)}
    for side, sign in (("Left", 1.0), ("Right", -1.0)):
        arm = at[f"{side}Hand"] - at[f"{side}Arm"]
        assert sign * arm[0] / np.linalg.norm(arm) > 0.98
    assert at["Head"][1] > at["Hips"][1] > at["LeftFoot"][1]
    assert abs(at["LeftFoot"][1]) < 0.5 and abs(at["RightFoot"][1]) < 0.5


def test_hop_mixed_orders_and_line_endings() -> None:
    raw = HOP.read_bytes()
    assert raw.count(b"\r\n") == 160 and b"\nCHANNELS 3 Zrotation Xrotation Yrotation\n" in raw
    data = parse_bvh(raw.decode(), HOP)
    fig = data.figure
    assert data.frames.shape == (1102, 96)
    arms = ["Shoulder", "Elbow", "Wrist"]
    zxy = [f"{s}{a}" for s in ("Left", "Right") for a in arms] + ["lhand", "LFingers", "LThumb", "rhand",
                                                                   "RFingers", "RThumb"]
    orders = fig.joint_orders
    for name in zxy:
        assert orders[name] == "zxy", name
        assert [d.name for d in fig.joint(name).dofs] == [f"{name}.rz", f"{name}.rx", f"{name}.ry"]
    others = [j for j in orders if j not in zxy]  # ball joints; the root is a free joint
    assert len(others) == 31 - 12 - 1 and all(orders[j] == "zyx" for j in others)
    assert fig.joint("Hips").kind == "free" and fig.joint("Hips").order == "zyx"
    assert all(fig.joint(j).kind == "ball" for j in orders)
    # the arms hang down in this release's rest pose
    elbow = fig.node("LeftElbow").parent_arc
    np.testing.assert_allclose(elbow.L[:3, 3], [0, -4.251060, 0])


def test_read_bvh_builds_a_scene() -> None:
    pytest.importorskip("animkit.keyframes")
    from animkit.io import load

    scene = load(RUN)
    assert scene.up == "y"
    clip = scene.clip("cmu_09_01_run")
    assert clip.fps == pytest.approx(1 / 0.0083333)
    assert clip.duration == pytest.approx(148 * 0.0083333)


# --- handmade files -------------------------------------------------------------------------------------------

ORDERS = ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]


def handmade(frames: int = 5, seed: int = 0, newline: str = "\r\n") -> str:
    """A chain through every rotation order, positions on a non-root joint, a non-zero root OFFSET, tabs."""
    rng = np.random.default_rng(seed)
    out = ["HIERARCHY", "ROOT base", "{", "\tOFFSET 1.5 -2.25 .75",
           "\tCHANNELS 6 Xposition Yposition Zposition Yrotation Xrotation Zrotation"]
    depth = 1
    width = 6
    for k, order in enumerate(ORDERS):
        ind = "\t" * depth
        out += [f"{ind}JOINT j{order}", f"{ind}{{", f"{ind}\tOFFSET {0.5 + k:.3f} {0.25 * k:.3f} -0.5"]
        if k == 2:  # position channels on a non-root joint, in a scrambled order
            out.append(f"{ind}  CHANNELS 6 Zposition Xrotation Yposition Zrotation Xposition Yrotation")
            width += 6
        else:
            out.append(f"{ind} CHANNELS 3 " + " ".join(f"{a}rotation" for a in order))
            width += 3
        depth += 1
    ind = "\t" * depth
    out += [f"{ind}End Site", f"{ind}{{", f"{ind}\tOFFSET 0 1 0", f"{ind}}}"]
    out += ["\t" * d + "}" for d in range(depth - 1, -1, -1)]
    out += ["MOTION", f"Frames: {frames}", "Frame Time: .04"]
    vals = rng.uniform(-170, 170, size=(frames, width))
    out += ["\t".join(f"{v:.4f}" for v in row) for row in vals]
    return newline.join(out) + newline + newline


def test_handmade_matches_reference_and_round_trips() -> None:
    text = handmade()
    data = parse_bvh(text)
    fig = data.figure
    assert fig.node_names == ["base"] + [f"j{o}" for o in ORDERS] + ["jZYX_end"]
    assert fig.node("base").parent_arc.L[:3, 3].tolist() == [1.5, -2.25, 0.75]
    assert fig.joint("jYXZ").kind == "custom" and fig.joint("jYXZ").dof_count == 6
    assert fig.joint("base").kind == "free" and fig.joint("base").order == "yxz"
    joints, rows = ref_read(text)
    R = np.array([ref_positions(joints, r) for r in rows])
    P = fig.world_positions(data.frames)
    scale = figure_scale(R)
    assert np.abs(P - R).max() <= 1e-9 * scale
    again = parse_bvh(dumps_bvh(fig, data.frames, frame_time=data.frame_time))
    assert again.figure.dof_names == fig.dof_names
    assert again.frame_time == data.frame_time
    assert np.abs(again.figure.world_positions(again.frames) - P).max() <= 1e-6 * scale


@pytest.mark.parametrize("path", [WALK, HOP], ids=lambda p: p.stem)
def test_real_round_trip(path: Path) -> None:
    data = parse_bvh(path.read_text(), path)
    text = dumps_bvh(data.figure, data.frames, frame_time=data.frame_time)
    again = parse_bvh(text)
    P, Q = data.figure.world_positions(data.frames), again.figure.world_positions(again.frames)
    assert again.figure.node_names == data.figure.node_names
    assert np.abs(P - Q).max() <= 1e-6 * data.figure.size()


def test_line_endings_tabs_and_blank_tail_do_not_matter() -> None:
    base = parse_bvh(handmade(newline="\n"))
    mixed = handmade(newline="\n").split("\n")
    mixed = "".join(ln + ("\r\n" if i % 2 else "\n") for i, ln in enumerate(mixed)) + "\n  \n\t\n"
    other = parse_bvh(mixed.replace("\t", "    "))
    np.testing.assert_array_equal(other.frames, base.frames)


class FakeClip:
    """Stands in for keyframes.Clip: sample(times) → poses, fps, duration."""

    def __init__(self, figure: Figure, fps: float, duration: float) -> None:
        self.figure, self.fps, self.duration = figure, fps, duration

    def sample(self, times: np.ndarray) -> np.ndarray:
        t = np.asarray(times)[:, None]
        return np.sin(t * (1 + np.arange(self.figure.dof_count))) * 0.8


def toml_like_figure() -> Figure:
    fig = Figure("pelvis", joint=free("pelvis", "xyz"), L=np.eye(4))
    fig.add("spine", "pelvis", offset=(0, 0.2, 0), joint=fixed("spine"))
    fig.add("hip", "spine", offset=(0.1, -0.3, 0), joint=ball("hip", "yzx"))
    fig.add("knee", "hip", offset=(0, -0.4, 0), joint=hinge("knee", "-x"))
    fig.add("foot", "knee", offset=(0, -0.4, 0.05), joint=slider("foot", "z"))
    fig.add("toe", "foot", offset=(0, 0, 0.1))
    return fig


def test_dumps_clip_from_a_toml_style_figure() -> None:
    fig = toml_like_figure()
    clip = FakeClip(fig, fps=30.0, duration=1.0)
    text = dumps_bvh(fig, clip)
    assert "CHANNELS 0" in text and "End Site" in text and "Frames: 31" in text
    data = parse_bvh(text)
    assert data.frame_time == pytest.approx(1 / 30)
    # BVH keeps no End Site names: "toe" comes back as "foot_end"
    assert data.figure.node_names == ["pelvis", "spine", "hip", "knee", "foot", "foot_end"]
    P = fig.world_positions(clip.sample(np.arange(31) / 30))
    Q = data.figure.world_positions(data.frames)
    assert np.abs(P - Q).max() <= 1e-6 * fig.size()


def test_dumps_bakes_what_offsets_and_axis_channels_cannot_store() -> None:
    """A rotated arc or an off-axis DOF is written baked (rest rotations in the channels): the file's FK is the
    figure's; an animated scale, which BVH cannot hold, is refused naming the node."""
    fig = Figure("root")
    fig.add("tilted", "root", offset=(0, 1, 0), rotation=[[0, -1, 0], [1, 0, 0], [0, 0, 1]],
            joint=hinge("tilted", (0.6, 0.8, 0)))
    fig.add("tip", "tilted", offset=(0.5, 0, 0))
    frames = np.array([[0.0], [0.7], [-1.3]])
    back = parse_bvh(dumps_bvh(fig, frames, frame_time=0.1))
    # the static root with one child is left out; the rest node for node
    np.testing.assert_allclose(back.figure.world_positions(back.frames), fig.world_positions(frames)[:, 1:], atol=1e-6)
    fig = Figure("root", joint=custom("root", [("scale", "x")], rest=[1.0]))
    fig.add("tip", "root", offset=(1, 0, 0))
    with pytest.raises(SceneError, match="'root'.*scale"):
        dumps_bvh(fig, np.array([[1.0], [2.0]]), frame_time=0.1)
    with pytest.raises(AnimkitError, match="frame_time"):
        dumps_bvh(toml_like_figure(), np.zeros((1, 13)))


# --- malformed files: ParseError naming the line -------------------------------------------------------------

SMALL = """HIERARCHY
ROOT hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT leg
  {
    OFFSET 0 -1 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -1 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.1
0 1 0 10 20 30 5 6 7
0 1 0 11 21 31 5 6 8
"""


def mutate(line: int, new: str | None) -> str:
    lines = SMALL.split("\n")
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (mutate(20, "0 1 0 11 21 31 5 6"), 20, "expected 9"),
        (mutate(19, "0 1 0 10 20 x 5 6 7"), 19, "'x'"),
        (mutate(19, "0 1 0 10 20 nan 5 6 7"), 19, "'nan'"),
        (mutate(17, "Frames: 3"), 21, "Frames: 3"),
        (mutate(17, "Frames: 1"), 20, "more frame lines"),
        (mutate(17, "Frames: 0"), 17, "at least one frame"),
        (mutate(18, "Frame Time: -0.1"), 18, "positive"),
        (mutate(13, None), 15, "missing '}'"),
        (mutate(7, None), 7, "expected '{'"),
        (mutate(9, "    CHANNELS 3 Zrotation Xrotation Wrotation"), 9, "Wrotation"),
        (mutate(9, "    CHANNELS 3 Zrotation Xrotation"), 9, "lists 2"),
        (mutate(8, "    "), 6, "no OFFSET"),
        (mutate(9, ""), 6, "no CHANNELS"),
        (mutate(8, "    OFFSET 0 -1"), 9, "OFFSET value 3"),
        (mutate(10, "    Bone Site"), 10, "unknown keyword 'Bone'"),
        (mutate(6, "  JOINT hips"), 6, "duplicate joint name 'hips'"),
        (mutate(1, "HIERARCHIE"), 1, "HIERARCHY"),
        (mutate(16, "MOTIONS"), 16, "MOTION"),
    ],
)
def test_malformed_names_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_bvh(text, "small.bvh")
    assert info.value.line == line, str(info.value)
    assert f"small.bvh:{line}:" in str(info.value)
    assert words in str(info.value)


def test_small_is_valid() -> None:
    data = parse_bvh(SMALL)
    assert isinstance(data, BvhData) and data.frames.shape == (2, 9)
    assert data.figure.node_names == ["hips", "leg", "leg_end"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = SMALL.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "garbage", "truncate"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "garbage":
            toks = lines[i].split() or [""]
            k = draw(st.integers(0, len(toks) - 1))
            toks[k] = draw(st.sampled_from(["{", "}", "JOINT", "End", "1e999", "-", "3.5.1", "", "MOTION",
                                            "CHANNELS", "OFFSET", "nan", "0", "Frames:", "\u00e9"])
                           | st.text(max_size=4))
            lines[i] = " ".join(toks)
    text = "\n".join(lines)
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


@pytest.mark.slow  # a fuzzer (300 mutated files): CI runs it after the fast set; test_malformed_names_the_line stays
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutations_raise_only_animkit_errors(text: str) -> None:
    try:
        data = parse_bvh(text, "m.bvh")
    except AnimkitError:
        return
    assert data.frames.shape[1] == data.figure.dof_count
    assert np.isfinite(data.frames).all()


# --- vectorised over frames ----------------------------------------------------------------------------------


def _python_calls(fn) -> int:  # noqa: ANN001
    count = 0

    def prof(frame, event, arg) -> None:  # noqa: ANN001
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_world_positions_of_10000_frames_has_no_loop_over_frames() -> None:
    data = parse_bvh(WALK.read_text(), WALK)
    many = np.tile(data.frames, (30, 1))[:10_000]
    fig = data.figure
    fig.world_positions(many[:10])  # compile once
    from animkit.model.fk import CHUNK_FRAMES

    small = _python_calls(lambda: fig.world_positions(many[:10]))
    per_chunk = _python_calls(lambda: fig.world_positions(many[:CHUNK_FRAMES + 1])) - small
    big = _python_calls(lambda: fig.world_positions(many))
    # Python-level calls grow with the number of chunks of CHUNK_FRAMES frames, never with the frame count
    assert big == small + (-(-10_000 // CHUNK_FRAMES) - 1) * per_chunk
    P = fig.world_positions(many)
    assert P.shape == (10_000, 38, 3)
    np.testing.assert_allclose(P[344 * 7 + 5], P[5], atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("frames", [7, 2 * 2048 + 5])  # NumPy path and (where numba is on) the chunked kernel
def test_world_positions_out_equals_the_allocating_path(dtype: type, frames: int) -> None:
    """``out=``: the same bits as the allocating call, written into (and returned as) the caller's buffer."""
    data = parse_bvh(RUN.read_text(), RUN)
    fig = data.figure
    poses = data.frames[np.arange(frames) % len(data.frames)]
    want = fig.world_positions(poses, dtype=dtype)
    buf = np.full((frames, len(fig.node_names), 3), np.nan, dtype=dtype)
    got = fig.world_positions(poses, dtype=dtype, out=buf)
    assert got is buf
    np.testing.assert_array_equal(buf, want)


def test_world_positions_out_rejects_wrong_buffers() -> None:
    data = parse_bvh(RUN.read_text(), RUN)
    fig, poses = data.figure, data.frames[:5]
    n = len(fig.node_names)
    bad = [np.empty((4, n, 3)), np.empty((5, n, 4)), np.empty((5, n, 3), dtype=np.float32),
           np.empty((5, 3, n)).transpose(0, 2, 1), [[0.0] * 3] * n]
    ro = np.empty((5, n, 3))
    ro.setflags(write=False)
    for out in [*bad, ro]:
        with pytest.raises(SceneError, match=rf"out must be .*\(5, {n}, 3\)"):
            fig.world_positions(poses, out=out)  # type: ignore[arg-type]


def test_deferred_rig_equals_the_eager_one_and_sees_the_figure_as_parsed() -> None:
    """The BVH loader defers the humanoid match to the rig's first use: same chains as matching right away,
    and a node added afterwards does not change what was matched (the rig is made before the add)."""
    from animkit.model.rig import humanoid_rig

    eager = humanoid_rig(parse_bvh(WALK.read_text(), WALK).figure)
    assert eager.chains  # the walk is a humanoid: a non-trivial oracle
    assert parse_bvh(WALK.read_text(), WALK).figure.rig == eager
    fig = parse_bvh(WALK.read_text(), WALK).figure
    fig.add("LeftHand_prop", "LeftHand", offset=(0, 0, 1))
    assert fig.rig == eager
    assert fig.chain(next(iter(eager.chains))) == next(iter(eager.chains.values()))
