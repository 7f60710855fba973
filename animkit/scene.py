"""A scene: a figure (which holds its rig: named chains and effectors) with camera defaults, clips and reach
defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .errors import SceneError, unknown_name
from .figure import Figure

if TYPE_CHECKING:
    from .keyframes import Clip
    from .mesh import Mesh

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
    priors: Mapping[str, object] | None = None  # [reach.priors]: natural reaching (animkit.ik.natural.Priors' fields)


@dataclass(frozen=True, eq=False)
class Scene:
    """What ``animkit.load`` returns; ``meshes`` (glTF characters) hang on the figure's nodes (:mod:`animkit.mesh`)."""

    figure: Figure
    camera: CameraSpec = field(default_factory=CameraSpec)
    clips: Mapping[str, Clip] = field(default_factory=dict)
    reach: ReachSpec | None = None
    up: UpAxis = "y"
    source: str | None = None
    meshes: tuple[Mesh, ...] = ()

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
