"""The ufbx side of the FBX reader, run in a child process: ``python fbx_child.py FILE`` writes an ``.npz`` to
stdout (or, on a file ufbx refuses, one line ``error: ...`` to stderr and exit status 3).

``python fbx_child.py --serve`` is the same reader as a fork server: it imports NumPy and ufbx once, then for each
request line ``{"path": FILE, "out": OUT, "err": ERR}`` on stdin forks a process that reads FILE with its stdout and
stderr sent to the files OUT and ERR (exactly what the one-file form writes), answers ``{"pid": PID}`` at once and
``{"status": S}`` when that process ends (its exit status, or −signal). Every file is still read in a process of its
own (a crash ends that process only), without the interpreter start and imports (about 0.2–1 s) each time.

It imports only NumPy and ufbx (never animkit), so it starts fast, and it runs apart from the caller because the
ufbx Python binding (0.0.5) crashes the interpreter when some of its objects are freed (a temporary node, a name
read then dropped): every ufbx object fetched here is kept alive in :data:`_KEEP` and the process leaves with
``os._exit`` before anything is freed. A native crash on a hostile file ends this process only; the parent turns
it into a :class:`~animkit.errors.ParseError`.

What it extracts, in metres and right-handed Y-up (ufbx's ``space_conversion=MODIFY_GEOMETRY``, geometric
transforms folded into the vertices, inherit modes compensated): every node's name, parent and static local
transform (T, R as a quaternion x y z w, S: ufbx folds pre/post rotation, rotation order, pivots and offsets into
them), for each animation stack every node's local transform at each frame of the file's frame rate, and each
mesh's corners (position, normal, UV), triangles, skin influences and clusters' geometry-to-bone matrices,
material colour and diffuse texture (embedded bytes, or the file name it refers to).
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import numpy as np

_KEEP: list[Any] = []
MEMORY_LIMIT = 4 << 30  # bytes of address space a reading process may add to what it has once ufbx is imported
MAX_FRAMES = 1_000_000  # frames × nodes sampled, in all stacks together: beyond it the file is refused
MAX_INFLUENCES = 8


def _k(obj: Any) -> Any:
    _KEEP.append(obj)
    return obj


def _items(lst: Any) -> list[Any]:
    _k(lst)
    return [_k(lst[i]) for i in range(len(lst))]


def _matrix(m: Any) -> list[list[float]]:
    return [[m.c0.x, m.c1.x, m.c2.x, m.c3.x], [m.c0.y, m.c1.y, m.c2.y, m.c3.y],
            [m.c0.z, m.c1.z, m.c2.z, m.c3.z], [0.0, 0.0, 0.0, 1.0]]


def _axis_name(a: Any) -> str:
    return str(getattr(a, "name", a)).replace("POSITIVE_", "+").replace("NEGATIVE_", "-")


def extract(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    import ufbx

    scene = _k(ufbx.load_file(
        path, target_axes=ufbx.axes_right_handed_y_up, target_unit_meters=1.0,
        space_conversion=ufbx.SpaceConversion.MODIFY_GEOMETRY,
        geometry_transform_handling=ufbx.GeometryTransformHandling.MODIFY_GEOMETRY,
        inherit_mode_handling=ufbx.InheritModeHandling.COMPENSATE, load_external_files=False,
        generate_missing_normals=True))
    meta = _k(scene.metadata)
    settings = _k(scene.settings)
    nodes = _items(scene.nodes)
    ids = {n.element_id: i for i, n in enumerate(nodes)}
    parents = []
    for n in nodes:
        p = _k(n.parent)
        parents.append(-1 if p is None else ids[p.element_id])
    info: dict[str, Any] = {
        "version": int(meta.version), "ascii": bool(meta.ascii), "creator": str(meta.creator),
        # the file's unit (UnitScaleFactor, cm per unit), not OriginalUnitScaleFactor: the unit the author worked in
        # before the exporter rescaled (a Maya scene in cm exported in m has 1 there and 100 here)
        "unit_meters": 0.01 * float(_k(settings.props).find_real("UnitScaleFactor",
                                                                 100.0 * settings.original_unit_meters)),
        "axes": [_axis_name(a) for a in _k(settings.axes)],
        "original_up": _axis_name(settings.original_axis_up), "fps": float(settings.frames_per_second),
        "names": [str(n.name) for n in nodes], "parents": parents,
        "warnings": [str(_k(w).description) for w in _items(meta.warnings)],
    }
    arrays: dict[str, np.ndarray] = {}
    N = len(nodes)
    rest = np.zeros((N, 10))
    for i, n in enumerate(nodes):
        lt = _k(n.local_transform)
        rest[i] = (*lt.translation, *lt.rotation, *lt.scale)
    arrays["rest"] = rest
    fps = info["fps"] if 1.0 <= info["fps"] <= 1000.0 else 30.0
    info["fps"] = fps
    stacks = []
    budget = MAX_FRAMES
    for s, stack in enumerate(_items(scene.anim_stacks)):
        layers = _items(stack.layers)
        curves = sum(len(_k(layer.anim_values)) for layer in layers)
        begin, end = float(stack.time_begin), float(stack.time_end)
        entry = {"name": str(stack.name), "begin": begin, "end": end, "curves": curves}
        stacks.append(entry)
        if curves == 0 or not np.isfinite(begin) or not np.isfinite(end):
            continue
        count = int(round(max(end - begin, 0.0) * fps)) + 1
        budget -= count * max(N, 1)
        if budget < 0:
            raise ValueError(f"animation stack {entry['name']!r} has {count} frames at {fps:g} fps; more than "
                             f"animkit samples ({MAX_FRAMES:,} node-frames in all)")
        anim = _k(stack.anim)
        out = np.zeros((count, N, 10))
        for f in range(count):
            t = begin + f / fps
            for i, n in enumerate(nodes):
                lt = _k(ufbx.evaluate_transform(anim, n, t))
                out[f, i] = (*lt.translation, *lt.rotation, *lt.scale)
        arrays[f"stack{s}"] = out
    info["stacks"] = stacks
    info["meshes"] = _meshes(ufbx, nodes, ids, arrays)
    return info, arrays


def _meshes(ufbx: Any, nodes: list[Any], ids: dict[int, int], arrays: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, node in enumerate(nodes):
        mesh = _k(node.mesh)
        if mesh is None:
            continue
        m = len(out)
        pos = _k(mesh.vertex_position)
        nrm = _k(mesh.vertex_normal)
        uv = _k(mesh.vertex_uv)
        corners = np.asarray(_k(pos.indices), dtype=np.int64)
        P = np.asarray(_k(pos.values), dtype=np.float64).reshape(-1, 3)[corners]
        N_ = (np.asarray(_k(nrm.values), dtype=np.float64).reshape(-1, 3)[np.asarray(_k(nrm.indices), dtype=np.int64)]
              if nrm.exists else np.zeros((0, 3)))
        UV = (np.asarray(_k(uv.values), dtype=np.float64).reshape(-1, 2)[np.asarray(_k(uv.indices), dtype=np.int64)]
              if uv.exists else np.zeros((0, 2)))
        faces = np.asarray(memoryview(_k(mesh.faces)), dtype=np.int64).reshape(-1, 2)  # (index_begin, count)
        # polygons as fans: (b, b + j, b + j + 1) for j = 1 … n − 2
        counts = np.maximum(faces[:, 1] - 2, 0)
        rep = np.repeat(np.arange(len(faces)), counts)
        j = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + 1
        b = faces[rep, 0]
        tris = np.stack([b, b + j, b + j + 1], axis=1) if len(rep) else np.zeros((0, 3), np.int64)
        material = _k(mesh.face_material)
        mats = np.asarray(material, dtype=np.int64) if len(material) else np.zeros(len(faces), np.int64)
        tri_mat = mats[rep] if len(mats) == len(faces) else np.zeros(len(rep), np.int64)
        arrays[f"mesh{m}_positions"] = P
        arrays[f"mesh{m}_corners"] = corners
        arrays[f"mesh{m}_normals"] = N_
        arrays[f"mesh{m}_uvs"] = UV
        arrays[f"mesh{m}_faces"] = tris
        arrays[f"mesh{m}_face_material"] = tri_mat
        entry: dict[str, Any] = {"name": str(mesh.name) or str(node.name), "node": i,
                                 "blend_shapes": len(_k(mesh.blend_deformers)) > 0, "materials": []}
        for mat in _items(mesh.materials):
            entry["materials"].append(_material(mat))
        skins = _items(mesh.skin_deformers)
        if skins:
            _skins(skins, ids, entry, arrays, m, corners)
        out.append(entry)
    return out


def _skins(skins: list[Any], ids: dict[int, int], entry: dict[str, Any], arrays: dict[str, np.ndarray], m: int,
           corners: np.ndarray) -> None:
    """Every skin deformer of a mesh as one: v' = Σ_skins Σ_clusters w · W_bone · geometry_to_bone · v, normalised
    by the parent (as the FBX SDK's skinning sample sums every skin's clusters). A bone bound by two skins with the
    same bind matrix is one joint (its weights added); the 8 largest influences per vertex are kept."""
    bones: list[int] = []
    ibms: list[list[list[float]]] = []
    rows_v, rows_c, rows_w = [], [], []
    V = -1
    for skin in skins:
        glob = []
        for c in _items(skin.clusters):
            b = _k(c.bone_node)
            bone = -1 if b is None else ids[b.element_id]
            M = _matrix(_k(c.geometry_to_bone))
            same = [g for g in range(len(bones)) if bones[g] == bone >= 0 and np.allclose(ibms[g], M, atol=1e-9)]
            if same:
                glob.append(same[0])
            else:
                glob.append(len(bones))
                bones.append(bone)
                ibms.append(M)
        sv = np.asarray([(v.weight_begin, v.num_weights) for v in _items(skin.vertices)], np.int64).reshape(-1, 2)
        sw = np.asarray([(w.cluster_index, w.weight) for w in _items(skin.weights)], np.float64).reshape(-1, 2)
        if V >= 0 and len(sv) != V:
            raise ValueError(f"mesh {entry['name']!r}: its skin deformers cover {V} and {len(sv)} vertices")
        V = len(sv)
        to_glob = np.asarray(glob, np.int64)
        for k in range(int(sv[:, 1].max(initial=0))):
            has = np.flatnonzero(sv[:, 1] > k)
            at = sv[has, 0] + k
            rows_v.append(has)
            rows_c.append(to_glob[sw[at, 0].astype(np.int64)])
            rows_w.append(sw[at, 1])
    vert = np.concatenate(rows_v) if rows_v else np.zeros(0, np.int64)
    clus = np.concatenate(rows_c) if rows_c else np.zeros(0, np.int64)
    wt = np.concatenate(rows_w) if rows_w else np.zeros(0)
    key, inverse = np.unique(vert * max(len(bones), 1) + clus, return_inverse=True)  # a bone twice: one weight
    wsum = np.bincount(inverse.reshape(-1), weights=wt, minlength=len(key))
    kv, kc = key // max(len(bones), 1), key % max(len(bones), 1)
    order = np.lexsort((-wsum, kv))  # by vertex, then largest weight first
    kv, kc, wsum = kv[order], kc[order], wsum[order]
    rank = np.arange(len(kv)) - np.searchsorted(kv, kv)
    K = int(min(MAX_INFLUENCES, rank.max(initial=-1) + 1))
    J = np.zeros((max(V, 0), max(K, 1)), np.int64)
    W = np.zeros((max(V, 0), max(K, 1)))
    keep = rank < MAX_INFLUENCES
    J[kv[keep], rank[keep]] = kc[keep]
    W[kv[keep], rank[keep]] = wsum[keep]
    entry["skin"] = {"name": str(skins[0].name), "bones": bones, "deformers": len(skins)}
    entry["dropped_influences"] = int((~keep).sum())
    arrays[f"mesh{m}_ibm"] = np.array(ibms).reshape(-1, 4, 4)
    if V > 0 and int(corners.max(initial=-1)) >= V:
        raise ValueError(f"mesh {entry['name']!r}: {V} skinned vertices, but a face uses vertex {int(corners.max())}")
    vert_of_corner = corners if V > 0 else corners[:0]
    arrays[f"mesh{m}_joints"] = J[vert_of_corner]
    arrays[f"mesh{m}_weights"] = W[vert_of_corner]


def _material(mat: Any) -> dict[str, Any]:
    pbr = _k(mat.pbr)
    fbx = _k(mat.fbx)
    base = _k(pbr.base_color)
    color = list(base.value_vec4) if base.has_value else [1.0, 1.0, 1.0, 1.0]
    factor = _k(pbr.base_factor)
    if factor.has_value:
        color[:3] = [c * factor.value_vec4[0] for c in color[:3]]
    tex = _k(base.texture) or _k(_k(fbx.diffuse_color).texture)
    entry: dict[str, Any] = {"name": str(mat.name), "color": color}
    if tex is not None:
        content = bytes(tex.content)
        video = _k(tex.video)
        if not content and video is not None:
            content = bytes(video.content)
        entry["texture"] = {"relative": str(tex.relative_filename), "filename": str(tex.filename),
                            "embedded": len(content) > 0}
        if content:
            entry["texture"]["content_hex"] = content.hex()
    return entry


def _limit_memory() -> None:
    """Cap this process's address space at its current size + MEMORY_LIMIT (never above an inherited cap), so a
    file that claims absurd sizes fails with an error rather than taking the machine's memory."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            now = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = now + MEMORY_LIMIT
        if soft != resource.RLIM_INFINITY:
            cap = min(cap, soft)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):  # pragma: no cover - not Linux
        pass


