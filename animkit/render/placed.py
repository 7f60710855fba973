"""Figure + pose → placed triangles: each node's data drawn with M · T.

The figure's meshes are built once (:func:`figure_mesh`): every drawn node's mesh is
put in the node's frame by its T (v_node = T · v_data) and all of them are stacked
into one vertex array with an owner index. Placing a pose is then one batched
product, v_world = R_owner · v_node + p_owner, for every vertex at once.
Data shared between nodes is turned into triangles once and drawn once per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from animkit.errors import SceneError
from animkit.look.drawn import BONE_COLOR, FigureMesh, bone_capsules, closed_outward, figure_mesh
from animkit.model.figure import Figure
from animkit.model.geometry import Capsule, Sphere
from animkit.model.transforms import matrix_aligning_z_to
from animkit.render.camera import UpAxis, horizontal

if TYPE_CHECKING:
    from animkit.model.humanoid import HumanoidMap

__all__ = ["FigureMesh", "figure_mesh", "place_vertices", "framing_points", "BONE_COLOR", "figure_look",
           "prepare_look", "prepared_look", "node_sides", "sides_at_rest", "side_color", "facing_axes", "Part", "Side"]


def place_vertices(mesh: FigureMesh, world: NDArray[np.float64]) -> NDArray[np.float64]:
    """v_world = R_owner · v + p_owner for one pose's world matrices ``world`` (N, 4, 4) → (V, 3)."""
    W = world[mesh.owner]
    return np.einsum("vij,vj->vi", W[:, :3, :3], mesh.vertices) + W[:, :3, 3]


def framing_points(figure: Figure, mesh: FigureMesh, poses: NDArray[np.float64], *,
                   max_frames: int = 2000, follow: UpAxis | None = None) -> NDArray[np.float64]:
    """Points that bound the figure over a whole clip: node origins ± each node's mesh radius (P, 3).

    Uses at most ``max_frames`` evenly spaced frames (plus the last), so framing a 10,000-frame clip is cheap.
    ``follow`` (the up axis) frames the figure as a following camera sees it: each frame's points less its
    root's ground-plane position, pₖ − h(rₖ).
    """
    poses = np.atleast_2d(poses)
    if len(poses) > max_frames:
        idx = np.unique(np.linspace(0, len(poses) - 1, max_frames).round().astype(int))
        poses = poses[idx]
    origins = figure.world_positions(poses)  # (F, N, 3)
    if follow is not None:
        origins = origins - horizontal(origins[:, :1], follow)
    drawn = mesh.radius > 0
    pts = origins.reshape(-1, 3)
    if not drawn.any():
        return pts
    r = mesh.radius[drawn]
    o = origins[:, drawn].reshape(-1, 3)
    rr = np.tile(r, len(poses))[:, None]
    offsets = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    return np.concatenate([pts, (o[:, None, :] + rr[:, None, :] * offsets[None]).reshape(-1, 3)])


# --- the readable look: sides in hues, a face, bones as thick as a body's ---------------------------------------

Side = Literal["l", "r"]
#: Right warm, left cool; the trunk neutral.
RIGHT_HUE = (0.91, 0.40, 0.16)
LEFT_HUE = (0.17, 0.50, 0.90)
TRUNK_COLOR = (0.66, 0.66, 0.70)
NOSE_COLOR = (0.20, 0.20, 0.24)


def facing_axes(up: UpAxis) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(forward, left) of a figure at rest: Y-up figures face +z with their left at +x (BVH, our humanoid);
    Z-up figures face +x with their left at +y (ROS)."""
    if up == "y":
        return np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    return np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])


def node_sides(figure: Figure, up: UpAxis | None = None, *, tolerance: float = 0.04) -> list[Side | None]:
    """Each node's side: from the names when the figure is a humanoid (:func:`animkit.model.humanoid.match_figure`:
    each sided limb bone's node and everything below it), else from the body's geometry (:func:`sides_at_rest`).
    """
    up = figure.up if up is None else up
    from animkit.model.humanoid import match_figure

    return _node_sides(figure, up, tolerance, match_figure(figure))


def _node_sides(figure: Figure, up: UpAxis, tolerance: float, hmap: HumanoidMap) -> list[Side | None]:
    """:func:`node_sides` with the figure's humanoid map already matched (one match per look, not three)."""
    if not hmap.is_humanoid:
        return sides_at_rest(figure, up, tolerance=tolerance)
    index = {n: i for i, n in enumerate(figure.node_names)}
    sides: list[Side | None] = [None] * len(index)
    for bone, node in hmap.bones.items():
        if bone.endswith(("_l", "_r")):
            sides[index[node]] = "l" if bone.endswith("_l") else "r"
    for arc in figure.arcs():  # parents before children: a limb's side runs down to its ends
        i = index[arc.child.name]
        if sides[i] is None and arc.parent is not None:
            sides[i] = sides[index[arc.parent.name]]
    return sides


