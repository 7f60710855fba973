"""Workspaces (seed 003) against closed forms: a chain of two ball joints reaches a spherical shell
r ∈ [l₁ − l₂, l₁ + l₂] (V = 4π/3 (r₂³ − r₁³)); with a ball wrist and a tool of length l₃ the dexterous workspace is
the shell [l₁ − l₂ + l₃, l₁ + l₂ − l₃] (every orientation puts the wrist centre on a sphere of radius l₃ that must
fit in the wrist's shell). And the CLI draws the clouds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from animkit.errors import IKError
from animkit.ik.workspace import workspace
from animkit.model.figure import Figure
from animkit.model.joints import ball

from .cli_helpers import run_cli
from .ik_helpers import SCENES

L1, L2, L3 = 1.0, 0.6, 0.2


def _shell(a: float, b: float) -> float:
    return 4.0 / 3.0 * math.pi * (b ** 3 - a ** 3) * 1000.0  # litres


def _arm() -> Figure:
    fig = Figure("base")
    fig.add("a", "base", joint=ball("shoulder"))
    fig.add("b", "a", offset=(0, 0, L1), joint=ball("elbow"))
    fig.add("c", "b", offset=(0, 0, L2), joint=ball("wrist"))
    fig.add("tip", "c", offset=(0, 0, L3))
    return fig


def test_reachable_volume_is_the_spherical_shell():
    w = workspace(_arm(), ["shoulder", "elbow"], "c", points=800, orientations=0)
    closed = _shell(L1 - L2, L1 + L2)
    assert abs(w.reachable_l - closed) <= 3.0 * w.reachable_err_l
    assert w.reachable_err_l < 0.06 * closed
    r = np.linalg.norm(w.reachable, axis=1)  # every point reached lies in the shell
    assert r.min() >= L1 - L2 - 1e-4 and r.max() <= L1 + L2 + 1e-4


def test_dexterous_volume_bounds_the_closed_form():
    w = workspace(_arm(), None, "tip", points=500, orientations=12)
    closed = _shell(L1 - L2 + L3, L1 + L2 - L3)
    assert abs(w.reachable_l - _shell(L1 - L2 - L3, L1 + L2 + L3)) <= 3.0 * w.reachable_err_l
    # M orientations per point is a necessary test: the estimate is above the closed form, by less than 35 %
    assert closed - 3.0 * w.dexterous_err_l <= w.dexterous_l <= 1.35 * closed
    r = np.linalg.norm(w.dexterous, axis=1)
    assert r.min() >= L1 - L2 + L3 - 0.1 and r.max() <= L1 + L2 - L3 + 0.1


def test_bad_input():
    with pytest.raises(IKError, match="points"):
        workspace(_arm(), None, "tip", points=10)
    with pytest.raises(IKError, match="tipp"):
        workspace(_arm(), None, "tipp")


def test_cli_draws_the_clouds(tmp_path):
    out = tmp_path / "ws.png"
    run = run_cli("workspace", str(SCENES / "humanoid.toml"), "--chains", "arm,torso", "--points", "200",
                  "--orientations", "0", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert "arm" in run.stdout and "torso" in run.stdout
    from PIL import Image

    img = np.asarray(Image.open(out))
    assert img.shape[2] == 3 and (np.abs(img.astype(int) - [89, 153, 242]).sum(axis=2) < 60).sum() > 50  # blue dots
    bad = run_cli("workspace", str(SCENES / "humanoid.toml"), "--chains", "arms", "-o", str(tmp_path / "x.png"))
    assert bad.returncode == 2 and "arm" in bad.stderr


def test_a_point_in_both_clouds_shows_the_later_one(tmp_path):
    """Dexterous points are reachable points too: drawn at the same places, the dexterous (orange) layer must show
    (it tied with the reachable one in the z-buffer and never did)."""
    from PIL import Image

    from animkit.render.clouds import render_clouds

    fig = _arm()
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1.5, 1.5, size=(60, 3))
    blue, orange = (0.35, 0.6, 0.95), (0.95, 0.45, 0.2)
    out = render_clouds(fig, fig.rest_pose(), [("both", [(pts, blue), (pts[:20], orange)])], tmp_path / "c.png")
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)

    def count(rgb):
        return int((np.abs(img - np.array(rgb) * 255).sum(axis=2) < 90).sum())

    assert count(orange) > 50 and count(blue) > 50
