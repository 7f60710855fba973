"""glTF meshes in: each primitive a :class:`~animkit.look.mesh.Mesh` (positions, normals, UVs, base colour and texture,
skin influences), skins (joints, inverse bind matrices), images decoded within animkit.limits' pixel budgets.
:class:`MeshReading` is the half of :mod:`animkit.io.gltf`'s reader that reads them.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit import limits
from animkit.io.gltf_bytes import GltfDocument, pointer
from animkit.look.mesh import Mesh, Skin, vertex_normals
from animkit.look.skin import normalized_weights
from animkit.model.figure import Figure

Array = NDArray[np.float64]

#: bytes a primitive's vertex costs beyond its POSITION array (faces, normals and their temporaries), charged to
#: the decode budget (:data:`animkit.limits.MAX_DECODED_BYTES`) with the accessors
_VERTEX_WORK = 96

class MeshReading:
    """The mesh-reading methods of the glTF reader (``gltf._Reader`` derives from this): the document and the
    reader's state they use are set by that reader's ``__init__``."""

    doc: GltfDocument
    nodes: list[dict[str, Any]]
    names: list[str]
    morph: bool
    _pixels: int
    _images: dict[int, NDArray[np.uint8]]


    def meshes(self, fig: Figure, order: list[int]) -> list[Mesh]:
        doc = self.doc
        index = {n: k for k, n in enumerate(fig.node_names)}
        skins: dict[int, Skin] = {}
        out: list[Mesh] = []
        in_figure = set(order)
        for i in order:
            n = self.nodes[i]
            if "weights" in n:
                self.morph = True
            if "mesh" not in n:
                continue
            at = pointer("nodes", i)
            m = doc.index(n, "mesh", at, "meshes")
            skin = None
            if "skin" in n:
                s = doc.index(n, "skin", at, "skins")
                if s not in skins:
                    skins[s] = self._skin(s, index, in_figure)
                skin = skins[s]
            mesh = doc.obj("meshes", m, f"{at}/mesh")
            mat = pointer("meshes", m)
            if "weights" in mesh:
                self.morph = True
            prims = doc.field(mesh, "primitives", mat, list)
            raw = mesh.get("name")
            base = raw if isinstance(raw, str) and raw else f"mesh{m}"
            for p, prim in enumerate(prims):
                pat = f"{mat}/primitives/{p}"
                if not isinstance(prim, dict):
                    raise doc.error(pat, "expected an object")
                name = base if len(prims) == 1 else f"{base}.{p}"
                made = self._primitive(prim, pat, name, self.names[i], index[self.names[i]], skin)
                if made is not None:
                    out.append(made)
        return out

    def _skin(self, s: int, index: Mapping[str, int], in_figure: set[int]) -> Skin:
        doc = self.doc
        sk = doc.obj("skins", s)
        at = pointer("skins", s)
        joints = doc.field(sk, "joints", at, list, check=lambda v: len(v) >= 1, expected="a non-empty array")
        if len(joints) > limits.MAX_SKIN_JOINTS:
            raise doc.error(f"{at}/joints", f"{len(joints):,} joints; the limit for one skin is "
                                            f"{limits.MAX_SKIN_JOINTS:,} (animkit.limits.MAX_SKIN_JOINTS)")
        for k, j in enumerate(joints):
            jat = f"{at}/joints/{k}"
            if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < len(self.nodes):
                raise doc.error(jat, f"expected an index into nodes, got {j!r}")
            if j not in in_figure:
                raise doc.error(jat, f"joint node {j} is not in the scene being read")
        if len(set(joints)) != len(joints):
            raise doc.error(f"{at}/joints", "a joint is listed twice")
        J = len(joints)
        if "inverseBindMatrices" in sk:
            ibm_at = f"{at}/inverseBindMatrices"
            ibm = doc.accessor(doc.index(sk, "inverseBindMatrices", at, "accessors"), ibm_at)
            if ibm.shape[1:] != (4, 4) or ibm.dtype.kind != "f":
                raise doc.error(ibm_at, "expected a MAT4 float accessor")
            if ibm.shape[0] != J:
                raise doc.error(ibm_at, f"{ibm.shape[0]} inverse bind matrices for {J} joints")
        else:
            ibm = np.tile(np.eye(4), (J, 1, 1))
        skeleton = doc.index(sk, "skeleton", at, "nodes", None)
        raw = sk.get("name")
        name = raw if isinstance(raw, str) and raw else f"skin{s}"
        names = tuple(self.names[j] for j in joints)
        return Skin(name, names, ibm, np.array([index[n] for n in names], dtype=np.intp),
                    None if skeleton is None else self.names[skeleton])

    def _attribute(self, attrs: dict[str, Any], key: str, pat: str, width: int, count: int | None,
                   floats: bool) -> NDArray[Any]:
        doc = self.doc
        aat = f"{pat}/attributes/{key}"
        arr = doc.accessor(doc.index(attrs, key, f"{pat}/attributes", "accessors"), aat)
        if arr.ndim != 2 or arr.shape[1] != width or (floats and arr.dtype.kind != "f"):
            raise doc.error(aat, f"expected VEC{width} {'float or normalized' if floats else 'unsigned integer'} "
                                 f"values, got {arr.shape[1:]} of {arr.dtype}")
        if not floats and arr.dtype.kind not in "u":
            raise doc.error(aat, f"expected unsigned integers, got {arr.dtype}")
        if count is not None and arr.shape[0] != count:
            raise doc.error(aat, f"{arr.shape[0]} values for {count} vertices")
        return arr

    def _primitive(self, prim: dict[str, Any], pat: str, name: str, node: str, node_index: int,
                   skin: Skin | None) -> Mesh | None:
        doc = self.doc
        if "targets" in prim:
            self.morph = True
        mode = doc.field(prim, "mode", pat, int, 4, lambda v: 0 <= v <= 6, "a primitive mode from 0 to 6")
        if mode < 4:
            warnings.warn(f"{doc.path}: {pat} draws points or lines (mode {mode}); animkit keeps triangles only",
                          stacklevel=4)
            return None
        attrs = doc.field(prim, "attributes", pat, dict)
        pos = self._attribute(attrs, "POSITION", pat, 3, None, True)
        V = pos.shape[0]
        doc.charge(V * _VERTEX_WORK, f"{pat}/attributes/POSITION")
        if "indices" in prim:
            iat = f"{pat}/indices"
            idx = doc.accessor(doc.index(prim, "indices", pat, "accessors"), iat)
            if idx.shape[1:] != (1,) or idx.dtype.kind != "u":
                raise doc.error(iat, "expected a SCALAR unsigned integer accessor")
            idx = idx[:, 0].astype(np.intp)
            if idx.size and int(idx.max()) >= V:
                k = int(np.argmax(idx >= V))
                raise doc.error(iat, f"index #{k} is {int(idx[k])}, but the primitive has {V} vertices")
        else:
            idx = np.arange(V, dtype=np.intp)
        faces = _triangles(idx, mode)
        if faces is None:
            raise doc.error(pat, f"{idx.size} indices do not make whole triangles (mode {mode})")
        normals = (self._attribute(attrs, "NORMAL", pat, 3, V, True) if "NORMAL" in attrs
                   else vertex_normals(pos, faces))
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = np.where(length > 1e-12, normals / np.where(length > 1e-12, length, 1.0), (0.0, 0.0, 1.0))
        color, texture, texcoord, (metallic, roughness) = self._material(prim, pat)
        uv_key = f"TEXCOORD_{texcoord}"
        uvs = self._attribute(attrs, uv_key, pat, 2, V, True) if uv_key in attrs else None
        joints = weights = None
        if skin is not None:
            joints, weights = self._influences(attrs, pat, V, len(skin.joints))
        return Mesh(name, node, node_index, faces, pos, normals, uvs, color, texture, skin, joints, weights,
                    metallic, roughness)

    def _influences(self, attrs: dict[str, Any], pat: str, V: int, J: int) -> tuple[NDArray[np.intp], Array]:
        doc = self.doc
        if "JOINTS_0" not in attrs or "WEIGHTS_0" not in attrs:
            raise doc.error(f"{pat}/attributes", "a skinned mesh needs JOINTS_0 and WEIGHTS_0")
        js, ws = [], []
        for k in (0, 1):
            if f"JOINTS_{k}" not in attrs and f"WEIGHTS_{k}" not in attrs:
                break
            if f"JOINTS_{k}" not in attrs or f"WEIGHTS_{k}" not in attrs:
                raise doc.error(f"{pat}/attributes", f"JOINTS_{k} and WEIGHTS_{k} go together")
            j = self._attribute(attrs, f"JOINTS_{k}", pat, 4, V, False).astype(np.intp)
            w = self._attribute(attrs, f"WEIGHTS_{k}", pat, 4, V, True)
            if np.any(w < 0):
                raise doc.error(f"{pat}/attributes/WEIGHTS_{k}", "weights must not be negative")
            bad = (j >= J) & (w > 0)
            if bad.any():
                v = int(np.argwhere(bad)[0][0])
                raise doc.error(f"{pat}/attributes/JOINTS_{k}",
                                f"vertex {v} names joint {int(j[bad][0])}, but the skin has {J} joints")
            js.append(np.where(j >= J, 0, j))
            ws.append(w)
        return np.concatenate(js, axis=1), normalized_weights(np.concatenate(ws, axis=1))

    def _material(self, prim: dict[str, Any], pat: str
                  ) -> tuple[Array, NDArray[np.uint8] | None, int, tuple[float, float]]:
        """(base colour factor RGBA, base colour texture or None, its TEXCOORD set, (metallic, roughness) factors;
        glTF's defaults 1 and 1)."""
        doc = self.doc
        if "material" not in prim:
            return np.ones(4), None, 0, (1.0, 1.0)
        m = doc.index(prim, "material", pat, "materials")
        mat = doc.obj("materials", m)
        at = pointer("materials", m)
        pbr = doc.field(mat, "pbrMetallicRoughness", at, dict, {})
        pat2 = f"{at}/pbrMetallicRoughness"
        color = doc.numbers(pbr, "baseColorFactor", pat2, 4, np.ones(4))
        mr = tuple(float(doc.field(pbr, k, pat2, float, 1.0, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]"))
                   for k in ("metallicFactor", "roughnessFactor"))
        info = doc.field(pbr, "baseColorTexture", pat2, dict, None)
        assert len(mr) == 2
        if info is None:
            return color, None, 0, mr
        tat = f"{pat2}/baseColorTexture"
        tex = doc.obj("textures", doc.index(info, "index", tat, "textures"), f"{tat}/index")
        texcoord = doc.field(info, "texCoord", tat, int, 0, lambda v: v >= 0, "an integer >= 0")
        source = doc.index(tex, "source", pointer("textures", info["index"]), "images", None)
        if source is None:
            return color, None, texcoord, mr
        return color, self._image(source), texcoord, mr

    def _image(self, i: int) -> NDArray[np.uint8]:
        if i in self._images:
            return self._images[i]
        if not self._images:
            self._check_pixels()
        at = pointer("images", i)
        arr = decode_image(self.doc.image_bytes(i, at), lambda message: self.doc.error(at, message), self._pixels)
        self._pixels += arr.shape[0] * arr.shape[1]
        arr.setflags(write=False)
        self._images[i] = arr
        return arr

    def _check_vertices(self) -> None:
        """Before anything is decoded: the vertices every mesh node claims (POSITION counts, each use counted)
        at 24 + :data:`_VERTEX_WORK` bytes each must fit :data:`animkit.limits.MAX_DECODED_BYTES` (the exact
        charges come as each array is made)."""
        doc, total = self.doc, 0
        meshes, accessors = doc.items("meshes"), doc.items("accessors")
        for i, n in enumerate(self.nodes):
            m = n.get("mesh")
            if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < len(meshes) \
                    or not isinstance(meshes[m], dict) or not isinstance(meshes[m].get("primitives"), list):
                continue  # the reader's own checks name what is wrong
            for p, prim in enumerate(meshes[m]["primitives"]):
                attrs = prim.get("attributes") if isinstance(prim, dict) else None
                a = attrs.get("POSITION") if isinstance(attrs, dict) else None
                acc = accessors[a] if isinstance(a, int) and 0 <= a < len(accessors) else None
                count = acc.get("count") if isinstance(acc, dict) else None
                if isinstance(count, int) and count > 0:
                    total += count * (24 + _VERTEX_WORK)
                    if total > limits.MAX_DECODED_BYTES:
                        raise doc.error(pointer("meshes", m, "primitives", p, "attributes", "POSITION"),
                                        f"the mesh nodes up to node {i} draw {total // (24 + _VERTEX_WORK):,} "
                                        f"vertices, {total:,} bytes to decode; the limit is "
                                        f"{limits.MAX_DECODED_BYTES:,} (animkit.limits.MAX_DECODED_BYTES)")

    def _check_pixels(self) -> None:
        """Before the first image is decoded: the pixels of every image a texture uses, from the images'
        headers, must fit :data:`animkit.limits.MAX_TOTAL_IMAGE_PIXELS` (and each one
        :data:`animkit.limits.MAX_IMAGE_PIXELS`)."""
        from PIL import Image, UnidentifiedImageError

        doc, total = self.doc, 0
        images = doc.items("images")
        used = sorted({t["source"] for t in doc.items("textures") if isinstance(t, dict)
                       and isinstance(t.get("source"), int) and not isinstance(t.get("source"), bool)
                       and 0 <= t["source"] < len(images)})
        for i in used:
            at = pointer("images", i)
            try:
                with Image.open(io.BytesIO(doc.image_bytes(i, at))) as im:
                    w, h = im.size
            except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
                continue  # decoding it names what is wrong
            if w * h > limits.MAX_IMAGE_PIXELS:
                raise doc.error(at, f"image of {w}x{h} pixels; the limit is {limits.MAX_IMAGE_PIXELS:,} "
                                    "(animkit.limits.MAX_IMAGE_PIXELS)")
            total += w * h
            if total > limits.MAX_TOTAL_IMAGE_PIXELS:
                raise doc.error(at, f"the images up to this one hold {total:,} pixels; the limit is "
                                    f"{limits.MAX_TOTAL_IMAGE_PIXELS:,} (animkit.limits.MAX_TOTAL_IMAGE_PIXELS)")


def decode_image(data: bytes, fail: Callable[[str], Exception], used: int = 0) -> NDArray[np.uint8]:
    """A PNG or JPEG as (H, W, 4) uint8 RGBA (sRGB as stored); anything else, more than
    :data:`animkit.limits.MAX_IMAGE_PIXELS` pixels, or more than :data:`~animkit.limits.MAX_TOTAL_IMAGE_PIXELS` with
    the ``used`` pixels of the file's images decoded so far, raises ``fail(message)`` — from the image's header,
    before any pixel is decoded. The FBX reader shares it."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
            if w * h > limits.MAX_IMAGE_PIXELS:
                raise fail(f"image of {w}x{h} pixels; the limit is {limits.MAX_IMAGE_PIXELS:,} "
                           "(animkit.limits.MAX_IMAGE_PIXELS)")
            if used + w * h > limits.MAX_TOTAL_IMAGE_PIXELS:
                raise fail(f"image of {w}x{h} pixels makes {used + w * h:,} in all; the limit is "
                           f"{limits.MAX_TOTAL_IMAGE_PIXELS:,} (animkit.limits.MAX_TOTAL_IMAGE_PIXELS)")
            if im.format not in ("PNG", "JPEG"):
                raise fail(f"image format {im.format}; expected PNG or JPEG")
            return np.asarray(im.convert("RGBA"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise fail(f"cannot decode the image: {exc}") from None


def _triangles(idx: NDArray[np.intp], mode: int) -> NDArray[np.intp] | None:
    """Faces (T, 3) from indices: TRIANGLES (4), TRIANGLE_STRIP (5, every other one flipped), TRIANGLE_FAN (6)."""
    n = idx.shape[0]
    if mode == 4:
        if n % 3:
            return None
        return idx.reshape(-1, 3).copy()
    if n < 3:
        return np.zeros((0, 3), dtype=np.intp)
    k = np.arange(n - 2)
    if mode == 5:
        even = (k % 2) == 0
        a = idx[k]
        b = np.where(even, idx[k + 1], idx[k + 2])
        c = np.where(even, idx[k + 2], idx[k + 1])
        return np.stack([a, b, c], axis=1)
    return np.stack([np.full(n - 2, idx[0]), idx[k + 1], idx[k + 2]], axis=1)
