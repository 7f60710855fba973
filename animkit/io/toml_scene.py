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
from typing import TYPE_CHECKING, Any

import numpy as np

from animkit.errors import AnimkitError, ParseError, SceneError, unknown_name
from animkit.io._refs import read_referenced, referenced_file
from animkit.io._toml import Context, Seg, key_text, split_key
from animkit.io.toml_nodes import (
    NODE_KEYS,
    _check_keys,
    _geometry,
    _joint,
    _num,
    _rotation,
    _table,
    _vec,
    parse_color,
)
from animkit.io.toml_write import dumps_scene
from animkit.model.anatomy import RANGE_DEGREES, humanoid_limits
from animkit.model.figure import Figure
from animkit.model.joints import Joint, cone_axis_from_child
from animkit.model.rig import Rig
from animkit.model.transforms import homogeneous
from animkit.scene import CameraSpec, ReachSpec, Scene

if TYPE_CHECKING:
    from animkit.keyframes import Clip

__all__ = ["read_toml_scene", "loads_scene", "dumps_scene", "parse_color", "key_text", "split_key", "Seg"]

TOP_KEYS = ("figure", "nodes", "chains", "effectors", "camera", "reach", "clips")
CAMERA_KEYS = ("eye", "target", "fov", "width", "height", "azimuth", "elevation")
REACH_KEYS = ("effector", "target", "chains", "solvers", "duration", "hold", "fps", "start_clip", "priors")
PRIOR_KEYS = ("stiffness", "preferred", "comfort", "spread", "gaze", "planted", "balance", "margin", "hang", "prior",
              "prior_weight", "ranges")


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

    # IK keeps a humanoid's joints without limits of their own in human ranges (animkit.model.anatomy)
    fig.rig = Rig(_chains(ctx, doc, fig, {}), _effectors(ctx, doc, fig, {}), humanoid_limits(fig))
    camera = _camera(ctx, doc.get("camera", {}))
    reach = _reach(ctx, doc["reach"], fig) if "reach" in doc else None
    clips: dict[str, Any] = {}
    if "clips" in doc:
        from animkit.io.toml_clips import read_clips

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
        from animkit.io.toml_clips import read_clips

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
    spread, margin, hang, prior_weight (numbers >= 0), gaze, balance (booleans), planted (effector names), ranges
    (false, or {name = degrees in [0, 180]} over animkit.model.anatomy.RANGE_DEGREES' names), prior (a
    learned pose prior, animkit.ik.PosePrior: "default", the one shipped with animkit, or a .npz file relative to the
    scene, checked here and kept as written; animkit.motion.reach.priors_from_scene loads it)."""
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
    if "ranges" in spec:
        out["ranges"] = _ranges(ctx, spec["ranges"])
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


def _ranges(ctx: Context, spec: Any) -> dict[str, float] | bool:
    """[reach.priors] ranges: false (no bounds) or {side_bend, twist, pelvis_roll, knee_in = degrees in [0, 180]}
    (the names not given keep :data:`~animkit.model.anatomy.RANGE_DEGREES`)."""
    if spec is False:
        return False
    table = _table(ctx, spec, "reach.priors.ranges")
    out = {}
    for name, v in table.items():
        if name not in RANGE_DEGREES:
            raise ctx.error(f"reach.priors.ranges.{name}", unknown_name("range", name, list(RANGE_DEGREES)))
        x = _num(ctx, v, f"reach.priors.ranges.{name}")
        if not 0.0 <= x <= 180.0:
            raise ctx.error(f"reach.priors.ranges.{name}", f"expected degrees in [0, 180], got {v!r}")
        out[str(name)] = x
    return out


def toml_files(path: Path, scene: Scene, clips: Sequence[Clip]) -> list[tuple[Path, bytes]]:
    """The one file a ``.toml`` save writes (the format registry's writer): the scene with its clips and the given
    ones (a given clip replaces the scene's of the same name)."""
    from animkit.io.toml_clips import dumps_clips

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
