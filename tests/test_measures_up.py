"""The motion measures read the up axis from the figure (issue 26 §5): the walking humanoid built again in a Z-up
world (its root arc turned by R_x(90°), which takes +y to +z) measures what the Y-up one measures, every number;
the Y-up figure measured as if Z were up does not, and ``up=`` measures a figure as if its up were that axis."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import AnimkitError
from animkit.model.figure import Figure
from animkit.model.transforms import rotation_x
from animkit.motion.measures import SourceMotion, bone_direction_errors, measure_motion, standing_hip_height
from animkit.motion.retarget import bone_map

SCENES = Path(__file__).parent.parent / "scenes"


def _turned_up(fig: Figure) -> Figure:
    """The same figure under a root arc turned by R_x(90°): its world is the Y-up one with y → z, z → −y."""
    root = fig.root_arc
    out = Figure(root.child.name, data=root.child.data, T=root.child.T, color=root.child.color, joint=root.joint,
                 L=rotation_x(math.pi / 2) @ root.L, name=fig.name, up="z")
    for arc in fig.arcs():
        if arc.parent is not None:
            node = arc.child
            out.add(node.name, arc.parent.name, L=arc.L, joint=arc.joint, data=node.data, T=node.T, color=node.color)
    return out


@pytest.fixture(scope="module")
def walk() -> tuple[Figure, Figure, np.ndarray, float]:
    scene = animkit.load(SCENES / "walk.toml")
    fig, clip = scene.figure, scene.clip()
    P = clip.sample_frames().copy()
    P[:, fig.dof_names.index("hips.ry")] += np.radians(40.0) * np.linspace(0.0, 1.0, len(P))  # it turns 40° too
    zfig = _turned_up(fig)
    assert zfig.dof_names == fig.dof_names and zfig.node_names == fig.node_names
    W = fig.world_batch(P)[:, :, :3, 3]
    np.testing.assert_allclose(zfig.world_batch(P)[:, :, :3, 3], W @ rotation_x(math.pi / 2)[:3, :3].T, atol=1e-12)
    return fig, zfig, P, clip.fps


def test_a_z_up_figure_measures_what_the_y_up_one_does(walk) -> None:
    fig, zfig, P, fps = walk
    y, z = measure_motion(fig, P, fps), measure_motion(zfig, P, fps)
    assert y.travel_hh is not None and y.travel_hh > 1.0 and y.contact_frames > 0
    assert y.facing_change_deg == pytest.approx(40.0, abs=1.0)
    for key, value in y.to_dict().items():
        other = z.to_dict()[key]
        if isinstance(value, float):
            assert other == pytest.approx(value, rel=1e-9, abs=1e-9), key
        elif isinstance(value, dict):
            assert set(other) == set(value), key
            for k, v in value.items():
                assert other[k] == pytest.approx(v, rel=1e-9, abs=1e-9), (key, k)
        else:
            assert other == value, key
    hips = "hips"
    assert standing_hip_height(zfig, hips) == pytest.approx(standing_hip_height(fig, hips), rel=1e-12)


def test_the_wrong_up_measures_wrong_and_up_overrides_the_figures(walk) -> None:
    fig, zfig, P, fps = walk
    y = measure_motion(fig, P, fps)
    # the hips stand at z = 0 as the feet do: no hip height to find metres from, said as one AnimkitError (it was a
    # ZeroDivisionError); unit=1 measures on
    with pytest.raises(AnimkitError, match="hips above the feet"):
        measure_motion(fig, P, fps, up="z")
    wrong = measure_motion(fig, P, fps, up="z", unit=1.0)  # the Y-up walk on the x-y plane: travel and facing differ
    assert wrong.travel_hh != pytest.approx(y.travel_hh, rel=0.05)
    assert wrong.facing_change_deg != pytest.approx(y.facing_change_deg, abs=5.0)
    assert fig.up == "y"  # the override leaves the figure as it was
    told = measure_motion(zfig, P, fps, up="y", unit=1.0)  # the Z-up walk goes along −y: on x-z it barely moves
    assert told.travel_hh is not None and told.travel_hh < 0.2 * y.travel_hh
    assert zfig.up == "z"


def test_a_source_in_another_up_axis_agrees_bone_for_bone(walk) -> None:
    fig, zfig, P, fps = walk
    m = measure_motion(zfig, P, fps, source=SourceMotion(fig, P))  # the source's up: its figure's
    assert m.bone_direction_median_deg == pytest.approx(0.0, abs=1e-6)
    assert m.bone_direction_p90_deg == pytest.approx(0.0, abs=1e-6)
    assert m.travel_ratio == pytest.approx(1.0, rel=1e-9) and m.facing_error_deg == pytest.approx(0.0, abs=1e-6)
    errs = bone_direction_errors(zfig, P, fig, P, bone_map(fig, zfig))
    assert max(float(e.max()) for e in errs.values()) < 1e-6
    told_wrong = bone_direction_errors(zfig, P, fig, P, bone_map(fig, zfig), source_up="z")
    assert max(float(e.max()) for e in told_wrong.values()) > math.radians(45.0)
