"""URDF robot descriptions → :class:`~animkit.scene.Scene`.

One node per ``<link>`` (named as the link), one arc per ``<joint>`` (its joint named
as the URDF joint). For a joint with ``<origin xyz rpy>`` and ``<axis>``:

    L = [[R(rpy), xyz], [0, 1]],   R(rpy) = R_z(yaw) R_y(pitch) R_x(roll)
    A(θ) = R_a(θ) (revolute, continuous) or L(θ a) (prismatic), a = axis / |axis|

The URDF spec defines rpy as rotations about the *fixed* axes: roll about x, then
pitch about y, then yaw about z, i.e. extrinsic "xyz" (``matrix_from_euler_extrinsic``).

Decisions:

* **DOFs.** Revolute / prismatic: one DOF named after the joint, limits from
  ``<limit lower upper>`` (required, as in urdfdom). Continuous: one unlimited revolute DOF.
  Fixed: no DOF (its ``<axis>`` is ignored, Panda's ``panda_joint8`` has ``0 0 0``).
  Planar: animkit's planar joint (two slides in the plane ⊥ axis, then a turn about it; DOFs
  ``<joint>.tx``... or ``.t0 .t1 .r`` for a non-coordinate normal). Floating: animkit's free
  joint (``<joint>.tx .ty .tz .rz .ry .rx``, A = L(t) R_z R_y R_x). Both unlimited.
* **Mimic.** A ``<mimic>`` joint keeps its own DOF (with its own limits); the relation
  θ_follower = multiplier · θ_source + offset is returned in :attr:`UrdfModel.mimics`
  (``parse_urdf_model`` / ``read_urdf_model``), and :func:`apply_mimics` imposes it on poses.
  :class:`~animkit.scene.Scene` has no field for it, so ``read_urdf`` alone drops it.
* **Visuals.** Box, sphere and cylinder become node data placed by the visual origin
  (URDF cylinders are centred on their origin, animkit's run z ∈ [0, length], so T gains a
  shift of −length/2 along z). Several visuals on one link: the first is the link node's
  data; each further one becomes a fixed child node ``<link>__visual1``, ``__visual2``...
  (a name that clashes with a link or joint is a ParseError). ``<collision>`` is ignored.
* **Meshes.** ``filename`` is resolved against the URDF's folder: a plain path relative to it;
  ``package://NAME/rest`` as ``DIR/NAME/rest`` then ``DIR/rest`` for DIR the folder and each
  parent; ``file://`` as an absolute path. Found: ``MeshFile(path, scale)``. Missing: one
  :class:`MissingMeshWarning` per URDF listing every missing file, and the link draws a stand-in:
  a capsule from the link origin to its farthest child joint origin, or a sphere for a leaf or a
  zero-length link; radius 4 % of the robot's reach at the zero pose (at least 5 mm).
* **Colours.** ``<material><color rgba>`` (alpha dropped). Named materials defined at robot
  level or inline in any visual may be referenced by name anywhere; an unknown name is a ParseError.
* **Chains.** ``arm``: the movable joints down the *trunk*, from the root while exactly one child
  subtree holds movable joints (Panda: joints 1-7, stopping where the fingers split off).
  ``to_<leaf>`` for each leaf link: every movable joint from the root to that leaf (skipped when
  empty). **Effectors**: every leaf link, under its own name.

Errors are :class:`~animkit.errors.ParseError` naming the file, the line of the offending
element and what was expected.
"""

from __future__ import annotations

import math
import os
import re
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.errors import AnimkitError, ParseError, unknown_name
from animkit.io._refs import allowed_roots, referenced_file
from animkit.model.figure import Figure
from animkit.model.geometry import Box, Capsule, Cylinder, Geometry, MeshFile, Sphere
from animkit.model.graph import Color
from animkit.model.joints import Joint, custom, fixed, free, hinge, planar, slider
from animkit.model.rig import leaf_rig
from animkit.model.transforms import (
    axis_vector,
    homogeneous,
    matrix_aligning_z_to,
    matrix_from_euler_extrinsic,
    translation,
)
from animkit.scene import Scene

__all__ = [
    "read_urdf",
    "parse_urdf",
    "read_urdf_model",
    "parse_urdf_model",
    "apply_mimics",
    "UrdfModel",
    "Mimic",
    "MissingMeshWarning",
    "JOINT_TYPES",
]

