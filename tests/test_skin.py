"""Linear-blend skinning against the equation written out vertex by vertex, and special cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animkit.jit
from animkit.errors import AnimkitError
from animkit.look import skin as lbs
from animkit.look.mesh import Mesh, Skin, vertex_normals


def _affine(rng: np.random.Generator, n: int, scale: bool = True) -> np.ndarray:
    M = np.zeros((n, 4, 4))
    q, _ = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    q *= np.sign(np.linalg.det(q))[:, None, None]
    s = rng.uniform(0.5, 2.0, size=(n, 1, 3)) if scale else np.ones((n, 1, 3))
    M[:, :3, :3] = q * s
    M[:, :3, 3] = rng.normal(size=(n, 3))
    M[:, 3, 3] = 1.0
    return M


def _mesh(rng: np.random.Generator, V: int, J: int, K: int, N: int) -> Mesh:
    pos = rng.normal(size=(V, 3))
    nrm = rng.normal(size=(V, 3))
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    joints = rng.integers(0, J, size=(V, K))
    weights = lbs.normalized_weights(rng.uniform(0.0, 1.0, size=(V, K)))
    skin = Skin("s", tuple(f"j{i}" for i in range(J)), _affine(rng, J), rng.choice(N, size=J, replace=False))
    return Mesh("m", "mesh", 0, np.zeros((0, 3), dtype=np.intp), pos, nrm, skin=skin, joints=joints,
                weights=weights)


def _by_hand(mesh: Mesh, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v' = Σ_i w_i · W_joint(i) · IBM_i · v, n' ∝ Σ_i w_i (W IBM)⁻ᵀ n det(W IBM), one vertex at a time."""
    assert mesh.skin is not None and mesh.joints is not None and mesh.weights is not None
    F, V = W.shape[0], mesh.vertex_count
    P = np.zeros((F, V, 3))
    Nn = np.zeros((F, V, 3))
    for f in range(F):
        for v in range(V):
            acc = np.zeros(4)
            nacc = np.zeros(3)
            for j, w in zip(mesh.joints[v], mesh.weights[v], strict=True):
                S = W[f, mesh.skin.joint_index[j]] @ mesh.skin.inverse_bind[j]
                acc += w * (S @ np.append(mesh.rest_positions[v], 1.0))
                A = S[:3, :3]
                nacc += w * np.linalg.det(A) * (np.linalg.inv(A).T @ mesh.rest_normals[v])
            P[f, v] = acc[:3]
            Nn[f, v] = nacc / np.linalg.norm(nacc)
    return P, Nn


