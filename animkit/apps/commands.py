"""The commands' work, shared by the ``animkit`` command (:mod:`animkit.apps.cli`) and the batch runner
(:mod:`animkit.apps.batch`): plain functions taking a scene and typed options, writing their outputs (atomically,
through ``animkit.save`` and the renderer) and returning what they did. The CLI only parses arguments and prints; a
batch task only loads its file and records the returned measures, so one job gives the same output either way.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from animkit.errors import AnimkitError, IKError, unknown_name
from animkit.scene import describe_scene

if TYPE_CHECKING:
    from animkit.apps.html_view import HtmlReport
    from animkit.ik.workspace import Workspace
    from animkit.keyframes import Clip
    from animkit.motion import LockResult
    from animkit.motion.measures import MotionReport, SourceMotion
    from animkit.motion.reach import Comparison, ReachResult
    from animkit.motion.retarget import Retargeted
    from animkit.render.frames import RenderReport, Style
    from animkit.scene import Scene

__all__ = ["load_scene", "is_html", "rest_clip", "motion_clip", "render", "convert", "retarget", "RetargetOutcome",
           "retarget_measures", "scene_measures", "MOTION_COLUMNS", "info_text", "info_json", "motion_report",
           "MotionComparison", "reach", "compare", "SET_COST", "reach_effector", "workspaces", "keys_option",
           "save_clip", "check_writable", "reach_motion", "REACH_MOTION",
           "units_line", "panel_clips", "matplotlib_pyplot", "plot_errors"]

#: The honest motion measures (:mod:`animkit.motion.measures`) each batch row carries when its clip has legs or joints.
MOTION_COLUMNS = ("skate_mm_per_s", "penetration_mm", "planted_height_median_mm", "knee_pop_deg",
                  "angular_speed_peak_deg_per_s", "limit_violations", "travel_hh", "travel_ratio",
                  "bone_direction_median_deg", "bone_direction_p90_deg")


def load_scene(path_or_name: str | Path, scene_index: int | None = None) -> Scene:
    """A scene file, or an example shipped with animkit by name (``humanoid``, ``walk``; see animkit.examples);
    ``scene_index`` picks a glTF file's scene."""
    from animkit.examples import load_file_or_example

    return load_file_or_example(str(path_or_name), scene=scene_index)


def is_html(path: str | Path | None) -> bool:
    """An output for the interactive viewer (``animkit.apps.html_view``) rather than frames."""
    return bool(path) and str(path).lower().endswith((".html", ".htm"))


def keys_option(keys: str | None, suffix: str) -> dict[str, Any]:
    """``save``'s ``keys`` option (glTF output only; an error naming the suffix for any other)."""
    if keys is None:
        return {}
    if suffix not in (".glb", ".gltf"):
        raise AnimkitError(f"--keys applies to .glb/.gltf output, not {suffix or '(no suffix)'}")
    return {"keys": keys}


# --- info ----------------------------------------------------------------------------------------------------


def info_text(scene: Scene) -> str:
    """What ``animkit info`` prints: the scene's tree (:func:`animkit.scene.describe_scene`)."""
    text = io.StringIO()
    describe_scene(scene, text)
    return text.getvalue()


