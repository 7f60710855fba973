"""Scene files in TOML (see docs/scene-format.md): degrees in files, radians inside.

    [figure]        name, up ("y" or "z")
    [nodes.NAME]    parent, offset, rotation (degrees, intrinsic xyz), joint, geometry
    [chains]        NAME = [joint, ...]
    [effectors]     NAME = node
    [camera]        eye, target, fov, width, height, azimuth, elevation
    [reach]         effector, target, chains, solvers, duration, hold, fps
    [clips.NAME]    keyframed clips (animkit.io.toml_clips)

Errors name the file, the line of the table they come from (when it can be
found) and the key, and say what was expected.
"""

from __future__ import annotations

import heapq
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..anatomy import humanoid_limits
from ..errors import AnimkitError, ParseError, SceneError, unknown_name
from ..figure import Figure
from ..geometry import SHAPES, Box, Capsule, Cylinder, Geometry, MeshFile, Sphere
from ..joints import Cone, DofKind, Joint, cone_axis_from_child, make_joint
from ..rig import Rig
from ..scene import CameraSpec, ReachSpec, Scene
from ..transforms import homogeneous, matrix_aligning_z_to, matrix_from_euler_intrinsic
from ._refs import read_referenced, referenced_file
from ._toml import Context, Seg, fmt_key, fmt_value, is_number, key_text, split_key

if TYPE_CHECKING:
    from ..keyframes import Clip

__all__ = ["read_toml_scene", "loads_scene", "dumps_scene", "parse_color", "key_text", "split_key", "Seg"]

TOP_KEYS = ("figure", "nodes", "chains", "effectors", "camera", "reach", "clips")
NODE_KEYS = ("parent", "offset", "rotation", "joint", "geometry")
JOINT_KEYS = ("kind", "axis", "axes", "order", "normal", "channels", "limits", "rest", "cone", "twist", "cone_axis")
GEOMETRY_KEYS = ("shape", "size", "radius", "length", "from", "to", "center", "offset", "rotation", "color",
                 "file", "scale")
CAMERA_KEYS = ("eye", "target", "fov", "width", "height", "azimuth", "elevation")
REACH_KEYS = ("effector", "target", "chains", "solvers", "duration", "hold", "fps", "start_clip", "priors")
PRIOR_KEYS = ("stiffness", "preferred", "comfort", "spread", "gaze", "planted", "balance", "margin", "hang", "prior",
              "prior_weight")
NAMED_COLORS = {
    "grey": (0.72, 0.74, 0.78), "gray": (0.72, 0.74, 0.78), "red": (0.85, 0.25, 0.22),
    "green": (0.30, 0.70, 0.35), "blue": (0.25, 0.45, 0.85), "orange": (0.95, 0.55, 0.15),
    "yellow": (0.95, 0.80, 0.20), "skin": (0.93, 0.76, 0.62), "dark": (0.25, 0.27, 0.32),
    "white": (0.95, 0.95, 0.95), "black": (0.1, 0.1, 0.1), "purple": (0.55, 0.35, 0.75),
    "teal": (0.20, 0.60, 0.60),
}


def _table(ctx: Context, value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.error(key, f"expected a table, got {type(value).__name__} {value!r}")
    return value


def _check_keys(ctx: Context, table: Mapping[str, Any], valid: tuple[str, ...], key: str) -> None:
    for k in table:
        if k not in valid:
            raise ctx.error(f"{key}.{k}", unknown_name("key", k, valid))


def _vec(ctx: Context, value: Any, key: str, n: int = 3) -> np.ndarray:
    if not isinstance(value, list) or len(value) != n or not all(isinstance(v, (int, float)) for v in value):
        raise ctx.error(key, f"expected a list of {n} numbers, got {value!r}")
    if not all(is_number(v) for v in value):
        raise ctx.error(key, f"expected finite numbers, got {value!r}")
    return np.array(value, dtype=float)


def _num(ctx: Context, value: Any, key: str, *, positive: bool = False) -> float:
    if not is_number(value):
        raise ctx.error(key, f"expected a number, got {value!r}")
    if positive and value <= 0:
        raise ctx.error(key, f"expected a positive number, got {value!r}")
    return float(value)


def parse_color(value: Any) -> tuple[float, float, float]:
    """A colour from "#rrggbb", a name, or [r, g, b] in 0..1 (or 0..255 when any component > 1)."""
    if isinstance(value, str):
        if value.lower() in NAMED_COLORS:
            return NAMED_COLORS[value.lower()]
        m = re.fullmatch(r"#?([0-9a-fA-F]{6})", value)
        if m:
            h = m.group(1)
            return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255)
        raise SceneError(f"colour {value!r}: expected '#rrggbb', [r, g, b] or one of {sorted(NAMED_COLORS)}")
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, (int, float)) for v in value):
        c = np.array(value, dtype=float)
        if c.max() > 1.0:
            c = c / 255.0
        if c.min() < 0 or c.max() > 1:
            raise SceneError(f"colour {value!r}: components must lie in 0..1 (or 0..255)")
        return (float(c[0]), float(c[1]), float(c[2]))
    raise SceneError(f"colour {value!r}: expected '#rrggbb', [r, g, b] or a colour name")


