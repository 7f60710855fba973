"""File formats behind one ``load`` and one ``save``, dispatched on the suffix.

``.toml`` scene files (toml_scene), ``.bvh`` motion capture (bvh), ``.urdf`` robot
descriptions (urdf), ``.gltf`` / ``.glb`` characters (read by gltf, written by gltf_write, both on the
byte layer ``gltf_bytes``), ``.fbx`` characters and animations (read by fbx through ufbx, in a child process).
Each format module is imported only when used. :data:`FORMATS` says, per suffix,
whether the file is text or binary and whether animkit reads and writes it; every write goes through
:func:`~animkit.atomic.atomic_path` as bytes. A file that another file refers to (a base scene, a mesh, a glTF
buffer or image) is checked by :func:`referenced_file` / read by :func:`read_referenced`: a regular file inside the
referring file's folder tree (or a folder allowed with :func:`allow_roots`), size-capped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from animkit.atomic import atomic_path
from animkit.errors import AnimkitError, ParseError, unknown_name
from animkit.io._refs import allow_roots, read_referenced, referenced_file

if TYPE_CHECKING:
    from animkit.keyframes import Clip
    from animkit.model.figure import Figure
    from animkit.scene import Scene

__all__ = ["load", "save", "atomic_path", "allow_roots", "referenced_file", "read_referenced", "Format", "FORMATS",
           "LOADERS", "SAVERS", "SAVE_OPTIONS"]


@dataclass(frozen=True)
class Format:
    """One file format, as a registry entry (trimesh's loaders are the model): ``encoding`` text (UTF-8) or binary;
    ``reader``, ``module:function`` in :mod:`animkit.io` that reads a path into a Scene; ``writer``, one that
    encodes (path, scene, clips, options) into the files to write, [(path, bytes)], dependencies first; ``check``,
    one that reads those bytes back in memory (raising what :func:`load` would). Modules are imported when used."""

    name: str
    encoding: Literal["text", "binary"]
    reader: str | None
    writer: str | None = None
    check: str | None = None

    @property
    def reads(self) -> bool:
        return self.reader is not None

    @property
    def writes(self) -> bool:
        return self.writer is not None

    def function(self, role: Literal["reader", "writer", "check"]) -> Any:
        """The registered reader, writer or check, imported now."""
        ref = getattr(self, role)
        if ref is None:
            raise AnimkitError(f"animkit has no {role} for {self.name}")
        module, name = ref.split(":")
        return getattr(import_module(f"{__name__}.{module}"), name)


FORMATS: dict[str, Format] = {
    ".toml": Format("animkit scene (TOML)", "text", "toml_scene:read_toml_scene", "toml_scene:toml_files",
                    "toml_scene:check_toml_files"),
    ".bvh": Format("BVH motion capture", "text", "bvh:read_bvh", "bvh:bvh_files", "bvh:check_bvh_files"),
    ".urdf": Format("URDF robot", "text", "urdf:read_urdf"),
    ".gltf": Format("glTF 2.0 (JSON, .bin beside it or embedded)", "text", "gltf:read_gltf", "gltf_write:gltf_files",
                    "gltf:check_gltf_files"),
    ".glb": Format("glTF 2.0 binary", "binary", "gltf:read_gltf", "gltf_write:gltf_files", "gltf:check_gltf_files"),
    ".fbx": Format("FBX 6.1-7.7, binary or ASCII (read through ufbx: pip install 'animkit[fbx]')", "binary",
                   "fbx:read_fbx"),
}
LOADERS = tuple(k for k, f in FORMATS.items() if f.reads)
SAVERS = tuple(k for k, f in FORMATS.items() if f.writes)
#: the options each writer takes (save(..., **options)); others are refused by name
SAVE_OPTIONS: dict[str, tuple[str, ...]] = {".glb": ("keys",), ".gltf": ("buffers", "keys"), ".toml": (),
                                            ".bvh": ("frame_time", "precision")}


def load(path: str | os.PathLike[str], *, scene: int | None = None) -> Scene:
    """Read a scene (figure, chains, effectors, camera, clips, meshes) from a ``.toml``, ``.bvh``, ``.urdf``,
    ``.gltf``, ``.glb`` or ``.fbx`` file; ``scene`` picks a glTF file's scene (default: the file's own default)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in LOADERS:
        raise ParseError(str(p), unknown_name("file type", suffix or "(no suffix)", LOADERS))
    if not p.is_file():
        raise ParseError(str(p), "file not found" if not p.exists() else "not a regular file")
    fmt = FORMATS[suffix]
    if suffix in (".gltf", ".glb"):
        return fmt.function("reader")(p, scene=scene)
    if scene is not None:
        raise ParseError(str(p), f"scene={scene} was given, but only glTF files hold several scenes")
    return fmt.function("reader")(p)


