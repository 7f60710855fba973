"""Where a reaching hand is: its effector site on the hand people see, and the target's distance from its surface.

    d(t, W) = min_{T ∈ hand} ‖t − Π_T(t)‖          (Π_T: the nearest point of triangle T, its corners skinned / drawn)

    s = Π_hand(c + max_v ⟨x_v − c, u⟩ u)            (the site, at the rest pose: c the hand's area centroid, u the
                                                     forearm's direction, x_v the hand's surface points)

A hand is the surface (:func:`animkit.look.surface.body_surface`: the skinned mesh where the scene has one, else the
drawn geometry) owned by the effector's node and everything below it, or, where that owns nothing (a TOML hand
node marking the end of its wrist's box), by the nearest node above it that owns some. Its site is the surface
point nearest the centre of its far end: the fingertips' side of the palm, where a hand touches what it reaches
for. A reach aims the site (:func:`site_figure` hangs it on the hand as a fixed node) and is labelled by
:func:`hand_distance`, so "reached" means the hand's surface touches the target and "not reached (d)" gives the
gap a viewer sees, not a joint centre's.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.ik.body import SITE_NODE
from animkit.look.drawn import figure_mesh
from animkit.look.mesh import Mesh
from animkit.look.surface import BodySurface, body_surface, descendants
from animkit.model.figure import Figure, Rig
from animkit.model.humanoid import match_figure

__all__ = ["HandSurface", "Aim", "aim", "hand_surface", "is_hand", "hand_site", "site_figure", "hand_distance",
           "nearest_on_triangles", "SITE"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

SITE = SITE_NODE  # the site node's name: no limb word in it (the humanoid matcher leaves it out of the arm), no bone
#                   (animkit.ik.body gives it no mass)
SAME = 1e-6  # a site within this fraction of the figure's size from the effector node is that node (no site added)


@dataclass(frozen=True, eq=False)
class HandSurface:
    """A hand's triangles: ``faces`` (T, 3) into ``surface``'s points, ``top`` the node (index) the hand hangs from
    (the highest of ``nodes``, the nodes that own its points)."""

    surface: BodySurface
    faces: Index
    nodes: tuple[int, ...]
    top: int

    def corners(self, W: Array) -> Array:
        """The triangles' corners (T, 3, 3) in the world at one frame's node matrices W (N, 4, 4)."""
        used = np.unique(self.faces)
        x = np.zeros((self.surface.point_count, 3))
        x[used] = _all_positions(self.surface, W)[used]
        return x[self.faces]

    def distance(self, W: Array, target: ArrayLike) -> float:
        """d = min over the hand's triangles of ‖t − Π_T(t)‖ at node matrices W (N, 4, 4)."""
        t = np.asarray(target, dtype=float).reshape(3)
        return float(np.linalg.norm(nearest_on_triangles(t, self.corners(W)) - t, axis=1).min())


def _all_positions(surface: BodySurface, W: Array) -> Array:
    """Every surface point's world position (V, 3) at one frame."""
    return surface.positions(np.asarray(W, dtype=float)[None])[0]


def _faces(figure: Figure, meshes: Sequence[Mesh], surface: BodySurface) -> Index:
    """All triangles (T, 3) into ``surface``'s points: the meshes' in order (one part each), else the drawn ones."""
    if surface.kind == "drawn":
        return np.asarray(figure_mesh(figure).faces, dtype=np.intp).reshape(-1, 3)
    out, offset = [], 0
    for m in meshes:
        out.append(np.asarray(m.faces, dtype=np.intp) + offset)
        offset += m.vertex_count
    return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.intp)


