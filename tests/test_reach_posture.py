"""Issue 21 §3: the free arm hangs, within 45° of vertical, when the trunk bends, on characters the natural reach
was not shaped around.

CesiumMan and RiggedFigure (Khronos samples; tests/data/SOURCES.md) rest in an A-pose with the arms 61° and 62° out
from hanging, so a reach's first frame, the trunk still upright, holds the free arm there: the whole clip's largest
angle was 61–62° although the arm had dropped within 13° of hanging before the trunk started to bend. What is held
here is the issue's own statement, read from the world positions of the free shoulder and wrist joints and of the
hips and neck (nodes named from each file, not through the humanoid bone map the measures use): on every frame whose
trunk line hips → neck has turned TRUNK_BENT or more from the first frame's, the shoulder-to-wrist direction is
within 45° of straight down, the trunk does bend (a low reach: at least 15° by its end), and the clip ends with the
arm hanging; `compare`'s free-arm measure reads the same angle.

And the hanging arm stays clear of the body. Gravity (animkit.ik.hang.Hang) knows the body's mass, not its volume:
the bent, side-bent trunk carries the free shoulder over the midline, and without animkit.ik.clear.Clear (the trunk
as capsules measured from the skinned vertices) the arm hung plumb through the belly and pelvis, its
elbow and wrist centres 3-5 cm inside the skinned surface at the last frame (RiggedFigure's 9-10 cm).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from animkit import load
from animkit.motion.reach import compare
from animkit.motion.reach_measures import TRUNK_BENT
from animkit.motion.reach_rigs import reaching_scene

DATA = Path(__file__).parent / "data"
HANG_DEG = 45.0  # issue 21 §3: the free arm within 45° of vertical when the trunk bends

# file, the reach (compare's own defaults: 2 s, 0.5 s hold, 30 fps), the left (free) arm's shoulder and wrist nodes
# and the hips and neck nodes, named as each file names them. CesiumMan's target is 10 cm lower than the one the
# issue's notes use: since the hand reaches with its drawn surface (reach_surface's site, 18 cm past the wrist),
# (-0.3, 0.6, 0.4) is met with the trunk leaning 9°, too little to test a bending trunk; here it leans 19°
CASES = {
    "CesiumMan": ("CesiumMan.glb", (-0.3, 0.5, 0.4), "Skeleton_arm_joint_L__4_", "Skeleton_arm_joint_L__2_",
                  "Skeleton_torso_joint_1", "Skeleton_neck_joint_1"),
    "RiggedFigure": ("RiggedFigure.glb", (-0.25, 0.45, 0.35), "arm_joint_L_1", "arm_joint_L_3", "torso_joint_1",
                     "neck_joint_1"),
}


def _down_angle(d: np.ndarray) -> np.ndarray:
    """Degrees between each row of ``d`` and straight down (−y), by the cosine of the angle."""
    c = -d[:, 1] / np.linalg.norm(d, axis=1)
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


@pytest.fixture(scope="module", params=sorted(CASES))
def torso_reach(request):  # type: ignore[no-untyped-def]
    """The natural torso reach of the right hand, its world joint positions and the case's node names."""
    file, target, shoulder, wrist, hips, neck = CASES[request.param]
    scene = load(DATA / file)
    c = compare(scene, effector="hand_r", target=target, chains=["torso"], solvers=["natural"], quiet=True)
    panel = c.panels[0]
    fig = c.figure or scene.figure  # the figure the poses are for (RiggedFigure's hips can translate there)
    x = fig.world_positions(panel.poses)
    ix = {n: fig.node_names.index(n) for n in (shoulder, wrist, hips, neck)}
    return request.param, panel, x, ix, (shoulder, wrist, hips, neck)