def save(path: str | os.PathLike[str], scene_or_figure: Scene | Figure, clip: Clip | Sequence[Clip] | None = None,
         **options: Any) -> Path:
    """Write a figure (or scene) and clips to ``.toml``, ``.bvh``, ``.glb`` or ``.gltf``, atomically.

    ``clip``: one clip, several, or None. TOML writes the scene's clips and these; BVH holds exactly
    one (the given one, else the scene's first); glTF writes the given clips as its animations, or the
    scene's clips when none is given. glTF options: ``buffers="external"`` (a ``.bin`` beside a
    ``.gltf``) or ``"embedded"`` (a data URI); ``keys="auto"`` (exact keys, CUBICSPLINE where that is what
    reproduces the clip) or ``"linear"`` (no CUBICSPLINE: resampled at the frames with LINEAR keys, for importers
    that mishandle cubic keys). Returns ``path``.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SAVERS:
        raise AnimkitError(unknown_name("output file type", suffix or "(no suffix)", SAVERS))
    from animkit.scene import Scene

    scene = scene_or_figure if isinstance(scene_or_figure, Scene) else Scene(scene_or_figure)
    given = [] if clip is None else list(clip) if isinstance(clip, Sequence) else [clip]
    fmt = FORMATS[suffix]
    allowed = SAVE_OPTIONS.get(suffix, ())
    if "keys" in options and suffix not in (".glb", ".gltf"):
        raise AnimkitError(f"{p}: keys= (how clip keys are written) applies to .glb/.gltf output, not {suffix}")
    if set(options) - set(allowed):
        bad = sorted(set(options) - set(allowed))[0]
        raise AnimkitError(f"{p}: " + unknown_name(f"{suffix} save option", bad, allowed or ["(none)"]))
    old_bin = None
    if suffix == ".gltf" and options.get("buffers", "external") == "external":
        # a new set under new names: the .bin the old .gltf does not use, so the old pair stays whole
        # until the .gltf itself is replaced (one rename: the switch)
        old_bin = _bin_of(p)
        options = dict(options, bin_name=f"{p.stem}.1.bin" if old_bin == f"{p.stem}.bin" else f"{p.stem}.bin")
    if suffix in (".glb", ".gltf"):
        _check_invertible_rest(p, scene.figure)
    files: list[tuple[Path, bytes]] = fmt.function("writer")(p, scene, given, **options)
    _read_back(p, fmt, files)
    written: list[Path] = []
    try:
        for target, data in files:  # dependencies first: the file that names them last (the switch)
            try:
                with atomic_path(target) as tmp:
                    tmp.write_bytes(data)
            except OSError as exc:
                raise AnimkitError(f"{target}: cannot write the file ({exc.strerror or exc})") from None
            written.append(target)
    except BaseException:
        for target in written:  # a new .bin no file refers to yet (the old .gltf names the other one)
            if target != p:
                target.unlink(missing_ok=True)
        raise
    if old_bin is not None and old_bin in (f"{p.stem}.bin", f"{p.stem}.1.bin") and \
            all(target.name != old_bin for target, _ in files):
        (p.parent / old_bin).unlink(missing_ok=True)  # the old set's buffer, which nothing names now
    return p


def _check_invertible_rest(path: Path, figure: Figure) -> None:
    """glTF stores a skin's inverse bind matrices, (M_node at rest)⁻¹: every node's rest world matrix must be finite
    and invertible, |det M[:3, :3]| > 1e-12 (a zero scale, a scale DOF resting at 0, is not)."""
    import numpy as np

    W = figure.world_batch(figure.rest_pose()[None])[0]
    with np.errstate(all="ignore"):
        det = np.linalg.det(W[:, :3, :3]) if np.isfinite(W).all() else np.full(len(W), np.nan)
    bad = np.flatnonzero(~(np.abs(det) > 1e-12))
    if bad.size:
        node = figure.node_names[int(bad[0])]
        raise AnimkitError(f"{path}: not written: node {node!r} has a degenerate transform at rest (det "
                           f"{det[bad[0]]:.3g}: a zero or non-finite scale), which a glTF file cannot hold; give it "
                           f"a non-zero scale")


def _bin_of(path: Path) -> str | None:
    """The external buffer an existing ``.gltf`` names (its first buffer's relative URI), or None."""
    import json

    try:
        if not path.is_file() or path.stat().st_size > 64 * 1024 * 1024:
            return None
        uri = json.loads(path.read_bytes())["buffers"][0]["uri"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return uri if isinstance(uri, str) and "/" not in uri and not uri.startswith("data:") else None


def _read_back(path: Path, fmt: Format, files: list[tuple[Path, bytes]]) -> None:
    """Read what :func:`save` is about to write, in memory, as :func:`load` would (the format's ``check``): a file
    animkit cannot read back (a degenerate scale, a value past a limit) is refused before anything is written."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fmt.function("check")(path, files)
    except AnimkitError as exc:
        raise AnimkitError(f"{path}: not written: animkit could not read the file back ({exc})") from None
