"""Shading of the visible samples: flat Lambert per face (:func:`face_shading`), smooth per pixel with
perspective-correct normals and bilinear textures (NumPy, or the same arithmetic compiled)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit import jit as jit_module
from animkit.errors import RenderError
from animkit.jit import enabled as jit_enabled
from animkit.jit import kernel, read_only
from animkit.render.camera import Camera
from animkit.render.triangles import Surface
from animkit.render.visibility import _Setup

__all__ = ["face_shading", "sample_bilinear"]


def _default_light(camera: Camera) -> NDArray[np.float64]:
    s, u, f = camera.basis()
    light = -s + u - f  # from the camera's upper left, slightly behind it
    return light / np.linalg.norm(light)


def face_shading(camera: Camera, tri: NDArray[np.float64], light_dir: ArrayLike | None,
                 ambient: float) -> NDArray[np.float64]:
    """I = a + (1 − a) · max(0, n̂ · l̂), n̂ turned to face the camera (double-sided faces).

    ``tri`` is ``(F, 3, 3)`` world vertices; ``light_dir`` points from the surface towards the
    light (world); ``None`` puts the light at the camera's upper left. Degenerate faces get ``a``.
    """
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    n = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1], e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                  e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    norm = np.sqrt(_dot3(n, n))
    n = np.divide(n, norm[:, None], out=np.zeros_like(n), where=norm[:, None] > 0)
    to_eye = np.asarray(camera.eye) - tri[:, 0]
    n = np.where((_dot3(n, to_eye) < 0)[:, None], -n, n)
    light = _face_light(camera, light_dir)
    return ambient + (1.0 - ambient) * np.clip(_dot3(n, light), 0.0, 1.0)


def _dot3(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """(a₀ b₀ + a₁ b₁) + a₂ b₂ per row of (N, 3) ``a`` with (N, 3) or (3,) ``b``: in this order, as the compiled
    flat_shade sums (an einsum or a matrix product may fuse or reorder the terms)."""
    b0, b1, b2 = (b[..., i] for i in range(3))
    return (a[:, 0] * b0 + a[:, 1] * b1) + a[:, 2] * b2


def _face_light(camera: Camera, light_dir: ArrayLike | None) -> NDArray[np.float64]:
    """:func:`face_shading`'s l̂: the camera's default light, or ``light_dir`` checked and normalised."""
    if light_dir is None:
        return _default_light(camera)
    light = np.asarray(light_dir, dtype=float)
    if light.shape != (3,) or not np.all(np.isfinite(light)) or np.linalg.norm(light) == 0:
        raise RenderError(f"light_dir must be a non-zero finite 3-vector, got {light_dir!r}")
    return np.asarray(light / np.linalg.norm(light), dtype=float)


def _light(camera: Camera, light_dir: ArrayLike | None) -> NDArray[np.float64]:
    if light_dir is None:
        return _default_light(camera)
    light = np.asarray(light_dir, dtype=float)
    if light.shape != (3,) or not np.all(np.isfinite(light)) or np.linalg.norm(light) == 0:
        raise RenderError(f"light_dir must be a non-zero finite 3-vector, got {light_dir!r}")
    return light / np.linalg.norm(light)


def _flat_colors(camera: Camera, srf: Surface, light: NDArray[np.float64], ambient: float,
                 faces: NDArray[np.int64] | None = None) -> NDArray[np.uint8]:
    """c_f = round(c · I_f) for the faces ``faces`` (default: every face) of a flat surface (I_f:
    :func:`face_shading`, row by row, so a face's colour does not depend on which others are shaded), (F, 3) uint8."""
    native = jit_module.native_kernels()
    if native is not None:
        out = _native_flat_colors(native, camera, srf, light, ambient, faces)
        if out is not None:
            return out
    if faces is None:
        fc = srf.face_colors if srf.face_colors is not None else np.broadcast_to(srf.color, (len(srf.faces), 3))
        tri = srf.vertices[srf.faces]
    else:
        fc = srf.face_colors[faces] if srf.face_colors is not None else np.broadcast_to(srf.color, (len(faces), 3))
        tri = srf.vertices[srf.faces[faces]]
    shade = face_shading(camera, tri, light, ambient)
    return np.round(fc.astype(np.float64) * shade[:, None]).astype(np.uint8)


def _native_flat_colors(native: Any, camera: Camera, srf: Surface, light: NDArray[np.float64], ambient: float,
                        faces: NDArray[np.int64] | None) -> NDArray[np.uint8] | None:
    """:func:`_flat_colors` by the ahead-of-time ``flat_shade`` (:func:`face_shading`'s operations in its order: the
    same bytes); None (nothing computed) where a face or vertex index is out of range (NumPy then says so) or the
    colours are not uint8 (a Surface made with float colours: NumPy multiplies those as they are)."""
    count = len(srf.faces)
    fc = np.asarray(srf.face_colors if srf.face_colors is not None else np.broadcast_to(srf.color, (count, 3)))
    if fc.dtype != np.uint8 or fc.shape != (count, 3):  # colours given otherwise (floats): NumPy's arithmetic
        return None
    sel = np.arange(count, dtype=np.int64) if faces is None else np.ascontiguousarray(faces, dtype=np.int64)
    out = np.empty((len(sel), 3), np.uint8)
    ok = native.flat_shade(np.ascontiguousarray(srf.vertices, dtype=np.float64),
                           np.ascontiguousarray(srf.faces, dtype=np.int64), sel,
                           np.ascontiguousarray(fc, dtype=np.uint8), np.asarray(camera.eye, dtype=np.float64),
                           np.ascontiguousarray(_face_light(camera, light), dtype=np.float64), float(ambient), out)
    return out if ok == 0 else None


def _shade(camera: Camera, srf: Surface, face: NDArray[np.int64], st: _Setup, k: NDArray[np.int64],
           pix: NDArray[np.int64], W: int, light: NDArray[np.float64], ambient: float,
           jit: bool = False) -> NDArray[np.uint8]:
    """Colours (P, 3) of the covered samples ``pix`` of one surface (``face`` its own face rows, ``k`` setup rows).

    Smooth: b_i = (B_i r_y + C_i) + A_i r_x, q_i = b_i / d_i / Σ_j b_j / d_j (perspective-correct), n = Σ q_i n_i,
    I = a + (1 − a) clip(s (n · l) / |n|, 0, 1) with s = ±1 turning back faces to the camera; colour = rint(c · t / 255
    · I) with t the bilinear texel at Σ q_i uv_i. The compiled :func:`_shade_loop` does the same arithmetic.
    """
    if srf.normals is None:
        return _flat_colors(camera, srf, light, ambient)[face]
    # back faces: turn the normals to the camera (faces whose geometric side seen disagrees with their normals)
    tri = srf.vertices[srf.faces]
    g = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    seen = np.einsum("ij,ij->i", g, np.asarray(camera.eye) - tri[:, 0]) >= 0
    agree = np.einsum("ij,ij->i", g, srf.normals[srf.faces].sum(axis=1)) >= 0
    sign = np.where(seen == agree, 1.0, -1.0)[face]
    color = srf.color.astype(np.float64)
    textured = srf.texture is not None and srf.uvs is not None
    if jit and _shade_jit is not None and jit_enabled():
        out = np.empty((len(pix), 3), np.uint8)
        tex = np.zeros((1, 1, 3), np.uint8)
        if srf.texture is not None:
            tex = srf.texture if srf.texture.shape[2] == 3 and srf.texture.flags.c_contiguous else \
                np.ascontiguousarray(srf.texture[..., :3])
        uvs = srf.uvs if textured and srf.uvs is not None else np.zeros((1, 2))
        assert srf.normals is not None
        look = _Look(read_only(srf.faces), read_only(srf.normals), read_only(uvs), read_only(tex), read_only(color),
                     textured)  # read-only views: one signature, whichever of them the caller can write
        _shade_jit(pix, k, face, W, st, look, sign, light, ambient, out)
        return out
    py, px = np.divmod(pix, W)
    rx = (px - st.x0[k]).astype(np.float64)
    ry = (py - st.y0[k]).astype(np.float64)
    q = [((st.B[k, i] * ry + st.C[k, i]) + st.A[k, i] * rx) * st.IZ[k, i] for i in range(3)]
    s = (q[0] + q[1]) + q[2]
    q = [qi / s for qi in q]
    fv = srf.faces[face]  # (P, 3)
    N = [srf.normals[fv[:, i]] for i in range(3)]
    n = (q[0][:, None] * N[0] + q[1][:, None] * N[1]) + q[2][:, None] * N[2]
    norm = np.sqrt((n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1]) + n[:, 2] * n[:, 2])
    dot = (n[:, 0] * light[0] + n[:, 1] * light[1]) + n[:, 2] * light[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(norm > 0, dot / norm, 0.0) * sign
    intensity = ambient + (1.0 - ambient) * np.clip(lam, 0.0, 1.0)
    if textured:
        assert srf.uvs is not None and srf.texture is not None
        U = [srf.uvs[fv[:, i]] for i in range(3)]
        uv = (q[0][:, None] * U[0] + q[1][:, None] * U[1]) + q[2][:, None] * U[2]
        col = color * (sample_bilinear(srf.texture, uv) / 255.0)
    else:
        col = np.broadcast_to(color, (len(pix), 3))
    return np.clip(np.rint(col * intensity[:, None]), 0, 255).astype(np.uint8)


class _Look(NamedTuple):
    """A smooth surface's look, for :func:`_shade_loop`: faces (T, 3), vertex normals (V, 3) and UVs (V, 2), texture
    (h, w, 3) uint8, colour (3,) and whether the texture is sampled."""

    faces: NDArray[np.int64]
    normals: NDArray[np.float64]
    uvs: NDArray[np.float64]
    tex: NDArray[np.uint8]
    color: NDArray[np.float64]
    textured: bool


def _shade_loop(pix: NDArray[np.int64], k: NDArray[np.int64], face: NDArray[np.int64], W: int, st: _Setup,
                look: _Look, sign: NDArray[np.float64], light: NDArray[np.float64], ambient: float,
                out: NDArray[np.uint8]) -> None:  # pragma: no cover - compiled; _shade's NumPy path is its oracle
    """:func:`_shade`'s smooth path, pixel by pixel, with the same arithmetic."""
    x0, y0, A, B, C, IZ = st.x0, st.y0, st.A, st.B, st.C, st.IZ
    faces, normals, uvs, tex, color, textured = look.faces, look.normals, look.uvs, look.tex, look.color, look.textured
    th, tw = tex.shape[0], tex.shape[1]
    for j in range(len(pix)):
        t = k[j]
        py = pix[j] // W
        px = pix[j] - py * W
        rx = float(px - x0[t])
        ry = float(py - y0[t])
        q0 = ((B[t, 0] * ry + C[t, 0]) + A[t, 0] * rx) * IZ[t, 0]
        q1 = ((B[t, 1] * ry + C[t, 1]) + A[t, 1] * rx) * IZ[t, 1]
        q2 = ((B[t, 2] * ry + C[t, 2]) + A[t, 2] * rx) * IZ[t, 2]
        s = (q0 + q1) + q2
        q0, q1, q2 = q0 / s, q1 / s, q2 / s
        f = face[j]
        v0, v1, v2 = faces[f, 0], faces[f, 1], faces[f, 2]
        nx = (q0 * normals[v0, 0] + q1 * normals[v1, 0]) + q2 * normals[v2, 0]
        ny = (q0 * normals[v0, 1] + q1 * normals[v1, 1]) + q2 * normals[v2, 1]
        nz = (q0 * normals[v0, 2] + q1 * normals[v1, 2]) + q2 * normals[v2, 2]
        norm = np.sqrt((nx * nx + ny * ny) + nz * nz)
        dot = (nx * light[0] + ny * light[1]) + nz * light[2]
        lam = (dot / norm if norm > 0 else 0.0) * sign[j]
        inten = ambient + (1.0 - ambient) * min(max(lam, 0.0), 1.0)
        if textured:
            u = (q0 * uvs[v0, 0] + q1 * uvs[v1, 0]) + q2 * uvs[v2, 0]
            v = (q0 * uvs[v0, 1] + q1 * uvs[v1, 1]) + q2 * uvs[v2, 1]
            x = u * tw - 0.5
            y = v * th - 0.5
            xf, yf = np.floor(x), np.floor(y)
            fx, fy = x - xf, y - yf
            xi, yi = int(xf) % tw, int(yf) % th
            xj, yj = (xi + 1) % tw, (yi + 1) % th
            for c in range(3):
                top = tex[yi, xi, c] * (1.0 - fx) + tex[yi, xj, c] * fx
                bottom = tex[yj, xi, c] * (1.0 - fx) + tex[yj, xj, c] * fx
                val = np.rint(color[c] * ((top * (1.0 - fy) + bottom * fy) / 255.0) * inten)
                out[j, c] = np.uint8(min(max(val, 0.0), 255.0))
        else:
            for c in range(3):
                out[j, c] = np.uint8(min(max(np.rint(color[c] * inten), 0.0), 255.0))


_shade_jit = kernel(_shade_loop)


def sample_bilinear(texture: NDArray[np.uint8], uv: NDArray[np.float64]) -> NDArray[np.float64]:
    """c(u, v) = Σ bilinear weights · texels around (u w − ½, v h − ½), wrapping (glTF's REPEAT); RGB (P, 3).

    (0, 0) is the top-left corner of the texture's first texel, (1, 1) the bottom-right corner of its last.
    """
    h, w = texture.shape[:2]
    x = uv[:, 0] * w - 0.5
    y = uv[:, 1] * h - 0.5
    xf, yf = np.floor(x), np.floor(y)
    fx, fy = (x - xf)[:, None], (y - yf)[:, None]
    xi, yi = xf.astype(np.int64) % w, yf.astype(np.int64) % h
    xj, yj = (xi + 1) % w, (yi + 1) % h
    t = texture[..., :3]
    top = t[yi, xi] * (1.0 - fx) + t[yi, xj] * fx
    bottom = t[yj, xi] * (1.0 - fx) + t[yj, xj] * fx
    return top * (1.0 - fy) + bottom * fy