@given(seed=st.integers(0, 2**32 - 1), K=st.sampled_from([1, 4, 8]), F=st.integers(1, 3))
@settings(max_examples=20)
def test_positions_and_normals_match_the_equation(seed, K, F) -> None:
    rng = np.random.default_rng(seed)
    mesh = _mesh(rng, V=7, J=5, K=K, N=9)
    W = np.stack([_affine(rng, 9) for _ in range(F)])
    P, Nn = _by_hand(mesh, W)
    np.testing.assert_allclose(mesh.positions(W), P, atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(mesh.normals(W), Nn, atol=1e-9)
    # the NumPy table path (numba off) gives the same
    animkit.jit.ENABLED = False
    try:
        assert lbs.compiled_skin(mesh.joint_matrices(W), mesh.rest_positions, mesh.joints, mesh.weights, True) is None
        np.testing.assert_allclose(mesh.positions(W), P, atol=1e-10, rtol=1e-10)
        np.testing.assert_allclose(mesh.normals(W), Nn, atol=1e-9)
    finally:
        animkit.jit.ENABLED = True
    # the influence-by-influence path (large meshes) gives the same
    S = mesh.joint_matrices(W)
    assert mesh.joints is not None and mesh.weights is not None
    np.testing.assert_allclose(lbs.skin_positions(S, mesh.rest_positions, mesh.joints, mesh.weights), P,
                               atol=1e-10)
    np.testing.assert_allclose(lbs.skin_normals(S, mesh.rest_normals, mesh.joints, mesh.weights), Nn, atol=1e-9)


def test_all_weight_on_one_joint_is_rigid() -> None:
    rng = np.random.default_rng(3)
    mesh = _mesh(rng, V=20, J=4, K=4, N=6)
    assert mesh.skin is not None
    joints = np.full((20, 4), 2)
    weights = np.tile([0.25, 0.25, 0.25, 0.25], (20, 1))
    m = Mesh("m", "mesh", 0, mesh.faces, mesh.rest_positions, mesh.rest_normals, skin=mesh.skin, joints=joints,
             weights=weights)
    W = _affine(rng, 6, scale=False)[None]
    S = W[0, mesh.skin.joint_index[2]] @ mesh.skin.inverse_bind[2]
    expect = mesh.rest_positions @ S[:3, :3].T + S[:3, 3]
    np.testing.assert_allclose(m.positions(W)[0], expect, atol=1e-12)
    R = S[:3, :3]
    n = mesh.rest_normals @ np.linalg.inv(R)  # (R⁻ᵀ n)ᵀ = nᵀ R⁻¹
    np.testing.assert_allclose(m.normals(W)[0], n / np.linalg.norm(n, axis=1, keepdims=True), atol=1e-12)


def test_identity_bind_at_rest_gives_the_rest_mesh() -> None:
    rng = np.random.default_rng(4)
    mesh = _mesh(rng, V=10, J=3, K=2, N=3)
    assert mesh.skin is not None
    W = np.linalg.inv(mesh.skin.inverse_bind)[None]  # joints where they were bound
    skin = Skin("s", mesh.skin.joints, mesh.skin.inverse_bind, np.arange(3))
    m = Mesh("m", "mesh", 0, mesh.faces, mesh.rest_positions, mesh.rest_normals, skin=skin, joints=mesh.joints,
             weights=mesh.weights)
    np.testing.assert_allclose(m.positions(W)[0], mesh.rest_positions, atol=1e-10)
    np.testing.assert_allclose(m.normals(W)[0], mesh.rest_normals, atol=1e-10)


def test_rigid_mesh_follows_its_node() -> None:
    rng = np.random.default_rng(5)
    pos = rng.normal(size=(5, 3))
    faces = np.array([[0, 1, 2], [2, 3, 4]])
    m = Mesh("box", "hand", 1, faces, pos, vertex_normals(pos, faces))
    W = np.stack([_affine(rng, 3) for _ in range(2)])
    for f in range(2):
        np.testing.assert_allclose(m.positions(W)[f], pos @ W[f, 1, :3, :3].T + W[f, 1, :3, 3], atol=1e-12)


def test_weights_normalised_like_threejs() -> None:
    w = lbs.normalized_weights(np.array([[2.0, 2.0, 0, 0], [0, 0, 0, 0], [0.1, 0.0, 0.3, 0.0]]))
    np.testing.assert_allclose(w, [[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0.25, 0, 0.75, 0]])


def test_vertex_normals_of_a_flat_quad() -> None:
    p = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    n = vertex_normals(p, np.array([[0, 1, 2], [0, 2, 3]]))
    np.testing.assert_allclose(n, np.tile([0, 0, 1.0], (4, 1)))


def test_wrong_world_matrices_are_refused() -> None:
    rng = np.random.default_rng(6)
    mesh = _mesh(rng, V=3, J=2, K=1, N=4)
    with pytest.raises(Exception, match="world matrices"):
        mesh.positions(np.zeros((1, 1, 4, 4)))


@pytest.mark.skipif(lbs.skin_frames_kernel is None, reason="numba is off or missing")
def test_compiled_kernel_runs_and_equals_numpy() -> None:
    rng = np.random.default_rng(8)
    mesh = _mesh(rng, V=50, J=6, K=8, N=6)
    W = np.stack([_affine(rng, 6) for _ in range(4)])
    S = mesh.joint_matrices(W)
    fast = lbs.compiled_skin(S, mesh.rest_positions, mesh.joints, mesh.weights, True)
    assert fast is not None  # the kernel ran
    X = lbs.influence_table(mesh.rest_positions, mesh.joints, mesh.weights, 6, True)
    np.testing.assert_allclose(fast, lbs.positions_from_table(X, S), atol=1e-12)
    fastn = lbs.compiled_skin(S, mesh.rest_normals, mesh.joints, mesh.weights, False)
    Xn = lbs.influence_table(mesh.rest_normals, mesh.joints, mesh.weights, 6, False)
    np.testing.assert_allclose(fastn, lbs.normals_from_table(Xn, S), atol=1e-12)


@pytest.mark.skipif(lbs.skin_frames_kernel is None, reason="numba is off or missing")
@pytest.mark.parametrize("jit", [True, False])
def test_out_buffer_and_float32_equal_the_float64_result(jit, monkeypatch) -> None:
    """positions/normals into a caller's float32 or float64 buffer (returned as is) equal the new float64 result:
    bit for bit in float64, to float32's rounding in float32, on the compiled path and the NumPy one; more than
    some zero weights (skipped by the kernel) and a vertex whose weights are all on one joint."""
    monkeypatch.setattr(animkit.jit, "ENABLED", jit)
    rng = np.random.default_rng(11)
    mesh = _mesh(rng, V=293, J=7, K=4, N=9)
    w = mesh.weights.copy()
    w[::3, 1:3] = 0.0
    w[5] = (0.0, 0.0, 1.0, 0.0)
    mesh = Mesh("m", "mesh", 0, mesh.faces, mesh.rest_positions, mesh.rest_normals, skin=mesh.skin,
                joints=mesh.joints, weights=lbs.normalized_weights(w))
    W = np.stack([_affine(rng, 9) for _ in range(3)])
    for method in (mesh.positions, mesh.normals):
        ref = method(W)
        assert ref.dtype == np.float64
        out64 = np.full(ref.shape, np.nan)
        assert method(W, out=out64) is out64
        np.testing.assert_allclose(out64, ref, rtol=0, atol=1e-13)
        out32 = np.full(ref.shape, np.nan, dtype=np.float32)
        assert method(W, out=out32) is out32
        np.testing.assert_allclose(out32, ref, rtol=2e-6, atol=2e-6 * np.abs(ref).max())
        new32 = method(W, dtype=np.float32)
        assert new32.dtype == np.float32
        np.testing.assert_array_equal(new32, out32)


@pytest.mark.parametrize("bad", [np.zeros((2, 5, 3)), np.zeros((2, 4, 3), dtype=np.int64),
                                 np.zeros((2, 3, 4)).transpose(0, 2, 1)])
def test_a_wrong_out_buffer_is_refused(bad) -> None:
    rng = np.random.default_rng(3)
    mesh = _mesh(rng, V=4, J=2, K=2, N=3)
    with pytest.raises(AnimkitError, match="out= must be"):
        mesh.positions(np.stack([_affine(rng, 3)] * 2), out=bad)


def _kernel_inputs(rng: np.random.Generator, F: int, V: int, J: int, K: int, zeros: float):
    """Joint matrices A (F, J, 3, 4) (random affine, scaled), unit-ish vectors, influences with some zero weights."""
    A = np.stack([_affine(rng, J) for _ in range(F)])[:, :, :3, :] if F else np.zeros((0, J, 3, 4))
    X = rng.normal(size=(V, 3))
    joints = rng.integers(0, J, size=(V, K)).astype(np.intp)
    w = rng.uniform(0.0, 1.0, size=(V, K))
    w[rng.uniform(size=(V, K)) < zeros] = 0.0
    return np.ascontiguousarray(A), X, joints, w


@given(seed=st.integers(0, 2**32 - 1), F=st.integers(0, 19), V=st.integers(0, 300), J=st.integers(1, 9),
       K=st.integers(1, 8), zeros=st.sampled_from([0.0, 0.3, 1.0]), points=st.booleans(), stream=st.booleans())
@settings(max_examples=40, deadline=None)
def test_native_kernel_is_the_reference_loop(seed, F, V, J, K, zeros, points, stream) -> None:
    """The C kernel against the reference loop skin_frames (plain Python), over random sizes that cross its chunks of
    frames (8 / 4) and tiles of vertices (128), with zero weights, stored straight into the rows or streamed in whole
    lines (rows shorter than a line, rows whose part lines cross tiles): float64 bit for bit; float32 within float32
    rounding of the float64 result, |err| ≤ 2⁻²⁴·(3K + 12)·Σ_k w_k (|S| (|x|, 1)) (each rounded operation's error
    bounded by the sum of the magnitudes it adds, run through the same loop on absolute values)."""
    rng = np.random.default_rng(seed)
    A, X, joints, w = _kernel_inputs(rng, F, V, J, K, zeros)
    ref = np.zeros((F, V, 3))
    lbs.skin_frames(A, X, joints, w, points, ref)
    out64 = np.full((F, V, 3), np.nan)
    threshold = lbs.STREAM_BYTES
    lbs.STREAM_BYTES = 0 if stream else 1 << 62
    try:
        if not lbs.native_skin(A, X, joints, w, points, out64):
            pytest.skip("the C extension animkit._native is not built")
        np.testing.assert_array_equal(out64, ref)
        _check_float32(A, X, joints, w, points, ref)
    finally:
        lbs.STREAM_BYTES = threshold


def _check_float32(A: np.ndarray, X: np.ndarray, joints: np.ndarray, w: np.ndarray, points: bool,
                   ref: np.ndarray) -> None:
    """The C kernel's float32 result within float32 rounding of the float64 reference ``ref`` (bound as above)."""
    F, V, K = A.shape[0], X.shape[0], joints.shape[1]
    out32 = np.full((F, V, 3), np.nan, dtype=np.float32)
    assert lbs.native_skin(A, X, joints, w, points, out32)
    if points:
        size = np.zeros((F, V, 3))
        lbs.skin_frames(np.abs(A), np.abs(X), joints, w, True, size)
        assert np.all(np.abs(out32 - ref) <= 2.0**-24 * (3 * K + 12) * size)
    else:  # unit vectors: a blend that nearly cancels amplifies the rounding, so only well-conditioned ones
        blend = np.zeros((F, V, 3))
        lbs.skin_frames(np.concatenate([A[..., :3], 0 * A[..., 3:]], axis=-1), X, joints, w, True, blend)
        size = np.zeros((F, V, 3))
        lbs.skin_frames(np.abs(A), np.abs(X), joints, w, False, size)
        good = np.linalg.norm(blend, axis=-1) > 0.1 * np.linalg.norm(size, axis=-1)
        np.testing.assert_allclose(out32[good], ref[good], atol=2e-6)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("points", [True, False])
def test_native_kernel_store_paths_and_float32_forms(monkeypatch, stream, fused, points) -> None:
    """Every way the C kernel stores (non-temporal through its staging block, as for outputs past STREAM_BYTES, or
    straight into the rows) and both float32 forms (fused multiply-adds where the CPU has them, separate products
    otherwise), over three tiles of vertices (the last one short, an odd count so rows start unaligned) and a chunk
    of frames that is one frame long: float64 bit for bit the reference loop, float32 within its rounding."""
    monkeypatch.setattr(lbs, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(lbs, "FUSED", fused)
    rng = np.random.default_rng(31)
    A, X, joints, w = _kernel_inputs(rng, 17, 301, 7, 4, 0.3)
    w[5] = (0.0, 0.0, 1.0, 0.0)
    ref = np.zeros((17, 301, 3))
    lbs.skin_frames(A, X, joints, w, points, ref)
    out64 = np.full(ref.shape, np.nan)
    if not lbs.native_skin(A, X, joints, w, points, out64):
        pytest.skip("the C extension animkit._native is not built")
    np.testing.assert_array_equal(out64, ref)
    _check_float32(A, X, joints, w, points, ref)
    for dtype, shift in ((np.float64, 1), (np.float32, 1), (np.float32, 3)):  # buffers that start off a line
        out = np.full(ref.size + shift, np.nan, dtype=dtype)[shift:].reshape(ref.shape)
        assert lbs.native_skin(A, X, joints, w, points, out)
        assert not np.isnan(out).any()
        if dtype == np.float64:
            np.testing.assert_array_equal(out, ref)
        else:
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(lbs.skin_frames_kernel is None, reason="numba is off or missing")
def test_an_output_past_the_last_level_cache_is_the_reference(monkeypatch) -> None:
    """A float32 output of more than 32 MiB (past this machine's last-level cache), written with non-temporal stores
    (STREAM_BYTES set to 32 MiB) and with cached ones (the default), in a caller's buffer, and its float64 twice that
    size: numba's compiled reference loop bit for bit (float64), within float32 rounding."""
    monkeypatch.setattr(lbs, "STREAM_BYTES", 32 << 20)
    F = 9
    V = lbs.STREAM_BYTES // (F * 3 * 4) + 7
    rng = np.random.default_rng(5)
    A, X, joints, w = _kernel_inputs(rng, F, V, 6, 3, 0.2)
    ref = np.zeros((F, V, 3))
    assert lbs.skin_frames_kernel is not None
    lbs.skin_frames_kernel(A, X, joints, w, True, ref)
    out32 = np.full((F, V, 3), np.nan, dtype=np.float32)
    assert out32.nbytes > lbs.STREAM_BYTES
    if not lbs.native_skin(A, X, joints, w, True, out32):
        pytest.skip("the C extension animkit._native is not built")
    size = np.zeros((F, V, 3))
    lbs.skin_frames_kernel(np.abs(A), np.abs(X), joints, w, True, size)
    assert np.all(np.abs(out32 - ref) <= 2.0**-24 * (3 * 3 + 12) * size)
    cached = np.full_like(out32, np.nan)
    monkeypatch.setattr(lbs, "STREAM_BYTES", 1 << 62)
    assert lbs.native_skin(A, X, joints, w, True, cached)
    np.testing.assert_array_equal(cached, out32)
    monkeypatch.setattr(lbs, "STREAM_BYTES", 32 << 20)
    del out32, size, cached
    out64 = np.full((F, V, 3), np.nan)
    assert lbs.native_skin(A, X, joints, w, True, out64)
    np.testing.assert_array_equal(out64, ref)


@pytest.mark.parametrize("points", [True, False])
def test_frames_are_independent_lanes(points) -> None:
    """Each frame is computed alone whatever chunk or vector width carries it: the first F' frames of a call over F
    frames are the same bits as a call over those F' (F' = 1…13: chunks of 8, a last chunk of 1–4 frames on 128-bit
    vectors, or of 5–7 on 256-bit), float32 (fused where the CPU has FMA) and float64."""
    rng = np.random.default_rng(12)
    A, X, joints, w = _kernel_inputs(rng, 16, 300, 6, 4, 0.2)
    for dtype in (np.float32, np.float64):
        full = np.zeros((16, 300, 3), dtype)
        if not lbs.native_skin(A, X, joints, w, points, full):
            pytest.skip("the C extension animkit._native is not built")
        for F in range(1, 14):
            part = np.zeros((F, 300, 3), dtype)
            assert lbs.native_skin(np.ascontiguousarray(A[:F]), X, joints, w, points, part)
            np.testing.assert_array_equal(part, full[:F])


def test_packed_influences_put_each_vertexs_nonzero_weights_first_in_order() -> None:
    """pack_influences: x and w in the asked dtype, 12·j as int32, the count of nonzero weights; a packed buffer given
    to the kernel gives what packing on the fly gives."""
    X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    joints = np.array([[3, 1, 2, 0], [0, 1, 2, 3]])
    w = np.array([[0.0, 0.25, 0.0, 0.75], [1.0, 0.0, 0.0, 0.0]])
    for dtype in (np.float32, np.float64):
        buf = lbs.pack_influences(X, joints, w, dtype)
        n = np.dtype(dtype).itemsize
        assert buf.nbytes == 2 * (3 + 4) * n + 2 * 5 * 4
        np.testing.assert_array_equal(buf[:6 * n].view(dtype), X.ravel())
        np.testing.assert_array_equal(buf[6 * n:14 * n].view(dtype), [0.25, 0.75, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
        ints = buf[14 * n:].view(np.int32)
        np.testing.assert_array_equal(ints[:2], [12, 0])
        np.testing.assert_array_equal(ints[4], 0)
        np.testing.assert_array_equal(ints[8:], [2, 1])
    rng = np.random.default_rng(8)
    A, X, joints, w = _kernel_inputs(rng, 5, 40, 4, 3, 0.3)
    fresh = np.zeros((5, 40, 3), np.float32)
    if not lbs.native_skin(A, X, joints, w, True, fresh):
        pytest.skip("the C extension animkit._native is not built")
    given_pack = np.zeros_like(fresh)
    assert lbs.native_skin(A, X, joints, w, True, given_pack, lbs.pack_influences(X, joints, w, np.float32))
    np.testing.assert_array_equal(given_pack, fresh)


def test_native_kernel_refuses_what_it_cannot_index() -> None:
    """A joint index outside the matrices, or an out= that is not a float32/float64 (F, V, 3) array: one clear error,
    nothing written."""
    rng = np.random.default_rng(4)
    A, X, joints, w = _kernel_inputs(rng, 3, 5, 2, 2, 0.0)
    probe = np.zeros((3, 5, 3))
    if not lbs.native_skin(A, X, joints, w, True, probe):
        pytest.skip("the C extension animkit._native is not built")
    joints[4, 1] = 2
    out = np.full((3, 5, 3), 7.0)
    with pytest.raises(ValueError, match="joint index"):
        lbs.native_skin(A, X, joints, w, True, out)
    assert np.all(out == 7.0)
    with pytest.raises(AnimkitError, match="out= must be"):
        lbs.native_skin(A, X, joints % 2, w, True, np.zeros((3, 5, 3), dtype=np.int32))


def test_skinned_positions_api_dtype_and_buffers() -> None:
    """Mesh.positions / normals: out= is returned as is (float32 or float64), dtype= gives a new array of that
    type, and a wrong dtype or a float64 out= with dtype=float32 is refused with AnimkitError."""
    rng = np.random.default_rng(21)
    mesh = _mesh(rng, V=200, J=6, K=4, N=8)
    W = np.stack([_affine(rng, 8) for _ in range(10)])
    ref = mesh.positions(W)
    for dtype in (np.float32, np.float64):
        buf = np.empty((10, 200, 3), dtype)
        assert mesh.positions(W, out=buf) is buf
        assert mesh.positions(W, out=buf, dtype=dtype) is buf
        assert mesh.positions(W, dtype=dtype).dtype == dtype
        np.testing.assert_allclose(buf, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    one = mesh.positions(W[3], dtype=np.float32)
    assert one.shape == (1, 200, 3)
    with pytest.raises(AnimkitError, match="dtype= must be float32 or float64"):
        mesh.positions(W, dtype=np.int32)
    with pytest.raises(AnimkitError, match="but dtype=float32 was asked"):
        mesh.normals(W, out=np.empty((10, 200, 3)), dtype=np.float32)
    with pytest.raises(AnimkitError, match=r"out= must be .* of shape \(10, 200, 3\)"):
        mesh.positions(W, out=np.empty((10, 200, 3), np.float32)[:, ::2])


def test_joint_rows_are_the_joint_matrices_first_rows() -> None:
    rng = np.random.default_rng(5)
    W = np.stack([_affine(rng, 7) for _ in range(11)])
    index, ibm = np.array([4, 0, 6]), _affine(rng, 3)
    rows = lbs.joint_rows(W, index, ibm)
    assert rows.shape == (11, 3, 3, 4) and rows.flags.c_contiguous
    np.testing.assert_allclose(rows, lbs.joint_matrices(W, index, ibm)[:, :, :3], rtol=0, atol=1e-14)
    np.testing.assert_allclose(rows[2, 1], (W[2, 0] @ ibm[1])[:3], rtol=0, atol=1e-14)
    # a strided W (the C loop's input made contiguous first) and the NumPy path (C extension off) agree
    strided = np.ascontiguousarray(W.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    np.testing.assert_array_equal(lbs.joint_rows(strided, index, ibm), rows)
    animkit.jit.ENABLED = False
    try:
        np.testing.assert_allclose(lbs.joint_rows(W, index, ibm), rows, rtol=0, atol=1e-14)
    finally:
        animkit.jit.ENABLED = True
    with pytest.raises((ValueError, IndexError)):
        lbs.joint_rows(W, np.array([4, 0, 7]), ibm)