Array = NDArray[np.float64]
JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
MOVABLE = ("revolute", "continuous", "prismatic", "floating", "planar")


class MissingMeshWarning(UserWarning):
    """A ``<mesh filename>`` that could not be found; the link draws a stand-in instead."""


@dataclass(frozen=True)
class Mimic:
    """θ_follower = multiplier · θ_source + offset (URDF ``<mimic joint multiplier offset>``)."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class UrdfModel:
    """A parsed URDF: the scene, the robot's name and the mimic relations by follower joint."""

    scene: Scene
    name: str
    mimics: Mapping[str, Mimic] = field(default_factory=dict)
    missing_meshes: tuple[str, ...] = ()


# --- XML with line numbers -------------------------------------------------------------------------------


class _Doc:
    """An ElementTree parsed by expat, remembering each element's line."""

    def __init__(self, data: str | bytes, path: str | None) -> None:
        self.path = path
        self.lines: dict[ET.Element, int] = {}
        builder = ET.TreeBuilder()
        parser = xml.parsers.expat.ParserCreate()

        def start(tag: str, attrs: dict[str, str]) -> None:
            self.lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.CharacterDataHandler = builder.data
        try:
            parser.Parse(data, True)
        except LookupError as exc:  # an encoding Python does not know
            raise ParseError(path, f"cannot decode the XML: {exc}; expected UTF-8 (or another encoding Python "
                                   f"knows)", line=1) from None
        except xml.parsers.expat.ExpatError as exc:
            message = xml.parsers.expat.ErrorString(exc.code)
            raise ParseError(path, f"malformed XML: {message} (column {exc.offset + 1}); expected a well-formed "
                                   f"URDF document", line=exc.lineno) from None
        self.root = builder.close()

    def line(self, el: ET.Element | None) -> int | None:
        return None if el is None else self.lines.get(el)

    def error(self, el: ET.Element | None, message: str) -> ParseError:
        return ParseError(self.path, message, line=self.line(el))

    def attr(self, el: ET.Element, name: str) -> str:
        value = el.get(name)
        if value is None or not value.strip():
            raise self.error(el, f"<{el.tag}> needs a {name!r} attribute")
        return value.strip()

    def numbers(self, el: ET.Element, name: str, count: int, default: tuple[float, ...] | None = None) -> Array:
        text = el.get(name)
        if text is None:
            if default is None:
                raise self.error(el, f"<{el.tag}> needs a {name!r} attribute of {count} numbers")
            return np.array(default, dtype=float)
        parts = text.split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise self.error(el, f"<{el.tag} {name}={text!r}>: expected {count} numbers separated by spaces") from None
        if len(values) != count or not all(math.isfinite(v) for v in values):
            raise self.error(el, f"<{el.tag} {name}={text!r}>: expected {count} finite numbers, got {len(values)}")
        return np.array(values, dtype=float)

    def number(self, el: ET.Element, name: str, default: float | None = None) -> float:
        if el.get(name) is None and default is not None:
            return default
        return float(self.numbers(el, name, 1)[0])


def _origin(doc: _Doc, parent: ET.Element) -> Array:
    """[[R_z(y) R_y(p) R_x(r), xyz], [0, 1]] from ``parent``'s ``<origin>`` (identity when absent)."""
    el = parent.find("origin")
    if el is None:
        return np.eye(4)
    xyz = doc.numbers(el, "xyz", 3, (0.0, 0.0, 0.0))
    rpy = doc.numbers(el, "rpy", 3, (0.0, 0.0, 0.0))
    return homogeneous(matrix_from_euler_extrinsic(rpy, "xyz"), xyz)


# --- the parser -------------------------------------------------------------------------------------------


@dataclass
class _Joint:
    el: ET.Element
    name: str
    type: str
    parent: str
    child: str
    L: Array
    joint: Joint
    mimic: Mimic | None


