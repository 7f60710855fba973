"""FBX characters and animations in (binary and ASCII, FBX 6.1 to 7.7), through the ufbx library.

ufbx (``pip install 'animkit[fbx]'``) reads the file in a child process (:mod:`animkit.io.fbx_child`: the binding
crashes on some frees, and a hostile file must not take this process down; on Linux forked from a warm server, one
process per file) and converts it to metres and
right-handed Y-up. Each node's local transform there is exactly T · R · S: ufbx folds FBX's

    L = T · Roff · Rp · Rpre · R(euler, order) · Rpost⁻¹ · Rp⁻¹ · Soff · Sp · S · Sp⁻¹

(pre/post rotation, rotation order, pivots and offsets) into one translation, rotation and scale. The hierarchy
becomes the figure below an added root ``world``, and each node's (t, q, s) is split as for glTF
(:func:`~animkit.io.gltf.arc_from_trs`, the rotation's Euler order chosen at rest the same way): the static channels
before the first animated one in the arc's L, the rest DOFs. Every animation stack with curves is a clip under its
own name, sampled at each frame of the file's frame rate (ufbx evaluates the curves, layers blended) from its start
(shifted to t = 0): translation and scale linear between frames, rotation slerped. Meshes (triangulated as fans, one
per material), skins (at most 8 influences per vertex, the bind matrices of the clusters: v' = Σ w · W_bone ·
geometry_to_bone · v), UVs, base colour and the diffuse texture (embedded, or a file inside the FBX file's folder:
:func:`~animkit.io.read_referenced`) are kept. Blend shapes are not applied (one :class:`BlendShapeWarning` per
file). A mesh with several skin deformers has them applied together, every skin's clusters summed as the FBX SDK's
skinning sample does (a note says so).

Bad input (truncated, corrupt, absurd counts, a texture outside the folder, a crash in ufbx) is one
:class:`~animkit.errors.ParseError` naming the file.
"""

from __future__ import annotations

import atexit
import importlib.util
import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from animkit.errors import AnimkitError, ParseError
from animkit.io._refs import read_referenced
from animkit.io.gltf import EULER_ORDER, ROOT_NAME, STILL, arc_from_trs, decode_image
from animkit.keyframes import Clip, RotationTrack, Track
from animkit.look.mesh import Mesh, Skin, vertex_normals
from animkit.look.skin import normalized_weights
from animkit.model.figure import Figure
from animkit.model.rig import humanoid_rig
from animkit.scene import Scene

__all__ = ["read_fbx", "BlendShapeWarning", "CHILD_TIMEOUT", "EXTRA"]

Array = NDArray[np.float64]
#: seconds the child process may take to read one file
CHILD_TIMEOUT = 300.0
#: the optional dependency group that installs ufbx
EXTRA = "animkit[fbx]"
_CHILD = Path(__file__).with_name("fbx_child.py")
_UNITS = {1.0: "metres", 0.01: "centimetres", 0.001: "millimetres", 0.0254: "inches", 0.3048: "feet", 0.1: "decimetres"}
del EULER_ORDER  # the joints' Euler order is arc_from_trs's


class BlendShapeWarning(UserWarning):
    """An FBX file has blend shapes (morph targets), which animkit does not apply."""


def read_fbx(path: str | Path) -> Scene:
    """A :class:`~animkit.scene.Scene` from an ``.fbx`` file: the node hierarchy as the figure (metres, Y-up), every
    animation stack with curves as a clip, every mesh (skinned or on its node) as meshes."""
    p = Path(path)
    if importlib.util.find_spec("ufbx") is None:
        raise AnimkitError(f"{p}: reading FBX needs the ufbx package; install it with pip install '{EXTRA}' "
                           "(or pip install ufbx)")
    info, arrays = _run_child(p)
    try:
        return _build(p, info, arrays)
    except ParseError:
        raise
    except (AnimkitError, KeyError, IndexError, ValueError, TypeError) as exc:
        raise ParseError(str(p), f"cannot use what ufbx read: {exc}") from None


def _run_child(p: Path) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """ufbx's reading of ``p``, from a process of its own: forked by the warm server where it can be (the server is
    free and this platform forks), else a fresh interpreter."""
    outcome = _SERVER.read(p) if _SERVER.lock.acquire(blocking=False) else None
    if outcome is None:
        outcome = _spawn(p)
    return _outcome(p, *outcome)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(k, "1")
    return env