def sides_at_rest(figure: Figure, up: UpAxis | None = None, *, tolerance: float = 0.04) -> list[Side | None]:
    """Each node's side from the body's geometry at rest: s = sign((p − p_root) · left) where
    |(p − p_root) · left| > tolerance · size and a node mirrored across the midplane lies within
    4 · tolerance · size of p's mirror image; a node on the midline takes its parent's side.

    A figure with no mirrored pairs (a robot arm) gets no sides at all.
    """
    up = figure.up if up is None else up
    P = figure.world_positions(figure.rest_pose()[None])[0]
    _, left = facing_axes(up)
    rel = P - P[0]
    lateral = rel @ left
    size = figure.size()
    mirrored = rel - 2.0 * lateral[:, None] * left
    off = np.abs(lateral) > tolerance * size  # only nodes off the midplane need a mirror partner
    has_pair = np.zeros(len(P), dtype=bool)
    has_pair[off] = _has_neighbour(mirrored[off], rel, 4 * tolerance * size)
    index = {n: i for i, n in enumerate(figure.node_names)}
    sides: list[Side | None] = [None] * len(P)
    for arc in figure.arcs():
        i = index[arc.child.name]
        if abs(lateral[i]) > tolerance * size and has_pair[i]:
            sides[i] = "l" if lateral[i] > 0 else "r"
        elif arc.parent is not None:
            sides[i] = sides[index[arc.parent.name]]
    if "l" not in sides or "r" not in sides:
        return [None] * len(P)
    return sides


def _has_neighbour(queries: NDArray[np.float64], points: NDArray[np.float64], radius: float) -> NDArray[np.bool_]:
    """has[i] = ∃ j: |queries[i] − points[j]| < radius, in time linear in the count (points hashed into cells of
    side ``radius``; each query looks in its cell and the 26 around it), not a count² table of distances."""
    has = np.zeros(len(queries), dtype=bool)
    if radius <= 0 or not len(points):
        return has
    cells: dict[tuple[int, ...], list[int]] = {}
    for j, c in enumerate(np.floor(points / radius).astype(np.int64).tolist()):
        cells.setdefault(tuple(c), []).append(j)
    offsets = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)]
    for i, (x, y, z) in enumerate(np.floor(queries / radius).astype(np.int64).tolist()):
        near = [j for dx, dy, dz in offsets for j in cells.get((x + dx, y + dy, z + dz), ())]
        if near and bool((np.linalg.norm(points[near] - queries[i], axis=1) < radius).any()):
            has[i] = True
    return has


def side_color(color: tuple[float, float, float], side: Side | None) -> tuple[float, float, float]:
    """c' = hue(side) · (0.55 + 0.7 Y(c)), clipped, for a sided part (Y: luma, so light parts stay light);
    the trunk: c' = 0.4 c + 0.6 grey, the author's colour muted so it does not read as a side."""
    c = np.asarray(color, dtype=float)
    if side is None:
        return tuple(float(v) for v in 0.4 * c + 0.6 * np.asarray(TRUNK_COLOR))  # type: ignore[return-value]
    luma = float(c @ [0.299, 0.587, 0.114])
    hue = np.asarray(RIGHT_HUE if side == "r" else LEFT_HUE)
    return tuple(float(v) for v in np.clip(hue * (0.55 + 0.7 * luma), 0.0, 1.0))  # type: ignore[return-value]


_PREPARED: dict[tuple[int, str], tuple[Figure, object, FigureMesh]] = {}


def prepare_look(figure: Figure, up: UpAxis | None = None) -> None:
    """:func:`figure_look` (figure, up) made now, for the next :func:`prepared_look` of that figure (once): ``animkit
    compare`` makes it while its other process finishes a bake, not after, when every core could be drawing. One
    at a time: a look prepared and never used is dropped by the next."""
    up = figure.up if up is None else up
    look = figure_look(figure, up)
    _PREPARED.clear()
    _PREPARED[(id(figure), up)] = (figure, figure.compiled, look)


