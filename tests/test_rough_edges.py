"""Rough edges users hit (issue 27): zero-DOF clips, bone maps that are not UTF-8, clips too long to sample, linear
work in the number of nodes, and what ``animkit info`` says about units."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import limits
from animkit.apps.cli import main
from animkit.errors import ClipError, ParseError
from animkit.model.figure import Figure
from animkit.motion.retarget import read_bone_map

from .conftest import DATA, SCENES

ZERO_DOF_BVH = """HIERARCHY
ROOT hips
{
  OFFSET 0 0 0
  CHANNELS 0
  End Site
  {
    OFFSET 0 1 0
  }
}
MOTION
Frames: 3
Frame Time: 0.04



"""


def test_a_clip_with_no_dofs_samples(tmp_path: Path) -> None:
    p = tmp_path / "still.bvh"
    p.write_text(ZERO_DOF_BVH)
    clip = next(iter(animkit.load(p).clips.values()))
    assert clip.sample(np.array([0.0, 0.05])).shape == (2, 0)
    assert clip.sample_frames().shape == (3, 0)


def test_a_bvh_joint_without_channels_samples(tmp_path: Path) -> None:
    text = ("HIERARCHY\nROOT hips\n{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\n"
            "JOINT a\n{\nOFFSET 0 1 0\nCHANNELS 0\n"
            "End Site\n{\nOFFSET 0 1 0\n}\n}\n}\n"
            "MOTION\nFrames: 2\nFrame Time: 0.04\n0 0 0\n1 0 0\n")
    p = tmp_path / "a.bvh"
    p.write_text(text)
    clip = next(iter(animkit.load(p).clips.values()))
    assert np.allclose(clip.sample(np.array([0.0, 0.02, 0.04]))[:, 0], [0.0, 0.5, 1.0])  # linear between keys


def test_a_bone_map_that_is_not_utf8_is_a_parse_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "map.toml"
    bad.write_bytes(b'[bones]\nhips = "\xff\xfehips"\n')
    with pytest.raises(ParseError, match="not UTF-8"):
        read_bone_map(bad)
    code = main(["retarget", str(DATA / "cmu_02_01_walk.bvh"), str(DATA / "cmu_09_01_run.bvh"), "--map", str(bad),
                 "-o", str(tmp_path / "out.bvh"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not UTF-8" in err and "Traceback" not in err
    assert not (tmp_path / "out.bvh").exists()


def test_sampling_a_clip_checks_frames_times_dofs_first() -> None:
    scene = animkit.load(SCENES / "walk.toml")
    clip = scene.clips["walk"]
    long = type(clip).build(scene.figure, [], name="long", duration=999.9, fps=10_000.0)
    assert long.frame_times().shape == (9_999_001,)  # the count alone is within MAX_FRAMES
    tracemalloc.start()
    try:
        with pytest.raises(ClipError, match="MAX_SAMPLES"):
            long.sample_frames()  # 10 M frames × 46 DOFs: refused before allocating 3.7 GB
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20  # refused from the counts alone: nothing the size of the samples (3.7 GB) is made


def test_info_motion_of_a_ten_million_frame_clip_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "humanoid.toml").write_bytes((SCENES / "humanoid.toml").read_bytes())
    text = (SCENES / "walk.toml").read_text().replace("fps = 30", "fps = 10000").replace("duration = 1.1",
                                                                                       "duration = 999.9")
    (tmp_path / "walk.toml").write_text(text)
    assert main(["info", str(tmp_path / "walk.toml")]) == 0
    assert "9999001 frames" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "walk.toml"), "--motion"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MAX_SAMPLES" in err


def _lines_run(fn) -> int:  # noqa: ANN001
    """How many lines of Python ``fn()`` executes (sys.settrace's line events): work counted, not timed."""
    count = 0

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        nonlocal count
        count += event == "line"
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(old)
    return count


def test_adding_many_children_to_one_node_is_linear() -> None:
    """Figure.add keeps each node's last arc: adding a child to a node that has 5,000 runs the same lines as adding
    one to a node that has 100 (walking the sibling list, as it once did, runs 50 times as many: past 60 s for
    100,000 children), and the children keep the order they were added in."""
    def adding(fig: Figure, first: int) -> int:
        return _lines_run(lambda: [fig.add(f"n{i}", "hub", offset=(i, 0, 0)) for i in range(first, first + 20)])

    small, big = Figure("hub"), Figure("hub")
    for i in range(100):
        small.add(f"n{i}", "hub", offset=(i, 0, 0))
    for i in range(5_000):
        big.add(f"n{i}", "hub", offset=(i, 0, 0))
    assert adding(big, 5_000) == adding(small, 100) > 0
    assert big.node_names[1:4] == ["n0", "n1", "n2"] and big.node_names[-1] == "n5019"
    assert [a.child.name for a in big.node("hub").arcs()][-2:] == ["n5018", "n5019"]


def test_limits_are_read_when_checked(tmp_path: Path, monkeypatch) -> None:
    """A program may raise or lower a limit: the readers read animkit.limits at the check."""
    nodes = [{"name": f"n{i}"} for i in range(10)]
    p = tmp_path / "ten.gltf"
    import json
    p.write_text(json.dumps({"asset": {"version": "2.0"}, "nodes": nodes, "scenes": [{"nodes": list(range(10))}]}))
    assert len(animkit.load(p).figure.node_names) == 11
    monkeypatch.setattr(limits, "MAX_NODES", 9)
    with pytest.raises(ParseError, match=r"\[/nodes\].*MAX_NODES"):
        animkit.load(p)


def test_reach_uses_the_only_moving_leaf(tmp_path: Path, capsys) -> None:
    out = tmp_path / "kuka.png"
    assert main(["reach", str(DATA / "kuka_iiwa.urdf"), "--target", "0.3,0.2,0.6", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "effector lbr_iiwa_link_7 (the figure's only moving leaf)" in captured.err
    assert "reached" in captured.out and out.exists()
    # two moving leaves (the UR5's ee_link and tool0): the user must choose, and is told the choices
    assert main(["reach", str(DATA / "ur5_robot.urdf"), "--target", "0.3,0.2,0.4", "-o", str(out)]) == 2
    assert "its moving leaves: ee_link, tool0" in capsys.readouterr().err


def test_info_says_the_units_and_what_size_measures(capsys) -> None:
    assert main(["info", str(DATA / "cmu_02_01_walk.bvh")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "fig.size(): the largest distance of any node from the root at rest" in last
    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    assert f"size {fig.size():.4g} units" in last and "m per unit" in last  # CMU: hips ~14.5 units high
    assert main(["info", str(SCENES / "walk.toml")]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("units high: metres")
