"""The target of a retarget as it stands: its bind pose from its skins (:func:`bind_world`, :func:`bind_pose`),
DOFs added where a mapped bone never moves (:func:`drivable`, :func:`with_rest`), a rotation read into a joint's
DOFs (:func:`read_dofs`) and a world matrix's turn without its scale (:func:`rotation_part`). Re-exported by
:mod:`animkit.motion.retarget`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from animkit import jit
from animkit.model.figure import Figure
from animkit.model.graph import Arc
from animkit.model.joints import Dof, Joint
from animkit.model.transforms import (
    euler_intrinsic_from_matrix,
    euler_order_away_from_lock,
    quaternion_from_matrix,
)
from animkit.motion.retarget_map import RetargetError
from animkit.recent import Recent

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh

__all__ = ["rotation_part", "bind_world", "bind_pose", "drivable", "with_rest", "read_dofs", "standing_target",
           "bind_rest", "read_local_dofs"]

Array = NDArray[np.float64]


def _det3(A: Array) -> Array:
    """det A for 3×3 matrices (..., 3, 3): a · (b × c) over the rows, without LAPACK's per-matrix call."""
    a, b, c = A[..., 0, :], A[..., 1, :], A[..., 2, :]
    return (a[..., 0] * (b[..., 1] * c[..., 2] - b[..., 2] * c[..., 1])
            + a[..., 1] * (b[..., 2] * c[..., 0] - b[..., 0] * c[..., 2])
            + a[..., 2] * (b[..., 0] * c[..., 1] - b[..., 1] * c[..., 0]))


def _stack_index(lead: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, int] | None:
    """(div, mod) with operand matrix (i // div) % mod for output matrix i, where the operand's stack shape ``lead``
    broadcasts to ``out`` as one block of its axes (1s around it); None otherwise."""
    a = (1,) * (len(out) - len(lead)) + tuple(lead)
    if len(a) != len(out):
        return None
    big = [j for j, n in enumerate(a) if n != 1]
    if not big:
        return 1, 1
    k, m = big[0], big[-1] + 1
    if any(a[j] != out[j] for j in range(k, m)):
        return None
    return math.prod(out[m:]), math.prod(out[k:m])


def _mm3(A: Array, B: Array) -> Array:
    """A @ B for stacks of 3×3 matrices (broadcast), entry by entry into one output: (A₀ₖB₀ⱼ + A₁ₖB₁ⱼ) + A₂ₖB₂ⱼ
    over strided views (NumPy's batched matmul, and a product of broadcast (…, 3, 3, 3) temporaries, are several
    times slower at 3×3); the C extension's ``mm3`` adds the same products in the same order (bit for bit) in one
    pass where it is built and the stacks broadcast as blocks (:func:`_stack_index`)."""
    shape = np.broadcast_shapes(A.shape, B.shape)
    native = jit.native_kernels()
    kernel = getattr(native, "mm3", None)
    if kernel is not None and A.dtype == np.float64 and B.dtype == np.float64:
        lead, n = shape[:-2], math.prod(shape[:-2])
        ia = (1, n) if A.shape == shape else _stack_index(A.shape[:-2], lead)
        ib = (1, n) if B.shape == shape else _stack_index(B.shape[:-2], lead)
        if ia is not None and ib is not None:
            out = np.empty(shape)
            kernel(np.ascontiguousarray(A), np.ascontiguousarray(B), out, n, *ia, *ib)
            return out
    return _mm3_numpy(A, B, shape)


def _mm3_numpy(A: Array, B: Array, shape: tuple[int, ...]) -> Array:
    """:func:`_mm3`'s NumPy reference: nine entries, each three strided products added in order."""
    out = np.empty(shape, dtype=np.result_type(A, B, float))
    for i in range(3):
        for k in range(3):
            o = out[..., i, k]
            np.multiply(A[..., i, 0], B[..., 0, k], out=o)
            o += A[..., i, 1] * B[..., 1, k]
            o += A[..., i, 2] * B[..., 2, k]
    return out


def _libm_cbrt(x: Array) -> Array:
    """∛x as the C library computes it (``math.cbrt``, as the C extension's ``cbrt``): NumPy's ``np.cbrt`` takes a
    SIMD path on AVX-512 machines that differs from it by one unit in the last place on about half of all inputs,
    which would make this reference and its port differ there."""
    return np.fromiter(map(math.cbrt, x.ravel()), float, x.size).reshape(x.shape)