def hand_surface(figure: Figure, effector: str, meshes: Sequence[Mesh] = ()) -> HandSurface | None:
    """The hand of ``effector`` (a node or rig effector name): the triangles whose corners are all owned by the
    effector's node and its descendants, or by the nearest node above it with some; None when nothing is drawn."""
    surface = body_surface(figure, meshes)
    faces = _faces(figure, meshes, surface)
    if not len(faces):
        return None
    owner = surface.owner
    node: str | None = figure.effector(effector)
    while node is not None:
        nodes = descendants(figure, node)
        inside = np.isin(owner[faces], nodes).all(axis=1)
        if inside.any():
            return HandSurface(surface, faces[inside], tuple(nodes), figure.node_names.index(node))
        node = figure.parent_of(node)
    return None


def nearest_on_triangles(p: Array, tri: Array) -> Array:
    """Π_T(p) for each triangle T = (a, b, c) of ``tri`` (T, 3, 3): the nearest point (T, 3), by its Voronoi region
    (Ericson, Real-Time Collision Detection, §5.1.5): a corner, a point on an edge, or the face's projection."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = p - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = p - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        den = va + vb + vc
        v_face, w_face = vb / den, vc / den
        t_ab = d1 / (d1 - d3)
        t_ac = d2 / (d2 - d6)
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
    out = a + v_face[:, None] * ab + w_face[:, None] * ac
    regions = [  # later entries win: the face is the default, then edges, then corners
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + t_ab[:, None] * ab),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + t_ac[:, None] * ac),
        ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), b + t_bc[:, None] * (c - b)),
        ((d1 <= 0) & (d2 <= 0), a), ((d3 >= 0) & (d4 <= d3), b), ((d6 >= 0) & (d5 <= d6), c)]
    for mask, point in regions:
        out = np.where(mask[:, None], point, out)
    bad = ~np.isfinite(out).all(axis=1)  # a degenerate triangle: its nearest corner
    if bad.any():
        corners = tri[bad]
        k = np.argmin(np.linalg.norm(corners - p, axis=2), axis=1)
        out[bad] = corners[np.arange(len(k)), k]
    return out


def _dot(u: Array, v: Array) -> Array:
    return np.einsum("ij,ij->i", u, v)


def is_hand(figure: Figure, node: str) -> bool:
    """Whether ``node`` is a humanoid's hand (:func:`~animkit.model.humanoid.match_figure`) or lies below one."""
    bones = match_figure(figure)
    path = {a.child.name for a in figure.path_to(node)}
    return any(h is not None and h in path for h in (bones.get("hand_l"), bones.get("hand_r")))


def hand_site(figure: Figure, effector: str, meshes: Sequence[Mesh] = (), hand: HandSurface | None = None
              ) -> tuple[str, Array] | None:
    """The effector's site on its hand (the module's s), as (the node it hangs on, its offset in that node's frame);
    None when the figure draws no hand. Found at the rest pose: u runs from the hanging node's parent to it (the
    forearm), else from the node to the hand's centroid. ``hand``: the :func:`hand_surface` when already found."""
    hand = hand or hand_surface(figure, effector, meshes)
    if hand is None:
        return None
    W = figure.world_batch(figure.rest_pose()[None])[0]
    tri = hand.corners(W)
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    centres = tri.mean(axis=1)
    c = area @ centres / area.sum() if area.sum() > 0 else centres.mean(axis=0)
    top = hand.top
    parent = figure.compiled.parent[top]
    u = W[top, :3, 3] - (W[parent, :3, 3] if parent >= 0 else c)
    if not np.linalg.norm(u) > 1e-9 * figure.size():
        u = c - W[top, :3, 3]
    u = u / np.linalg.norm(u) if np.linalg.norm(u) > 0 else np.array([0.0, -1.0, 0.0])
    far = c + float(np.max((tri.reshape(-1, 3) - c) @ u)) * u
    near = nearest_on_triangles(far, tri)
    site = near[np.argmin(np.linalg.norm(near - far, axis=1))]
    local = np.linalg.solve(W[top], np.append(site, 1.0))[:3]
    return figure.node_names[top], local