def _make_joint(doc: _Doc, el: ET.Element, name: str, jtype: str) -> Joint:
    if jtype == "fixed":
        return fixed(name)
    if jtype == "floating":
        return free(name, "zyx")
    axis_el = el.find("axis")
    raw = (1.0, 0.0, 0.0) if axis_el is None else tuple(doc.numbers(axis_el, "xyz", 3, (1.0, 0.0, 0.0)))
    try:
        axis = axis_vector(raw)
    except AnimkitError:
        raise doc.error(axis_el if axis_el is not None else el,
                        f"joint {name!r}: axis {raw} has zero length; expected a non-zero 3-vector") from None
    if jtype == "planar":
        letter = next((c for c, v in zip("xyz", np.eye(3), strict=True) if np.allclose(axis, v, atol=1e-12)), None)
        if letter is not None:
            return planar(name, letter)
        u = matrix_aligning_z_to(axis)
        return custom(name, [("prismatic", u[:, 0]), ("prismatic", u[:, 1]), ("revolute", axis)], kind="planar")
    limits: tuple[float, float] | None = None
    if jtype in ("revolute", "prismatic"):
        lim = el.find("limit")
        if lim is None:
            raise doc.error(el, f"{jtype} joint {name!r} needs a <limit lower=... upper=...> element "
                                f"(use type=\"continuous\" for an unlimited revolute joint)")
        lo, hi = doc.number(lim, "lower", 0.0), doc.number(lim, "upper", 0.0)
        if lo > hi:
            raise doc.error(lim, f"joint {name!r}: limit lower={lo:g} > upper={hi:g}; expected lower <= upper")
        limits = (lo, hi)
    rest = 0.0 if limits is None else min(max(0.0, limits[0]), limits[1])
    maker = slider if jtype == "prismatic" else hinge
    return maker(name, axis, limits=limits, rest=rest, dof_name=name)


def _color(doc: _Doc, mat: ET.Element) -> Color | None:
    c = mat.find("color")
    if c is None:
        return None
    rgba = doc.numbers(c, "rgba", 4)
    if np.any(rgba < 0) or np.any(rgba > 1):
        raise doc.error(c, f"<color rgba={c.get('rgba')!r}>: expected 4 numbers in [0, 1]")
    return (float(rgba[0]), float(rgba[1]), float(rgba[2]))


def _materials(doc: _Doc) -> dict[str, Color]:
    """Named colours: robot-level ``<material>`` first, then inline ones in document order (first wins)."""
    out: dict[str, Color] = {}
    inline = [m for v in doc.root.iter("visual") for m in v.findall("material")]
    for mat in doc.root.findall("material") + inline:
        name = mat.get("name")
        color = _color(doc, mat)
        if name and color is not None and name not in out:
            out[name] = color
    return out


_PACKAGE = re.compile(r"^package://([^/]+)/(.*)$")


def _resolve_mesh(doc: _Doc, el: ET.Element, filename: str, base_dir: Path) -> Path | None:
    """The mesh file if found inside the URDF's folder tree (see :mod:`animkit.io._refs`), else None.

    Candidates outside the tree (a ``package://`` looked up in a parent folder, a ``file://`` or absolute path)
    are not looked at unless the user allowed their folder; a candidate that is a pipe, a device or too large
    is a ParseError.
    """
    m = _PACKAGE.match(filename)
    if m:
        package, rest = m.group(1), m.group(2)
        cands: list[Path] = []
        for d in [base_dir, *base_dir.parents]:
            cands += [d / package / rest, d / rest]
    elif filename.startswith("file://"):
        cands = [Path(filename[len("file://"):])]
    else:
        p = Path(filename)
        cands = [p if p.is_absolute() else base_dir / p]
    roots = allowed_roots(base_dir)
    referrer = doc.path or str(base_dir / "<text>")
    for c in cands:
        if "\x00" in str(c) or not any(Path(os.path.abspath(c)).is_relative_to(r) for r in roots):
            continue
        if os.path.exists(c):
            return referenced_file(referrer, str(c), what="mesh", line=doc.line(el), folder=base_dir)
    return None


@dataclass
class _Visual:
    el: ET.Element
    data: Geometry | None  # None: a missing mesh, stand-in to come
    T: Array
    color: Color | None