def _rotation(ctx: Context, value: Any, key: str) -> np.ndarray:
    return matrix_from_euler_intrinsic(np.radians(_vec(ctx, value, key)), "xyz")


# --- joints and geometry ----------------------------------------------------------------------------


_CHANNEL_KINDS: dict[str, DofKind] = {"t": "prismatic", "r": "revolute", "s": "scale"}


def _channels(ctx: Context, spec: Any, key: str) -> list[tuple[DofKind, str]]:
    """A custom joint's ``channels``: ``["tx", "ty", "tz", "rz", "ry", "rx", "sx", "sy", "sz"]`` → (kind, axis)."""
    if (not isinstance(spec, list) or not spec or not all(isinstance(c, str) for c in spec)
            or any(len(c) != 2 or c[0] not in _CHANNEL_KINDS or c[1] not in "xyz" for c in spec)):
        raise ctx.error(key, "expected a non-empty list of channels, each t, r or s (translate, rotate, scale) "
                             f"and an axis x, y or z (e.g. [\"tx\", \"rz\", \"sx\"]), got {spec!r}")
    return [(_CHANNEL_KINDS[c[0]], c[1]) for c in spec]


# complexity: a reader: one branch per joint kind and key the format accepts
def _joint(ctx: Context, name: str, spec: Any, key: str) -> Joint:  # noqa: C901
    if isinstance(spec, str):
        spec = {"kind": spec}
    spec = _table(ctx, spec, key)
    _check_keys(ctx, spec, JOINT_KEYS, key)
    kind = spec.get("kind", "fixed")
    kinds = ("fixed", "hinge", "slider", "universal", "ball", "planar", "free", "custom")
    if kind not in kinds:
        raise ctx.error(f"{key}.kind", unknown_name("joint kind", str(kind), kinds))
    if ("channels" in spec) != (kind == "custom"):
        raise ctx.error(f"{key}.channels", "a custom joint lists its channels (and only a custom joint has them)")
    opts: dict[str, Any] = {}
    if kind == "custom":
        opts["channels"] = _channels(ctx, spec["channels"], f"{key}.channels")
        turns = "".join(a for k, a in opts["channels"] if k == "revolute")
        if "order" in spec and spec["order"] != turns:
            raise ctx.error(f"{key}.order", f"expected the axes of the joint's rotation channels in order, "
                                            f"{turns!r}, got {spec['order']!r}")
        opts["order"] = spec["order"] if "order" in spec else None
    if kind in ("hinge", "slider"):
        axis = spec.get("axis", "z" if kind == "hinge" else "x")
        opts["axis"] = axis if isinstance(axis, str) else _vec(ctx, axis, f"{key}.axis")
    if kind == "universal" and "axes" in spec:
        opts["axes"] = tuple(a if isinstance(a, str) else _vec(ctx, a, f"{key}.axes") for a in spec["axes"])
    if kind in ("ball", "free") and "order" in spec:
        opts["order"] = str(spec["order"])
    if kind == "planar" and "normal" in spec:
        opts["normal"] = str(spec["normal"])
    # build once with no limits to learn the DOF suffixes, then convert units per DOF
    try:
        probe = make_joint(kind, name, **opts)
    except AnimkitError as exc:
        raise ctx.error(key, str(exc)) from None
    suffixes = [d.name.split(".", 1)[1] for d in probe.dofs]
    scale = [math.pi / 180.0 if d.revolute else 1.0 for d in probe.dofs]  # degrees in files
    if "limits" in spec:
        lim = spec["limits"]
        if isinstance(lim, Mapping):
            unknown = [k for k in lim if k not in suffixes]
            if unknown:
                raise ctx.error(f"{key}.limits.{unknown[0]}", unknown_name("DOF", unknown[0], suffixes))
            per = [lim.get(s) for s in suffixes]
        elif isinstance(lim, list) and len(lim) == 2 and all(isinstance(v, (int, float)) for v in lim):
            per = [lim] * len(suffixes)
        elif isinstance(lim, list) and len(lim) == len(suffixes):
            per = lim
        else:
            raise ctx.error(f"{key}.limits", f"expected [min, max], a list of {len(suffixes)} pairs or a table "
                                             f"by DOF ({', '.join(suffixes)}), got {lim!r}")
        conv = []
        for s, pair, k in zip(suffixes, per, scale, strict=True):
            if pair is None:
                conv.append((-math.inf, math.inf))
                continue
            pv = _vec(ctx, pair, f"{key}.limits", 2) if isinstance(pair, list) else None
            if pv is None:
                raise ctx.error(f"{key}.limits.{s}", f"expected [min, max], got {pair!r}")
            if pv[0] > pv[1]:
                raise ctx.error(f"{key}.limits", f"DOF {name}.{s}: limits min > max ({pv[0]:g} > {pv[1]:g}); "
                                                 f"expected [min, max] with min <= max")
            conv.append((pv[0] * k, pv[1] * k))
        opts["limits"] = conv
    if "rest" in spec:
        rest = spec["rest"]
        if isinstance(rest, (int, float)):
            rest = [rest] * len(suffixes)
        if isinstance(rest, Mapping):
            unknown = [k for k in rest if k not in suffixes]
            if unknown:
                raise ctx.error(f"{key}.rest.{unknown[0]}", unknown_name("DOF", unknown[0], suffixes))
            rest = [rest.get(s, 0.0) for s in suffixes]
        rv = _vec(ctx, rest, f"{key}.rest", len(suffixes))
        opts["rest"] = [float(v) * k for v, k in zip(rv, scale, strict=True)]
        if kind in ("hinge", "slider"):
            opts["rest"] = opts["rest"][0]
    if any(k in spec for k in ("cone", "twist", "cone_axis")):
        opts["cone"] = _cone(ctx, spec, kind, key)
    try:
        return make_joint(kind, name, **opts)
    except AnimkitError as exc:
        raise ctx.error(key, str(exc)) from None