def read_one(path: str) -> None:
    """Read ``path``: the ``.npz`` to stdout and exit status 0, or ``error: ...`` to stderr and status 3."""
    _limit_memory()
    try:
        info, arrays = extract(path)
    except Exception as exc:  # ufbx's errors (truncated, unknown format...) and ours: one line for the parent
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}".replace("\n", " ")[:2000] + "\n")
        sys.stderr.flush()
        os._exit(3)
    buf = io.BytesIO()
    arrays["info"] = np.frombuffer(json.dumps(info).encode(), dtype=np.uint8)
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    sys.stdout.buffer.write(buf.getvalue())
    sys.stdout.flush()
    os._exit(0)  # never free the ufbx objects (see the module's docstring)


def serve() -> None:
    """The fork server (see the module's docstring): one forked reader per request line, until stdin closes."""
    import ufbx  # noqa: F401  (imported once, inherited by every reader forked below)

    inp, out = sys.stdin.buffer, sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    while line := inp.readline():
        req = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the reader: stdin from /dev/null, stdout and stderr into the request's files
            try:
                for fd, name, mode in ((0, os.devnull, os.O_RDONLY), (1, req["out"], os.O_WRONLY),
                                       (2, req["err"], os.O_WRONLY)):
                    f = os.open(name, mode | (os.O_CREAT | os.O_TRUNC if fd else 0), 0o600)
                    os.dup2(f, fd)
                    os.close(f)
                read_one(req["path"])
            finally:
                os._exit(4)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()
    os._exit(0)


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        serve()
    read_one(sys.argv[1])


if __name__ == "__main__":
    main()