def _visual(doc: _Doc, v: ET.Element, link: str, materials: dict[str, Color], base_dir: Path,
            missing: list[str]) -> _Visual | None:
    geo = v.find("geometry")
    if geo is None or len(geo) == 0:
        raise doc.error(v if geo is None else geo, f"link {link!r}: <visual> needs a <geometry> holding one of "
                                                   f"<box>, <cylinder>, <sphere>, <mesh>")
    shape = geo[0]
    T = _origin(doc, v)
    color: Color | None = None
    mat = v.find("material")
    if mat is not None:
        color = _color(doc, mat)
        mname = mat.get("name")
        if color is None and mname:
            if mname not in materials:
                raise doc.error(mat, unknown_name("material", mname, materials))
            color = materials[mname]
    data: Geometry | None
    try:
        if shape.tag == "box":
            sx, sy, sz = doc.numbers(shape, "size", 3)
            data = Box((float(sx), float(sy), float(sz)))
        elif shape.tag == "sphere":
            data = Sphere(doc.number(shape, "radius"))
        elif shape.tag == "cylinder":
            length = doc.number(shape, "length")
            data = Cylinder(doc.number(shape, "radius"), length)
            T = T @ translation([0.0, 0.0, -length / 2.0])
        elif shape.tag == "mesh":
            filename = doc.attr(shape, "filename")
            kx, ky, kz = doc.numbers(shape, "scale", 3, (1.0, 1.0, 1.0))
            found = _resolve_mesh(doc, shape, filename, base_dir)
            if found is None:
                missing.append(filename)
                data = None
            else:
                data = MeshFile(str(found), (float(kx), float(ky), float(kz)))
        else:
            raise doc.error(shape, unknown_name("geometry", shape.tag, ["box", "cylinder", "sphere", "mesh"]))
    except ParseError:
        raise
    except AnimkitError as exc:
        raise doc.error(shape, f"link {link!r}: {exc}") from None
    return _Visual(v, data, T, color)


# complexity: a reader: one branch per URDF element and malformed form
def parse_urdf_model(text: str | bytes, path: str | os.PathLike[str] | None = None,
                     base_dir: str | os.PathLike[str] | None = None) -> UrdfModel:
    """Parse URDF ``text``; ``path`` names it in errors, ``base_dir`` (default: path's folder, else cwd)
    resolves mesh files."""
    spath = None if path is None else str(path)
    doc = _Doc(text, spath)
    robot = doc.root
    if robot.tag != "robot":
        raise doc.error(robot, f"the document element is <{robot.tag}>; expected <robot>")
    bdir = Path(base_dir) if base_dir is not None else (Path(path).parent if path is not None else Path.cwd())
    links = _links(doc, robot)
    joints, parent_joint = _joints(doc, robot, links)
    mimics = _mimics(doc, joints)
    root, children, order = _tree(doc, robot, links, joints, parent_joint)
    materials = _materials(doc)
    missing: list[str] = []
    visuals = {n: [vv for v in links[n].findall("visual")
                   if (vv := _visual(doc, v, n, materials, bdir, missing)) is not None] for n in links}
    fig = _figure(doc, robot, _Tree(root, order, children, parent_joint, {j.name for j in joints} | set(links)),
                  visuals)
    # one chain from the base to each leaf link, duplicates merged; effectors at the leaf links
    fig.rig = leaf_rig(fig, leaves=[n for n in order if not children[n]])
    if missing:
        unique = list(dict.fromkeys(missing))
        shown = ", ".join(unique[:4]) + (f", ... ({len(unique) - 4} more)" if len(unique) > 4 else "")
        warnings.warn(f"{spath or '<input>'}: {len(unique)} mesh file(s) not found relative to {bdir} ({shown}); "
                      f"drawing capsule stand-ins", MissingMeshWarning, stacklevel=2)
    fig.up = "z"
    scene = Scene(fig, up="z", source=spath)
    return UrdfModel(scene, robot.get("name", "robot"), mimics, tuple(dict.fromkeys(missing)))


def _links(doc: _Doc, robot: ET.Element) -> dict[str, ET.Element]:
    """The <link> elements by name (each name once, at least one)."""
    links: dict[str, ET.Element] = {}
    for el in robot.findall("link"):
        name = doc.attr(el, "name")
        if name in links:
            raise doc.error(el, f"duplicate link name {name!r} (first at line {doc.line(links[name])}); "
                                f"expected each link name once")
        links[name] = el
    if not links:
        raise doc.error(robot, "the robot has no <link>; expected at least one")
    return links


