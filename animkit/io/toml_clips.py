"""Keyframed clips in scene TOML (the ``[clips.NAME]`` tables; see docs/scene-format.md, "Clips").

Angles are degrees in files (revolute DOFs; Bézier slopes in degrees per second), radians inside;
prismatic DOF values are lengths in both. A clip is written in one or more of three keyed forms, or
in the dense form:

    [[clips.NAME.keys]]               time, pose = { "joint.rx" = deg, ... }, interpolation, easing
    [clips.NAME.tracks."joint.rx"]    times, values, interpolation, easing, in_slopes, out_slopes
    [clips.NAME.rotations.JOINT]      times, euler (degrees, the joint's order) | quaternions, interpolation
    [clips.NAME]  dofs, times, frames (baked poses, one row per time)

Every problem is a :class:`~animkit.errors.ParseError` naming the key path (for example
``clips.wave.keys[2].pose."elbow_r.rx"``), the line it was found on, and what was expected.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from animkit.errors import ClipError, ParseError, unknown_name
from animkit.io._toml import Context, Seg, fmt_value, is_number, key_text
from animkit.keyframes import (
    EASINGS,
    INTERPOLATIONS,
    LOOP_MODES,
    ROTATION_INTERPOLATIONS,
    Clip,
    DenseTrackSet,
    RotationTrack,
    Track,
)
from animkit.model.figure import Figure
from animkit.model.transforms import (
    euler_intrinsic_from_matrix,
    matrix_from_euler_intrinsic,
    matrix_from_quaternion,
    quaternion_from_matrix,
)

__all__ = ["read_clips", "dumps_clips", "CLIP_KEYS"]

CLIP_KEYS = ("fps", "loop", "duration", "root_motion", "interpolation", "easing", "keys", "tracks", "rotations",
             "dofs", "times", "frames")
KEY_KEYS = ("time", "pose", "interpolation", "easing")
TRACK_KEYS = ("times", "values", "interpolation", "easing", "in_slopes", "out_slopes")
ROTATION_KEYS = ("times", "euler", "quaternions", "interpolation")
DEFAULT_INTERPOLATION = "bezier"
DENSE_DEFAULT_INTERPOLATION = "linear"
DEG = math.pi / 180.0



# --- where we are: key paths and their lines ----------------------------------------------------------


class _Where:
    """A key path inside the file, able to raise a ParseError that names it and its line."""

    def __init__(self, ctx: Context, path: tuple[Seg, ...]) -> None:
        self.ctx = ctx
        self.path = path

    def __truediv__(self, seg: Seg) -> _Where:
        return _Where(self.ctx, self.path + (seg,))

    @property
    def key(self) -> str:
        return key_text(self.path)

    def error(self, message: str) -> ParseError:
        return self.ctx.error_at(self.path, message)


# --- reading -----------------------------------------------------------------------------------------


def _number(w: _Where, v: Any, what: str = "a number") -> float:
    if not is_number(v):
        raise w.error(f"expected {what}, got {v!r}")
    return float(v)


def _numbers(w: _Where, v: Any, what: str = "a list of numbers") -> np.ndarray:
    if not isinstance(v, list) or not v:
        raise w.error(f"expected {what}, got {v!r}")
    for i, x in enumerate(v):
        if not is_number(x):
            raise (w / i).error(f"expected a number, got {x!r}")
    return np.array(v, dtype=float)


def _rows(w: _Where, v: Any, width: int, what: str) -> np.ndarray:
    if not isinstance(v, list) or not v:
        raise w.error(f"expected a list of {what} (one per key), got {v!r}")
    for i, row in enumerate(v):
        if not isinstance(row, list) or len(row) != width:
            raise (w / i).error(f"expected {what}: a list of {width} numbers, got {row!r}")
        for x in row:
            if not is_number(x):
                raise (w / i).error(f"expected {what}: a list of {width} numbers, got {row!r}")
    return np.array(v, dtype=float)


def _times(w: _Where, v: Any) -> np.ndarray:
    t = _numbers(w, v, "a list of key times in seconds")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        i = int(back[0]) + 1
        raise (w / i).error(f"key times must be strictly increasing: {t[i]:g} does not come after {t[i - 1]:g}")
    return t


def _table(w: _Where, v: Any, what: str = "a table") -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise w.error(f"expected {what}, got {type(v).__name__} {v!r}")
    return v


def _check_keys(w: _Where, table: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    for k in table:
        if k not in valid:
            raise (w / k).error(unknown_name("key", k, valid))


def _choice(w: _Where, v: Any, valid: Sequence[str], what: str) -> str:
    if not isinstance(v, str) or v not in valid:
        raise w.error(unknown_name(what, str(v), valid))
    return v


def _per_key(w: _Where, v: Any, count: int, valid: Sequence[str], what: str) -> str | tuple[str, ...]:
    """One name, or a list of ``count`` names."""
    if isinstance(v, list):
        if len(v) != count:
            raise w.error(f"expected one {what} or a list of {count} (got {len(v)})")
        return tuple(_choice(w / i, x, valid, what) for i, x in enumerate(v))
    return _choice(w, v, valid, what)


def _flatten(w: _Where, table: Mapping[str, Any], leaf: Any) -> dict[str, tuple[_Where, Any]]:
    """``{"joint.rx": v}`` or the dotted-key form ``{joint: {rx: v}}`` → {"joint.rx": (where, v)}."""
    out: dict[str, tuple[_Where, Any]] = {}
    for k, v in table.items():
        if isinstance(v, Mapping) and not leaf(v):
            for s, x in v.items():
                out[f"{k}.{s}"] = (w / f"{k}.{s}", x)
        else:
            out[k] = (w / k, v)
    return out


class _Reader:
    """Reads one ``[clips.NAME]`` table against a figure."""

    def __init__(self, figure: Figure, w: _Where, name: str) -> None:
        self.fig = figure
        self.w = w
        self.name = name
        self.dofs = {d.name: d for d in figure.dofs}

    def scale(self, dof: str) -> float:
        return DEG if self.dofs[dof].revolute else 1.0

    def dof(self, w: _Where, name: str) -> str:
        if name not in self.dofs:
            raise w.error(unknown_name("DOF", name, list(self.dofs)))
        return name

    def within(self, w: _Where, dof: str, value: float, t: float) -> None:
        """``value`` is in file units; the limit check the clip would make, but pointing at the key."""
        d, k = self.dofs[dof], self.scale(dof)
        unit = " degrees" if d.revolute else ""
        if value * k < d.lower or value * k > d.upper:
            side = "below the lower" if value * k < d.lower else "above the upper"
            bound = (d.lower if value * k < d.lower else d.upper) / k
            raise w.error(f"DOF {dof!r} has a key at t={t:g} with value {value:g}{unit}, {side} limit {bound:g}; "
                          f"keys must lie within the DOF's limits [{d.lower / k:g}, {d.upper / k:g}]")

    def clip(self, spec: Mapping[str, Any]) -> Clip:
        w = self.w
        _check_keys(w, spec, CLIP_KEYS)
        kw: dict[str, Any] = {"name": self.name}
        if "fps" in spec:
            kw["fps"] = _number(w / "fps", spec["fps"], "a positive number of frames per second")
            if kw["fps"] <= 0:
                raise (w / "fps").error(f"expected a positive number of frames per second, got {spec['fps']!r}")
        if "loop" in spec:
            kw["loop"] = _choice(w / "loop", spec["loop"], LOOP_MODES, "loop mode")
        if "duration" in spec:
            kw["duration"] = _number(w / "duration", spec["duration"], "a duration in seconds ≥ 0")
            if kw["duration"] < 0:
                raise (w / "duration").error(f"expected a duration in seconds ≥ 0, got {spec['duration']!r}")
        if "root_motion" in spec:
            rm = spec["root_motion"]
            if not isinstance(rm, str) or rm not in self.fig.joint_names:
                raise (w / "root_motion").error(unknown_name("joint", str(rm), self.fig.joint_names))
            kw["root_motion"] = rm
        interp = None
        if "interpolation" in spec:
            interp = _choice(w / "interpolation", spec["interpolation"], INTERPOLATIONS, "interpolation")
        easing = "linear"
        if "easing" in spec:
            easing = _choice(w / "easing", spec["easing"], tuple(EASINGS), "easing")
        dense = [k for k in ("dofs", "times", "frames") if k in spec]
        keyed = [k for k in ("keys", "tracks", "rotations") if k in spec]
        if dense and keyed:
            raise (w / dense[0]).error(f"a clip holds keyed tracks ({', '.join(keyed)}) or baked frames "
                                       "(dofs, times, frames), not both")
        if dense:
            if "easing" in spec:
                raise (w / "easing").error("baked frames (times, frames) take no easing; "
                                           "expected only interpolation")
            content = self.dense(spec, interp or DENSE_DEFAULT_INTERPOLATION)
            return self.build(lambda: Clip(layout=self.fig, dense=content, **kw))
        defaults = (interp or DEFAULT_INTERPOLATION, easing)
        tracks: dict[str, Track] = {}
        if "keys" in spec:
            tracks.update(self.keys(spec["keys"], defaults))
        if "tracks" in spec:
            tw = w / "tracks"
            table = _table(tw, spec["tracks"], 'a table of tracks by DOF name, e.g. [clips.NAME.tracks."elbow_r.rx"]')
            for dof, (dw, t) in _flatten(tw, table, lambda v: "times" in v or "values" in v).items():
                self.dof(dw, dof)
                if dof in tracks:
                    raise dw.error(f"DOF {dof!r} is keyed in [[clips.{self.name}.keys]] and also has a track; "
                                   "keep one")
                tracks[dof] = self.track(dw, dof, t, defaults)
        rotations: list[RotationTrack] = []
        if "rotations" in spec:
            rw = w / "rotations"
            for joint, rt in _table(rw, spec["rotations"], "a table of rotation tracks by ball joint").items():
                rotations.append(self.rotation(rw / joint, joint, rt, tracks))
        return self.build(lambda: Clip.build(self.fig, [*tracks.values(), *rotations], **kw))

    def build(self, make: Any) -> Clip:
        try:
            clip: Clip = make()
        except ClipError as exc:
            raise self.w.error(str(exc)) from None
        return clip

    def keys(self, spec: Any, defaults: tuple[str, str]) -> dict[str, Track]:
        kw = self.w / "keys"
        if not isinstance(spec, list) or not spec:
            raise kw.error("expected key poses: [[clips.NAME.keys]] tables with time and pose")
        per: dict[str, list[tuple[float, float, str, str]]] = {}
        last: float | None = None
        for i, key in enumerate(spec):
            w = kw / i
            key = _table(w, key, "a key: a table with time and pose")
            _check_keys(w, key, KEY_KEYS)
            if "time" not in key:
                raise (w / "time").error("expected time = seconds (every key has a time)")
            t = _number(w / "time", key["time"], "a time in seconds")
            if last is not None and t <= last:
                raise (w / "time").error(f"key times must be strictly increasing: {t:g} does not come after "
                                         f"{last:g} (keys[{i - 1}])")
            last = t
            interp = _choice(w / "interpolation", key.get("interpolation", defaults[0]), INTERPOLATIONS,
                             "interpolation")
            easing = _choice(w / "easing", key.get("easing", defaults[1]), tuple(EASINGS), "easing")
            if "pose" not in key:
                raise (w / "pose").error('expected pose = { "joint.rx" = value, ... }')
            pw = w / "pose"
            pose = _table(pw, key["pose"], 'a pose: { "joint.rx" = value, ... }')
            for dof, (dw, v) in _flatten(pw, pose, lambda v: False).items():
                self.dof(dw, dof)
                value = _number(dw, v, "a number" + (" (degrees)" if self.dofs[dof].revolute else ""))
                self.within(dw, dof, value, t)
                per.setdefault(dof, []).append((t, value, interp, easing))
        tracks = {}
        for dof, ks in per.items():
            times = [k[0] for k in ks]
            values = np.array([k[1] for k in ks]) * self.scale(dof)
            kinds = tuple(k[2] for k in ks)
            easings = tuple(k[3] for k in ks[:-1]) or (defaults[1],)
            try:
                tracks[dof] = Track(dof, np.array(times), values,
                                    kinds[0] if len(set(kinds)) == 1 else kinds,  # type: ignore[arg-type]
                                    easings[0] if len(set(easings)) == 1 else easings)  # type: ignore[arg-type]
            except ClipError as exc:
                raise kw.error(str(exc)) from None
        return tracks

    def track(self, w: _Where, dof: str, spec: Any, defaults: tuple[str, str]) -> Track:
        spec = _table(w, spec, "a track: a table with times and values")
        _check_keys(w, spec, TRACK_KEYS)
        for k in ("times", "values"):
            if k not in spec:
                raise (w / k).error(f"expected {k} = [...] (a track needs times and values)")
        times = _times(w / "times", spec["times"])
        K = len(times)
        revolute = self.dofs[dof].revolute
        values = _numbers(w / "values", spec["values"], "a list of values" + (" (degrees)" if revolute else ""))
        if len(values) != K:
            raise (w / "values").error(f"expected {K} values, one per key time, got {len(values)}")
        for i, v in enumerate(values):
            self.within(w / "values" / i, dof, float(v), float(times[i]))
        interp = _per_key(w / "interpolation", spec.get("interpolation", defaults[0]), K, INTERPOLATIONS,
                          "interpolation")
        easing = _per_key(w / "easing", spec.get("easing", defaults[1]), max(K - 1, 0), tuple(EASINGS), "easing")
        slopes: list[np.ndarray | None] = [None, None]
        for j, k in enumerate(("in_slopes", "out_slopes")):
            if k in spec:
                s = _numbers(w / k, spec[k], f"a list of {K} slopes" + (" (degrees per second)" if revolute else ""))
                if len(s) != K:
                    raise (w / k).error(f"expected {K} slopes, one per key time, got {len(s)}")
                slopes[j] = s * self.scale(dof)
        if (slopes[0] is None) != (slopes[1] is None):
            missing = "out_slopes" if slopes[1] is None else "in_slopes"
            raise (w / missing).error("expected both in_slopes and out_slopes, or neither (auto-clamped slopes)")
        try:
            return Track(dof, times, values * self.scale(dof), interp, easing,  # type: ignore[arg-type]
                         slopes[0], slopes[1])
        except ClipError as exc:
            raise w.error(str(exc)) from None

    def rotation(self, w: _Where, joint: str, spec: Any, tracks: Mapping[str, Track]) -> RotationTrack:
        orders = self.fig.joint_orders
        if joint not in orders:
            raise w.error(unknown_name("ball joint", joint, orders))
        spec = _table(w, spec, "a rotation track: a table with times and euler or quaternions")
        _check_keys(w, spec, ROTATION_KEYS)
        order = orders[joint]
        names = [self.fig.dof_names[i] for i in self.fig.joint_dofs[joint] if self.fig.dofs[i].revolute]
        clash = [d for d in names if d in tracks]
        if clash:
            raise w.error(f"DOF {clash[0]!r} is keyed (keys or tracks) and joint {joint!r} also has a rotation "
                          "track; keep one")
        if "times" not in spec:
            raise (w / "times").error("expected times = [...]")
        times = _times(w / "times", spec["times"])
        K = len(times)
        forms = [k for k in ("euler", "quaternions") if k in spec]
        if len(forms) != 1:
            raise w.error(f"expected exactly one of euler = [[{', '.join(order)}], ...] (degrees, the joint's "
                          f"order {order!r}) or quaternions = [[w, x, y, z], ...], got {forms or 'neither'}")
        if forms[0] == "euler":
            e = _rows(w / "euler", spec["euler"], 3, f"Euler angles in degrees, order {order!r}")
            q = quaternion_from_matrix(matrix_from_euler_intrinsic(e * DEG, order))
        else:
            q = _rows(w / "quaternions", spec["quaternions"], 4, "a quaternion [w, x, y, z]")
        if len(q) != K:
            raise (w / forms[0]).error(f"expected {K} rotations, one per key time, got {len(q)}")
        interp = _choice(w / "interpolation", spec.get("interpolation", "slerp"), ROTATION_INTERPOLATIONS,
                         "rotation interpolation")
        try:
            rt = RotationTrack(joint, times, q, interp)  # type: ignore[arg-type]
            Clip.build(self.fig, [rt], name=self.name)     # the limit check, on this track alone
        except ClipError as exc:
            hint = (f" (values in radians: rotation keys are read back as Euler angles {order!r} with the middle "
                    "angle in [-90, 90] degrees, which may differ from the angles written; use per-DOF tracks "
                    "to key angles beyond that)")
            raise w.error(str(exc) + hint) from None
        return rt

    def dense(self, spec: Mapping[str, Any], interp: str) -> DenseTrackSet:
        w = self.w
        for k in ("times", "frames"):
            if k not in spec:
                raise (w / k).error(f"expected {k} = [...] with baked frames (dofs, times, frames)")
        if "dofs" in spec:
            dw = w / "dofs"
            if not isinstance(spec["dofs"], list) or not spec["dofs"]:
                raise dw.error(f"expected a list of DOF names naming the frame columns, got {spec['dofs']!r}")
            dofs = []
            for i, d in enumerate(spec["dofs"]):
                if not isinstance(d, str):
                    raise (dw / i).error(f"expected a DOF name, got {d!r}")
                if d in dofs:
                    raise (dw / i).error(f"DOF {d!r} names two columns")
                dofs.append(self.dof(dw / i, d))
        else:
            dofs = list(self.dofs)
        times = _times(w / "times", spec["times"])
        frames = _rows(w / "frames", spec["frames"], len(dofs), f"a frame of {len(dofs)} values (one per DOF)")
        if len(frames) != len(times):
            raise (w / "frames").error(f"expected {len(times)} frames, one per time, got {len(frames)}")
        scale = np.array([self.scale(d) for d in dofs])
        values = frames * scale
        limits = np.array([(self.dofs[d].lower, self.dofs[d].upper) for d in dofs])
        bad = np.argwhere((values < limits[:, 0]) | (values > limits[:, 1]))
        if bad.size:
            i, j = (int(x) for x in bad[0])
            self.within(w / "frames" / i, dofs[j], float(frames[i, j]), float(times[i]))
        try:
            return DenseTrackSet(tuple(dofs), times, values, interp)  # type: ignore[arg-type]
        except ClipError as exc:
            raise w.error(str(exc)) from None


def read_clips(table: Mapping[str, Any], figure: Figure, ctx: Context) -> dict[str, Clip]:
    """The clips of a scene file's ``[clips]`` table, by name, on ``figure``.

    ``ctx`` is the scene reader's context (its ``error(key, message)`` makes the ParseError; when it
    carries the file's ``lines`` and ``path``, errors point at the exact key's line).
    """
    out: dict[str, Clip] = {}
    for name, spec in table.items():
        w = _Where(ctx, ("clips", name))
        spec = _table(w, spec, "a clip table [clips.NAME]")
        out[name] = _Reader(figure, w, name).clip(spec)
    return out


# --- writing -----------------------------------------------------------------------------------------


def _header(*segs: str) -> str:
    return ".".join(s if re.fullmatch(r"[A-Za-z0-9_-]+", s) else fmt_value(s) for s in segs)


def _baked(clip: Clip) -> Clip:
    """A mix written as dense frames at its fps over [0, duration] (played once, so that the last frame is
    the end of the clip, not the start of its next cycle), keeping its loop mode and root motion."""
    once = dataclasses.replace(clip, loop="once", root_motion=None)
    times = clip.frame_times()
    dense = DenseTrackSet(tuple(clip.layout.dof_names), times, once.sample(times))
    return Clip(name=clip.name, layout=clip.layout, dense=dense, duration=clip.duration, fps=clip.fps,
                loop=clip.loop, root_motion=clip.root_motion)


def dumps_clips(clips: Mapping[str, Clip], figure: Figure) -> str:
    """The clips as ``[clips.NAME]`` TOML that :func:`read_clips` reads back to clips sampling the same.

    Keyed clips are written as per-DOF tracks and rotation tracks (Euler degrees in the joint's order);
    dense clips as frames; blends and crossfades baked to frames at the clip's fps.
    """
    revolute = {d.name: d.revolute for d in figure.dofs}
    orders = figure.joint_orders
    out: list[str] = []
    for name, clip in clips.items():
        if clip.mix is not None:
            clip = _baked(clip)
        head = _header("clips", name)
        out += [f"[{head}]", f"fps = {fmt_value(float(clip.fps))}", f"loop = {fmt_value(clip.loop)}",
                f"duration = {fmt_value(float(clip.duration or 0.0))}"]
        if clip.root_motion is not None:
            out.append(f"root_motion = {fmt_value(clip.root_motion)}")
        if clip.dense is not None:
            dn = clip.dense
            scale = np.array([180.0 / math.pi if revolute[d] else 1.0 for d in dn.dofs])
            out += [f"interpolation = {fmt_value(dn.interpolation)}", f"dofs = {fmt_value(list(dn.dofs))}",
                    f"times = {fmt_value([float(t) for t in dn.times])}", "frames = ["]
            out += [f"  {fmt_value([float(x) for x in row])}," for row in dn.values * scale]
            out += ["]", ""]
            continue
        out.append("")
        for dof, tr in clip.tracks.items():
            k = 180.0 / math.pi if revolute[dof] else 1.0
            out += [f"[{head}.tracks.{fmt_value(dof)}]", f"times = {fmt_value([float(t) for t in tr.times])}",
                    f"values = {fmt_value([float(v) * k for v in tr.values])}",
                    f"interpolation = {fmt_value(tr.interpolation if isinstance(tr.interpolation, str) else list(tr.interpolation))}",  # noqa: E501
                    f"easing = {fmt_value(tr.easing if isinstance(tr.easing, str) else list(tr.easing))}"]
            if tr.in_slopes is not None and tr.out_slopes is not None:
                out += [f"in_slopes = {fmt_value([float(v) * k for v in tr.in_slopes])}",
                        f"out_slopes = {fmt_value([float(v) * k for v in tr.out_slopes])}"]
            out.append("")
        for joint, rt in clip.rotation_tracks.items():
            e = np.degrees(euler_intrinsic_from_matrix(matrix_from_quaternion(rt.quaternions), orders[joint]))
            out += [f"[{head}.rotations.{_header(joint)}]", f"# Euler angles in degrees, intrinsic {orders[joint]!r}",
                    f"times = {fmt_value([float(t) for t in rt.times])}",
                    "euler = [" + ", ".join(fmt_value([float(x) for x in row]) for row in e) + "]",
                    f"interpolation = {fmt_value(rt.interpolation)}", ""]
    return "\n".join(out)