def _polar_steps(A: Array) -> tuple[Array, NDArray[np.bool_], Array]:
    """:func:`rotation_part`'s fast path in NumPy (the C extension's ``polar_turns`` is its port): R, det > 0, and
    max |RᵀR − I| after the last step, for A (n, 3, 3)."""
    det = _det3(A)
    ok = det > 0
    R = A / _libm_cbrt(np.where(ok, det, 1.0))[:, None, None]
    err = np.zeros(len(A))
    for step in range(4):
        E = _mm3(np.swapaxes(R, -1, -2), R)
        E9 = E.reshape(-1, 9)
        E9[:, ::4] -= 1.0  # the diagonal
        err = np.abs(E9).max(axis=1)
        if step == 3 or not ((err > 1e-12) & (err < 0.1)).any():
            break
        R = R - 0.5 * _mm3(R, E)
    return R, ok, err


def rotation_part(M: Array) -> Array:
    """R = U Vᵀ from M = U Σ Vᵀ (the polar decomposition's rotation): a world matrix's turn without its scale.

    Fast path (every rig seen: a turn times a uniform scale, perhaps rounded from float32): R₀ = A / det(A)^(1/3),
    polished by Newton–Schulz steps R ← R − R (RᵀR − I) / 2 (quadratic convergence to the same polar factor) until
    RᵀR is within 1e-12 of I; the SVD for the matrices that stay further than 1e-9 from it."""
    M = np.asarray(M, dtype=float)
    shape = M.shape[:-2] + (3, 3)
    kernel = getattr(jit.native_kernels(), "polar_turns", None)
    if kernel is not None and M.shape[-2:] in ((3, 3), (4, 4)):
        n = math.prod(M.shape[:-2])
        R, det, err = np.empty((n, 3, 3)), np.empty(n), np.empty(n)
        kernel(np.ascontiguousarray(M), R, np.empty((n, 3, 3)), det, err, n, M.shape[-1])
        ok = det > 0
    else:
        R, ok, err = _polar_steps(M[..., :3, :3].reshape(-1, 3, 3))
    ok &= err <= 1e-9
    if not ok.all():
        bad = ~ok
        A = M[..., :3, :3].reshape(-1, 3, 3)
        U, _, Vt = np.linalg.svd(A[bad])
        Rb = U @ Vt
        flip = _det3(Rb) < 0
        if np.any(flip):
            U[flip, :, 2] *= -1.0
            Rb = U @ Vt
        R[bad] = Rb
    return R.reshape(shape)


def bind_world(fig: Figure, meshes: Sequence[Mesh] = ()) -> Array:
    """World matrices (N, 4, 4) of the bind pose: W_j = M₀ · IBM_j⁻¹ for every joint of a skin,
    W = W_parent · L · A(rest) for every other node (nodes above the skeleton keep their rest).

    M₀ is the space the skin's bind shape lives in: the world (the specification's convention: IBM_j⁻¹ is the joint's
    world matrix at bind) or an ancestor of the skeleton that is not a joint (exporters that bind in the armature's
    space, such as COLLADA2GLTF's Z-up node): of these, the one whose M₀ · IBM_top⁻¹ lies nearest the top joint's
    node rest. Without skins: the rest pose's world matrices.
    """
    W0 = fig.world_batch(fig.rest_pose()[None])[0]
    names = fig.node_names
    bind: dict[int, Array] = {}
    seen: set[int] = set()
    for mesh in meshes:
        skin = mesh.skin
        if skin is None or id(skin) in seen:
            continue
        seen.add(id(skin))
        J = [int(j) for j in skin.joint_index]
        inv = np.linalg.inv(skin.inverse_bind)
        top = min(range(len(J)), key=lambda k: len(fig.path_to(names[J[k]])))
        joints = set(J)
        above = [names.index(a.parent.name) for a in fig.path_to(names[J[top]]) if a.parent is not None]
        candidates = [np.eye(4)] + [W0[i] for i in above if i not in joints] + [W0[mesh.node_index]]
        size = max(float(np.abs(W0[J[top], :3, 3]).max()), float(np.abs(W0[J[top], :3, :3]).max()), 1e-300)
        M0 = min(candidates, key=lambda M: float(np.abs(M @ inv[top] - W0[J[top]]).max()) / size)
        for k, j in enumerate(J):
            bind.setdefault(j, M0 @ inv[k])
    if not bind:
        return W0
    W = np.empty_like(W0)
    parent = {a.child.name: a.parent.name for a in fig.arcs() if a.parent is not None}
    starts = fig.joint_dofs
    rest = fig.rest_pose()
    for i, arc in enumerate(fig.arcs()):
        if i in bind:
            W[i] = bind[i]
            continue
        up = parent.get(arc.child.name)
        base = np.eye(4) if up is None else W[names.index(up)]
        W[i] = base @ arc.L @ arc.joint.matrix(rest[starts[arc.joint.name]])
    return W