def scene_measures(scene: Scene, source: SourceMotion | None = None) -> dict[str, Any]:
    """frames, duration (s), joints (movable), dofs, and for a clip the root's travel: path = Σ |h(rₖ₊₁ − rₖ)|
    over the clip's frames (h: the ground-plane part), speed = path / duration, height = mean root height; and
    :data:`MOTION_COLUMNS` from :func:`animkit.motion.measures.measure_motion` (on the scene's meshes, or its drawn
    geometry; ``source``: the clip a retarget came from, for the travel ratio and bone directions)."""
    from animkit.motion.measures import measure_motion

    fig = scene.figure
    row: dict[str, Any] = {"joints": sum(1 for j in fig.joints if j.dof_count), "dofs": fig.dof_count}
    if not scene.clips:
        return row | {"frames": 1, "duration": 0.0}
    clip = scene.clip()
    poses = clip.sample_frames()
    roots = fig.world_positions(poses)[:, 0]
    up = np.array([0.0, 1.0, 0.0]) if fig.up == "y" else np.array([0.0, 0.0, 1.0])
    ground = roots - (roots @ up)[:, None] * up
    path = float(np.linalg.norm(np.diff(ground, axis=0), axis=1).sum())
    duration = float(clip.duration or 0.0)
    row |= {"frames": len(poses), "duration": duration, "root_path": path,
            "root_speed": path / duration if duration > 0 else 0.0, "root_height": float((roots @ up).mean())}
    if len(poses) >= 3:
        m = measure_motion(fig, poses, clip.fps, meshes=scene.meshes, source=source).to_dict()
        row |= {c: m[c] for c in MOTION_COLUMNS if m[c] is not None}
    return row


def info_json(scene: Scene, name: str, out: str | Path) -> dict[str, Any]:
    """The scene's tree (as ``animkit info`` prints it) and its :func:`scene_measures`, written as JSON to ``out``;
    the measures."""
    import json  # here: most commands write no JSON (start-up)

    from animkit.atomic import atomic_path

    measures = scene_measures(scene)
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps({"file": name, "measures": measures, "tree": info_text(scene).splitlines()},
                                  indent=1) + "\n", encoding="utf-8")
    return measures


@dataclass(frozen=True)
class MotionComparison:
    """A clip's motion measures as it is and with its feet locked (``locked`` None when they could not be)."""

    clip: str
    frames: int
    fps: float
    ground: float
    as_is: MotionReport
    locked: MotionReport | None
    unlocked: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"clip": self.clip, "frames": self.frames, "fps": self.fps, "ground": self.ground,
                "as_is": self.as_is.to_dict(), "locked": None if self.locked is None else self.locked.to_dict(),
                "unlocked": list(self.unlocked)}


def motion_report(scene: Scene, clip: str | None = None, ground: float | None = None) -> MotionComparison:
    """``animkit info --motion``: :func:`animkit.motion.measures.measure_motion` of the clip as it is and after
    :func:`animkit.motion.lock_feet` (contacts from height, the same for both)."""
    from animkit.motion import MotionError, lock_feet
    from animkit.motion.measures import height_contacts, measure_motion

    c = scene.clip(clip)
    poses = c.sample_frames()
    fig, g = scene.figure, 0.0 if ground is None else float(ground)
    try:
        planted = height_contacts(fig, poses, c.fps, ground=g)
    except MotionError:
        planted = None  # no legs: the measures that need none
    asis = measure_motion(fig, poses, c.fps, meshes=scene.meshes, ground=g, contacts=planted)
    result, why = None, ""
    if planted is not None:
        try:
            result = lock_feet(fig, poses, c.fps, ground=g, meshes=scene.meshes)
        except MotionError as exc:
            why = f"feet not locked: {exc}"
    locked = None if result is None else measure_motion(fig, result.poses, c.fps, meshes=scene.meshes,
                                                        ground=g, contacts=planted)
    notes = tuple(result.unlocked) if result is not None else (why,) if why else ()
    return MotionComparison(c.name, len(poses), c.fps, g, asis, locked, notes)


# --- render --------------------------------------------------------------------------------------------------


def rest_clip(scene: Scene) -> Clip:
    """A one-frame clip of the figure's rest pose (what a scene without clips renders)."""
    from animkit.keyframes import Clip

    return Clip.from_poses(scene.figure, [0.0], scene.figure.rest_pose()[None], name="rest")