def _joints(doc: _Doc, robot: ET.Element, links: dict[str, ET.Element]) -> tuple[list[_Joint], dict[str, _Joint]]:
    """The <joint> elements read (type, parent and child links, origin, axis and limits, mimic), and each child
    link's joint: one parent joint per link."""
    joints: list[_Joint] = []
    joint_names: dict[str, ET.Element] = {}
    parent_joint: dict[str, _Joint] = {}
    for el in robot.findall("joint"):
        name = doc.attr(el, "name")
        if name in joint_names:
            raise doc.error(el, f"duplicate joint name {name!r} (first at line {doc.line(joint_names[name])})")
        joint_names[name] = el
        jtype = doc.attr(el, "type")
        if jtype not in JOINT_TYPES:
            raise doc.error(el, f"joint {name!r}: {unknown_name('joint type', jtype, JOINT_TYPES)}")
        ends = {}
        for end in ("parent", "child"):
            e = el.find(end)
            if e is None:
                raise doc.error(el, f"joint {name!r} needs a <{end} link=\"...\"/> element")
            lname = doc.attr(e, "link")
            if lname not in links:
                raise doc.error(e, f"joint {name!r}: {unknown_name(end + ' link', lname, links)}")
            ends[end] = lname
        if ends["parent"] == ends["child"]:
            raise doc.error(el, f"joint {name!r} joins link {ends['child']!r} to itself (a cycle)")
        mimic = None
        m = el.find("mimic")
        if m is not None:
            mimic = Mimic(doc.attr(m, "joint"), doc.number(m, "multiplier", 1.0), doc.number(m, "offset", 0.0))
        j = _Joint(el, name, jtype, ends["parent"], ends["child"], _origin(doc, el),
                   _make_joint(doc, el, name, jtype), mimic)
        if j.child in parent_joint:
            other = parent_joint[j.child]
            raise doc.error(el, f"link {j.child!r} is the child of joints {other.name!r} (line {doc.line(other.el)}) "
                                f"and {name!r}; expected one parent joint per link (a tree)")
        parent_joint[j.child] = j
        joints.append(j)
    return joints, parent_joint


def _mimics(doc: _Doc, joints: list[_Joint]) -> dict[str, Mimic]:
    """Joint name → its <mimic>, the source checked: another revolute, continuous or prismatic joint."""
    by_name = {j.name: j for j in joints}
    mimics: dict[str, Mimic] = {}
    single = ("revolute", "continuous", "prismatic")
    for j in joints:
        if j.mimic is None:
            continue
        src = by_name.get(j.mimic.joint)
        m_el = j.el.find("mimic")
        if src is None or src.type not in single or src is j:
            movable = [k.name for k in joints if k.type in single and k is not j]
            raise doc.error(m_el, f"joint {j.name!r}: mimic {unknown_name('movable joint', j.mimic.joint, movable)}")
        if j.type not in single:
            raise doc.error(m_el, f"joint {j.name!r}: only revolute, continuous and prismatic joints can mimic")
        mimics[j.name] = j.mimic
    return mimics


def _tree(doc: _Doc, robot: ET.Element, links: dict[str, ET.Element], joints: list[_Joint],
          parent_joint: dict[str, _Joint]) -> tuple[str, dict[str, list[_Joint]], list[str]]:
    """(the root link, each link's child joints, the links depth-first from the root): exactly one root, and every
    link below it (what cannot be reached from the root sits on a cycle)."""
    roots = [n for n in links if n not in parent_joint]
    if not roots:
        raise doc.error(joints[0].el if joints else robot,
                        "every link is the child of a joint (a cycle); expected exactly one root link")
    if len(roots) > 1:
        raise doc.error(links[roots[1]], f"more than one root link ({', '.join(map(repr, roots))}): each is the "
                                         f"child of no joint; expected exactly one root (join them with joints)")
    root = roots[0]
    children: dict[str, list[_Joint]] = {n: [] for n in links}
    for j in joints:
        children[j.parent].append(j)
    order: list[str] = []
    stack = [root]
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(c.child for c in reversed(children[n]))
    unreached = [n for n in links if n not in set(order)]
    if unreached:
        j = parent_joint[unreached[0]]
        raise doc.error(j.el, f"links {', '.join(map(repr, unreached))} form a cycle through joint {j.name!r} "
                              f"(none of them hangs below the root {root!r}); expected a tree")
    return root, children, order


@dataclass(frozen=True)
class _Tree:
    """The robot's links as a tree: the root, the links depth-first, each link's child joints and its parent
    joint, and the names links and joints take (a visual's extra node must not clash with them)."""

    root: str
    order: list[str]
    children: dict[str, list[_Joint]]
    parent_joint: dict[str, _Joint]
    taken: set[str]


