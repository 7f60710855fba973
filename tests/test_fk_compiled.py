"""The compiled forward kinematics against the array one (animkit.model.fk's NumPy ``forward``, and the figure's own
``world``) to 1e-12, on three kinds of figure: the TOML humanoid, a URDF arm (KUKA iiwa) and a glTF figure
(CesiumMan, whose joints carry translation and scale DOFs besides their rotations):

- the figure kernel (``fk.world_batch``: the ahead-of-time or numba build of ``fk``'s frame loop) against
  ``fk.forward``;
- the Levenberg–Marquardt loops' chain FK, one problem (``lm_jit.chain_forward``) and SIMD lanes
  (``lm_batch_jit.forward_lanes``), on a serial chain of the figure's revolute DOFs, against ``Figure.world``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik import compile_chain
from animkit.ik.lm import serial_chain
from animkit.model import fk

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba is not importable (or ANIMKIT_JIT=0)")


def _figure(kind: str):
    """(figure, effector, revolute DOFs of the path root → effector) of each kind."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = {"humanoid": ROOT / "scenes" / "humanoid.toml", "urdf": DATA / "kuka_iiwa.urdf",
                "gltf": DATA / "CesiumMan.glb"}[kind]
        fig = animkit.load(path).figure
    names = list(fig.node_names)
    eff = {"humanoid": "hand_r"}.get(kind) or max(names, key=lambda n: len(fig.path_to(n)))
    on_path = {a.joint.name for a in fig.path_to(eff)}
    dofs = [i for i, d in enumerate(fig.dof_names)
            if kind == "urdf" or (d.rsplit(".", 1)[0] in on_path and d.rsplit(".", 1)[-1] in ("rx", "ry", "rz"))]
    return fig, eff, np.array(sorted(dofs), dtype=np.intp)


def _poses(fig, count: int, seed: int, dofs: np.ndarray | None = None) -> np.ndarray:
    """``count`` poses: the rest pose with ``dofs`` (default: every rotation DOF) drawn within their limits (±π
    where a DOF has none), seeded."""
    lim = fig.dof_limits()
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -np.pi)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], np.pi)
    poses = np.repeat(np.clip(fig.rest_pose(), lo, hi)[None], count, 0)
    if dofs is None:
        dofs = np.flatnonzero([d.rsplit(".", 1)[-1] in ("rx", "ry", "rz") or "." not in d for d in fig.dof_names])
    dofs = np.asarray(dofs, dtype=np.intp)
    rng = np.random.default_rng(seed)
    poses[:, dofs] = rng.uniform(lo[dofs], hi[dofs], size=(count, len(dofs)))
    return poses


@pytest.mark.parametrize("kind", ["humanoid", "urdf", "gltf"])
def test_the_compiled_figure_fk_is_the_array_fk(kind, monkeypatch):
    fig, _, _ = _figure(kind)
    c = fig.compiled
    poses = _poses(fig, 16, 1)
    monkeypatch.setattr(jit, "ALWAYS", True)
    fast = fk.world_batch(c, poses)
    M, _, _ = fk.forward(c, poses)  # (rows, 3, 4, F), rows in c.row order
    ref = np.zeros_like(fast)
    ref[:, :, :3, :] = M[c.row].transpose(3, 0, 1, 2)
    ref[:, :, 3, 3] = 1.0
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["humanoid", "urdf", "gltf"])
def test_the_loops_chain_fk_is_the_figures_fk(kind):
    from animkit.ik.lm_batch_jit import LANES, forward_lanes, lanes_fit
    from animkit.ik.lm_jit import chain_forward

    fig, eff, dofs = _figure(kind)
    poses = _poses(fig, LANES, 2, dofs)
    model = compile_chain(fig, poses[0], dofs, (eff,), "chain")
    ch = serial_chain(model)
    assert lanes_fit(ch.kHs, ch.kCe)  # rigid links: the layout both loops read (a coned chain's too, though its
    # solves run NumPy's loop: the compiled loops know no cones)
    q = np.ascontiguousarray(poses[:, model.dofs])
    T, Te = np.empty((ch.n, 4, 5)), np.empty((4, 4))
    T4, Te4 = np.empty((ch.n, 3, 5, LANES)), np.empty((3, 4, LANES))
    forward_lanes(np.ascontiguousarray(q.T), ch.kHs, ch.kCe, T4, Te4, np.empty((15, LANES)), np.empty(LANES),
                  np.empty(LANES), np.ones(LANES, dtype=np.bool_), False)
    for k in range(LANES):
        world = fig.world(poses[k])[eff]
        chain_forward(q[k], ch.kHs, ch.kCe, T, Te, np.empty(20))
        np.testing.assert_allclose(Te, world, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Te4[:, :, k], world[:3], rtol=0, atol=1e-12)
