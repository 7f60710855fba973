"""The motion commands: ``info --contacts/--motion``, ``retarget`` (to .bvh, .toml, .glb), ``render --loops``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.apps.cli import main

DATA = Path(__file__).parent / "data"
SCENES = Path(__file__).parent.parent / "scenes"


def test_info_contacts_and_motion_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.json"
    assert main(["info", str(SCENES / "walk.toml"), "--contacts", "--motion", "--ground", "0", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ankle_r:" in text and "feet locked" in text
    data = json.loads(out.read_text())
    assert data["ground"] == 0.0
    asis, locked = data["as_is"], data["locked"]
    assert asis["surface"] == "drawn" and asis["penetration_mm"] > 50  # the drawn toes, 74 mm under the floor
    # locking never makes it worse: the knees change no faster, the toes come out of the floor, the feet slide less
    assert locked["knee_pop_deg"] <= asis["knee_pop_deg"] and locked["penetration_mm"] <= 1.0
    assert locked["skate_mm_per_s"] < asis["skate_mm_per_s"] and data["unlocked"] == []
    assert asis["skate_mm_per_s"] > 100 and asis["angular_speed_by_joint_deg_per_s"]["hips"] >= 0


@pytest.mark.parametrize("scene", ["six_axis_arm", "wave"])
def test_info_motion_json_without_feet_to_lock_has_the_other_measures(scene: str, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    assert main(["info", scene, "--motion", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["locked"] is None  # a robot has no legs; wave's knees never bend (no knee plane to keep)
    assert data["as_is"]["angular_speed_peak_deg_per_s"] > 0 and data["as_is"]["limit_violations"] == 0
    assert (data["as_is"]["skate_mm_per_s"] is None) == (scene == "six_axis_arm")


def test_info_json_without_motion_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(SCENES / "walk.toml"), "--json", "x.json"]) == 2
    assert "--motion" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".bvh", ".toml", ".glb"])
def test_retarget_writes_a_clip_on_the_target(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = DATA / ("CesiumMan.glb" if suffix == ".glb" else "cmu_131_03_hop_3dsmax.bvh")
    if suffix == ".toml":
        target = SCENES / "humanoid.toml"
    out = tmp_path / f"out{suffix}"
    assert main(["retarget", str(DATA / "cmu_02_01_walk.bvh"), str(target), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "bone map (humanoid" in text and "feet locked" in text
    back = animkit.load(out)
    src = animkit.load(DATA / "cmu_02_01_walk.bvh").clip()
    clip = back.clip()
    assert clip.duration == pytest.approx(src.duration, abs=1e-6)
    P = clip.sample_frames()
    assert len(P) == len(src.frame_times())
    # the hips travel as far as the source's, scaled by the hip heights
    names = back.figure.node_names
    hips = [n for n in names if n.lower() in ("hips", "skeleton_torso_joint_1")][0]
    p = back.figure.world_positions(P[[1, -1]])[:, names.index(hips)]
    assert np.linalg.norm(p[1] - p[0]) > 0.5 * back.figure.size()


def test_retarget_with_a_user_map_and_a_bad_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[bones]\nLeftKnee = "LeftLegg"\n', encoding="utf-8")
    rc = main(["retarget", str(DATA / "cmu_02_01_walk.bvh"), str(DATA / "cmu_131_03_hop_3dsmax.bvh"), "-o",
               str(tmp_path / "o.bvh"), "--map", str(bad)])
    assert rc == 2
    assert "LeftLegg" in capsys.readouterr().err


def test_render_loops_walks_on(tmp_path: Path) -> None:
    out = tmp_path / "frames"
    assert main(["render", str(SCENES / "walk.toml"), "--loops", "2", "--lock-feet", "--ground", "0", "--fps", "3",
                 "--size", "64x48", "-o", str(out) + "/", "-q"]) == 0
    assert len(list(out.glob("*.png"))) == 7  # 2 cycles of 3 frames (1.1 s at ~3 fps) and the last
    assert main(["render", str(SCENES / "walk.toml"), "--loops", "0", "-o", str(tmp_path / "x.gif"), "-q"]) == 2