def _stand_in_radius(tree: _Tree) -> float:
    """The stand-in capsules' radius: 4 % of the robot's reach at the zero pose (at least 5 mm)."""
    world: dict[str, Array] = {tree.root: np.eye(4)}
    for n in tree.order[1:]:
        world[n] = world[tree.parent_joint[n].parent] @ tree.parent_joint[n].L
    reach = max((float(np.linalg.norm(M[:3, 3])) for M in world.values()), default=0.0)
    return max(0.04 * reach, 0.005)


def _drawn(tree: _Tree, radius: float, link: str, v: _Visual) -> tuple[Geometry, Array]:
    """A visual's geometry, or for a missing mesh a stand-in: a capsule to the link's farthest child joint (a
    sphere at a leaf)."""
    if v.data is not None:
        return v.data, v.T
    offsets = [c.L[:3, 3] for c in tree.children[link]]
    d = max(offsets, key=lambda o: float(np.linalg.norm(o)), default=np.zeros(3))
    length = float(np.linalg.norm(d))
    if length < 1e-9:
        return Sphere(radius), np.eye(4)
    return Capsule(radius, length), homogeneous(matrix_aligning_z_to(d))


def _figure(doc: _Doc, robot: ET.Element, tree: _Tree, visuals: dict[str, list[_Visual]]) -> Figure:
    """The figure: a node per link (its first visual drawn), an extra fixed node per further visual."""
    radius = _stand_in_radius(tree)
    root = tree.root
    first = visuals[root][0] if visuals[root] else None
    root_data, root_T = _drawn(tree, radius, root, first) if first else (None, None)
    taken = set(tree.taken) | {root}
    try:
        fig = Figure(root, data=root_data, T=root_T, color=first.color if first else None,
                     name=robot.get("name", "robot"))

        def add_extra(link: str) -> None:
            for i, v in enumerate(visuals[link][1:], start=1):
                extra = f"{link}__visual{i}"
                if extra in taken:
                    raise doc.error(v.el, f"link {link!r}: the node for its visual #{i + 1}, {extra!r}, clashes "
                                          f"with a link or joint of that name")
                taken.add(extra)
                data, T = _drawn(tree, radius, link, v)
                fig.add(extra, link, joint=fixed(extra), data=data, T=T, color=v.color)

        add_extra(root)
        for n in tree.order[1:]:
            j = tree.parent_joint[n]
            v0 = visuals[n][0] if visuals[n] else None
            data, T = _drawn(tree, radius, n, v0) if v0 else (None, None)
            try:
                fig.add(n, j.parent, L=j.L, joint=j.joint, data=data, T=T, color=v0.color if v0 else None)
            except ParseError:
                raise
            except AnimkitError as exc:
                raise doc.error(j.el, f"joint {j.name!r}: {exc}") from None
            add_extra(n)
    except ParseError:
        raise
    except AnimkitError as exc:
        raise doc.error(robot, str(exc)) from None
    return fig


def parse_urdf(text: str | bytes, path: str | os.PathLike[str] | None = None,
               base_dir: str | os.PathLike[str] | None = None) -> Scene:
    """The scene of URDF ``text`` (see :func:`parse_urdf_model`; mimic relations are dropped)."""
    return parse_urdf_model(text, path, base_dir).scene


def read_urdf_model(path: str | os.PathLike[str]) -> UrdfModel:
    """Read a ``.urdf`` file; meshes resolve against its folder."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ParseError(str(p), f"cannot read the file ({exc.strerror})") from None
    return parse_urdf_model(data, p, p.parent)


def read_urdf(path: str | os.PathLike[str]) -> Scene:
    """Read a ``.urdf`` file as a :class:`~animkit.scene.Scene` (what ``animkit.load`` calls)."""
    return read_urdf_model(path).scene


def apply_mimics(figure: Figure, poses: ArrayLike, mimics: Mapping[str, Mimic]) -> Array:
    """Poses (D,) or (F, D) with each follower DOF set to multiplier · θ_source + offset."""
    p = figure.check_pose(poses).copy()
    for follower, m in mimics.items():
        p[..., figure.dof_index(follower)] = m.multiplier * p[..., figure.dof_index(m.joint)] + m.offset
    return p
