"""A scene: a figure (which holds its rig: named chains and effectors) with camera defaults, clips and reach
defaults."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from animkit.display import html_for, png_for
from animkit.errors import SceneError, unknown_name
from animkit.model.figure import Figure, UpAxis, check_up

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.look.mesh import Mesh

__all__ = ["Scene", "CameraSpec", "ReachSpec", "UpAxis", "describe_scene"]



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
    """What ``animkit.load`` returns; ``meshes`` (glTF characters) hang on the figure's nodes
    (:mod:`animkit.look.mesh`)."""

    figure: Figure
    camera: CameraSpec = field(default_factory=CameraSpec)
    clips: Mapping[str, Clip] = field(default_factory=dict)
    reach: ReachSpec | None = None
    up: UpAxis = None  # type: ignore[assignment]  # None: the figure's (Figure.up); given: sets the figure's
    source: str | None = None
    meshes: tuple[Mesh, ...] = ()
    notes: tuple[str, ...] = ()  # what the reader converted or skipped (FBX units and axes...), said by describe_scene

    def __post_init__(self) -> None:
        """The scene's up axis is its figure's: ``up`` left out takes ``figure.up``; given, it sets ``figure.up``."""
        if self.up is None:
            object.__setattr__(self, "up", self.figure.up)
        else:
            self.figure.up = check_up(self.up)

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

    def _repr_html_(self) -> str | None:
        """In Jupyter: the first clip playing on the figure (a video with controls); None without clips."""
        return html_for(self)

    def _repr_png_(self) -> bytes | None:
        """In Jupyter: the rest pose as a PNG when the scene has no clips; None otherwise."""
        return png_for(self)

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


def describe_scene(scene: Scene, out: TextIO) -> None:
    """Print the tree: nodes, joints, DOFs with limits, chains, effectors and clips."""
    fig = scene.figure
    dofs = fig.dofs
    n_moving = sum(1 for j in fig.joints if j.dof_count)
    print(f"{fig.name}: {len(fig.node_names)} nodes, {n_moving} movable joints, {fig.dof_count} DOFs "
          f"(source: {scene.source or 'code'}, up: {scene.up})", file=out)
    for note in scene.notes:
        print(f"note: {note}", file=out)
    starts = {}
    i = 0
    for arc in fig.arcs():
        starts[id(arc)] = i
        i += arc.joint.dof_count
    depth = {fig.root.name: 0}
    for arc in fig.arcs():
        node = arc.child
        d = 0 if arc.parent is None else depth[arc.parent.name] + 1
        depth[node.name] = d
        shape = type(node.data).__name__.lower() if node.data is not None else "-"
        joint = arc.joint
        print(f"{'  ' * d}{node.name}  [{joint.kind}{' ' + joint.order if joint.order else ''}] data: {shape}",
              file=out)
        if joint.cone is not None:
            c = joint.cone
            axis = "the child's direction" if c.axis is None else "(" + ", ".join(f"{x:.3g}" for x in c.axis) + ")"
            print(f"{'  ' * d}  cone: swing <= {math.degrees(c.swing):g} deg about {axis}, twist "
                  f"[{math.degrees(c.twist[0]):g}, {math.degrees(c.twist[1]):g}] deg", file=out)
        for k, dof in enumerate(joint.dofs):
            s = starts[id(arc)] + k
            unit, scale = ("deg", 180 / math.pi) if dof.revolute else ("", 1.0)
            lim = "unlimited" if not (math.isfinite(dof.lower) or math.isfinite(dof.upper)) else \
                f"[{dof.lower * scale:g}, {dof.upper * scale:g}]{' ' + unit if unit else ''}"
            print(f"{'  ' * d}  #{s:<3d} {dofs[s].name:<20s} {dof.kind:<9s} limits {lim}, rest "
                  f"{dof.rest * scale:g}", file=out)
    rig = fig.rig
    if rig.chains:
        print("chains:", file=out)
        for name, joints in rig.chains.items():
            print(f"  {name}: {', '.join(joints)}", file=out)
    if rig.effectors:
        print("effectors: " + ", ".join(f"{k} -> {v}" if k != v else k for k, v in rig.effectors.items()),
              file=out)
    for name, clip in scene.clips.items():
        print(f"clip {name}: {clip.duration:g} s at {clip.fps:g} fps ({_frame_count(clip)} frames), "
              f"loop {clip.loop}", file=out)
    for mesh in scene.meshes:
        how = (f"skinned to {len(mesh.skin.joints)} joints ({mesh.skin.name})" if mesh.skin is not None
               else f"on node {mesh.node}")
        tex = "" if mesh.texture is None else f", texture {mesh.texture.shape[1]}x{mesh.texture.shape[0]}"
        print(f"mesh {mesh.name}: {mesh.vertex_count} vertices, {len(mesh.faces)} triangles, {how}{tex}", file=out)


def _frame_count(clip: Clip) -> int:
    assert clip.duration is not None  # Clip.__post_init__ resolves it to a float
    return int(round(clip.duration * clip.fps)) + 1