def bind_pose(fig: Figure, W_bind: Array) -> Array:
    """The pose (D,) whose world matrices come nearest ``W_bind`` (N, 4, 4): A_i = (W_parent · L_i)⁻¹ · W_bind,i read
    into each joint's DOFs (rotations and translations; scales keep their rest), parent first."""
    pose = fig.rest_pose().copy()
    names = fig.node_names
    starts = fig.joint_dofs
    W = np.empty_like(W_bind)
    for i, arc in enumerate(fig.arcs()):
        B = arc.L if arc.parent is None else W[names.index(arc.parent.name)] @ arc.L
        idx = starts[arc.joint.name]
        if idx:
            A = np.linalg.solve(B, W_bind[i])
            try:
                vals = read_dofs(arc.joint, rotation_part(A)[None], A[None, :3, 3], pose[idx])[0]
            except RetargetError:
                vals = pose[idx]
            if np.all(np.isfinite(vals)):
                pose[idx] = vals
        W[i] = B @ arc.joint.matrix(pose[idx])
    return pose


def _dof_name(joint: str, suffix: str, taken: set[str]) -> str:
    name = f"{joint}.{suffix}"
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _widened(arc: Arc, rotate: bool, translate: bool, taken: set[str]) -> tuple[Array, Joint] | None:
    """(L', joint') with L'·A'(rest') = L·A(rest): rotation DOFs (intrinsic "zyx", or the order
    farthest from gimbal lock at rest) where ``rotate`` and the joint
    has none, translation DOFs (before everything) where ``translate`` and it has none. None when the arc's static
    scale cannot stay where it is (a scale DOF after a scaled L)."""
    joint, L = arc.joint, arc.L.copy()
    dofs = list(joint.dofs)
    order = joint.order
    if rotate and not any(d.revolute for d in dofs):
        pri = [k for k, d in enumerate(dofs) if d.kind == "prismatic"]
        at, angles, order = 0, np.zeros(3), "zyx"
        if pri:
            at = max(pri) + 1
        else:
            R0 = rotation_part(L)
            S = R0.T @ L[:3, :3]
            order = euler_order_away_from_lock(R0)  # the glTF reader's choice: ≥ 45° from gimbal lock at rest
            angles = euler_intrinsic_from_matrix(R0, order)
            scaled = not np.allclose(S, np.eye(3), rtol=0, atol=1e-9)
            if scaled and any(d.scale for d in dofs):
                return None
            if scaled:
                dofs += [Dof(_dof_name(joint.name, f"s{a}", taken), "scale", np.eye(3)[k], rest=float(S[k, k]))
                         for k, a in enumerate("xyz")]
            L[:3, :3] = np.eye(3)
        turn = [Dof(_dof_name(joint.name, f"r{a}", taken), "revolute", np.eye(3)["xyz".index(a)],
                    rest=float(angles[k])) for k, a in enumerate(order)]
        dofs[at:at] = turn
    if translate and not any(d.kind == "prismatic" for d in dofs):
        t = np.linalg.solve(L[:3, :3], L[:3, 3])
        L[:3, 3] = 0.0
        dofs[0:0] = [Dof(_dof_name(joint.name, f"t{a}", taken), "prismatic", np.eye(3)[k], rest=float(t[k]))
                     for k, a in enumerate("xyz")]
    kind = joint.kind if len(dofs) == joint.dof_count else "custom"
    return L, Joint(joint.name, kind, tuple(dofs), order if kind == "custom" else joint.order,
                    joint.cone if kind == joint.kind else None)