def site_figure(figure: Figure, effector: str, meshes: Sequence[Mesh] = (), hand: HandSurface | None = None
                ) -> tuple[Figure, str]:
    """(figure, node) a reach of ``effector`` (a humanoid's hand or a node below it) aims: a copy of ``figure``
    with the :func:`hand_site` hung on the hand as a fixed node (:data:`SITE`, also the rig's effector of that
    name), or ``figure`` and the effector's own node where it is no humanoid's hand (a robot's tool frame), draws
    no hand, or already sits at the site (the TOML humanoid's ``hand_r``, at the far end of its wrist's box). The
    copy has the same DOFs in the same order: its poses are the figure's."""
    node = figure.effector(effector)
    if not is_hand(figure, node):
        return figure, node  # a robot's tool frame is its own site
    found = hand_site(figure, effector, meshes, hand)
    if found is None:
        return figure, node
    top, local = found
    W = figure.world_batch(figure.rest_pose()[None])[0]
    names = figure.node_names
    at = np.linalg.solve(W[names.index(top)], W[names.index(node)][:, 3])[:3]
    rigid = all(a.joint.dof_count == 0 for a in figure.path_to(node)[len(figure.path_to(top)):])
    if rigid and np.linalg.norm(at - local) <= SAME * figure.size():
        return figure, node
    name = SITE
    while name in names:
        name += "_"
    out = copy.deepcopy(figure)
    out.add(name, top, offset=local)
    rig = figure.rig
    if effector in rig.effectors and effector not in names:  # the name now stands for the site (a node's stays)
        out.rig = Rig(rig.chains, {**rig.effectors, effector: name}, rig.limits)
    return out, name


def hand_distance(figure: Figure, effector: str, poses: ArrayLike, target: ArrayLike,
                  meshes: Sequence[Mesh] = (), hand: HandSurface | None = None) -> Array | None:
    """d (F,): the target's distance from the hand's surface at each pose (F, D) of ``figure``; None where it draws
    no hand. ``hand``: the :func:`hand_surface` when already found."""
    hand = hand or hand_surface(figure, effector, meshes)
    if hand is None:
        return None
    W = figure.world_batch(np.atleast_2d(np.asarray(poses, dtype=float)))
    return np.array([hand.distance(w, target) for w in W])


@dataclass(frozen=True, eq=False)
class Aim:
    """What a reach of one effector aims and what measures it: the scene's ``figure`` and the effector's ``node``;
    ``hand``, its :func:`hand_surface` (None for a robot's tool frame or a figure that draws no hand); ``aimed`` and
    ``site``, the figure a reach is baked on and the node it aims (:func:`site_figure`; ``figure`` and ``node``
    where no site is hung). ``animkit compare``'s panels and ``animkit reach`` both take theirs from :func:`aim`."""

    figure: Figure
    node: str
    hand: HandSurface | None
    aimed: Figure
    site: str

    @property
    def sited(self) -> bool:
        """Whether the reach is baked on a copy carrying the site (its clips are then made on ``figure`` again)."""
        return self.aimed is not self.figure

    def distances(self, poses: ArrayLike, target: ArrayLike) -> Array | None:
        """d (F,) (the module's d(t, W)) at each pose (F, D) of ``figure``; None without a hand."""
        return None if self.hand is None else hand_distance(self.figure, self.node, poses, target, hand=self.hand)


def aim(figure: Figure, effector: str, meshes: Sequence[Mesh] = ()) -> Aim:
    """The :class:`Aim` of a reach of ``effector`` (a node or rig effector name): a humanoid's hand gets its surface
    and site, anything else (a robot's tool frame) its own node and no surface. SceneError for an unknown name."""
    node = figure.effector(effector)
    hand = hand_surface(figure, effector, meshes) if is_hand(figure, node) else None
    aimed, site = site_figure(figure, effector, meshes, hand)
    return Aim(figure, node, hand, aimed, site)