def motion_clip(scene: Scene, clip: Clip, *, fps: float | None, loops: int, lock: bool, ground: float | None
                ) -> Clip:
    """The clip as frames: ``loops`` cycles one after another (root offset and heading carried on), feet locked."""
    from animkit.keyframes import Clip as ClipType
    from animkit.motion import lock_feet, loop_poses

    if loops < 1:
        raise AnimkitError(f"--loops {loops}: expected a whole number of cycles ≥ 1")
    assert clip.duration is not None
    d = float(clip.duration)
    rate = float(fps if fps is not None else clip.fps)
    n = max(1, int(round(d * rate)))
    times = np.linspace(0.0, d, n + 1)
    poses = loop_poses(scene.figure, clip.sample(times), loops)
    eff = n / d if d > 0 else rate
    if lock:
        poses = lock_feet(scene.figure, poses, eff, ground=ground).poses
    t = np.arange(len(poses)) / eff
    return ClipType.from_poses(scene.figure, t, poses, name=clip.name, fps=eff)


def render(scene: Scene, out: str | Path, *, clip: str | Clip | None = None, size: tuple[int, int] | None = None,
           fps: float | None = None, style: Style | None = None, quiet: bool = True, overwrite: bool = False
           ) -> RenderReport | HtmlReport:
    """One clip of ``scene`` (by name or a Clip; default the first, or the rest pose for a scene without clips)
    to ``out``: frames (GIF, MP4, PNG folder or sheet, :func:`animkit.render.frames.render_clip`) or, for
    ``.html``, the interactive viewer. ``fps`` resamples a named clip (a Clip is drawn at its own frames)."""
    from animkit.keyframes import Clip
    from animkit.render.frames import Style, render_clip

    st = style if style is not None else Style()
    rest = clip is None and not scene.clips
    if rest:
        clip = rest_clip(scene)
    rate = None if isinstance(clip, Clip) and not rest else fps
    if is_html(out):
        from animkit.apps.html_view import scene_html, write_html

        return write_html(scene_html(scene, clip, size=size, fps=rate, style=st), out)
    return render_clip(scene, out, clip=clip, size=size, fps=rate, style=st, quiet=quiet, overwrite=overwrite)


# --- convert -------------------------------------------------------------------------------------------------


def check_writable(path: str | Path) -> str:
    """``path``'s suffix (lower case) if animkit writes that format; an error listing the ones it writes."""
    from animkit.io import FORMATS, SAVERS

    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS or not FORMATS[suffix].writes:
        raise AnimkitError(unknown_name("output file type", suffix or "(no suffix)", SAVERS))
    return suffix


def convert(scene: Scene, out: str | Path, *, clip: str | None = None, drop_meshes: bool = False,
            keys: str | None = None, buffers: str | None = None) -> Scene:
    """Save ``scene`` (only clip ``clip`` when named) as ``out``, the format by its suffix; the scene saved.

    A character's meshes go to .glb/.gltf only: for .bvh/.toml it is an error unless ``drop_meshes``; a BVH file
    holds one clip. ``keys`` (glTF: ``"auto"``/``"linear"``) and ``buffers`` (.gltf: ``"external"``/``"embedded"``)
    are the writer's options."""
    from animkit.io import save

    dst = Path(out)
    suffix = check_writable(dst)
    clips = [scene.clip(clip)] if clip else list(scene.clips.values())
    if scene.meshes and suffix in (".bvh", ".toml"):
        if not drop_meshes:
            names = ", ".join(m.name for m in scene.meshes[:4]) + (", …" if len(scene.meshes) > 4 else "")
            raise AnimkitError(f"{scene.source or scene.figure.name} has {len(scene.meshes)} mesh(es) ({names}) and "
                               f"a {suffix} file holds no meshes; convert it to .glb or .gltf, or give --no-meshes to "
                               "keep only the skeleton")
        scene = dataclasses.replace(scene, meshes=())
    if suffix == ".bvh" and len(clips) > 1:
        raise AnimkitError(f"{scene.source or scene.figure.name} has {len(clips)} clips "
                           f"({', '.join(c.name for c in clips)}) and a BVH file holds one: pick one with --clip")
    options = keys_option(keys, suffix)
    if buffers is not None:
        if suffix != ".gltf":
            raise AnimkitError(f"--buffers applies to .gltf output, not {suffix}")
        options["buffers"] = buffers
    scene = dataclasses.replace(scene, clips={c.name: c for c in clips})
    save(dst, scene, **options)
    return scene


