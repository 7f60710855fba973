"""Linear-blend skinning on arrays, vectorised over frames and vertices.

    v'_f = Σ_k w_k · S_f,j(k) · v,     S_f,j = W_f[joint j] · IBM_j

for world matrices W (F, N, 4, 4) from ``figure.world_batch(poses)``, inverse bind matrices IBM (J, 4, 4),
vertex influences ``joints`` (V, K) (indices into the skin's joints) and ``weights`` (V, K) (rows summing
to 1). Normals are blended with the cofactor matrices cof(S) = det(S)·S⁻ᵀ (the inverse transpose up to
a positive factor, equal to S for rigid joints, right under scale) and renormalised:

    n'_f = normalise(Σ_k w_k · cof(S_f,j(k))₃ₓ₃ · n)

How: the C kernel ``skin_frames`` of ``animkit._native`` (built at install; :func:`native_skin`) runs lanes over
frames: the joint matrices laid out per chunk of 8 (float32) or 4 (float64) frames, chunk by chunk the mesh's vertices
in tiles, read from one buffer packed once per mesh (:func:`pack_influences`; nonzero weights only), float32 arithmetic
for a float32 output (the reference's sum in float32; fused multiply-adds where the CPU has them, :data:`FUSED`) and
the reference's own operations in float64 (the same bits); results stored straight into the output's rows (outputs
of :data:`STREAM_BYTES` or more, off by default, row by row in whole lines with non-temporal stores). Where it
was not built, numba compiles the reference loop :func:`skin_frames` (vertex by vertex, frame by frame, zero weights
skipped). Both write into a caller's buffer where given (``out=``, float32 or float64): no page faults on a fresh
array, and half the bytes in float32. Otherwise (no compiler and no numba, ``ANIMKIT_JIT=0``; and as the tests'
oracle) the sum over influences is a sum over all J joints with a sparse
weight table ω (V, J), so for every frame at once it is one matrix product. With X[v, 4j + c] = ω_vj · (v, 1)_c
(built once per mesh) and P[4j + c, 3f + r] = S_f,j[r, c], the positions are X @ P (V, 3F) — one BLAS call,
about 4·3·J multiply-adds per vertex and frame. Meshes whose table would be large (many joints and vertices) are
skinned influence by influence instead (gathers, K·12 multiply-adds per vertex and frame).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import NDArray

from animkit.errors import AnimkitError
from animkit.jit import enabled as _jit_enabled
from animkit.jit import kernel, native_kernels

__all__ = [
    "joint_matrices",
    "joint_rows",
    "normalized_weights",
    "influence_table",
    "positions_from_table",
    "normals_from_table",
    "skin_positions",
    "skin_normals",
    "rigid_positions",
    "rigid_normals",
    "cofactor",
    "output_buffer",
    "STREAM_BYTES",
    "FUSED",
    "check_dtype",
    "compiled_skin",
    "native_skin",
    "pack_influences",
    "skin_frames",
    "skin_frames_kernel",
]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

#: the most bytes the dense influence table X may take before skinning goes influence by influence
DENSE_TABLE_BYTES: Final = 64 << 20
#: outputs of at least this many bytes are written by the C kernel with non-temporal (streaming) stores, row by row in
#: whole lines (no read of the destination's lines, the caller's cache left alone); off by default: running chunk by
#: chunk of frames, cached stores straight into the rows measured faster on this machine at 43 MB (10-17 %) and 144 MB
#: (4-9 %) float32 outputs, far past the 32 MiB last-level cache (interleaved A/B, loaded machine)
STREAM_BYTES: int = 1 << 62
#: float32 results on x86-64 CPUs with AVX2 and FMA are computed with fused multiply-adds (12 per influence and 8
#: frames instead of 15 products and 12 sums: fewer roundings, the same error bound); False: the separate products of
#: the other CPUs' code (float64 is never fused: it is the reference's bits)
FUSED: bool = True


def joint_matrices(W: Array, joint_index: Index, inverse_bind: Array) -> Array:
    """S_f,j = W_f[joint_index[j]] · IBM_j, shape (F, J, 4, 4), for W (F, N, 4, 4)."""
    return np.matmul(W[:, joint_index], inverse_bind)


def joint_rows(W: Array, joint_index: Index, inverse_bind: Array) -> Array:
    """The first three rows of S_f,j = W_f[joint_index[j]] · IBM_j, (F, J, 3, 4) C-contiguous: all that skinning
    reads. One matrix product per joint over all frames ((3F, 4) · (4, 4)) instead of F·J 4×4 products: 2.5–3×
    faster than :func:`joint_matrices` for 240 frames of 19–65 joints. The C loop ``joint_rows`` of
    ``animkit._native`` where it was built (one pass over W, each entry summed in k order: 10–20× faster again)."""
    F, J = W.shape[0], len(joint_index)
    fn = getattr(native_kernels(), "joint_rows", None)
    if fn is not None and W.ndim == 4 and W.shape[2:] == (4, 4) and inverse_bind.shape == (J, 4, 4):
        out = np.empty((F, J, 3, 4))
        fn(np.ascontiguousarray(W, dtype=np.float64), np.ascontiguousarray(joint_index, dtype=np.intp),
           np.ascontiguousarray(inverse_bind, dtype=np.float64), out, F, W.shape[1], J)
        return out
    rows = W[:, joint_index, :3, :].transpose(1, 0, 2, 3).reshape(J, F * 3, 4)
    return np.ascontiguousarray(np.matmul(rows, inverse_bind).reshape(J, F, 3, 4).transpose(1, 0, 2, 3))


def normalized_weights(weights: Array) -> Array:
    """w / Σ_k w_k per vertex (three.js ``normalizeSkinWeights``; Blender's armature deform normalises
    too); a vertex whose weights sum to 0 gets (1, 0, …, 0), all on its first influence, as three.js does."""
    w = np.asarray(weights, dtype=float)
    total = w.sum(axis=1, keepdims=True)
    out = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    out[total[:, 0] <= 0, 0] = 1.0
    return out


def cofactor(A: Array) -> Array:
    """cof(A) = det(A) · A⁻ᵀ for 3×3 matrices (..., 3, 3): the rows' cross products, no division."""
    c0, c1, c2 = A[..., :, 0], A[..., :, 1], A[..., :, 2]
    return np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-1)