def _spawn(p: Path) -> tuple[int, bytes, str]:
    """(exit status or −signal, stdout, stderr) of ``python fbx_child.py FILE``."""
    try:
        done = subprocess.run([sys.executable, "-P", str(_CHILD), str(p.resolve())], capture_output=True,
                              timeout=CHILD_TIMEOUT, env=_child_env(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ParseError(str(p), f"ufbx took more than {CHILD_TIMEOUT:g} s to read it") from None
    except OSError as exc:
        raise AnimkitError(f"{p}: cannot start the FBX reader ({exc})") from None
    # -P: the child's folder (animkit/io) is not put on its sys.path
    return done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")


class _ForkServer:
    """``python fbx_child.py --serve``, started on first use and kept for the process's life: each file is read in
    a process it forks (crash-isolated as a fresh interpreter would be, without its start and imports). Used by one
    thread at a time (:attr:`lock`; a second reader at the same moment spawns its own) and only by the process that
    started it (a forked copy of this process starts its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.owner = 0
        self.pending = b""  # what the server wrote past the last line read

    def read(self, p: Path) -> tuple[int, bytes, str] | None:
        """(status, stdout, stderr) as :func:`_spawn` gives them, or None when the server cannot serve (the caller
        spawns instead). Releases :attr:`lock`."""
        try:
            if not hasattr(os, "fork") or sys.platform != "linux":
                return None
            proc = self._ready()
            if proc is None:
                return None
            with tempfile.TemporaryDirectory(prefix="animkit-fbx-") as tmp:
                out, err = Path(tmp) / "out", Path(tmp) / "err"
                request = {"path": str(p.resolve()), "out": str(out), "err": str(err)}
                assert proc.stdin is not None
                try:
                    proc.stdin.write(json.dumps(request).encode() + b"\n")
                    proc.stdin.flush()
                except OSError:
                    self.close()
                    return None
                started = self._line(60.0)
                if started is None or "pid" not in started:
                    self.close()
                    return None
                status = self._line(CHILD_TIMEOUT)
                if status is None:  # a hang: end that reader (the server reaps it and says so)
                    try:
                        os.kill(int(started["pid"]), signal.SIGKILL)
                    except OSError:
                        pass
                    self._line(10.0)
                    raise ParseError(str(p), f"ufbx took more than {CHILD_TIMEOUT:g} s to read it")
                if "status" not in status:
                    self.close()
                    return None
                return (int(status["status"]), out.read_bytes() if out.exists() else b"",
                        err.read_text("utf-8", "replace") if err.exists() else "")
        finally:
            self.lock.release()

    def _ready(self) -> subprocess.Popen[bytes] | None:
        if self.proc is not None and (self.owner != os.getpid() or self.proc.poll() is not None):
            if self.owner == os.getpid():
                self.close()
            self.proc, self.pending = None, b""  # a parent's server, inherited by a fork: never used from here
        if self.proc is None:
            try:
                self.proc = subprocess.Popen([sys.executable, "-P", str(_CHILD), "--serve"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_child_env())
            except OSError:
                return None
            self.owner = os.getpid()
            ready = self._line(120.0)
            if ready != {"ready": True}:
                self.close()
                return None
        return self.proc

    def _line(self, timeout: float) -> dict[str, Any] | None:
        """The server's next answer line, or None: none within ``timeout`` s, or the server ended."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:  # the pid and status lines may arrive in one read: keep what follows
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        return answer if isinstance(answer, dict) else None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        self.pending = b""
        if proc is not None and self.owner == os.getpid():
            proc.kill()
            proc.wait()
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    f.close()


_SERVER = _ForkServer()
atexit.register(_SERVER.close)


def _outcome(p: Path, returncode: int, stdout: bytes, err: str) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """The child's answer as (info, arrays), or the ParseError its status and stderr say."""
    err = err.strip()
    if returncode != 0:
        line = next((x for x in err.splitlines() if x.startswith("error: ")), "")
        if returncode == 3 and line:
            raise ParseError(str(p), "not a readable FBX file: " + _tidy(line[len("error: "):]))
        if returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"signal {-returncode}"
            raise ParseError(str(p), f"the FBX library (ufbx) crashed ({name}) reading it; the file is damaged or "
                                     "not an FBX file")
        raise ParseError(str(p), f"the FBX reader failed (exit status {returncode}): "
                                 f"{_tidy(err.splitlines()[-1]) if err else 'no message'}")
    try:
        with np.load(io.BytesIO(stdout), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        info = json.loads(bytes(arrays.pop("info")).decode("utf-8"))
    except (ValueError, OSError, KeyError, UnicodeDecodeError) as exc:
        raise ParseError(str(p), f"the FBX reader's output could not be read ({exc})") from None
    return info, arrays


def _tidy(message: str) -> str:
    """ufbx's error line without its source positions ('ufbxi_...: ...') and the Python class of the error."""
    message = re.sub(r"^(\w+Error|\w+Exception): ", "", message.strip())
    return message[:500] or "unknown error"


def _names(raw: list[str]) -> list[str]:
    """Node names as given (whitespace → '_'); unnamed nodes ``node<i>``; repeats get ``_<i>``."""
    taken = {ROOT_NAME}
    out = []
    for i, r in enumerate(raw):
        name = re.sub(r"\s+", "_", r.strip()) if r.strip() else f"node{i}"
        if name in taken:
            name = f"{name}_{i}"
            while name in taken:
                name += "_"
        taken.add(name)
        out.append(name)
    return out


def _moves(samples: Array, rest: Array) -> set[str]:
    """The channels (translation, rotation, scale) of one node whose samples (F, 10) leave its rest (10,)."""
    out = set()
    t0, q0, s0 = rest[:3], rest[3:7], rest[7:]
    if np.abs(samples[:, :3] - t0).max(initial=0) > STILL * max(1.0, float(np.abs(t0).max())):
        out.add("translation")
    q = samples[:, 3:7]
    if np.minimum(np.abs(q - q0).max(axis=1), np.abs(q + q0).max(axis=1)).max(initial=0) > STILL:
        out.add("rotation")
    if np.abs(samples[:, 7:] - s0).max(initial=0) > STILL * max(1.0, float(np.abs(s0).max())):
        out.add("scale")
    return out


def _unit_words(m: float) -> str:
    for k, v in _UNITS.items():
        if abs(m - k) <= 1e-9 * k:
            return f"{v} ({m:g} m)"
    return f"{m:g} m per unit"


def _build(p: Path, info: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> Scene:
    src = str(p)
    raw_names: list[str] = info["names"]
    parents: list[int] = info["parents"]
    rest: Array = arrays["rest"]
    fps = float(info["fps"])
    n = len(raw_names)
    if rest.shape != (n, 10) or len(parents) != n:
        raise ParseError(src, f"{n} nodes but {rest.shape[0]} transforms")
    names = _names(raw_names[1:])  # node 0 is ufbx's root (the file's scene itself)
    notes = [f"FBX {info['version'] // 1000}.{info['version'] % 1000 // 100} "
             f"{'ASCII' if info['ascii'] else 'binary'}" + (f" by {info['creator']}" if info["creator"] else ""),
             f"units: {_unit_words(float(info['unit_meters']))}, converted to metres",
             f"axes: right {info['axes'][0]}, up {info['axes'][1]}, front {info['axes'][2]}; converted to "
             "right-handed Y-up (right +X, up +Y, front +Z)"]
    stacks = info["stacks"]
    sampled: dict[int, Array] = {}
    for s, st in enumerate(stacks):
        key = f"stack{s}"
        if key in arrays:
            sampled[s] = arrays[key]
        else:
            notes.append(f"animation stack {st['name']!r} has no animation curves: skipped")
    animated: list[set[str]] = [set() for _ in range(n)]
    for data in sampled.values():
        for i in range(1, n):
            animated[i] |= _moves(data[:, i], rest[i])
    fig = Figure(ROOT_NAME, name=p.stem or "fbx")
    kids: dict[int, list[int]] = {}
    for i in range(1, n):
        if not 0 <= parents[i] < n or parents[i] == i:
            raise ParseError(src, f"node {raw_names[i]!r} has no valid parent")
        kids.setdefault(parents[i], []).append(i)
    order: list[int] = []
    stack = [(c, ROOT_NAME) for c in reversed(kids.get(0, []))]
    while stack:
        i, parent = stack.pop()
        t, q, s_ = rest[i, :3], rest[i, [6, 3, 4, 5]], rest[i, 7:]
        norm = float(np.linalg.norm(q))
        if not np.isfinite(rest[i]).all() or norm < 1e-6:
            raise ParseError(src, f"node {raw_names[i]!r} has a transform that is not finite")
        L, joint = arc_from_trs(names[i - 1], t, q / norm, s_, animated[i])
        try:
            fig.add(names[i - 1], parent, L=L, joint=joint)
        except AnimkitError as exc:
            raise ParseError(src, f"node {raw_names[i]!r}: {exc}") from None
        order.append(i)
        stack.extend((c, names[i - 1]) for c in reversed(kids.get(i, [])))
    if len(order) != n - 1:
        raise ParseError(src, "the node hierarchy is not a tree below the scene's root")
    fig.rig = humanoid_rig(fig)
    clips: dict[str, Clip] = {}
    for s, data in sampled.items():
        name = stacks[s]["name"] or f"stack{s}"
        if name in clips:
            name = f"{name}_{s}"
        clips[name] = _clip(src, fig, name, data, [i for i in order if animated[i]], names, fps)
    meshes: list[Mesh] = []
    blend = False
    for m, entry in enumerate(info["meshes"]):
        blend = blend or bool(entry["blend_shapes"])
        if entry.get("skin", {}).get("deformers", 1) > 1:
            notes.append(f"mesh {entry['name']!r}: its {entry['skin']['deformers']} skin deformers are applied "
                         "together (every skin's clusters summed, then normalised)")
        meshes.extend(_meshes(p, fig, names, m, entry, arrays))
    if blend:
        warnings.warn(f"{src}: blend shapes (morph targets) are not applied; meshes keep their base shape",
                      BlendShapeWarning, stacklevel=3)
        notes.append("blend shapes are not applied")
    notes += [f"ufbx: {w}" for w in info.get("warnings", [])[:5]]
    return Scene(fig, clips=clips, meshes=tuple(meshes), up="y", source=src, notes=tuple(notes))


def _clip(src: str, fig: Figure, name: str, data: Array, movers: list[int], names: list[str], fps: float) -> Clip:
    F = data.shape[0]
    times = np.arange(F) / fps
    tracks: list[Track | RotationTrack] = []
    by_joint: dict[str, set[str]] = {}
    for dof in fig.dof_names:
        joint, _, suffix = dof.rpartition(".")
        by_joint.setdefault(joint, set()).add(suffix)
    for i in movers:
        joint = names[i - 1]
        d = data[:, i]
        have = by_joint.get(joint, set())
        if "tx" in have:
            tracks += [Track(f"{joint}.t{a}", times, d[:, k], "linear") for k, a in enumerate("xyz")]
        if "rx" in have:
            q = d[:, [6, 3, 4, 5]]
            norm = np.linalg.norm(q, axis=1)
            if not np.all(norm > 1e-6):
                raise ParseError(src, f"animation stack {name!r}: node {joint!r} has a zero rotation")
            tracks.append(RotationTrack(joint, times, q / norm[:, None], "slerp"))
        if "sx" in have:
            tracks += [Track(f"{joint}.s{a}", times, d[:, 7 + k], "linear") for k, a in enumerate("xyz")]
    try:
        return Clip.build(fig, tracks, name=name, duration=float(times[-1]) if F else 0.0, fps=fps)
    except AnimkitError as exc:
        raise ParseError(src, f"animation stack {name!r}: {exc}") from None


def _meshes(p: Path, fig: Figure, names: list[str], m: int, entry: dict[str, Any],
            arrays: dict[str, NDArray[Any]]) -> list[Mesh]:
    src = str(p)
    P = arrays[f"mesh{m}_positions"].astype(np.float64)
    V = P.shape[0]
    faces = arrays[f"mesh{m}_faces"].astype(np.intp)
    if faces.size and (faces.min() < 0 or faces.max() >= V):
        raise ParseError(src, f"mesh {entry['name']!r}: a face indexes past its {V} corners")
    normals = arrays[f"mesh{m}_normals"].astype(np.float64)
    if normals.shape != (V, 3):
        normals = vertex_normals(P, faces)
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.where(length > 1e-12, normals / np.where(length > 1e-12, length, 1.0), (0.0, 0.0, 1.0))
    raw_uvs = arrays[f"mesh{m}_uvs"].astype(np.float64)
    uvs = np.column_stack([raw_uvs[:, 0], 1.0 - raw_uvs[:, 1]]) if raw_uvs.shape == (V, 2) else None  # FBX: v up
    if not (np.isfinite(P).all() and np.isfinite(normals).all() and (uvs is None or np.isfinite(uvs).all())):
        raise ParseError(src, f"mesh {entry['name']!r} has coordinates that are not finite")
    node = names[entry["node"] - 1]
    index = {nm: k for k, nm in enumerate(fig.node_names)}
    skin = joints = weights = None
    if "skin" in entry:
        bones = entry["skin"]["bones"]
        if any(b < 1 for b in bones):
            raise ParseError(src, f"mesh {entry['name']!r}: a skin cluster has no bone")
        jn = tuple(names[b - 1] for b in bones)
        if len(set(jn)) != len(jn):
            raise ParseError(src, f"mesh {entry['name']!r}: two skin clusters on one bone")
        ibm = arrays[f"mesh{m}_ibm"].astype(np.float64)
        if not np.isfinite(ibm).all():
            raise ParseError(src, f"mesh {entry['name']!r}: a skin cluster's bind matrix is not finite")
        skin = Skin(entry["skin"]["name"] or entry["name"], jn, ibm, np.array([index[j] for j in jn], dtype=np.intp))
        joints = arrays[f"mesh{m}_joints"].astype(np.intp)
        w = arrays[f"mesh{m}_weights"].astype(np.float64)
        if joints.shape[0] != V or (joints.size and (joints.min() < 0 or joints.max() >= max(len(jn), 1))):
            raise ParseError(src, f"mesh {entry['name']!r}: skin weights name joints the skin does not have")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ParseError(src, f"mesh {entry['name']!r}: skin weights must be finite and not negative")
        unweighted = w.sum(axis=1) <= 0
        if unweighted.any():  # a vertex no cluster holds follows the mesh's node (three.js: weight on bone 0)
            w = w.copy()
            w[unweighted, 0] = 1.0
        weights = normalized_weights(w)
        if entry.get("dropped_influences"):
            warnings.warn(f"{src}: mesh {entry['name']!r} has vertices with more than 8 skin influences; the "
                          "smallest were dropped", stacklevel=4)
    # one vertex per distinct (control point, normal, UV) instead of one per polygon corner
    corners = arrays[f"mesh{m}_corners"].astype(np.float64).reshape(-1, 1)
    if corners.shape[0] == V and V:
        key = np.hstack([corners, normals, uvs if uvs is not None else np.zeros((V, 0))])
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        faces = inverse.reshape(-1)[faces]
        P, normals = P[first], normals[first]
        uvs = None if uvs is None else uvs[first]
        if joints is not None and weights is not None:
            joints, weights = joints[first], weights[first]
    materials = entry["materials"] or [{"name": "", "color": [1.0, 1.0, 1.0, 1.0]}]
    face_mat = arrays[f"mesh{m}_face_material"].astype(np.intp)
    out = []
    used = sorted(set(face_mat.tolist())) or [0]
    for k in used:
        mat = materials[k] if 0 <= k < len(materials) else materials[0]
        sel = faces[face_mat == k] if face_mat.shape[0] == faces.shape[0] else faces
        keep, remap = np.unique(sel, return_inverse=True)
        sub = remap.reshape(-1, 3).astype(np.intp)
        name = entry["name"] if len(used) == 1 else f"{entry['name']}.{k}"
        color = np.array((list(mat["color"]) + [1.0] * 4)[:4], dtype=np.float64)
        texture = _texture(p, entry["name"], mat.get("texture"))
        out.append(Mesh(name, node, index[node], sub, P[keep], normals[keep], None if uvs is None else uvs[keep],
                        color, texture if uvs is not None else None, skin,
                        None if joints is None else joints[keep], None if weights is None else weights[keep]))
    return out


def _texture(p: Path, mesh: str, tex: dict[str, Any] | None) -> NDArray[np.uint8] | None:
    if tex is None:
        return None
    src = str(p)
    what = f"mesh {mesh!r}: diffuse texture"

    def fail(message: str) -> ParseError:
        return ParseError(src, f"{what}: {message}")

    if tex.get("embedded"):
        data = bytes.fromhex(tex["content_hex"])
    else:
        ref = tex["relative"] or tex["filename"]
        if not ref:
            return None
        try:
            data = read_referenced(p, ref.replace("\\", "/"), what=what)
        except ParseError as exc:
            if not exc.message.endswith("file not found"):
                raise
            warnings.warn(f"{exc}; the mesh is drawn without it", stacklevel=5)
            return None
    arr = decode_image(data, fail)
    arr.setflags(write=False)
    return arr