# --- retarget ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetargetOutcome:
    """A retarget's result: the target scene holding the one retargeted clip, the retarget itself, and the foot
    lock (``locked`` None when not asked for or not possible; ``lock_note``: why it was not possible)."""

    scene: Scene
    clip: Clip
    result: Retargeted
    locked: LockResult | None
    lock_note: str
    source: SourceMotion


def retarget(source: Scene, target: Scene, *, clip: str | None = None, bone_map: Any = None, lock: bool = True,
             ground: float | None = None) -> RetargetOutcome:
    """``source``'s clip (``clip``, default the first) on ``target``'s skeleton
    (:func:`animkit.motion.retarget.retarget_full`), feet locked (:func:`animkit.motion.lock_feet`) unless
    ``lock`` is False."""
    from animkit.keyframes import Clip
    from animkit.motion import MotionError, legs_of, lock_feet
    from animkit.motion.measures import SourceMotion, carry_contacts, height_contacts
    from animkit.motion.retarget import retarget_full

    if clip:
        source = dataclasses.replace(source, clips={clip: source.clip(clip)})
    r = retarget_full(source, target, bone_map)
    target = dataclasses.replace(target, figure=r.figure)
    poses, locked, note = r.poses, None, ""
    if lock:
        try:
            planted = carry_contacts(height_contacts(source.figure, source.clip().sample(r.times), r.clip.fps),
                                     legs_of(source.figure), legs_of(target.figure))  # the source's, carried
            locked = lock_feet(target.figure, poses, r.clip.fps, ground=ground, meshes=target.meshes,
                               contacts=planted)
        except MotionError as exc:
            note = str(exc)
        else:
            poses = locked.poses
    c = Clip.from_poses(target.figure, r.times, poses, name=r.clip.name, fps=r.clip.fps, loop=r.clip.loop)
    src = SourceMotion(source.figure, source.clip().sample(r.times), source.figure.up, r.bone_map, source.meshes)
    return RetargetOutcome(dataclasses.replace(target, clips={c.name: c}), c, r, locked, note, src)


def retarget_measures(outcome: RetargetOutcome) -> dict[str, Any]:
    """A batch row's retarget columns: the scale, the notes, and skate / penetration / knee pops before and after
    locking."""
    measures: dict[str, Any] = {"retarget_scale": outcome.result.scale, "retarget_notes": list(outcome.result.notes)}
    if outcome.lock_note:
        measures["lock"] = f"not locked: {outcome.lock_note}".splitlines()[0]
    if outcome.locked is not None:
        for key in ("skate_mm", "penetration_mm", "knee_pop_deg"):
            measures[f"{key}_before"] = getattr(outcome.locked.before, key)
            measures[f"{key}_after"] = getattr(outcome.locked.after, key)
        measures["feet_left_unlocked"] = len(outcome.locked.unlocked)
    return measures


# --- reach and workspaces ------------------------------------------------------------------------------------


def _moving_leaves(figure: Any) -> list[str]:
    """The leaf nodes with at least one DOF between them and the root (the ends an IK target can move)."""
    moving: dict[str, bool] = {}
    out = []
    for arc in figure.arcs():
        above = moving.get(arc.parent.name, False) if arc.parent is not None else False
        moving[arc.child.name] = above or arc.joint.dof_count > 0
        if arc.child.first_arc is None and moving[arc.child.name]:
            out.append(arc.child.name)
    return out