def drivable(fig: Figure, rotate: Sequence[str], translate: Sequence[str]) -> tuple[Figure, tuple[str, ...]]:
    """(a copy of ``fig`` in which every node of ``rotate`` turns and every node of ``translate`` moves, the nodes that
    could not be given them). Same nodes, names, order, rest geometry and rig; only those arcs' L and joints change:
    a node that never turns gets a ball joint (the glTF reader's Euler order) holding its static rotation as rest
    values, one that never moves three translations before its joint. ``fig`` itself when nothing changes."""
    rot, tr = set(rotate), set(translate)
    if all(any(d.revolute for d in _joint(fig, n).dofs) for n in rot) and all(
            any(d.kind == "prismatic" for d in _joint(fig, n).dofs) for n in tr):
        return fig, ()
    taken = set(fig.dof_names)
    failed: list[str] = []

    def arc_of(arc: Arc) -> tuple[Array, Joint]:
        name = arc.child.name
        if name in rot or name in tr:
            made = _widened(arc, name in rot, name in tr, taken)
            if made is not None:
                return made
            failed.append(name)
        return arc.L, arc.joint

    return _rebuilt(fig, arc_of), tuple(failed)


def with_rest(fig: Figure, pose: Array) -> Figure:
    """A copy of ``fig`` whose DOFs' rest values are ``pose`` (D,) (clamped into their limits): the figure standing in
    another pose at rest (a skinned character in its bind pose) — what measures, locks and writers then read as rest."""
    P = np.asarray(pose, dtype=float)
    starts = fig.joint_dofs

    def arc_of(arc: Arc) -> tuple[Array, Joint]:
        j = arc.joint
        dofs = tuple(dataclasses.replace(d, rest=float(np.clip(P[i], d.lower, d.upper)))
                     for d, i in zip(j.dofs, starts[j.name], strict=True))
        return arc.L, dataclasses.replace(j, dofs=dofs)

    return _rebuilt(fig, arc_of)


def _rebuilt(fig: Figure, arc_of: Callable[[Arc], tuple[Array, Joint]]) -> Figure:
    """A copy of ``fig``: the same nodes (names, order, data, T, colours), up axis and rig, each arc's (L, joint)
    from ``arc_of``."""
    out: Figure | None = None
    for arc in fig.arcs():
        node = arc.child
        L, joint = arc_of(arc)
        if out is None:
            out = Figure(node.name, data=node.data, T=node.T, color=node.color, joint=joint, L=L, name=fig.name,
                         up=fig.up)
        else:
            assert arc.parent is not None
            out.add(node.name, arc.parent.name, L=L, joint=joint, data=node.data, T=node.T, color=node.color)
    assert out is not None
    out.rig = fig.rig
    return out


def read_dofs(joint: Joint, Ra: Array, t: Array | None, base: Array) -> Array:
    """DOF values (F, k) of ``joint`` whose rotation best gives Ra (F, 3, 3) and whose translation gives t (F, 3).

    Three revolute DOFs about distinct coordinate axes: intrinsic Euler angles in their order. One: the twist
    about its axis, 2·atan2(q⃗ · a, w). Two about coordinate axes a, b: the first two angles of the intrinsic
    Euler order a, b, c. Prismatic DOFs (before the rotations) take t along their axis, or keep ``base``
    (k,) or (F, k); scale DOFs (glTF's, after the rotations) keep ``base``.
    """
    F = Ra.shape[0]
    out = np.broadcast_to(np.asarray(base, dtype=float), (F, joint.dof_count)).copy()
    rev = [i for i, d in enumerate(joint.dofs) if d.revolute]
    pri = [i for i, d in enumerate(joint.dofs) if d.kind == "prismatic"]
    if pri and rev and max(pri) > min(rev):
        raise RetargetError(f"joint {joint.name!r}: translations after rotations; retargeting drives a joint "
                            "whose DOFs translate first, then turn")
    if t is not None:
        for i in pri:
            out[:, i] = t @ joint.dofs[i].axis
    if not rev:
        return out
    letters = [joint.dofs[i].axis_letter for i in rev]
    if len(rev) == 1:
        q = quaternion_from_matrix(Ra)
        a = joint.dofs[rev[0]].axis
        ang = 2.0 * np.arctan2(q[:, 1:] @ a, q[:, 0])
        out[:, rev[0]] = (ang + np.pi) % (2 * np.pi) - np.pi
        return out
    if all(letters) and len(set(letters)) == len(letters) and len(rev) in (2, 3):
        order = "".join(letters)  # type: ignore[arg-type]
        if len(order) == 2:
            order += next(c for c in "xyz" if c not in order)
        eul = euler_intrinsic_from_matrix(Ra, order)
        out[:, rev] = eul[:, :len(rev)]
        return out
    raise RetargetError(f"joint {joint.name!r} ({joint.kind}): cannot read a rotation into its DOFs "
                        f"{[d.name for d in joint.dofs]}; retargeting drives 1, 2 or 3 rotations about distinct "
                        "coordinate axes")


