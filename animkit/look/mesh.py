"""Meshes that hang on a figure: triangles, rest vertices, a material, and either a skin or a node.

A :class:`Mesh` is one glTF mesh primitive (a small frozen value; arrays read-only). It is placed

* **skinned** (``skin`` set): v' = Σ_k w_k · W[joint j(k)] · IBM_j(k) · v (:mod:`animkit.look.skin`); the
  mesh node's own world matrix is *not* applied (glTF's rule; three.js and Blender agree, see
  ``docs/conventions.md``);
* **rigidly** (``skin`` None): v' = W[node] · v, the world matrix of the node it hangs on.

``positions(W)`` and ``normals(W)`` take world matrices (F, N, 4, 4) from ``figure.world_batch(poses)``
(N = the figure's nodes, in ``node_names`` order) and return (F, V, 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from animkit.errors import SceneError
from animkit.look import skin as lbs

__all__ = ["Skin", "Mesh", "vertex_normals"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]


def _frozen(a: NDArray | None) -> NDArray | None:
    if a is not None:
        a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Skin:
    """A skin: its joints (node names), inverse bind matrices IBM (J, 4, 4) and skeleton root (or None).

    ``joint_index`` (J,) are the joints' rows in the figure's ``node_names``.
    """

    name: str
    joints: tuple[str, ...]
    inverse_bind: Array
    joint_index: Index
    skeleton: str | None = None

    def __post_init__(self) -> None:
        J = len(self.joints)
        if self.inverse_bind.shape != (J, 4, 4) or self.joint_index.shape != (J,):
            raise SceneError(f"skin {self.name!r}: {J} joints need inverse_bind (J, 4, 4) and joint_index (J,), "
                             f"got {self.inverse_bind.shape} and {self.joint_index.shape}")
        _frozen(self.inverse_bind)
        _frozen(self.joint_index)

    def __repr__(self) -> str:
        root = f", skeleton {self.skeleton!r}" if self.skeleton else ""
        return f"Skin({self.name!r}, {len(self.joints)} joints{root})"


@dataclass(frozen=True, eq=False)
class Mesh:
    """One triangle mesh: ``faces`` (T, 3) into rest ``rest_positions`` / ``rest_normals`` (V, 3), ``uvs`` (V, 2)
    or None, the material's ``base_color`` (RGBA factor, linear) and ``texture`` (H, W, 4) uint8 RGBA as stored
    (sRGB) or None; ``uvs`` address the texture with (0, 0) at its top-left corner (glTF's convention).

    ``node`` is the node it hangs on and ``node_index`` that node's row in the figure's ``node_names``.
    Skinned meshes have ``skin`` and ``joints`` (V, K) (indices into ``skin.joints``) with ``weights`` (V, K)
    (rows sum to 1; K ≤ 8). ``metallic`` and ``roughness`` are the material's glTF factors (kept for the writer;
    the renderer shades diffuse).
    """

    name: str
    node: str
    node_index: int
    faces: Index
    rest_positions: Array
    rest_normals: Array
    uvs: Array | None = None
    base_color: Array = field(default_factory=lambda: np.ones(4))
    texture: NDArray[np.uint8] | None = None
    skin: Skin | None = None
    joints: Index | None = None
    weights: Array | None = None
    metallic: float = 0.0
    roughness: float = 1.0

    def __post_init__(self) -> None:
        V = self.rest_positions.shape[0]
        problems = []
        if self.rest_positions.shape != (V, 3) or self.rest_normals.shape != (V, 3):
            problems.append(f"rest positions/normals {self.rest_positions.shape}/{self.rest_normals.shape}")
        if self.faces.ndim != 2 or self.faces.shape[1] != 3:
            problems.append(f"faces {self.faces.shape}, expected (T, 3)")
        elif self.faces.size and (self.faces.min() < 0 or self.faces.max() >= V):
            problems.append(f"faces index outside the {V} vertices")
        if self.uvs is not None and self.uvs.shape != (V, 2):
            problems.append(f"uvs {self.uvs.shape}, expected ({V}, 2)")
        if (self.skin is None) != (self.joints is None) or (self.joints is None) != (self.weights is None):
            problems.append("a skinned mesh needs skin, joints and weights together")
        if self.joints is not None and self.weights is not None and self.skin is not None:
            if self.joints.shape != self.weights.shape or self.joints.shape[0] != V:
                problems.append(f"joints {self.joints.shape} and weights {self.weights.shape}, expected (V, K)")
            elif self.joints.size and (self.joints.min() < 0 or self.joints.max() >= len(self.skin.joints)):
                problems.append(f"joint indices outside the skin's {len(self.skin.joints)} joints")
        if problems:
            raise SceneError(f"mesh {self.name!r}: " + "; ".join(problems))
        for a in (self.faces, self.rest_positions, self.rest_normals, self.uvs, self.base_color, self.texture,
                  self.joints, self.weights):
            _frozen(a)

    def __repr__(self) -> str:
        parts = [f"{self.vertex_count} vertices", f"{len(self.faces)} triangles"]
        if self.skin is not None and self.weights is not None:
            parts.append(f"skinned by {self.skin.name!r} ({len(self.skin.joints)} joints, "
                         f"≤ {self.weights.shape[1]} influences)")
        if self.texture is not None:
            parts.append(f"textured {self.texture.shape[1]}×{self.texture.shape[0]}")
        return f"Mesh({self.name!r} on {self.node!r}, {', '.join(parts)})"

    @property
    def vertex_count(self) -> int:
        return int(self.rest_positions.shape[0])

    @property
    def skinned(self) -> bool:
        return self.skin is not None

    def _check(self, W: Array) -> Array:
        W = np.asarray(W, dtype=float)
        if W.ndim == 3:
            W = W[None]
        need = self.node_index if self.skin is None else int(self.skin.joint_index.max(initial=0))
        if W.ndim != 4 or W.shape[2:] != (4, 4) or W.shape[1] <= need:
            raise SceneError(f"mesh {self.name!r}: expected world matrices (F, N, 4, 4) from figure.world_batch, "
                             f"got shape {W.shape}")
        return W

    def joint_matrices(self, W: Array) -> Array:
        """S_f,j = W_f[joint j] · IBM_j (F, J, 4, 4) for a skinned mesh."""
        assert self.skin is not None
        return lbs.joint_matrices(W, self.skin.joint_index, self.skin.inverse_bind)

    def positions(self, W: Array, *, out: NDArray | None = None, dtype: type | None = None) -> NDArray:
        """World positions (F, V, 3): v' = Σ_k w_k W[j(k)] IBM_j(k) v (skinned) or W[node] v (rigid).

        ``W`` is (F, N, 4, 4) (or one frame (N, 4, 4)) from ``figure.world_batch(poses)``. Skinned meshes run the
        C kernel of :mod:`animkit.look.skin` (numba's loop where it was not built, NumPy's one matrix product when both
        are off). ``out``: a writeable C-contiguous (F, V, 3) float32 or float64 array to write into (returned; reuse
        it across calls: no fresh pages to fault in); ``dtype``: that of a new result (float64 by default; float32
        halves the memory written and is computed in float32). A wrong ``out`` or ``dtype`` raises AnimkitError;
        see docs/skinning.md.
        """
        return self._deform(W, True, out, dtype)

    def normals(self, W: Array, *, out: NDArray | None = None, dtype: type | None = None) -> NDArray:
        """World unit normals (F, V, 3): normalise(Σ_k w_k cof(W[j(k)] IBM_j(k)) n) (skinned) or
        normalise(cof(W[node]) n) (rigid); cof(A) = det(A) A⁻ᵀ. ``out`` and ``dtype`` as for :meth:`positions`."""
        return self._deform(W, False, out, dtype)

    def _deform(self, W: Array, positions: bool, out: NDArray | None, dtype: type | None) -> NDArray:
        """Positions (``positions``) or normals of every vertex in every frame of ``W``: the compiled kernel, else
        the dense influence table, else influence by influence (copied into ``out`` / cast to ``dtype``)."""
        W = self._check(W)
        lbs.check_dtype(dtype)  # on every path, compiled or not
        shape = (W.shape[0], self.vertex_count, 3)
        buffer = lbs.output_buffer(shape, out, dtype) if out is not None else None
        rest = self.rest_positions if positions else self.rest_normals
        if self.skin is None:
            rigid = lbs.rigid_positions if positions else lbs.rigid_normals
            result = rigid(W[:, self.node_index], rest)
        else:
            S = lbs.joint_rows(W, self.skin.joint_index, self.skin.inverse_bind)  # (F, J, 3, 4): all that is read
            assert self.joints is not None and self.weights is not None
            fast = lbs.compiled_skin(S, rest, self.joints, self.weights, positions, out=buffer, dtype=dtype,
                                     packs=self._packs[positions])
            if fast is not None:
                return fast
            X = self._position_table if positions else self._normal_table
            if X is not None:
                result = (lbs.positions_from_table if positions else lbs.normals_from_table)(X, S)
            else:
                result = (lbs.skin_positions if positions else lbs.skin_normals)(S, rest, self.joints, self.weights)
        if buffer is not None:
            np.copyto(buffer, result, casting="same_kind")
            return buffer
        return result if dtype is None else result.astype(dtype, copy=False)

    @cached_property
    def _packs(self) -> dict[bool, dict[type, NDArray[np.uint8]]]:
        """The C kernel's packed vertices (:func:`animkit.look.skin.pack_influences`), for positions (True) and
        normals (False), by output dtype: built on first use."""
        return {True: {}, False: {}}

    @cached_property
    def _position_table(self) -> Array | None:
        assert self.skin is not None and self.joints is not None and self.weights is not None
        return lbs.influence_table(self.rest_positions, self.joints, self.weights, len(self.skin.joints), True)

    @cached_property
    def _normal_table(self) -> Array | None:
        assert self.skin is not None and self.joints is not None and self.weights is not None
        return lbs.influence_table(self.rest_normals, self.joints, self.weights, len(self.skin.joints), False)


def vertex_normals(positions: Array, faces: Index) -> Array:
    """n_v = normalise(Σ_{faces f ∋ v} (b − a) × (c − a)): area-weighted face normals summed at each vertex
    (three.js ``computeVertexNormals``); a vertex on no face (or only degenerate ones) gets (0, 0, 1)."""
    p = np.asarray(positions, dtype=float)
    n = np.zeros_like(p)
    if faces.size:
        a, b, c = p[faces[:, 0]], p[faces[:, 1]], p[faces[:, 2]]
        fn = np.cross(b - a, c - a)
        for k in range(3):
            np.add.at(n, faces[:, k], fn)
    length = np.linalg.norm(n, axis=1)
    out = np.where(length[:, None] > 0, n / np.where(length > 0, length, 1.0)[:, None], (0.0, 0.0, 1.0))
    return out