def _cone(ctx: Context, spec: Mapping[str, Any], kind: str, key: str) -> Cone:
    """A ball joint's ``cone = SWING`` (degrees, half-angle; 180 when only ``twist`` is given), ``twist = [min, max]``
    (degrees) and ``cone_axis = [x, y, z]`` (the twist axis in the joint's frame; default: its child's direction)."""
    if kind != "ball":
        raise ctx.error(f"{key}.cone", f"only a ball joint takes cone/twist/cone_axis, this one is a {kind}")
    swing = spec.get("cone", 180.0)
    if isinstance(swing, bool) or not isinstance(swing, (int, float)):
        raise ctx.error(f"{key}.cone", f"expected the swing half-angle in degrees (a number), got {swing!r}")
    tw = _vec(ctx, spec["twist"], f"{key}.twist", 2) if "twist" in spec else np.array([-180.0, 180.0])
    axis = _vec(ctx, spec["cone_axis"], f"{key}.cone_axis") if "cone_axis" in spec else None
    try:
        return Cone(math.radians(float(swing)), (math.radians(float(tw[0])), math.radians(float(tw[1]))),
                    None if axis is None else (float(axis[0]), float(axis[1]), float(axis[2])))
    except AnimkitError as exc:
        raise ctx.error(f"{key}.cone", str(exc)) from None


def _geometry(ctx: Context, spec: Any, key: str) -> tuple[Geometry, np.ndarray, tuple[float, float, float] | None]:
    spec = _table(ctx, spec, key)
    _check_keys(ctx, spec, GEOMETRY_KEYS, key)
    shape = spec.get("shape")
    if shape not in SHAPES:
        raise ctx.error(f"{key}.shape", unknown_name("shape", str(shape), SHAPES))
    R = _rotation(ctx, spec["rotation"], f"{key}.rotation") if "rotation" in spec else np.eye(3)
    origin = np.zeros(3)
    for k in ("offset", "center"):
        if k in spec:
            origin = _vec(ctx, spec[k], f"{key}.{k}")
    data: Geometry
    try:
        if shape in ("capsule", "cylinder"):
            radius = _num(ctx, spec.get("radius"), f"{key}.radius", positive=True)
            if "to" in spec:
                start = _vec(ctx, spec["from"], f"{key}.from") if "from" in spec else np.zeros(3)
                d = _vec(ctx, spec["to"], f"{key}.to") - start
                length = float(np.linalg.norm(d))
                R = matrix_aligning_z_to(d)
                origin = start
            else:
                length = _num(ctx, spec.get("length"), f"{key}.length")
            data = Capsule(radius, length) if shape == "capsule" else Cylinder(radius, length)
        elif shape == "box":
            data = Box(tuple(float(v) for v in _vec(ctx, spec.get("size"), f"{key}.size")))  # type: ignore[arg-type]
        elif shape == "sphere":
            data = Sphere(_num(ctx, spec.get("radius"), f"{key}.radius", positive=True))
        else:
            f = spec.get("file")
            if not isinstance(f, str):
                raise ctx.error(f"{key}.file", f"expected a mesh file path, got {f!r}")
            referrer = ctx.path if ctx.path is not None else Path.cwd() / "<text>"
            path = referenced_file(referrer, f, what="mesh", key=f"{key}.file", line=ctx.line_of(f"{key}.file"))
            scale = tuple(float(v) for v in _vec(ctx, spec["scale"], f"{key}.scale")) if "scale" in spec \
                else (1.0, 1.0, 1.0)
            data = MeshFile(str(path), scale)  # type: ignore[arg-type]
    except SceneError as exc:
        if isinstance(exc, ParseError):
            raise
        raise ctx.error(key, str(exc)) from None
    color = None
    if "color" in spec:
        try:
            color = parse_color(spec["color"])
        except SceneError as exc:
            raise ctx.error(f"{key}.color", str(exc)) from None
    return data, homogeneous(R, origin), color


