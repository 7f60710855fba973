"""A scene: a figure with its named chains, effectors, camera defaults, clips and reach defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .errors import SceneError, unknown_name
from .graph import Figure

if TYPE_CHECKING:
    from .keyframes import Clip

__all__ = ["Scene", "CameraSpec", "ReachSpec", "UpAxis"]

UpAxis = Literal["y", "z"]


@dataclass(frozen=True)
class CameraSpec:
    """Camera defaults from a scene file; None means "frame the figure automatically".

    ``distance`` (scene units from the framed centre) replaces the fitted distance; ``follow`` moves the
    camera with the root across the ground, so a long walk stays in view (see ``render.camera.follow_cameras``).
    """

    eye: tuple[float, float, float] | None = None
    target: tuple[float, float, float] | None = None
    fov_deg: float = 40.0
    width: int = 640
    height: int = 480
    azimuth_deg: float = 30.0
    elevation_deg: float = 15.0
    distance: float | None = None
    follow: bool = False


@dataclass(frozen=True)
class ReachSpec:
    """Defaults for ``animkit reach`` / ``compare``: effector, target, movable sets, solvers, timing."""

    effector: str
    target: tuple[float, ...]
    chains: tuple[str, ...] = ()
    solvers: tuple[str, ...] = ()  # empty: the robust default solver
    duration: float = 2.0
    hold: float = 0.5
    fps: float = 30.0
    start_clip: str | None = None


@dataclass(frozen=True, eq=False)
class Scene:
    """What ``animkit.load`` returns."""

    figure: Figure
    chains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    effectors: Mapping[str, str] = field(default_factory=dict)
    camera: CameraSpec = field(default_factory=CameraSpec)
    clips: Mapping[str, Clip] = field(default_factory=dict)
    reach: ReachSpec | None = None
    up: UpAxis = "y"
    source: str | None = None

    def __repr__(self) -> str:
        """One line: name, joints, DOFs, clips (the first's frames and duration), source."""
        fig = self.figure
        moving = sum(1 for j in fig.joints if j.dof_count)
        clips = ""
        if self.clips:
            first = next(iter(self.clips.values()))
            d = float(first.duration or 0.0)
            clips = (f", clips={list(self.clips)[:3] + (['...'] if len(self.clips) > 3 else [])} "
                     f"({int(round(d * first.fps)) + 1} frames, {d:.3g} s)")
        src = f", source={self.source!r}" if self.source else ""
        return f"Scene({fig.name!r}, {moving} joints, {fig.dof_count} DOFs{clips}{src})"

    def chain(self, name: str) -> tuple[str, ...]:
        """The joint names of chain ``name``."""
        try:
            return self.chains[name]
        except KeyError:
            raise SceneError(unknown_name("chain", name, self.chains)) from None

    def effector_node(self, name: str) -> str:
        """The node an effector name refers to (a node name is accepted as itself)."""
        if name in self.effectors:
            return self.effectors[name]
        if name in self.figure.node_names:
            return name
        raise SceneError(unknown_name("effector", name, list(self.effectors) + self.figure.node_names))

    def clip(self, name: str | None = None) -> Clip:
        """Clip ``name``, or the only/first clip when ``name`` is None."""
        if not self.clips:
            raise SceneError(f"{self.source or 'scene'} has no clips")
        if name is None:
            return next(iter(self.clips.values()))
        try:
            return self.clips[name]
        except KeyError:
            raise SceneError(unknown_name("clip", name, self.clips)) from None