@pytest.mark.slow
def test_the_free_arm_hangs_while_the_trunk_bends(torso_reach) -> None:  # type: ignore[no-untyped-def]
    name, panel, x, ix, (shoulder, wrist, hips, neck) = torso_reach
    arm = _down_angle(x[:, ix[wrist]] - x[:, ix[shoulder]])
    trunk = x[:, ix[neck]] - x[:, ix[hips]]
    cos = trunk @ trunk[0] / (np.linalg.norm(trunk, axis=1) * np.linalg.norm(trunk[0]))
    lean = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    bent = lean >= TRUNK_BENT
    assert arm[0] > 60.0, name  # the rig's A-pose: the first frame, nothing bent yet
    assert lean[-1] >= 15.0 and bent.sum() >= 20, name  # the trunk does bend, over many frames
    assert arm[bent].max() <= HANG_DEG, name  # measured: CesiumMan 39.7°, RiggedFigure 38.8° (12.4°, 8.6° hanging plumb
    # through the body before Clear: the arm now swings out round the belly and hips)
    assert arm[-1] <= HANG_DEG, name
    m = panel.measures
    assert m is not None and m.free_arm_deg is not None
    assert m.free_arm_deg == pytest.approx(arm[bent].max(), abs=1e-6), name
    assert m.free_arm_start_deg == pytest.approx(arm[0], abs=1e-6), name
    assert m.free_arm_end_deg == pytest.approx(arm[-1], abs=1e-6), name


def _inside_depth(scene, W: np.ndarray, nodes: list[int], limb: set[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    """How far each node's origin lies inside the skinned body surface (m; negative: outside): along the outward
    normal of the nearest vertex whose strongest influence is not one of ``limb``'s joints (the limb's own flesh
    surrounds its joints), −(p − v) · n, n the unit sum of the normals of that vertex's copies (a flat-shaded mesh,
    RiggedFigure's, holds one per face, and the copy argmin met first decided the sign alone)."""
    mesh = scene.meshes[0]
    X, N = mesh.positions(W[None])[0], mesh.normals(W[None])[0]
    joints, weights = np.asarray(mesh.joints), np.asarray(mesh.weights)
    strongest = np.asarray(mesh.skin.joints)[joints[np.arange(len(joints)), weights.argmax(axis=1)]]
    body = np.array([j not in limb for j in strongest])
    X, N = X[body], N[body]
    out = []
    for p in W[nodes, :3, 3]:
        k = int(np.argmin(np.linalg.norm(X - p, axis=1)))
        n = N[np.linalg.norm(X - X[k], axis=1) < 1e-6].sum(axis=0)  # a flat-shaded mesh holds one copy of a vertex
        out.append(-float((p - X[k]) @ n) / float(np.linalg.norm(n)))  # per face: their normals, summed
    return np.array(out)


@pytest.mark.slow
def test_the_hanging_arm_stays_outside_the_body(torso_reach) -> None:  # type: ignore[no-untyped-def]
    name, panel, x, ix, (shoulder, wrist, hips, neck) = torso_reach
    scene, _ = reaching_scene(load(DATA / CASES[name][0]))  # the poses' figure (RiggedFigure's hips translate)
    fig = scene.figure
    below = _below(fig, ix[shoulder])
    limb = {fig.node_names[i] for i in below}
    elbow = next(i for i in below if fig.compiled.parent[i] == ix[shoulder])
    W = fig.world_batch(panel.poses[-1:])[0]
    depth = _inside_depth(scene, W, [elbow, ix[wrist]], limb)
    # measured: CesiumMan 0.036/0.063 m outside, RiggedFigure 0.041/0.035 (without Clear, priors clear=0: 0.032/0.047
    # and 0.100/0.086 inside)
    assert np.all(depth < 0.0), (name, depth)


def _below(fig, top: int) -> list[int]:  # type: ignore[no-untyped-def]
    """``top`` and the nodes under it (parents come before children in the compiled order)."""
    parent, out = fig.compiled.parent, [top]
    for i in range(top + 1, len(parent)):
        if parent[i] in out:
            out.append(i)
    return out