def influence_table(vectors: Array, joints: Index, weights: Array, joint_count: int, homogeneous: bool
                    ) -> Array | None:
    """X (V, C·J) with X[v, C·j + c] = ω_vj · x_vc (C = 4 with a homogeneous 1, else 3), or None when it
    would take more than :data:`DENSE_TABLE_BYTES`. ω_vj = Σ_k w_vk [joints_vk = j]."""
    V = vectors.shape[0]
    C = 4 if homogeneous else 3
    if V * C * joint_count * 8 > DENSE_TABLE_BYTES:
        return None
    omega = np.zeros((V, joint_count))
    np.add.at(omega, (np.repeat(np.arange(V), joints.shape[1]), joints.ravel()), weights.ravel())
    x = np.empty((V, C))
    x[:, :3] = vectors
    if homogeneous:
        x[:, 3] = 1.0
    return (omega[:, :, None] * x[:, None, :]).reshape(V, joint_count * C)


def positions_from_table(X: Array, S: Array) -> Array:
    """(F, V, 3) = X @ P with P[4j + c, 3f + r] = S[f, j, r, c] (the table from :func:`influence_table`)."""
    F, J = S.shape[:2]
    P = S[:, :, :3, :].transpose(1, 3, 0, 2).reshape(J * 4, F * 3)
    out = X @ P
    return out.reshape(-1, F, 3).transpose(1, 0, 2)


def normals_from_table(Xn: Array, S: Array) -> Array:
    """Unit normals (F, V, 3) = normalise(Xn @ Pn), Pn[3j + c, 3f + r] = cof(S[f, j])[r, c]."""
    F, J = S.shape[:2]
    P = cofactor(S[:, :, :3, :3]).transpose(1, 3, 0, 2).reshape(J * 3, F * 3)
    out = (Xn @ P).reshape(-1, F, 3).transpose(1, 0, 2)
    return _unit(out)


def skin_positions(S: Array, rest: Array, joints: Index, weights: Array) -> Array:
    """v'_f = Σ_k w_k S_f,j(k) (v, 1), influence by influence; (F, V, 3) for S (F, J, 4, 4) or its rows
    (F, J, 3, 4), rest (V, 3)."""
    F = S.shape[0]
    out = np.zeros((F, rest.shape[0], 3))
    for k in range(joints.shape[1]):
        Sk = S[:, joints[:, k]]  # (F, V, 4, 4)
        w = weights[None, :, k, None]
        out += w * (np.einsum("fvij,vj->fvi", Sk[..., :3, :3], rest) + Sk[..., :3, 3])
    return out


