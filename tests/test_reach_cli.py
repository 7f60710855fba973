"""``animkit reach`` aims a humanoid's hand at its site on the surface people see and reports the target's distance
from the hand's skinned surface, as ``animkit compare`` does (animkit.motion.reach_surface.aim), checked against the
nearest point on the skinned hand's triangles found in the test by brute force (every triangle, straight from
``Mesh.positions``); a robot's tool frame reports its own error as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from animkit.apps import commands
from animkit.apps.cli import main
from animkit.apps.commands import load_scene
from animkit.motion.reach_surface import site_figure
from tests.test_reach_surface import oracle_distance

DATA = Path(__file__).parent / "data"
SCENES = Path(__file__).parent.parent / "scenes"
QUICK = ["--chain", "arm_r", "--duration", "0.3", "--hold", "0", "--fps", "10", "--size", "48x48", "-q"]
PRINTED = re.compile(r": (reached|not reached) \(([\d.]+) cm from the hand's surface, ")


def skinned_hand(scene, pose: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The hand's triangles (T, 3, 3) at ``pose``: those whose three corners' strongest joint is the hand bone or a
    bone below it, skinned straight from the mesh (``Mesh.positions``)."""
    fig = scene.figure
    hand = fig.effector("hand_r")
    below = {i for i, n in enumerate(fig.node_names) if hand in [a.child.name for a in fig.path_to(n)]}
    W = fig.world_batch(np.asarray(pose, dtype=float)[None])
    out = []
    for m in scene.meshes:
        strongest = np.asarray(m.skin.joint_index)[np.asarray(m.joints)[np.arange(m.vertex_count),
                                                                        np.argmax(m.weights, axis=1)]]
        own = np.isin(strongest, sorted(below))
        faces = np.asarray(m.faces).reshape(-1, 3)
        out.append(m.positions(W)[0][faces[own[faces].all(axis=1)]])
    return np.concatenate(out)


