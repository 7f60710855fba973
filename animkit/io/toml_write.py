"""A scene written as TOML (``dumps_scene``; docs/scene-format.md): each node's offset, rotation, joint and
geometry in degrees, chains, effectors, camera and reach; :mod:`animkit.io.toml_scene` re-exports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from animkit.errors import SceneError
from animkit.io._toml import fmt_key, fmt_value
from animkit.model.geometry import Box, Capsule, Cylinder, Geometry, Sphere
from animkit.model.joints import Joint
from animkit.scene import Scene

# --- writing ----------------------------------------------------------------------------------------


def _euler_deg(R: np.ndarray) -> list[float]:
    from animkit.model.transforms import euler_intrinsic_from_matrix

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