# --- the whole scene --------------------------------------------------------------------------------


def _order_nodes(ctx: Context, nodes: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The root and the nodes in file order with every parent before its children; cycles are errors."""
    roots = [n for n, spec in nodes.items() if isinstance(spec, Mapping) and "parent" not in spec]
    if len(roots) != 1:
        raise ctx.error("nodes", f"expected exactly one root node (a node without 'parent'), found "
                                 f"{len(roots)}: {roots}")
    for n, spec in nodes.items():
        spec = _table(ctx, spec, f"nodes.{n}")
        par = spec.get("parent")
        if par is not None and par not in nodes:
            raise ctx.error(f"nodes.{n}.parent", unknown_name("parent node", str(par), nodes))
    # Kahn's order with a heap on the file position: each step places the first node (in file order) whose
    # parent is placed, so file order is kept where parents allow it; O(n log n)
    position = {n: i for i, n in enumerate(nodes)}
    children: dict[str, list[str]] = {}
    for n in nodes:
        if n != roots[0]:
            children.setdefault(nodes[n]["parent"], []).append(n)
    ready = [(position[c], c) for c in children.get(roots[0], [])]
    heapq.heapify(ready)
    final: list[str] = []
    while ready:
        _, n = heapq.heappop(ready)
        final.append(n)
        for c in children.get(n, []):
            heapq.heappush(ready, (position[c], c))
    if len(final) < len(nodes) - 1:
        placed = {roots[0], *final}
        pending = [n for n in nodes if n not in placed]
        shown = pending[:12] + ([f"... ({len(pending) - 12} more)"] if len(pending) > 12 else [])
        raise ctx.error(f"nodes.{pending[0]}.parent", f"cycle in the node hierarchy among {shown}: every node "
                                                     f"must lead up to the root {roots[0]!r}")
    return roots[0], final


def loads_scene(text: str, path: str | Path | None = None) -> Scene:
    """Parse scene TOML ``text``; ``path`` names the file in errors and anchors relative mesh paths."""
    spath = None if path is None else str(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ParseError(spath, f"not valid TOML: {exc}", line=int(m.group(1)) if m else None) from None
    except RecursionError:
        raise ParseError(spath, "not valid TOML for animkit: arrays or tables nested too deeply; expected at most "
                                "a few levels") from None
    ctx = Context(spath, text)
    _check_keys(ctx, doc, TOP_KEYS, "")
    fig_t = _table(ctx, doc.get("figure", {}), "figure")
    _check_keys(ctx, fig_t, ("name", "up", "base"), "figure")
    if "base" in fig_t:
        return _extend_base(ctx, doc, fig_t)
    up = fig_t.get("up", "y")
    if up not in ("y", "z"):
        raise ctx.error("figure.up", f"expected 'y' or 'z', got {up!r}")
    nodes = _table(ctx, doc.get("nodes"), "nodes") if "nodes" in doc else None
    if not nodes:
        raise ParseError(spath, "expected at least one [nodes.NAME] table (the figure's root)")
    root, order = _order_nodes(ctx, nodes)

    def arc_parts(name: str) -> dict[str, Any]:
        key = f"nodes.{name}"
        spec = _table(ctx, nodes[name], key)
        _check_keys(ctx, spec, NODE_KEYS, key)
        out: dict[str, Any] = {}
        R = _rotation(ctx, spec["rotation"], f"{key}.rotation") if "rotation" in spec else np.eye(3)
        p = _vec(ctx, spec["offset"], f"{key}.offset") if "offset" in spec else np.zeros(3)
        out["L"] = homogeneous(R, p)
        out["joint"] = _joint(ctx, name, spec.get("joint", "fixed"), f"{key}.joint")
        cone = out["joint"].cone
        if cone is not None and cone.axis is None:  # the twist axis: the rest direction of the one child bone
            kids = [n for n in nodes if isinstance(nodes[n], Mapping) and nodes[n].get("parent") == name]
            if len(kids) != 1:
                raise ctx.error(f"{key}.joint.cone_axis", f"a cone's twist axis defaults to the direction of the "
                                                          f"joint's child, and node {name!r} has {len(kids)} "
                                                          f"children {kids}: give cone_axis = [x, y, z]")
            kid = nodes[kids[0]]
            o = _vec(ctx, kid["offset"], f"nodes.{kids[0]}.offset") if "offset" in kid else np.zeros(3)
            try:
                t = cone_axis_from_child(out["joint"], o)
            except AnimkitError as exc:
                raise ctx.error(f"{key}.joint.cone_axis", str(exc)) from None
            j = out["joint"]
            out["joint"] = Joint(j.name, j.kind, j.dofs, j.order, replace(cone, axis=t))
        if "geometry" in spec:
            out["data"], out["T"], out["color"] = _geometry(ctx, spec["geometry"], f"{key}.geometry")
        return out

    try:
        r = arc_parts(root)
        fig = Figure(root, name=str(fig_t.get("name", Path(spath).stem if spath else "figure")), **r)
        for n in order:
            parts = arc_parts(n)
            fig.add(n, nodes[n]["parent"], **parts)
    except ParseError:
        raise
    except SceneError as exc:
        raise ParseError(spath, str(exc)) from None

    # IK keeps a humanoid's joints without limits of their own in human ranges (animkit.anatomy)
    fig.rig = Rig(_chains(ctx, doc, fig, {}), _effectors(ctx, doc, fig, {}), humanoid_limits(fig))
    camera = _camera(ctx, doc.get("camera", {}))
    reach = _reach(ctx, doc["reach"], fig) if "reach" in doc else None
    clips: dict[str, Any] = {}
    if "clips" in doc:
        from .toml_clips import read_clips

        clips = read_clips(_table(ctx, doc["clips"], "clips"), fig, ctx)
    return Scene(fig, camera, clips, reach, up, spath)


#: the base scenes being read by this thread (or task): a cycle of bases is an error, not a recursion. A context
#: variable holding a tuple, never a shared set: two threads loading scenes on one base do not see each other's.
_LOADING: ContextVar[tuple[str, ...]] = ContextVar("animkit_toml_bases", default=())
_MAX_BASES = 32


def _chains(ctx: Context, doc: Mapping[str, Any], fig: Figure, inherited: Mapping[str, tuple[str, ...]]
            ) -> dict[str, tuple[str, ...]]:
    chains = dict(inherited)
    for cname, joints in _table(ctx, doc.get("chains", {}), "chains").items():
        if not isinstance(joints, list) or not all(isinstance(j, str) for j in joints):
            raise ctx.error(f"chains.{cname}", f"expected a list of joint names, got {joints!r}")
        for j in joints:
            if j not in fig.joint_names and j not in fig.dof_names:
                raise ctx.error(f"chains.{cname}", unknown_name("joint", j, fig.joint_names))
        chains[cname] = tuple(joints)
    return chains


def _effectors(ctx: Context, doc: Mapping[str, Any], fig: Figure, inherited: Mapping[str, str]) -> dict[str, str]:
    effectors = dict(inherited)
    for ename, node in _table(ctx, doc.get("effectors", {}), "effectors").items():
        if not isinstance(node, str) or node not in fig.node_names:
            raise ctx.error(f"effectors.{ename}", unknown_name("node", str(node), fig.node_names))
        effectors[ename] = node
    return effectors


def _extend_base(ctx: Context, doc: Mapping[str, Any], fig_t: Mapping[str, Any]) -> Scene:
    """A scene built on another scene file's figure: ``[figure] base = "humanoid.toml"``.

    The base gives the figure, chains, effectors, camera and reach; this file may add chains and
    effectors, replace camera and reach, and adds its clips. It may not add nodes.
    """
    ref = fig_t["base"]
    if not isinstance(ref, str):
        raise ctx.error("figure.base", f"expected the path of a scene file, got {ref!r}")
    if "nodes" in doc or "up" in fig_t:
        raise ctx.error("figure.base", "a scene with a base takes its nodes and up axis from the base; "
                                       "remove [nodes.*] and figure.up")
    if ctx.path is None:
        raise ctx.error("figure.base", "a scene read from text has no folder to find its base in; read it "
                                       "from a file")
    path = referenced_file(ctx.path, ref, what="base scene", key="figure.base", line=ctx.line_of("figure.base"))
    if path == Path(ctx.path).resolve():
        raise ctx.error("figure.base", "a scene cannot be its own base")
    key = str(path)
    loading = _LOADING.get()
    if key in loading:
        raise ctx.error("figure.base", f"base scenes form a cycle through {path}")
    if len(loading) >= _MAX_BASES:
        raise ctx.error("figure.base", f"more than {_MAX_BASES} base scenes in a row; expected a shorter chain")
    token = _LOADING.set((*loading, key))
    try:
        raw = read_referenced(ctx.path, ref, what="base scene", key="figure.base", line=ctx.line_of("figure.base"))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(str(path), f"not UTF-8 text ({exc.reason})") from None
        parent = loads_scene(text, path)
    except ParseError as exc:
        raise ctx.error("figure.base", f"cannot load base scene: {exc}") from None
    finally:
        _LOADING.reset(token)
    fig = parent.figure
    if "name" in fig_t:
        fig.name = str(fig_t["name"])
    fig.rig = Rig(_chains(ctx, doc, fig, fig.rig.chains), _effectors(ctx, doc, fig, fig.rig.effectors),
                  fig.rig.limits)
    camera = _camera(ctx, doc["camera"]) if "camera" in doc else parent.camera
    reach = _reach(ctx, doc["reach"], fig) if "reach" in doc else parent.reach
    clips: dict[str, Any] = dict(parent.clips)
    if "clips" in doc:
        from .toml_clips import read_clips

        clips.update(read_clips(_table(ctx, doc["clips"], "clips"), fig, ctx))
    return Scene(fig, camera, clips, reach, parent.up, ctx.path)


def _camera(ctx: Context, spec: Any) -> CameraSpec:
    spec = _table(ctx, spec, "camera")
    _check_keys(ctx, spec, CAMERA_KEYS, "camera")
    kw: dict[str, Any] = {}
    for k in ("eye", "target"):
        if k in spec:
            kw[k] = tuple(float(v) for v in _vec(ctx, spec[k], f"camera.{k}"))
    if "fov" in spec:
        kw["fov_deg"] = _num(ctx, spec["fov"], "camera.fov", positive=True)
    for k in ("width", "height"):
        if k in spec:
            v = spec[k]
            if not isinstance(v, int) or isinstance(v, bool) or not 8 <= v <= 8192:
                raise ctx.error(f"camera.{k}", f"expected an integer number of pixels in 8..8192, got {v!r}")
            kw[k] = v
    if "azimuth" in spec:
        kw["azimuth_deg"] = _num(ctx, spec["azimuth"], "camera.azimuth")
    if "elevation" in spec:
        kw["elevation_deg"] = _num(ctx, spec["elevation"], "camera.elevation")
    return CameraSpec(**kw)


def _reach(ctx: Context, spec: Any, fig: Figure) -> ReachSpec:
    spec = _table(ctx, spec, "reach")
    chains, effectors = fig.rig.chains, fig.rig.effectors
    _check_keys(ctx, spec, REACH_KEYS, "reach")
    eff = spec.get("effector")
    if not isinstance(eff, str) or (eff not in effectors and eff not in fig.node_names):
        raise ctx.error("reach.effector", unknown_name("effector", str(eff), list(effectors) + fig.node_names))
    target = tuple(float(v) for v in _vec(ctx, spec.get("target"), "reach.target"))
    names = spec.get("chains", list(chains))
    if not isinstance(names, list) or not all(isinstance(c, str) for c in names):
        raise ctx.error("reach.chains", f"expected a list of chain names, got {names!r}")
    for c in names:
        if c not in chains:
            raise ctx.error("reach.chains", unknown_name("chain", c, chains))
    solvers = spec.get("solvers", [])
    if isinstance(solvers, str):
        solvers = [solvers]
    kw: dict[str, Any] = {}
    for k in ("duration", "hold", "fps"):
        if k in spec:
            kw[k] = _num(ctx, spec[k], f"reach.{k}", positive=(k != "hold"))
    if "start_clip" in spec:
        kw["start_clip"] = str(spec["start_clip"])
    if "priors" in spec:
        kw["priors"] = _priors(ctx, spec["priors"], fig)
    return ReachSpec(eff, target, tuple(names), tuple(str(s) for s in solvers), **kw)


def _priors(ctx: Context, spec: Any, fig: Figure) -> dict[str, Any]:
    """[reach.priors]: natural reaching (animkit.ik.natural.Priors): stiffness = {joint = s in [0, 1)}, comfort,
    spread, margin, hang, prior_weight (numbers >= 0), gaze, balance (booleans), planted (effector names), prior (a
    learned pose prior, animkit.ik.PosePrior: "default", the one shipped with animkit, or a .npz file relative to the
    scene, checked here and kept as written; animkit.reach.priors_from_scene loads it)."""
    spec = _table(ctx, spec, "reach.priors")
    _check_keys(ctx, spec, PRIOR_KEYS, "reach.priors")
    out: dict[str, Any] = {}
    if "stiffness" in spec:
        st = _table(ctx, spec["stiffness"], "reach.priors.stiffness")
        for j, v in st.items():
            if j not in fig.joint_names and j not in fig.dof_names:
                raise ctx.error(f"reach.priors.stiffness.{j}", unknown_name("joint", j, fig.joint_names))
            x = _num(ctx, v, f"reach.priors.stiffness.{j}")
            if not 0.0 <= x < 1.0:
                raise ctx.error(f"reach.priors.stiffness.{j}", f"expected a number in [0, 1), got {v!r}")
        out["stiffness"] = {str(j): float(v) for j, v in st.items()}
    if "preferred" in spec:
        pr = _table(ctx, spec["preferred"], "reach.priors.preferred")
        for d, v in pr.items():
            if d not in fig.dof_names:
                raise ctx.error(f"reach.priors.preferred.{d}", unknown_name("DOF", d, fig.dof_names))
            _num(ctx, v, f"reach.priors.preferred.{d}")
        out["preferred"] = {str(d): math.radians(float(v)) for d, v in pr.items()}  # degrees in files
    for k in ("comfort", "spread", "margin", "hang", "prior_weight"):
        if k in spec:
            x = _num(ctx, spec[k], f"reach.priors.{k}")
            if x < 0:
                raise ctx.error(f"reach.priors.{k}", f"expected a number >= 0, got {spec[k]!r}")
            out[k] = x
    for k in ("gaze", "balance"):
        if k in spec:
            if not isinstance(spec[k], bool):
                raise ctx.error(f"reach.priors.{k}", f"expected true or false, got {spec[k]!r}")
            out[k] = spec[k]
    if "planted" in spec:
        names = spec["planted"]
        effectors = fig.rig.effectors
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ctx.error("reach.priors.planted", f"expected a list of effector names, got {names!r}")
        for n in names:
            if n not in effectors and n not in fig.node_names:
                raise ctx.error("reach.priors.planted", unknown_name("effector", n, list(effectors) + fig.node_names))
        out["planted"] = tuple(names)
    if "prior" in spec:
        ref = spec["prior"]
        if not isinstance(ref, str) or not ref:
            raise ctx.error("reach.priors.prior", f'expected "default" or a pose prior file (.npz) relative to the '
                                                  f"scene, got {ref!r}")
        if ref != "default":
            if ctx.path is None:
                raise ctx.error("reach.priors.prior", "a scene read from text has no folder to find its prior in; "
                                                      'read it from a file or give "default"')
            referenced_file(ctx.path, ref, what="pose prior", key="reach.priors.prior",
                            line=ctx.line_of("reach.priors.prior"))
        out["prior"] = ref
    return out


def toml_files(path: Path, scene: Scene, clips: Sequence[Clip]) -> list[tuple[Path, bytes]]:
    """The one file a ``.toml`` save writes (the format registry's writer): the scene with its clips and the given
    ones (a given clip replaces the scene's of the same name)."""
    from .toml_clips import dumps_clips

    named = dict(scene.clips)
    for c in clips:
        named[c.name] = c
    text = dumps_scene(scene, clips_text=dumps_clips(named, scene.figure) if named else "")
    return [(path, text.encode("utf-8"))]


def check_toml_files(path: Path, files: Sequence[tuple[Path, bytes]]) -> None:
    """Read the bytes :func:`toml_files` made as :func:`read_toml_scene` would (the registry's check)."""
    loads_scene(dict(files)[path].decode("utf-8"), path)


def read_toml_scene(path: str | Path) -> Scene:
    """Read a scene file; errors name the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(str(p), f"cannot read file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ParseError(str(p), f"not UTF-8 text ({exc.reason})") from None
    return loads_scene(text, p)


# --- writing ----------------------------------------------------------------------------------------


def _euler_deg(R: np.ndarray) -> list[float]:
    from ..transforms import euler_intrinsic_from_matrix

    return [float(x) for x in np.degrees(euler_intrinsic_from_matrix(R, "xyz"))]


def _joint_table(joint: Joint) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": joint.kind}
    if joint.kind == "custom":
        letters = {"prismatic": "t", "revolute": "r", "scale": "s"}
        if any(d.axis_letter not in ("x", "y", "z") for d in joint.dofs):
            raise SceneError(f"joint {joint.name!r} is a custom joint with a channel along an axis other than x, y "
                             "or z, which a TOML scene cannot hold: save this figure as glTF")
        out["channels"] = [letters[d.kind] + str(d.axis_letter) for d in joint.dofs]
    angles = [d.revolute for d in joint.dofs]
    if joint.kind in ("hinge", "slider"):
        d = joint.dofs[0]
        out["axis"] = d.axis_letter or [float(x) for x in d.axis]
    if joint.kind == "universal":
        out["axes"] = [d.axis_letter or [float(x) for x in d.axis] for d in joint.dofs]
    if joint.order is not None:
        out["order"] = joint.order
    if joint.kind == "planar":
        out["normal"] = joint.dofs[2].axis_letter or "z"
    lim = {}
    for d, ang in zip(joint.dofs, angles, strict=True):
        s = d.name.split(".", 1)[1] if "." in d.name else d.name
        if math.isfinite(d.lower) or math.isfinite(d.upper):
            k = 180.0 / math.pi if ang else 1.0
            lim[s] = [d.lower * k, d.upper * k]
    if lim:
        out["limits"] = lim
    rest = [d.rest * (180.0 / math.pi if ang else 1.0) for d, ang in zip(joint.dofs, angles, strict=True)]
    if any(r != 0 for r in rest):
        out["rest"] = rest
    if joint.cone is not None:
        c = joint.cone
        out["cone"] = math.degrees(c.swing)
        if c.twist != (-math.pi, math.pi):
            out["twist"] = [math.degrees(c.twist[0]), math.degrees(c.twist[1])]
        if c.axis is not None:
            out["cone_axis"] = list(c.axis)
    return out


def dumps_scene(scene: Scene, *, clips_text: str = "") -> str:
    """The scene as TOML text that :func:`loads_scene` reads back to the same figure."""
    fig = scene.figure
    lines = ["[figure]", f"name = {fmt_value(fig.name)}", f"up = {fmt_value(scene.up)}", ""]
    for arc in fig.arcs():
        node = arc.child
        lines.append(f"[nodes.{fmt_key(node.name)}]")
        if arc.parent is not None:
            lines.append(f"parent = {fmt_value(arc.parent.name)}")
        if np.any(arc.L[:3, 3] != 0):
            lines.append(f"offset = {fmt_value([float(x) for x in arc.L[:3, 3]])}")
        if not np.allclose(arc.L[:3, :3], np.eye(3), atol=1e-15):
            lines.append(f"rotation = {fmt_value(_euler_deg(arc.L[:3, :3]))}")
        if arc.joint.kind != "fixed":
            lines.append(f"joint = {fmt_value(_joint_table(arc.joint))}")
        if node.data is not None:
            g = _geometry_table(node.data, node.T)
            g["color"] = "#" + "".join(f"{round(c * 255):02x}" for c in node.color)
            lines.append(f"geometry = {fmt_value(g)}")
        lines.append("")
    if fig.rig.chains:
        lines.append("[chains]")
        lines += [f"{fmt_key(k)} = {fmt_value(list(v))}" for k, v in fig.rig.chains.items()]
        lines.append("")
    if fig.rig.effectors:
        lines.append("[effectors]")
        lines += [f"{fmt_key(k)} = {fmt_value(v)}" for k, v in fig.rig.effectors.items()]
        lines.append("")
    cam = scene.camera
    lines += ["[camera]", f"fov = {fmt_value(cam.fov_deg)}", f"width = {cam.width}", f"height = {cam.height}",
              f"azimuth = {fmt_value(cam.azimuth_deg)}", f"elevation = {fmt_value(cam.elevation_deg)}"]
    if cam.eye is not None:
        lines.append(f"eye = {fmt_value(list(cam.eye))}")
    if cam.target is not None:
        lines.append(f"target = {fmt_value(list(cam.target))}")
    lines.append("")
    if scene.reach is not None:
        r = scene.reach
        lines += ["[reach]", f"effector = {fmt_value(r.effector)}", f"target = {fmt_value(list(r.target))}",
                  f"chains = {fmt_value(list(r.chains))}", f"solvers = {fmt_value(list(r.solvers))}",
                  f"duration = {fmt_value(r.duration)}", f"hold = {fmt_value(r.hold)}", f"fps = {fmt_value(r.fps)}"]
        if r.start_clip is not None:
            lines.append(f"start_clip = {fmt_value(r.start_clip)}")
        lines.append("")
        if r.priors is not None:
            lines.append("[reach.priors]")
            for k, v in r.priors.items():
                if k == "preferred":  # radians inside, degrees in files
                    v = {d: math.degrees(x) for d, x in cast(Mapping[str, float], v).items()}
                lines.append(f"{fmt_key(k)} = {fmt_value(v)}")
            lines.append("")
    text = "\n".join(lines)
    return text + ("\n" + clips_text if clips_text else "")


def _geometry_table(data: Geometry, T: np.ndarray) -> dict[str, Any]:
    g: dict[str, Any]
    if isinstance(data, Box):
        g = {"shape": "box", "size": list(data.size)}
    elif isinstance(data, Sphere):
        g = {"shape": "sphere", "radius": data.radius}
    elif isinstance(data, (Capsule, Cylinder)):
        g = {"shape": "capsule" if isinstance(data, Capsule) else "cylinder", "radius": data.radius,
             "length": data.length}
    else:
        g = {"shape": "mesh", "file": data.path, "scale": list(data.scale)}
    if np.any(T[:3, 3] != 0):
        g["offset"] = [float(x) for x in T[:3, 3]]
    if not np.allclose(T[:3, :3], np.eye(3), atol=1e-15):
        g["rotation"] = _euler_deg(T[:3, :3])
    return g