def skin_normals(S: Array, normals: Array, joints: Index, weights: Array) -> Array:
    """n'_f = normalise(Σ_k w_k cof(S_f,j(k)) n), influence by influence; (F, V, 3)."""
    C = cofactor(S[:, :, :3, :3])
    out = np.zeros((S.shape[0], normals.shape[0], 3))
    for k in range(joints.shape[1]):
        out += weights[None, :, k, None] * np.einsum("fvij,vj->fvi", C[:, joints[:, k]], normals)
    return _unit(out)


def rigid_positions(M: Array, rest: Array) -> Array:
    """v'_f = M_f · (v, 1) for M (F, 4, 4): a mesh placed rigidly by its node; (F, V, 3)."""
    return np.einsum("fij,vj->fvi", M[:, :3, :3], rest) + M[:, None, :3, 3]


def rigid_normals(M: Array, normals: Array) -> Array:
    """n'_f = normalise(cof(M_f) n); (F, V, 3)."""
    return _unit(np.einsum("fij,vj->fvi", cofactor(M[:, :3, :3]), normals))


def _unit(n: Array) -> Array:
    length = np.sqrt(np.einsum("...i,...i->...", n, n))
    return n / np.where(length > 0, length, 1.0)[..., None]


def skin_frames(S: Array, vectors: Array, joints: Index, weights: Array, points: bool, out: Array) -> None:
    """out[f, v] = Σ_k w_vk · S[f, j_vk] · (x_v, 1) (``points``) or the unit Σ_k w_vk · S[f, j_vk]₃ₓ₃ · x_v;
    S is (F, J, 3, 4) (3×3 blocks, cofactors for normals, in its first three columns); zero weights skipped. The
    reference loop (numba compiles it; the C kernel :func:`native_skin` is held to it)."""
    F = S.shape[0]
    V = vectors.shape[0]
    K = joints.shape[1]
    h = 1.0 if points else 0.0
    for f in range(F):
        for v in range(V):
            x = vectors[v, 0]
            y = vectors[v, 1]
            z = vectors[v, 2]
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            for k in range(K):
                w = weights[v, k]
                if w == 0.0:
                    continue
                j = joints[v, k]
                a0 += w * (S[f, j, 0, 0] * x + S[f, j, 0, 1] * y + S[f, j, 0, 2] * z + S[f, j, 0, 3] * h)
                a1 += w * (S[f, j, 1, 0] * x + S[f, j, 1, 1] * y + S[f, j, 1, 2] * z + S[f, j, 1, 3] * h)
                a2 += w * (S[f, j, 2, 0] * x + S[f, j, 2, 1] * y + S[f, j, 2, 2] * z + S[f, j, 2, 3] * h)
            if not points:
                n = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
                if n > 0.0:
                    a0 /= n
                    a1 /= n
                    a2 /= n
            out[f, v, 0] = a0
            out[f, v, 1] = a1
            out[f, v, 2] = a2


skin_frames_kernel = kernel(skin_frames)


def check_dtype(dtype: type | None) -> None:
    """A result's ``dtype=``: None (float64), float32 or float64; anything else raises AnimkitError."""
    if dtype is not None and np.dtype(dtype) not in (np.float32, np.float64):
        raise AnimkitError(f"dtype= must be float32 or float64; got {np.dtype(dtype)}")


def output_buffer(shape: tuple[int, int, int], out: NDArray | None, dtype: type | None) -> NDArray:
    """The (F, V, 3) array results go to: ``out`` itself (checked: C-contiguous, float32 or float64, that shape), or a
    new one of ``dtype`` (float64 by default; float32 or float64)."""
    check_dtype(dtype)
    if out is None:
        return np.empty(shape, dtype=np.float64 if dtype is None else dtype)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype not in (np.float32, np.float64) or \
            not out.flags.c_contiguous or not out.flags.writeable:
        got = (getattr(out, "shape", None), getattr(out, "dtype", type(out).__name__))
        raise AnimkitError(f"out= must be a writeable C-contiguous float32 or float64 array of shape {shape}; "
                         f"got shape {got[0]}, dtype {got[1]}")
    if dtype is not None and out.dtype != dtype:
        raise AnimkitError(f"out= is {out.dtype} but dtype={np.dtype(dtype)} was asked")
    return out


