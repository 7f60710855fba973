"""The up axis travels with the figure (issue 25/26): a retarget's rebuilt figure (:func:`drivable`,
:func:`with_rest`) keeps its source figure's ``up``, and foot locking reads up from the figure it drives: told an up
other than the figure's, it locks exactly as on a copy of the figure carrying that up, and leaves the caller's
figure as it was."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit.motion import lock_feet
from animkit.motion.retarget_rest import drivable, with_rest
from tests.test_foot_lock import FPS, planted_everywhere, swaying_stance

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def humanoid() -> animkit.Scene:
    return animkit.load(ROOT / "scenes" / "humanoid.toml")


@pytest.mark.parametrize("up", ["y", "z"])
def test_rebuilt_figures_keep_the_up_axis(humanoid: animkit.Scene, up: str) -> None:
    fig = copy.copy(humanoid.figure)
    fig.up = up
    assert with_rest(fig, fig.rest_pose()).up == up
    turned = [n for n in fig.node_names if not any(d.revolute for d in fig.node(n).parent_arc.joint.dofs)][:2]
    made, _ = drivable(fig, turned, [])
    assert made is not fig and made.up == up


def test_the_lock_reads_up_from_the_figure(humanoid: animkit.Scene) -> None:
    fig = humanoid.figure
    P = swaying_stance(fig, 0.3, 0.02)
    c = planted_everywhere(fig, len(P))
    y = lock_feet(fig, P, FPS, contacts=c, unit=1.0)
    assert np.array_equal(lock_feet(fig, P, FPS, up="y", contacts=c, unit=1.0).poses, y.poses)
    as_z = copy.copy(fig)
    as_z.up = "z"
    z = lock_feet(as_z, P, FPS, contacts=c, unit=1.0)
    told = lock_feet(fig, P, FPS, up="z", contacts=c, unit=1.0)
    assert fig.up == "y"  # the caller's figure is left as it was
    assert np.array_equal(told.poses, z.poses)  # the passes read "z" from the figure they drive
    assert told.before.penetration_mm == z.before.penetration_mm
    assert not np.allclose(told.poses, y.poses)  # and "z" is not "y" on this clip: the test can see a difference