def euler_plan(joint: Joint) -> tuple[NDArray[np.int64], list[int]] | None:
    """(each DOF's axis code: 0, 1, 2 for a revolute DOF about x, y, z, −1 for any other DOF; the Tait–Bryan order
    (i, j, k) of its revolute DOFs, the third axis added for two) where the C extension reads the joint's angles
    (``euler_read``, ``drive_joint``, ``write_joint``): two or three revolute DOFs about distinct coordinate axes,
    translations only before them; else None. Found once per joint (joints are frozen), kept beside it."""
    known = _EULER_PLANS.get(id(joint))
    if known is not None and known[0] is joint:
        return known[1]
    plan = _euler_plan(joint)
    if len(_EULER_PLANS) >= 4096:
        _EULER_PLANS.clear()
    _EULER_PLANS[id(joint)] = (joint, plan)
    return plan


#: id(joint) → (the joint, :func:`euler_plan`'s answer): the joint kept so that its id cannot be reused while here
_EULER_PLANS: dict[int, tuple[Joint, tuple[NDArray[np.int64], list[int]] | None]] = {}


def _euler_plan(joint: Joint) -> tuple[NDArray[np.int64], list[int]] | None:
    rev = [i for i, d in enumerate(joint.dofs) if d.revolute]
    letters = [joint.dofs[i].axis_letter for i in rev]
    pri = [i for i, d in enumerate(joint.dofs) if d.kind == "prismatic"]
    if len(letters) not in (2, 3) or None in letters or len(set(letters)) != len(letters) \
            or (pri and max(pri) > min(rev)):
        return None
    order = ["xyz".index(c) for c in letters]  # type: ignore[arg-type]
    order += [3 - order[0] - order[1]] * (len(order) == 2)
    codes = np.array(["xyz".index(d.axis_letter) if d.revolute and d.axis_letter else -1 for d in joint.dofs],
                     dtype=np.int64)
    codes.setflags(write=False)  # (shared by every caller: :func:`euler_plan` keeps it)
    return codes, order


def read_local_dofs(joint: Joint, Bt: Array, Rt: Array, base: Array) -> Array:
    """:func:`read_dofs` of the local turn A = Btᵀ · Rt (Bt the parent frame's turn, Rt the joint's world turn, both
    (n, 3, 3); ``base`` (n, k)): for two or three revolute DOFs about distinct coordinate axes (beside them
    translations before and scales after, which keep ``base``: a glTF node's joint) by the C extension's
    ``euler_read`` (the same products and Tait–Bryan arithmetic in one pass, to the C library's asin/atan2), else
    (or where the extension is off) by :func:`_mm3` and :func:`read_dofs`."""
    kernel = getattr(jit.native_kernels(), "euler_read", None)
    plan = euler_plan(joint)
    if kernel is None or plan is None:
        return read_dofs(joint, _mm3(np.swapaxes(Bt, 1, 2), Rt), None, base)
    codes, order = plan
    rev = np.flatnonzero(codes >= 0)
    eul = np.empty((Bt.shape[0], 3))
    kernel(np.ascontiguousarray(Bt), np.ascontiguousarray(Rt), eul, Bt.shape[0], *order)
    if len(rev) == joint.dof_count:
        return eul[:, :len(rev)].copy()
    out = np.broadcast_to(np.asarray(base, dtype=float), (Bt.shape[0], joint.dof_count)).copy()  # a glTF joint's
    out[:, rev] = eul[:, :len(rev)]  # translation and scale DOFs keep ``base``, as :func:`read_dofs` keeps them
    return out


def _bind_turns(fig: Figure, W_bind: Array) -> dict[str, float]:
    """Nodes whose local turn at bind, (W_parent · L)⁻¹ W_bind, differs from their rest A by more than 1e-4 rad:
    node → angle."""
    names = fig.node_names
    W0 = fig.world_batch(fig.rest_pose()[None])[0]
    if np.allclose(W0, W_bind, rtol=0, atol=1e-6 * max(1.0, float(np.abs(W0[:, :3, 3]).max()))):
        return {}
    out: dict[str, float] = {}
    for i, arc in enumerate(fig.arcs()):
        if arc.parent is None:
            continue
        p = names.index(arc.parent.name)
        A_bind = rotation_part(np.linalg.solve(W_bind[p] @ arc.L, W_bind[i]))
        A_rest = rotation_part(np.linalg.solve(W0[p] @ arc.L, W0[i]))
        c = np.clip((np.trace(A_rest.T @ A_bind) - 1.0) / 2.0, -1.0, 1.0)
        if np.arccos(c) > 1e-4:
            out[arc.child.name] = float(np.arccos(c))
    return out