def reach_effector(scene: Scene, effector: str | None) -> tuple[str, bool]:
    """The effector a reach moves: the one given, the scene's ``[reach]`` one, or the figure's only moving leaf
    (a robot arm's end); and whether it was guessed that last way."""
    spec = scene.reach
    if effector is not None or (spec is not None and spec.effector):
        return str(effector or spec.effector), False  # type: ignore[union-attr]
    leaves = _moving_leaves(scene.figure)
    if len(leaves) != 1:
        raise AnimkitError("give --effector (the scene has no [reach] section naming one" +
                           (f"; its moving leaves: {', '.join(leaves[:8])})" if leaves else ")"))
    return leaves[0], True


def reach(scene: Scene, effector: str, target: Sequence[float] | None = None, *, chain: str | None = None,
          solver: str | None = None, duration: float = 2.0, hold: float = 0.5, fps: float | None = None,
          quiet: bool = True) -> tuple[Scene, ReachResult]:
    """``animkit reach``: a reach of ``effector`` to ``target`` (default: the scene's ``[reach]``; in the scene's
    units) baked into a clip (:func:`animkit.motion.reach.bake_scene_reach`: a humanoid's hand aims its site and is
    measured from its surface, as ``animkit compare``'s panels are), on the figure ``compare`` reaches
    (:func:`animkit.motion.reach_rigs.reaching_scene`: a matched humanoid in metres, its hips free to translate).
    Returns that scene (``scene`` itself where the figure needs neither) and the result, whose poses, target and
    errors are its figure's."""
    from animkit.motion.reach import bake_scene_reach
    from animkit.motion.reach_rigs import reaching_scene

    spec = scene.reach
    tg = list(target) if target is not None else (list(spec.target) if spec else None)
    if tg is None:
        raise AnimkitError("give --target X,Y,Z (the scene has no [reach] section naming one)")
    reaching, unit = reaching_scene(scene)  # as compare: in metres, a humanoid's hips free to drop
    return reaching, bake_scene_reach(reaching, effector, np.asarray(tg, dtype=float) * unit, chain=chain,
                                      solver=solver, duration=duration, hold=hold,
                                      fps=fps or (spec.fps if spec else 30.0), label=chain or "root to effector",
                                      quiet=quiet)


def compare(scene: Scene, *, processes: int | None = None, prepare: Callable[[], object] | None = None,
            **options: Any) -> Comparison:
    """``animkit compare``: :func:`animkit.motion.reach.compare` with ``options``, its movable sets baked side by
    side in ``processes`` forked processes (:func:`animkit.apps.forked.fork_map`; default: one per set where this
    process may use two cores or more, so the system shares the cores among the bakes as they run and no core
    waits on a static split's longer half). The sets are dealt out costliest first to the group with the least
    cost so far, a set's cost its DOF count + :data:`SET_COST`; each group is a comparison of its sets alone, whose
    panels are the same as in one comparison of every set (a panel's bake depends on its set and solver only),
    merged back in the sets' order; the hand's aim (:func:`animkit.motion.reach.comparison_aim`) is found here
    once, before the forks, for every group. The least costly group is baked here, then ``prepare()`` runs (the caller's
    next step's set-up, e.g. its imports) while the children finish. Only the first group's progress bars are
    drawn. One group (one core, one set): the plain call, then ``prepare()``."""
    from animkit.apps.forked import fork_map, usable_cores
    from animkit.motion.reach import compare as compare_sets
    from animkit.motion.reach import comparison_aim

    if processes is None and usable_cores() < 2:
        processes = 1
    names, groups = _set_groups(scene, options, processes)
    if len(groups) < 2:
        out = compare_sets(scene, **options)
        return out if prepare is None else _then(out, prepare)
    quiet = bool(options.get("quiet", False))
    shared = comparison_aim(scene, options.get("effector"))  # the hand's surface and site found once, not per group
    jobs = [functools.partial(compare_sets, scene, **{**options, "chains": g, "quiet": quiet or i > 0,
                                                      "shared_aim": shared}) for i, g in enumerate(groups)]
    if prepare is not None:
        jobs[0] = functools.partial(_then_call, jobs[0], prepare)
    if len(groups) > usable_cores():  # more bakes than cores: the costliest (forked first) keeps a core to itself
        jobs[2:] = [functools.partial(_yielding, job) for job in jobs[2:]]
    parts = fork_map(jobs)
    panels = tuple(p for c in names for part in parts for p in part.panels if p.chain == c)
    return dataclasses.replace(parts[0], panels=panels)