def pack_influences(vectors: Array, joints: Index, weights: Array, dtype: type) -> NDArray[np.uint8]:
    """The C kernel's per-mesh input, one buffer: rest vectors x (V, 3) and weights w (V, K) in ``dtype`` (the
    output's type), joint offsets 12·j (V, K) int32 and counts n (V,) int32, each vertex's n nonzero weights first and
    in their order (what :func:`skin_frames` adds; zeros skipped). Built once per mesh and dtype (:class:`Mesh`
    caches it): the kernel then reads 4·(3 + 2K + 1) bytes a vertex in float32 instead of converting 8·(3 + 2K)."""
    T = np.dtype(dtype)
    V, K = joints.shape
    order = np.argsort(weights == 0.0, axis=1, kind="stable")
    sizes = (V * 3 * T.itemsize, V * K * T.itemsize, V * K * 4, V * 4)
    buf = np.empty(sum(sizes), dtype=np.uint8)
    parts = np.split(buf, np.cumsum(sizes)[:-1])
    parts[0].view(T)[:] = np.asarray(vectors, dtype=np.float64).ravel()
    parts[1].view(T)[:] = np.take_along_axis(np.asarray(weights, dtype=np.float64), order, axis=1).ravel()
    j = np.clip(np.take_along_axis(np.asarray(joints), order, axis=1), -1, 1 << 26)  # invalid stays invalid
    parts[2].view(np.int32)[:] = (j * 12).ravel()
    parts[3].view(np.int32)[:] = np.count_nonzero(weights, axis=1)
    return buf


def native_skin(S: Array, vectors: Array, joints: Index, weights: Array, points: bool, out: NDArray,
                packed: NDArray[np.uint8] | None = None) -> bool:
    """out (F, V, 3) = :func:`skin_frames` by the C kernel (``animkit._native``) for S (F, J, 3, 4): float64 bit for
    bit, float32 in float32 arithmetic; ``out`` a writeable C-contiguous float32 or float64 array (else AnimkitError);
    ``packed``: :func:`pack_influences` of the same vectors, joints and weights in out's dtype (built here if None).
    False (out untouched) where the extension was not built or :func:`animkit.jit.native` says no."""
    fn = getattr(native_kernels(), "skin_frames", None)
    if fn is None:
        return False
    F, J = S.shape[:2]
    V, K = joints.shape
    output_buffer((F, V, 3), out, None)
    if packed is None:
        packed = pack_influences(vectors, joints, weights, out.dtype.type)
    fn(np.ascontiguousarray(S, dtype=np.float64), packed, out, F, V, J, K, points, out.nbytes >= STREAM_BYTES, FUSED)
    return True


def compiled_skin(S: Array, vectors: Array, joints: Index, weights: Array, points: bool, *,
                  out: NDArray | None = None, dtype: type | None = None,
                  packs: dict[type, NDArray[np.uint8]] | None = None) -> NDArray | None:
    """(F, V, 3) by a compiled kernel (C, else numba) for joint matrices S (F, J, 4, 4) or their rows (F, J, 3, 4):
    positions (``points``) or unit normals (blending cof(S)), into ``out`` when given (else a new array of ``dtype``,
    float64 by default). ``packs``: a cache of :func:`pack_influences` by dtype for these vectors, joints and weights
    (filled here). None when neither runs (then use the table or the influence path)."""
    native = getattr(native_kernels(), "skin_frames", None) is not None
    if not native and (skin_frames_kernel is None or not _jit_enabled()):
        return None
    if points:
        A = np.ascontiguousarray(S[:, :, :3, :])
    else:
        A = np.zeros(S.shape[:2] + (3, 4))
        A[..., :3] = cofactor(S[:, :, :3, :3])
    result = output_buffer((S.shape[0], vectors.shape[0], 3), out, dtype)
    packed = None
    if native and packs is not None:
        key = result.dtype.type
        packed = packs[key] if key in packs else packs.setdefault(key, pack_influences(vectors, joints, weights, key))
    if native and native_skin(A, vectors, joints, weights, points, result, packed):
        return result
    assert skin_frames_kernel is not None
    skin_frames_kernel(A, np.ascontiguousarray(vectors, dtype=np.float64), np.ascontiguousarray(joints, dtype=np.intp),
                       np.ascontiguousarray(weights, dtype=np.float64), points, result)
    return result