def _joint(fig: Figure, node: str) -> Joint:
    arc = fig.node(node).parent_arc
    assert arc is not None
    return arc.joint


_STOOD: Recent[tuple[tuple[Figure, tuple[str, ...], dict[str, float]], tuple[object, ...]]] = Recent(8)
_RESTS: Recent[Array | None] = Recent(8)


def _figure_key(fig: Figure) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(key, the objects it names by identity) of all that :func:`bind_world`, :func:`drivable` and
    :func:`with_rest` read of ``fig``: its name, up and rig, each arc's ends, L and joint (frozen), each node's data
    (by identity), T and colour."""
    arcs = fig.arcs()
    rig = fig.rig
    held = (rig, *[a.joint for a in arcs], *[a.child.data for a in arcs])
    key = (fig.name, fig.up, id(rig),
           tuple([(None if a.parent is None else a.parent.name, a.child.name, id(a.joint), id(a.child.data),
                   a.child.color) for a in arcs]),
           _stacked_bytes([a.L for a in arcs]), _stacked_bytes([a.child.T for a in arcs]))
    return key, held


def _stacked_bytes(matrices: list[Array]) -> bytes:
    """The float64 bytes of the 4×4 matrices one after another (each row-major): one array built, not one per
    matrix (a figure's key is read three times a retarget)."""
    try:
        out = np.array(matrices, dtype=np.float64)
    except ValueError:  # (matrices of different shapes: each alone)
        return b"".join(np.ascontiguousarray(m, dtype=np.float64).tobytes() for m in matrices)
    return out.tobytes() if out.ndim == 3 else b"".join(np.ascontiguousarray(m, dtype=np.float64).tobytes()
                                                        for m in matrices)


def standing_target(fig: Figure, meshes: Sequence[Mesh], mapped: Sequence[str], hips: str
                    ) -> tuple[Figure, tuple[str, ...], dict[str, float]]:
    """(the figure a retarget drives, the nodes that could not be given rotation DOFs, the joints whose bind pose
    turns from the file's nodes (:func:`_bind_turns`)): ``fig`` made :func:`drivable` (rotations on ``mapped`` and
    the turned joints, translations on ``hips``), standing in its skins' bind pose at rest (:func:`with_rest`)
    where that turns.

    Built once per input (a figure's content, the meshes by identity, ``mapped``, ``hips``), so that a clip's
    retarget does not rebuild its target's figure each call; an edited figure gets a new one, and a hit is handed
    back only while the figure it gave is unedited too."""
    fkey, held = _figure_key(fig)

    def make() -> tuple[tuple[Figure, tuple[str, ...], dict[str, float]], tuple[object, ...]]:
        W_bind = bind_world(fig, meshes)
        turned = _bind_turns(fig, W_bind)
        mapped_set = set(mapped)
        rotate = [n for n in fig.node_names if n in mapped_set or n in turned]
        out, failed = drivable(fig, rotate, [hips])
        if turned:  # the figure handed back stands in its bind pose at rest
            out = with_rest(out, bind_pose(out, W_bind))
        return (out, failed, turned), _figure_key(out)[0]

    made, _ = _STOOD.fetch((fkey, tuple(id(m) for m in meshes), tuple(mapped), hips), (*held, *meshes), make,
                           valid=lambda hit: _figure_key(hit[0][0])[0] == hit[1])  # the figure given, unedited
    return made[0], made[1], dict(made[2])


def bind_rest(fig: Figure, meshes: Sequence[Mesh]) -> Array | None:
    """The pose (D,) ``fig`` stands in at its skins' bind (:func:`bind_pose`) where that turns from the file's nodes,
    else None (no skin, or the same pose). Built once per input (the figure's content, the meshes by identity), as
    :func:`standing_target`; the array handed back is read-only."""
    fkey, held = _figure_key(fig)

    def make() -> Array | None:
        if not any(m.skinned for m in meshes):
            return None
        W_bind = bind_world(fig, meshes)
        if not _bind_turns(fig, W_bind):
            return None
        rest = bind_pose(fig, W_bind)
        rest.setflags(write=False)
        return rest

    return _RESTS.fetch((fkey, tuple(id(m) for m in meshes)), (*held, *meshes), make)