#: The niceness a forked bake other than the costliest takes where there are more bakes than cores: its scheduling
#: weight 526 against 1024 (Linux), so two of them weigh as much as the costliest alone and the system leaves that
#: one a core of its own. Sharing alike, the bakes progress at one rate and the costliest runs on alone at the end
#: while the other core idles (the humanoid's whole-body bake is over 40 % of the four bakes' CPU time).
BAKE_NICE = 3


def _yielding(job: Callable[[], Comparison]) -> Comparison:
    """job(), at :data:`BAKE_NICE` (where the system allows)."""
    try:
        os.nice(BAKE_NICE)
    except (OSError, AttributeError):  # no os.nice (Windows) or not allowed
        pass
    return job()


def _then(value: Comparison, after: Callable[[], object]) -> Comparison:
    after()
    return value


def _then_call(first: Callable[[], Comparison], after: Callable[[], object]) -> Comparison:
    """first(), then after(); first's value."""
    return _then(first(), after)


#: A set's bake cost beyond its DOFs, in DOFs: the work every frame does whatever the set (the humanoid's natural
#: bakes, CPU s: arm (6 DOFs) 0.25, torso (12) 0.45, hips-up (26) 0.46, whole-body (44) 0.80 ≈ 0.013 (DOFs + 15)).
SET_COST = 15


def _set_groups(scene: Scene, options: dict[str, Any], processes: int | None
                ) -> tuple[list[str], list[list[str]]]:
    """(the comparison's movable sets, those sets dealt into at most ``processes`` groups (None: one per set), each
    in the sets' order: the least costly group first (baked here), then the others costliest first (forked first));
    no groups where the sets cannot be named here (compare itself says what is wrong) or repeat."""
    from animkit.model.chains import dof_indices
    from animkit.motion.reach import chains_moving

    spec, fig = scene.reach, scene.figure
    effector = options.get("effector") or (spec.effector if spec else None)
    try:  # the sets compare bakes (as it names them)
        names = list(options.get("chains") or (spec.chains if spec and spec.chains else
                                               chains_moving(fig, fig.effector(str(effector)))))
        sizes = {c: len(dof_indices(fig, c)) + SET_COST for c in names}
    except AnimkitError:
        return [], []
    if effector is None or len(set(names)) != len(names):
        return names, []
    k = len(names) if processes is None else max(1, min(processes, len(names)))
    groups: list[list[str]] = [[] for _ in range(k)]
    load = [0] * k
    for c in sorted(names, key=lambda c: -sizes[c]):
        j = load.index(min(load))
        groups[j].append(c)
        load[j] += sizes[c]
    order = sorted(range(k), key=lambda j: load[j])
    order = order[:1] + order[:0:-1]
    return names, [sorted(groups[j], key=names.index) for j in order if groups[j]]


def workspaces(scene: Scene, chains: Sequence[str] | None = None, effector: str | None = None, *, points: int = 2000,
               orientations: int = 12, seed: int = 0) -> list[tuple[str, Workspace]]:
    """``animkit workspace``: the reachable and dexterous workspace (:func:`animkit.ik.workspace.workspace`) of
    ``effector`` (default: the scene's ``[reach]`` one) per movable set (default: the scene's ``[reach]`` chains,
    else the rig's)."""
    from animkit.ik.workspace import workspace

    fig = scene.figure
    eff = effector or (scene.reach.effector if scene.reach else None)
    if eff is None:
        raise IKError(f"{scene.source or fig.name}: no effector given (--effector) and the scene has no [reach] "
                      "effector")
    names = list(chains) if chains else list(scene.reach.chains if scene.reach and scene.reach.chains
                                             else fig.rig.chains)
    return [(c, workspace(fig, c, eff, points=points, orientations=orientations, seed=seed)) for c in names]