def surface_oracle(scene, pose: np.ndarray, target: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    """min over every skinned hand triangle of the target's distance from it (brute force)."""
    return min(oracle_distance(target, t) for t in skinned_hand(scene, pose))


def _run(tmp_path: Path, capsys, name: str, target: np.ndarray) -> tuple[str, dict]:  # type: ignore[no-untyped-def]
    js = tmp_path / "r.json"
    args = ["reach", str(DATA / name), "--effector", "hand_r", f"--target={','.join(f'{x:.9f}' for x in target)}",
            "-o", str(tmp_path / "r.gif"), "--json", str(js), *QUICK]
    assert main(args) == 0
    return capsys.readouterr().out, json.loads(js.read_text())


@pytest.mark.parametrize("name", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_a_target_on_the_hands_surface_reads_zero(tmp_path: Path, capsys, name: str) -> None:
    """The target is where the hand's site is with the arm raised (on the hand's surface there): the reach prints
    "reached (0.0 cm ...)", and the skinned hand touches it while the wrist's centre is a hand's length away."""
    scene = load_scene(DATA / name)
    fig = scene.figure
    aimed, site = site_figure(fig, "hand_r", scene.meshes)
    pose = fig.rest_pose().copy()
    for dof, angle in zip(fig.rig.chains["arm_r"][:3], (0.3, 0.2, -0.2), strict=True):  # the shoulder's turns
        pose[fig.dof_names.index(dof)] += angle
    target = aimed.world(pose)[site][:3, 3]
    printed, data = _run(tmp_path, capsys, name, target)
    got = PRINTED.search(printed)
    assert got is not None, printed
    assert got.group(1) == "reached" and got.group(2) == "0.0"
    scene, result = commands.reach(scene, "hand_r", target, chain="arm_r", duration=0.3, hold=0.0, fps=10)
    fig = scene.figure  # the figure it reached on (RiggedFigure's: its hips free to translate)
    d_solve, d_end = (surface_oracle(scene, p, target) for p in (result.result.pose, result.poses[-1]))
    assert d_solve <= 1e-3 and d_end <= 1e-3  # touching: TOUCH
    assert data["reached"] is True
    assert data["surface_error"] == pytest.approx(d_solve, abs=1e-6)
    assert data["clip_surface_error"] == pytest.approx(d_end, abs=1e-6)
    wrist = fig.world(result.poses[-1])[fig.effector("hand_r")][:3, 3]
    assert np.linalg.norm(wrist - target) > 0.10  # the hand touches it, not the wrist's centre


@pytest.mark.parametrize("name", ["CesiumMan.glb", "RiggedFigure.glb"])
def test_an_out_of_reach_target_reports_its_distance_from_the_hands_surface(tmp_path: Path, capsys,
                                                                            name: str) -> None:
    """A target 1.3 m beyond the arm: the printed distance and the JSON's are the skinned hand's, nearer than the
    wrist's centre by most of a hand."""
    scene = load_scene(DATA / name)
    target = np.array([-1.5, 1.3, 1.2])
    printed, data = _run(tmp_path, capsys, name, target)
    got = PRINTED.search(printed)
    assert got is not None, printed
    assert got.group(1) == "not reached" and data["reached"] is False and data["reachable"] is False
    scene, result = commands.reach(scene, "hand_r", target, chain="arm_r", duration=0.3, hold=0.0, fps=10)
    d_solve, d_end = (surface_oracle(scene, p, target) for p in (result.result.pose, result.poses[-1]))
    assert float(got.group(2)) == pytest.approx(d_solve * 100, abs=0.051)
    assert data["surface_error"] == pytest.approx(d_solve, abs=1e-6)
    assert data["clip_surface_error"] == pytest.approx(d_end, abs=1e-6)
    wrist = scene.figure.world(result.result.pose)[scene.figure.effector("hand_r")][:3, 3]
    assert np.linalg.norm(wrist - target) - d_solve > 0.10  # the wrist's centre is farther by most of a hand


def test_a_robots_tool_frame_reports_its_own_error(tmp_path: Path, capsys) -> None:
    """No hand: the printed error is the tool frame's, in metres, as before, and the JSON has no surface."""
    js = tmp_path / "r.json"
    assert main(["reach", str(SCENES / "three_axis_arm.toml"), "--target", "0.5,0.5,1.5", "--chain", "arm", "-o",
                 str(tmp_path / "a.gif"), "--duration", "0.3", "--hold", "0", "--fps", "10", "--size", "48x48", "-q",
                 "--json", str(js)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(js.read_text())
    assert data["surface_error"] is None and data["clip_surface_error"] is None
    assert f"reached (error {data['final_error']:.3g} m, " in printed


# --- the reach command reaches on compare's figure (animkit.motion.reach_rigs.reaching_scene) ---

def test_a_whole_body_reach_moves_riggedfigures_hips_as_compares_panel_does() -> None:
    """``animkit reach --chain whole-body`` on RiggedFigure (whose file never translates its hips) reaches on the figure
    compare reaches: its hips' three translation DOFs join the whole-body set (129 DOFs, not 126), and the baked
    poses are compare's plain-LM whole-body panel's for the same reach (the oracle: compare's own path), to 1e-12.
    (Before: the plain loaded figure, 126 DOFs, the hips held.)"""
    scene = load_scene(DATA / "RiggedFigure.glb")
    target = np.array([-0.25, 0.45, 0.35])
    reached, result = commands.reach(scene, "hand_r", target, chain="whole-body", duration=0.3, hold=0.0, fps=10)
    fig = reached.figure
    assert scene.figure.dof_count == 126 and fig.dof_count == 129 and result.poses.shape[1] == 129
    from animkit.motion.reach import compare

    panel = compare(scene, effector="hand_r", target=target, chains=["whole-body"], solvers=["lm"], duration=0.3,
                    hold=0.0, fps=10, quiet=True).panels[0]
    assert panel.poses.shape == result.poses.shape and np.abs(panel.poses - result.poses).max() <= 1e-12
    assert result.reached


def test_a_reach_on_a_bvh_in_its_own_units_is_the_reach_on_the_file_in_metres(tmp_path: Path, capsys) -> None:
    """CMU 02_01 in its own units (15.3 per metre) and the same file with every length times k written out in metres
    (``tests.test_reach_rigs._bvh_in_metres``: no animkit code scales it) reach alike: ``animkit reach --chain
    whole-body`` reaches both in metres (the target read in each file's units), so the poses agree to 1e-12 (measured
    5.6e-17; both figures' offsets are the same doubles) and the JSON's target is the metres'. (Before: the file-unit
    reach ran with the solver's tolerances and steps in file units, 0.63 rad and 0.83 m (in metres) apart.)"""
    from animkit.motion.legs import legs_of, metres_per_unit
    from tests.test_reach_rigs import _bvh_in_metres

    src = DATA / "cmu_02_01_walk.bvh"
    scene = load_scene(src)
    k = metres_per_unit(scene.figure, legs_of(scene.figure))
    (tmp_path / "m.bvh").write_text(_bvh_in_metres(src.read_text(), k))
    metres = load_scene(tmp_path / "m.bvh")
    target = np.array([-4.9, -11.6, 7.4])  # low, ahead and to the right, in the file's units
    a, ra = commands.reach(scene, "hand_r", target, chain="whole-body", duration=0.3, hold=0.0, fps=10)
    b, rb = commands.reach(metres, "hand_r", target * k, chain="whole-body", duration=0.3, hold=0.0, fps=10)
    assert a.figure.dof_names == b.figure.dof_names and ra.poses.shape == rb.poses.shape
    assert np.abs(ra.poses - rb.poses).max() <= 1e-12
    assert np.abs(a.figure.world_batch(ra.poses) - b.figure.world_batch(rb.poses)).max() <= 1e-12
    assert np.allclose(ra.target, target * k, atol=1e-12) and ra.reached
    js = tmp_path / "r.json"
    assert main(["reach", str(src), "--effector", "hand_r", f"--target={','.join(map(str, target))}", "--chain",
                 "whole-body", "--duration", "0.3", "--hold", "0", "--fps", "10", "--size", "48x48", "-q", "-o",
                 str(tmp_path / "r.gif"), "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert np.allclose(data["target"], target * k, atol=1e-9) and data["reached"] is True
