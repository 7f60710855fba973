"""Shared fixtures for the IK tests: scenes, random in-limit poses, a figure with prismatic DOFs."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

import animkit
from animkit.io.urdf import MissingMeshWarning
from animkit.model.chains import dof_indices
from animkit.model.figure import Figure
from animkit.model.joints import ball, free, hinge, planar, slider

SCENES = Path(__file__).resolve().parent.parent / "scenes"
PANDA = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "franka_panda.urdf"


def load(name: str) -> animkit.Scene:
    return animkit.load(SCENES / f"{name}.toml")


def panda_ready() -> tuple[Figure, np.ndarray]:
    """The Franka Panda (URDF, meshes skipped) and its "ready" pose qr (0, −0.3, 0, −2.2, 0, 2, π/4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingMeshWarning)
        fig = animkit.load(PANDA).figure
    lim = fig.dof_limits()
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    for k, v in enumerate([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, math.pi / 4]):
        start[fig.dof_index(f"panda_joint{k + 1}")] = v
    return fig, start


def random_pose(fig: Figure, idx: np.ndarray, rng: np.random.Generator, base: np.ndarray | None = None,
                margin: float = 0.05) -> np.ndarray:
    """``base`` (default rest) with the DOFs ``idx`` drawn uniformly inside their limits (and within ±3)."""
    lim = fig.dof_limits()
    q = (fig.rest_pose() if base is None else base).copy()
    lo = np.maximum(lim[idx, 0], -3.0) + margin
    hi = np.minimum(lim[idx, 1], 3.0) - margin
    q[idx] = rng.uniform(lo, hi)
    return q


def whole_pose(fig: Figure, rng: np.random.Generator) -> np.ndarray:
    """Every DOF drawn within its limits (an unlimited one within ±0.3), the root's translation within ±0.3."""
    lim = fig.dof_limits()
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -0.3)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], 0.3)
    p = rng.uniform(lo, hi)
    p[:3] = rng.uniform(-0.3, 0.3, 3)
    return p


def natural_start(scene: animkit.Scene) -> np.ndarray:
    """The rest pose, with the humanoid's right elbow slightly bent (its rest is straight, at a limit)."""
    fig = scene.figure
    q = fig.rest_pose()
    if "elbow_r.rx" in fig.dof_names:
        q[fig.dof_index("elbow_r.rx")] = -0.6
        q[fig.dof_index("shoulder_r.rx")] = -0.3
    return q


def arm_targets(scene: animkit.Scene, count: int = 12, seed: int = 3) -> tuple[np.ndarray, list[np.ndarray]]:
    """The bent start (:func:`natural_start`) and ``count`` reachable targets for ``hand_r`` on ``arm``: FK of the
    arm's DOFs drawn inside their limits, 0.2 rad from them (the set benchmarks/bench_fabrik.py times)."""
    fig = scene.figure
    start = natural_start(scene)
    rng = np.random.default_rng(seed)
    idx = chain_dofs(scene, "arm")
    return start, [fig.world(random_pose(fig, idx, rng, base=start, margin=0.2))["hand_r"][:3, 3].copy()
                   for _ in range(count)]  # contiguous: a column's view would compile the kernels it reaches again


def slider_figure() -> Figure:
    """Free root, a planar joint, a slider and hinges: every DOF kind and several prismatic axes."""
    fig = Figure("base", joint=free("root"))
    fig.add("cart", "base", offset=(0.1, 0.2, 0.0), joint=planar("table", "z"))
    fig.add("mast", "cart", offset=(0.0, 0.0, 0.3), joint=slider("lift", (0.3, 0.2, 0.9)))
    fig.add("upper", "mast", offset=(0.0, 0.1, 0.5), joint=ball("shoulder", "zxy"))
    fig.add("lower", "upper", offset=(0.4, 0.0, 0.0), joint=hinge("elbow", (0.0, 0.6, 0.8)))
    fig.add("tip", "lower", offset=(0.3, 0.05, 0.0), rotation=np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]))
    return fig


def chain_dofs(scene: animkit.Scene, chain: str) -> np.ndarray:
    return dof_indices(scene.figure, chain)


def random_targets(fig: Figure, eff: str, dofs: np.ndarray, start: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` reachable targets (4×4): the effector's world frame at ``start`` with the DOFs ``dofs`` drawn
    uniformly inside their limits (±π where a DOF has none), seeded."""
    lim = fig.dof_limits()[dofs]
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -math.pi)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], math.pi)
    rng = np.random.default_rng(seed)
    poses = np.repeat(start[None], count, 0)
    poses[:, dofs] = rng.uniform(lo, hi, size=(count, len(dofs)))
    return np.array([fig.world(p)[eff] for p in poses])


def assert_meets(fig: Figure, eff: str, pose: np.ndarray, target: np.ndarray, tol: float, orientation_tol: float
                 ) -> None:
    """``pose`` lies inside the limits and puts ``eff`` on the 4×4 ``target`` by the figure's own FK: position
    within ``tol``, rotation within ``orientation_tol`` (radians)."""
    from animkit.model.transforms import rotation_error

    lim = fig.dof_limits()
    assert np.all(pose >= lim[:, 0] - 1e-12) and np.all(pose <= lim[:, 1] + 1e-12)
    W = fig.world(pose)[eff]
    assert np.linalg.norm(W[:3, 3] - target[:3, 3]) <= tol * (1 + 1e-9)
    assert np.linalg.norm(rotation_error(target[:3, :3], W[:3, :3])) <= orientation_tol * (1 + 1e-9)


def limit_bound_arm() -> tuple[Figure, np.ndarray, float]:
    """Two hinges (0.7 and 0.4), the elbow limited to [0, 0.2] rad, a target 0.5 from the base that only a folded
    elbow could reach, and the best distance there is (a 1441 × 21 grid's best: the elbow on its limit)."""
    fig = Figure("base")
    fig.add("upper", "base", joint=hinge("shoulder", "z"))
    fig.add("lower", "upper", offset=(0.7, 0, 0), joint=hinge("elbow", "z", limits=(0.0, 0.2)))
    fig.add("end", "lower", offset=(0.4, 0, 0))
    target = np.array([0.0, 0.5, 0.0])
    grid = np.stack(np.meshgrid(np.linspace(-math.pi, math.pi, 1441), np.linspace(0.0, 0.2, 21), indexing="ij"),
                    axis=-1).reshape(-1, 2)  # the grid's poses through the figure's batched FK at once
    best = np.linalg.norm(fig.world_positions(grid)[:, fig.node_names.index("end")] - target, axis=1).min()
    return fig, target, float(best)