#: The motion measures of a reach that make sense for it (a reach does not travel, and has no source).
REACH_MOTION = ("angular_speed_peak_deg_per_s", "angular_speed_peak_joint", "angular_speed_by_joint_deg_per_s",
                "limit_violations", "limit_excess_by_dof", "penetration_mm", "skate_mm_per_s", "knee_pop_deg")


def reach_motion(scene: Scene, poses: np.ndarray, fps: float) -> dict[str, Any] | None:
    """A reach's joint speeds, limit violations, surface under the ground and (with legs) its feet's skate and knee
    pops (:func:`animkit.motion.measures.measure_motion`); None for a clip under 3 frames."""
    from animkit.motion.measures import measure_motion

    if len(poses) < 3:
        return None
    m = measure_motion(scene.figure, poses, fps, meshes=scene.meshes).to_dict()
    return {k: m[k] for k in REACH_MOTION}


def save_clip(path: str | Path, scene: Scene, clips: Clip | Sequence[Clip] | None = None, keys: str | None = None
              ) -> None:
    """Save ``scene`` (with ``clips``: a reach's clip, a comparison's panels; None: the scene's own) to ``path``,
    ``keys`` for glTF (:func:`animkit.save`)."""
    from animkit.io import save

    save(path, scene, clips, **keys_option(keys, Path(path).suffix.lower()))


# --- the outputs beside a picture ----------------------------------------------------------------------------


def units_line(scene: Scene) -> str:
    """What the figure's numbers are in: scene units (metres by animkit's convention; a BVH file's own unit,
    often centimetres or inches), the size fig.size() reports and, for a figure with legs, metres per unit from
    its hip height (as the motion measures use)."""
    from animkit.motion import legs_of, metres_per_unit
    from animkit.motion.retarget import hip_height

    fig = scene.figure
    line = (f"units: scene units (metres unless the source used another unit); size {fig.size():.4g} units "
            f"(fig.size(): the largest distance of any node from the root at rest)")
    try:
        legs = legs_of(fig)
    except AnimkitError:
        return line
    H = hip_height(fig, legs[0].hip)
    m = metres_per_unit(fig, legs)
    return line + (f"; hips {H:.4g} units high: " + ("metres" if m == 1.0 else f"{m:.4g} m per unit (read as an "
                                                     "adult's 0.95 m hips)"))


def panel_clips(comparison: Comparison) -> list[Clip]:
    """One clip per panel, named after the panel's label, not its title with the posture riders (``torso``, not
    ``torso +neck +free arm``: the movable set the user chose; a name each: labels repeat only with solvers)."""
    out: list[Clip] = []
    for p in comparison.panels:
        label = name = p.label
        n = 2
        while name in {c.name for c in out}:
            name, n = f"{label} ({n})", n + 1
        out.append(dataclasses.replace(p.clip, name=name))
    return out


def matplotlib_pyplot() -> ModuleType:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise AnimkitError("--plot needs matplotlib, which is not installed: pip install 'animkit[plot]'") from None
    return plt


def plot_errors(comparison: Comparison, path: str) -> None:
    """Error against iteration, one line per panel (matplotlib: the optional extra animkit[plot])."""
    plt = matplotlib_pyplot()
    from animkit.io import atomic_path

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for p in comparison.panels:
        e = np.maximum(np.asarray(p.result.errors, dtype=float), 1e-12)
        ax.semilogy(np.arange(len(e)), e, marker=".", label=p.title)
    ax.set_xlabel("iteration")
    ax.set_ylabel("position error (m)")
    ax.set_title(f"{comparison.effector}: error against iteration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=suffix)
    plt.close(fig)
