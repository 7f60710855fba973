"""A TOML scene's nodes: the value checks every table uses (tables, keys, vectors, numbers, colours, rotations) and
each node's joint (kinds, axes, channels, limits, cones) and geometry, read with errors that name the file, the line
and the key (:mod:`animkit.io.toml_scene` reads the whole scene).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from animkit.errors import AnimkitError, ParseError, SceneError, unknown_name
from animkit.io._refs import referenced_file
from animkit.io._toml import Context, is_number
from animkit.model.geometry import SHAPES, Box, Capsule, Cylinder, Geometry, MeshFile, Sphere
from animkit.model.joints import Cone, DofKind, Joint, make_joint
from animkit.model.transforms import homogeneous, matrix_aligning_z_to, matrix_from_euler_intrinsic

NODE_KEYS = ("parent", "offset", "rotation", "joint", "geometry")
JOINT_KEYS = ("kind", "axis", "axes", "order", "normal", "channels", "limits", "rest", "cone", "twist", "cone_axis")
GEOMETRY_KEYS = ("shape", "size", "radius", "length", "from", "to", "center", "offset", "rotation", "color",
                 "file", "scale")
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
        opts["limits"] = _limits(ctx, spec["limits"], name, suffixes, scale, key)
    if "rest" in spec:
        opts["rest"] = _rest(ctx, spec["rest"], suffixes, scale, key)
        if kind in ("hinge", "slider"):
            opts["rest"] = opts["rest"][0]
    if any(k in spec for k in ("cone", "twist", "cone_axis")):
        opts["cone"] = _cone(ctx, spec, kind, key)
    try:
        return make_joint(kind, name, **opts)
    except AnimkitError as exc:
        raise ctx.error(key, str(exc)) from None


def _limits(ctx: Context, lim: Any, name: str, suffixes: list[str], scale: list[float], key: str
            ) -> list[tuple[float, float]]:
    """A joint's ``limits``: [min, max] for every DOF, a pair per DOF, or a table by DOF suffix; degrees in the
    file for revolute DOFs (``scale``: radians per file unit, per DOF)."""
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
    return conv


def _rest(ctx: Context, rest: Any, suffixes: list[str], scale: list[float], key: str) -> list[float]:
    """A joint's ``rest``: one number for every DOF, a list, or a table by DOF suffix (missing ones 0), in radians."""
    if isinstance(rest, (int, float)):
        rest = [rest] * len(suffixes)
    if isinstance(rest, Mapping):
        unknown = [k for k in rest if k not in suffixes]
        if unknown:
            raise ctx.error(f"{key}.rest.{unknown[0]}", unknown_name("DOF", unknown[0], suffixes))
        rest = [rest.get(s, 0.0) for s in suffixes]
    rv = _vec(ctx, rest, f"{key}.rest", len(suffixes))
    return [float(v) * k for v, k in zip(rv, scale, strict=True)]


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
