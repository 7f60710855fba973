"""A reach's hand: its effector site on the surface people see, and "reached / not reached (d)" measured from the
hand's surface (animkit.motion.reach_surface), against closed forms and an independent nearest-point oracle."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from animkit.apps.commands import load_scene
from animkit.apps.reach_panels import panel_label
from animkit.ik.body import body_from_figure
from animkit.model.figure import Figure, Rig
from animkit.model.geometry import Box
from animkit.model.humanoid import match_figure
from animkit.model.joints import ball, hinge
from animkit.motion.reach import compare
from animkit.motion.reach_rigs import reaching_scene
from animkit.motion.reach_surface import hand_distance, hand_site, nearest_on_triangles, site_figure

DATA = Path(__file__).parent / "data"
HAND = (0.04, 0.10, 0.06)  # the box hand's size: x across the palm, y along the forearm (down), z thick


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    L2 = (b - a) @ (b - a)
    t = np.clip((p - a) @ (b - a) / L2, 0.0, 1.0) if L2 > 0 else 0.0
    return float(np.linalg.norm(p - (a + t * (b - a))))


def oracle_distance(p: np.ndarray, tri: np.ndarray) -> float:
    """The distance from p to one triangle another way: the plane's foot point where it falls inside (barycentric
    coordinates by least squares), else the nearest of the three edges (segments in closed form)."""
    a, b, c = tri
    M = np.stack([b - a, c - a], axis=1)
    uv = np.linalg.lstsq(M, p - a, rcond=None)[0]
    if uv[0] >= 0 and uv[1] >= 0 and uv.sum() <= 1:
        return float(np.linalg.norm(p - (a + M @ uv)))
    return min(_segment_distance(p, a, b), _segment_distance(p, b, c), _segment_distance(p, c, a))


def box_arm() -> Figure:
    """A forearm hanging from a shoulder ball, an elbow hinge, and a wrist carrying a box hand that hangs 5 cm below
    it (the box spans y = −0.05 … −0.15 in the wrist's frame); the effector ``hand_r`` is the wrist node."""
    fig = Figure("root")
    fig.add("shoulder_r", "root", offset=(0, 1.4, 0), joint=ball("shoulder_r"))
    fig.add("elbow_r", "shoulder_r", offset=(0, -0.3, 0), joint=hinge("elbow_r", "x"))
    fig.add("wrist_r", "elbow_r", offset=(0, -0.25, 0), data=Box(HAND),
            T=np.array([[1, 0, 0, 0], [0, 1, 0, -0.10], [0, 0, 1, 0], [0, 0, 0, 1.0]]))
    fig.rig = Rig({"arm": ("shoulder_r", "elbow_r")}, {"hand_r": "wrist_r"})
    return fig


def box_distance(p: np.ndarray, centre: np.ndarray, size: tuple[float, float, float]) -> float:
    """The distance from p to an axis-aligned solid box's surface, outside it (closed form)."""
    return float(np.linalg.norm(np.maximum(np.abs(p - centre) - np.asarray(size) / 2, 0.0)))


def test_nearest_point_agrees_with_an_independent_oracle() -> None:
    rng = np.random.default_rng(3)
    tri = rng.normal(size=(200, 3, 3))
    tri[:5, 2] = tri[:5, 0]  # degenerate: two corners the same
    for p in rng.normal(size=(20, 3)) * 2:
        got = np.linalg.norm(nearest_on_triangles(p, tri) - p, axis=1)
        want = np.array([oracle_distance(p, t) for t in tri])
        assert np.allclose(got, want, atol=1e-12, rtol=0)


def test_distance_to_a_box_hand_is_the_closed_form() -> None:
    fig = box_arm()
    W = fig.world(fig.rest_pose())["wrist_r"]
    centre = W[:3, 3] + np.array([0.0, -0.10, 0.0])
    rng = np.random.default_rng(5)
    targets = centre + rng.uniform(-0.3, 0.3, size=(40, 3))
    targets = targets[[box_distance(t, centre, HAND) > 1e-3 for t in targets]]
    for t in targets:
        d = hand_distance(fig, "hand_r", fig.rest_pose()[None], t)
        assert d is not None
        assert d[0] == pytest.approx(box_distance(t, centre, HAND), abs=1e-12)
    on_face = centre + np.array([0.01, -0.05, -0.02])  # on the far face (y = −0.05 from the centre)
    on_edge = centre + np.array([0.02, 0.01, 0.03])  # on the edge x = +0.02, z = +0.03
    for t in (on_face, on_edge):
        d = hand_distance(fig, "hand_r", fig.rest_pose()[None], t)
        assert d is not None and d[0] < 1e-3


def test_the_site_is_the_centre_of_the_hands_far_end() -> None:
    fig = box_arm()
    found = hand_site(fig, "hand_r")
    assert found is not None
    node, local = found
    assert node == "wrist_r"
    assert np.allclose(local, [0.0, -0.15, 0.0], atol=1e-12)  # the far face's centre, 15 cm below the wrist
    aimed, site = site_figure(fig, "hand_r")
    assert aimed is not fig and aimed.dof_names == fig.dof_names
    assert aimed.effector("hand_r") == site and fig.effector("hand_r") == "wrist_r"
    assert np.allclose(aimed.world(aimed.rest_pose())[site][:3, 3], fig.world(fig.rest_pose())["wrist_r"][:3, 3]
                       + [0.0, -0.15, 0.0], atol=1e-12)


def test_a_reach_aims_the_site_and_reads_zero_on_the_surface() -> None:
    """The box arm's hand reaches a point within reach and the label reads reached; a point 1.5 m off reads the
    closed form's distance from the box, nearer than the wrist's centre."""
    from animkit.scene import Scene

    fig = box_arm()
    scene = Scene(fig)
    goal = np.array([0.0, 1.4 - 0.30, 0.40])  # 0.5 m from the shoulder: the hand's far end reaches 0.7 m
    c = compare(scene, effector="hand_r", target=goal, chains=["arm"], priors=False, quiet=True)
    (p,) = c.panels
    assert p.surface_error is not None and p.surface_error < 1e-3 and p.reached
    assert panel_label(p) == "arm: reached"
    far = np.array([1.5, 1.4, 0.0])
    (q,) = compare(scene, effector="hand_r", target=far, chains=["arm"], priors=False, quiet=True).panels
    W = fig.world(q.poses[-1])["wrist_r"]
    want = box_distance(np.linalg.solve(W, np.append(far, 1.0))[:3], np.array([0.0, -0.10, 0.0]), HAND)
    assert q.clip_surface_error == pytest.approx(want, abs=1e-9)
    assert q.clip_surface_error < np.linalg.norm(far - W[:3, 3])  # nearer than the wrist's centre
    label = panel_label(q)
    assert not q.reached and (f"{want * 100:.0f} cm short" in label or f"({want * 100:.1f} cm)" in label)


def test_the_humanoids_hand_already_sits_at_its_site() -> None:
    """The TOML humanoid's hand_r node is the far end of its wrist's box: the figure is used as it is."""
    scene = load_scene("humanoid")
    aimed, site = site_figure(scene.figure, "hand_r")
    assert aimed is scene.figure and site == "hand_r"


def _hand_triangles(scene, hand: str, pose: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The skinned mesh's triangles (T, 3, 3) whose three corners the hand bone dominates, skinned at ``pose``
    straight from the mesh (Mesh.positions), not through BodySurface."""
    fig = scene.figure
    W = fig.world_batch(pose[None])[0]
    out = []
    for m in scene.meshes:
        top = np.asarray(m.skin.joint_index)[np.asarray(m.joints)[np.arange(m.vertex_count),
                                                                  np.argmax(m.weights, axis=1)]]
        own = top == fig.node_names.index(hand)
        faces = np.asarray(m.faces)[own[np.asarray(m.faces)].all(axis=1)]
        x = m.positions(W)
        out.append(x.reshape(-1, 3)[faces])
    return np.concatenate(out)


@pytest.mark.parametrize("name", ["RiggedFigure.glb", "CesiumMan.glb"])
def test_a_characters_site_lies_on_its_hand_beyond_the_wrist(name: str) -> None:
    scene = load_scene(DATA / name)
    fig = scene.figure
    hand = fig.effector("hand_r")
    aimed, site = site_figure(fig, "hand_r", scene.meshes)
    assert aimed is not fig and aimed.dof_names == fig.dof_names
    assert match_figure(aimed).bones == match_figure(fig).bones  # the site is no bone: the rig reads the same
    b0, b1 = body_from_figure(fig), body_from_figure(aimed)  # ... and weighs nothing: the same segments and masses
    names0, names1 = fig.node_names, aimed.node_names
    assert [names0[i] for i in b0.node] == [names1[i] for i in b1.node]
    assert np.array_equal(b0.mass, b1.mass) and np.array_equal(b0.centroid, b1.centroid)
    rest = aimed.world(aimed.rest_pose())
    s, wrist = rest[site][:3, 3], rest[hand][:3, 3]
    elbow = rest[fig.parent_of(hand)][:3, 3]
    tri = _hand_triangles(scene, hand, fig.rest_pose()).reshape(-1, 3)
    assert np.all(s >= tri.min(axis=0) - 1e-9) and np.all(s <= tri.max(axis=0) + 1e-9)
    u = (wrist - elbow) / np.linalg.norm(wrist - elbow)
    assert (s - wrist) @ u > 0.05  # beyond the wrist along the forearm, by most of a hand
    d = min(oracle_distance(s, t) for t in tri.reshape(-1, 3, 3))
    assert d < 1e-9  # on the hand's surface


@pytest.mark.slow  # a natural torso bake of RiggedFigure (about 10-25 s): CI runs it after the fast set
def test_rigged_figures_torso_label_is_the_surface_distance() -> None:
    """The torso reach the last session saw touch the target while labelled "not reached (18.8 cm)": its label's
    distance is now the one measured from the skinned hand of the clip's last frame, independently."""
    scene = load_scene(DATA / "RiggedFigure.glb")
    target = np.array([-0.25, 0.45, 0.35])
    c = compare(scene, effector="hand_r", target=target, chains=["torso"], solvers=["natural"], quiet=True)
    (p,) = c.panels
    reached, _ = reaching_scene(scene)  # the scene whose figure the poses are for (Comparison.figure)
    assert c.figure is not None and reached.figure.dof_names == c.figure.dof_names
    tri = _hand_triangles(reached, reached.figure.effector("hand_r"), p.poses[-1])
    d = min(oracle_distance(target, t) for t in tri)
    assert p.clip_surface_error == pytest.approx(d, abs=1e-9)
    label = panel_label(p)
    shown = re.search(r"\(([\d.]+) cm\)|([\d.]+) cm short", label)
    if shown is None:
        assert label.endswith("reached") and d <= 1e-3
    else:
        assert float(shown.group(1) or shown.group(2)) == pytest.approx(d * 100, abs=0.051)


def test_a_robots_tool_frame_stays_its_effector() -> None:
    """A robot arm's end effector is its tool frame: no site is hung on it and its label reads the frame's error."""
    scene = load_scene("six_axis_arm")
    eff = scene.reach.effector if scene.reach else "ee_link"
    aimed, node = site_figure(scene.figure, eff)
    assert aimed is scene.figure and node == scene.figure.effector(eff)
    (p,) = compare(scene, chains=[next(iter(scene.figure.rig.chains))], duration=0.2, hold=0.0, fps=10,
                   quiet=True).panels
    assert p.surface_error is None and p.error == p.result.position_error