def prepared_look(figure: Figure, up: UpAxis | None = None) -> FigureMesh:
    """:func:`figure_look` (figure, up): the one :func:`prepare_look` made, where the figure is unchanged since (the
    same compiled arrays), else made now."""
    up = figure.up if up is None else up
    got = _PREPARED.pop((id(figure), up), None)
    if got is not None and got[0] is figure and got[1] is figure.compiled:
        return got[2]
    return figure_look(figure, up)


def figure_look(figure: Figure, up: UpAxis | None = None, *, sides: Sequence[Side | None] | None = None,
                face: bool = True) -> FigureMesh:
    """The figure as the renderer draws it: :func:`figure_mesh`'s parts recoloured by side (right warm, left
    cool, trunk neutral; a figure without sides keeps its colours), bones (for a figure without drawn data)
    as thick as a body's, and a nose on the head pointing the way the figure faces.

    Bones run from each node's origin to its children's at rest: radius 0.05 H on the trunk, 0.032 H on the
    limbs (H: the figure's height at rest) but never more than 0.45 of the bone's length (fingers stay fingers);
    the head gets a sphere of 0.06 H. ``sides`` defaults to :func:`node_sides`.
    """
    up = figure.up if up is None else up
    nodes = figure.nodes()
    index = {n: i for i, n in enumerate(figure.node_names)}
    from animkit.model.humanoid import match_figure

    hmap = match_figure(figure)  # linear in the nodes, but not cheap: once for the sides, the hips and the head
    side = list(sides) if sides is not None else _node_sides(figure, up, 0.04, hmap)
    if len(side) != len(nodes):
        raise SceneError(f"sides: expected one per node ({len(nodes)}), got {len(side)}")
    W = figure.world_batch(figure.rest_pose()[None])[0]
    P = W[:, :3, 3]
    upv = np.array([0.0, 1.0, 0.0]) if up == "y" else np.array([0.0, 0.0, 1.0])
    heights = P @ upv
    H = max(float(np.ptp(heights)), 1e-3 * figure.size(), 1e-9)
    forward, _ = facing_axes(up)
    parts: list[Part] = []
    drawn = [n.data is not None for n in nodes]
    if any(drawn):
        base = figure_mesh(figure, bones=False)
        fowner = base.owner[base.faces[:, 0]]
        colors = base.face_colors
        if any(side):  # a body: sides in hues; a machine keeps its author's colours
            keys = [(tuple(c), side[o]) for c, o in zip(colors.tolist(), fowner.tolist(), strict=True)]
            memo = {k: side_color(*k) for k in set(keys)}  # a few colours × sides, not one call per face
            colors = np.array([memo[k] for k in keys])
        parts.append(Part(base.vertices, base.owner, base.faces, colors.reshape(-1, 3)))
    else:
        above = _above_hips(figure, hmap)
        pairs = np.array([(index[arc.parent.name], index[arc.child.name]) for arc in figure.arcs()
                          if arc.parent is not None and arc.parent.name not in above], dtype=np.intp).reshape(-1, 2)
        a, b = pairs[:, 0], pairs[:, 1]
        # the child's origin in the parent's frame at rest: L·A(rest) — L alone holds no offset where the
        # joint carries the translation (glTF's TRS nodes)
        d = np.einsum("nji,nj->ni", W[a, :3, :3], P[b] - P[a])
        length = np.linalg.norm(d, axis=1)
        keep = length > 1e-9
        a, b, d, length = a[keep], b[keep], d[keep], length[keep]
        s = np.array([side[i] or "" for i in b.tolist()], dtype="<U1")
        radius = np.where(s != "", np.minimum(0.032 * H, 0.45 * length), 0.05 * H)
        if len(d):
            v, f, k = bone_capsules(radius, d)  # NumPy: drawing never imports trimesh
            hues = np.array([TRUNK_COLOR, RIGHT_HUE, LEFT_HUE])
            color = hues[np.where(s == "r", 1, np.where(s == "l", 2, 0))]
            parts.append(Part(v, np.repeat(a, k), f, np.repeat(color, len(f) // len(d), axis=0)))
    head = _head(figure, heights, side, hmap)
    if head is not None and face:
        parts.extend(_face(figure, W, head, forward, upv, H, drawn, index))
    return _join(parts, len(nodes))


@dataclass(frozen=True)
class Part:
    """Triangles owned by nodes: vertices (V, 3) in their owners' frames, owner (V,), faces (F, 3), colours (F, 3)."""

    vertices: NDArray[np.float64]
    owner: NDArray[np.intp]
    faces: NDArray[np.intp]
    colors: NDArray[np.float64]


def _part(owner: int, v: NDArray[np.float64], f: NDArray[np.intp], color: tuple[float, float, float]) -> Part:
    return Part(v, np.full(len(v), owner, dtype=np.intp), f, np.broadcast_to(np.asarray(color, float), (len(f), 3)))


def _join(parts: Sequence[Part], n_nodes: int) -> FigureMesh:
    radius = np.zeros(n_nodes)
    if not parts:
        return FigureMesh(np.zeros((0, 3)), np.zeros(0, np.intp), np.zeros((0, 3), np.intp), np.zeros((0, 3)),
                          radius)
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    V = np.concatenate([p.vertices for p in parts])
    owner = np.concatenate([p.owner for p in parts])
    np.maximum.at(radius, owner, np.linalg.norm(V, axis=1))
    closed = np.concatenate([np.full(len(p.faces), closed_outward(p.vertices, p.faces)) for p in parts])
    return FigureMesh(V, owner, np.concatenate([p.faces + o for p, o in zip(parts, offsets, strict=True)]),
                      np.concatenate([p.colors for p in parts]), radius, closed)


def _above_hips(figure: Figure, hmap: HumanoidMap) -> set[str]:
    """A humanoid's nodes above its hips (a glTF file's world, armature and axis-fix nodes): bones from them
    would be a pole from the scene's origin to the pelvis, so none are drawn."""
    hips = hmap.get("hips") if hmap.is_humanoid else None
    above: set[str] = set()
    while hips is not None and (hips := figure.parent_of(hips)) is not None:
        above.add(hips)
    return above


def _head(figure: Figure, heights: NDArray[np.float64], side: Sequence[Side | None],
          hmap: HumanoidMap) -> tuple[int, int] | None:
    """(head node, the node above it): the humanoid's head and its first child (or itself), else the topmost
    midline node's parent and that node; None for a figure without sides (no body)."""
    if not any(side):
        return None
    names = figure.node_names
    head = hmap.get("head") if hmap.is_humanoid else None
    if head is not None:
        h = names.index(head)
        kids = [names.index(a.child.name) for a in figure.arcs() if a.parent is not None and a.parent.name == head]
        return h, max(kids, key=lambda i: heights[i]) if kids else h
    mid = [i for i, s in enumerate(side) if s is None and i > 0]
    if not mid:
        return None
    top = max(mid, key=lambda i: heights[i])
    parent = figure.parent_of(names[top])
    if parent is None:
        return None
    return names.index(parent), top


def _face(figure: Figure, W: NDArray[np.float64], head: tuple[int, int], forward: NDArray[np.float64],
          upv: NDArray[np.float64], H: float, drawn: Sequence[bool], index: dict[str, int]) -> list[Part]:
    """A head sphere (for bones) and a nose: a capsule from the head's centre out through its front, built at
    rest in world coordinates and carried into the head node's frame by W_head⁻¹."""
    h, top = head
    owner = h
    if drawn[top] or not drawn[h]:
        owner = top if drawn[top] else h
    parts: list[Part] = []
    P = W[:, :3, 3]
    if drawn[owner]:
        mesh = figure_mesh(figure, bones=False)
        v = mesh.vertices[mesh.owner == owner]
        world = v @ W[owner, :3, :3].T + W[owner, :3, 3]
        centre = 0.5 * (world.min(axis=0) + world.max(axis=0))
        r = 0.5 * float(np.ptp(world @ forward))
    else:
        centre = 0.5 * (P[h] + P[top])
        r = 0.06 * H
        sv, sf = Sphere(r).triangles()
        parts.append(_part(owner, _into(W[owner], sv + centre), sf, TRUNK_COLOR))
    nv, nf = Capsule(0.22 * r, 0.55 * r).triangles()
    v = nv @ matrix_aligning_z_to(forward).T + centre + 0.7 * r * forward - 0.1 * r * upv
    parts.append(_part(owner, _into(W[owner], v), nf, NOSE_COLOR))
    return parts


def _into(M: NDArray[np.float64], world: NDArray[np.float64]) -> NDArray[np.float64]:
    """v = R⁻¹ (p − t): world points into the frame of M = [R t; 0 1] (R orthonormal)."""
    return (world - M[:3, 3]) @ M[:3, :3]
