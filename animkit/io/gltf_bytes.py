"""glTF 2.0 at the byte level: the GLB container, buffers, buffer views and accessors, every size checked
against the bytes that are really there *before* anything is allocated.

    element i of an accessor = bytes [o + i·s, o + i·s + e) of its buffer view,
    o = view.byteOffset + accessor.byteOffset, s = view.byteStride or e, e = element size

Errors are :class:`~animkit.errors.ParseError` naming the file and the JSON pointer of the offending
value (``/accessors/12/count``). Nothing here reads outside the file's own folder or fetches anything:
a buffer or image URI is a ``data:`` URI or a relative path that stays inside the folder.

:class:`GltfDocument` is what the reader (``io/gltf.py``) and the writer build on; encoding helpers for
the writer belong here too (one home for the component-type tables).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import unquote, unquote_to_bytes

import numpy as np
from numpy.typing import NDArray

from animkit import limits
from animkit.errors import ParseError
from animkit.io._refs import read_referenced

__all__ = [
    "GLB_MAGIC",
    "CHUNK_JSON",
    "CHUNK_BIN",
    "COMPONENT_DTYPES",
    "TYPE_COMPONENTS",
    "MAX_ALLOCATION",
    "GltfDocument",
    "document_from_path",
    "document_from_bytes",
    "json_from_glb",
    "pointer",
    "BinaryBuilder",
    "glb_bytes",
    "ARRAY_BUFFER",
    "ELEMENT_ARRAY_BUFFER",
]

GLB_MAGIC: Final = 0x46546C67  # b"glTF"
CHUNK_JSON: Final = 0x4E4F534A  # b"JSON"
CHUNK_BIN: Final = 0x004E4942  # b"BIN\0"
#: componentType → little-endian dtype
COMPONENT_DTYPES: Final[dict[int, np.dtype]] = {
    5120: np.dtype("<i1"), 5121: np.dtype("<u1"), 5122: np.dtype("<i2"),
    5123: np.dtype("<u2"), 5125: np.dtype("<u4"), 5126: np.dtype("<f4"),
}
#: accessor type → (rows, columns) of one element (columns > 1 for matrices, stored column-major)
TYPE_COMPONENTS: Final[dict[str, tuple[int, int]]] = {
    "SCALAR": (1, 1), "VEC2": (2, 1), "VEC3": (3, 1), "VEC4": (4, 1),
    "MAT2": (2, 2), "MAT3": (3, 3), "MAT4": (4, 4),
}
#: the most bytes one accessor or one zero-filled array may need (a file asking for more is refused)
MAX_ALLOCATION: Final = 1 << 30
_SUPPORTED_EXTENSIONS: Final = frozenset({"KHR_materials_unlit"})  # base colour is all animkit reads of a material

T = TypeVar("T")


def pointer(*parts: str | int) -> str:
    """The JSON pointer ``/a/0/b`` of a path (RFC 6901: ``~`` → ``~0``, ``/`` → ``~1``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def json_from_glb(data: bytes, path: str) -> tuple[dict[str, Any], bytes | None]:
    """(JSON, BIN chunk or None) of a GLB: a 12-byte header (magic, version 2, length), then chunks of
    (length, type, data), JSON first; every length checked against the bytes there."""
    n = len(data)
    if n < 12:
        raise ParseError(path, f"truncated GLB: {n} bytes, expected at least a 12-byte header")
    magic, version, length = struct.unpack_from("<III", data, 0)
    if magic != GLB_MAGIC:
        raise ParseError(path, f"not a GLB file: magic {data[:4]!r}, expected b'glTF'")
    if version != 2:
        raise ParseError(path, f"GLB version {version}; expected 2 (glTF 2.0)")
    if length != n:
        raise ParseError(path, f"GLB header says {length} bytes but the file has {n}: truncated or corrupt")
    chunks: list[tuple[int, bytes]] = []
    at = 12
    while at < n:
        if n - at < 8:
            raise ParseError(path, f"GLB chunk header at byte {at} is cut off ({n - at} bytes left, expected 8)")
        clen, ctype = struct.unpack_from("<II", data, at)
        if clen > n - at - 8:
            raise ParseError(path, f"GLB chunk #{len(chunks)} at byte {at} says {clen} bytes but only "
                                   f"{n - at - 8} follow: truncated or corrupt")
        if clen % 4:
            raise ParseError(path, f"GLB chunk #{len(chunks)} length {clen} is not a multiple of 4")
        chunks.append((ctype, data[at + 8:at + 8 + clen]))
        at += 8 + clen
    if not chunks or chunks[0][0] != CHUNK_JSON:
        raise ParseError(path, "GLB: the first chunk must be the JSON chunk")
    doc = _parse_json(chunks[0][1], path)
    bin_chunk = None
    if len(chunks) > 1 and chunks[1][0] == CHUNK_BIN:
        bin_chunk = chunks[1][1]
    for ctype, _ in chunks[1:]:
        if ctype == CHUNK_JSON:
            raise ParseError(path, "GLB: more than one JSON chunk")
    if sum(1 for ctype, _ in chunks if ctype == CHUNK_BIN) > 1:
        raise ParseError(path, "GLB: more than one BIN chunk")
    return doc, bin_chunk


def _parse_json(raw: bytes, path: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(path, f"the glTF JSON is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    text = text.lstrip("\ufeff").rstrip(" \x00")  # a BOM; GLB pads the JSON chunk with spaces
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(path, f"the glTF JSON is not JSON: {exc.msg}", line=exc.lineno) from None
    except (RecursionError, ValueError) as exc:
        raise ParseError(path, f"the glTF JSON cannot be read: {exc}") from None
    if not isinstance(doc, dict):
        raise ParseError(path, f"the glTF JSON must be an object, got {type(doc).__name__}")
    return doc


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


class GltfDocument:
    """A parsed glTF: its JSON, its buffers (read on first use) and checked access to both.

    ``base`` is the folder relative URIs resolve in (None: only ``data:`` URIs and the GLB BIN chunk).
    """

    def __init__(self, path: str, doc: dict[str, Any], *, base: Path | None, bin_chunk: bytes | None = None
                 ) -> None:
        self.path = path
        self.json = doc
        self.base = base
        self.bin_chunk = bin_chunk
        self._buffers: dict[int, bytes] = {}
        self._accessors: dict[tuple[int, bool], NDArray[Any]] = {}
        #: bytes of accessor arrays handed out so far, every use counted (see :meth:`charge`)
        self.decoded = 0
        self._check_asset()

    # --- errors and typed access ------------------------------------------------------------------------

    def error(self, where: str, message: str) -> ParseError:
        """A ParseError for the value at JSON pointer ``where``."""
        return ParseError(self.path, message, key=where or "/")

    def items(self, name: str) -> list[Any]:
        """The top-level array ``name`` (``[]`` when absent)."""
        v = self.json.get(name, [])
        if not isinstance(v, list):
            raise self.error(pointer(name), f"expected an array, got {type(v).__name__}")
        return v

    def obj(self, name: str, index: int, where: str | None = None) -> dict[str, Any]:
        """``/name/index``, which must exist and be an object (``where`` names the reference)."""
        arr = self.items(name)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(arr):
            raise self.error(where or pointer(name, str(index)),
                             f"{index!r} is not an index into {name} (it has {len(arr)})")
        o = arr[index]
        if not isinstance(o, dict):
            raise self.error(pointer(name, index), f"expected an object, got {type(o).__name__}")
        return o

    def field(self, o: dict[str, Any], key: str, where: str, kind: type[T] | tuple[type, ...],
              default: Any = ..., check: Callable[[Any], bool] | None = None, expected: str = "") -> Any:
        """``o[key]`` of type ``kind`` (bool is not an int; int is a float), or ``default`` when absent."""
        if key not in o:
            if default is ...:
                raise self.error(where, f"missing required property {key!r}")
            return default
        v = o[key]
        at = f"{where}/{key}"
        kinds = kind if isinstance(kind, tuple) else (kind,)
        ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)
        if not ok and float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
            ok = True
        if ok and isinstance(v, float) and not math.isfinite(v):
            ok = False
        if not ok or (check is not None and not check(v)):
            names = "/".join(k.__name__ for k in kinds)
            raise self.error(at, f"expected {expected or names}, got {v!r}"[:300])
        return v

    def index(self, o: dict[str, Any], key: str, where: str, target: str, default: Any = ...) -> Any:
        """``o[key]``, an index into the top-level array ``target``."""
        n = len(self.items(target))
        return self.field(o, key, where, int, default, lambda v: 0 <= v < n,
                          f"an index into {target} (0 to {n - 1})" if n else f"an index into {target} (it is empty)")

    def numbers(self, o: dict[str, Any], key: str, where: str, count: int, default: Any = ...) -> Any:
        """``o[key]``, an array of ``count`` finite numbers, as float64 (or ``default``)."""
        if key not in o:
            if default is ...:
                raise self.error(where, f"missing required property {key!r}")
            return default
        v = o[key]
        ok = (isinstance(v, list) and len(v) == count
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v))
        if not ok:
            raise self.error(f"{where}/{key}", f"expected an array of {count} finite numbers, got {v!r}"[:300])
        return np.array(v, dtype=float)

    def charge(self, nbytes: int, where: str) -> None:
        """Count ``nbytes`` more decoded bytes for the value at ``where``: past
        :data:`animkit.limits.MAX_DECODED_BYTES` in all, a ParseError (before the caller allocates them)."""
        if self.decoded + nbytes > limits.MAX_DECODED_BYTES:
            raise self.error(where, f"decoding this needs {nbytes:,} more bytes ({self.decoded + nbytes:,} in all); "
                                    f"the limit is {limits.MAX_DECODED_BYTES:,} "
                                    "(animkit.limits.MAX_DECODED_BYTES)")
        self.decoded += nbytes

    def _check_asset(self) -> None:
        asset = self.json.get("asset")
        if not isinstance(asset, dict):
            raise self.error("/asset", "missing or not an object: a glTF file must have an asset with a version")
        version = self.field(asset, "version", "/asset", str)
        major = version.split(".", 1)[0]
        if major != "2":
            raise self.error("/asset/version", f"glTF version {version!r}; expected 2.x")
        required = self.json.get("extensionsRequired", [])
        if not isinstance(required, list) or not all(isinstance(x, str) for x in required):
            raise self.error("/extensionsRequired", "expected an array of extension names")
        unknown = [x for x in required if x not in _SUPPORTED_EXTENSIONS]
        if unknown:
            i = required.index(unknown[0])
            raise self.error(pointer("extensionsRequired", i),
                             f"the file requires extension {', '.join(unknown)}, which animkit cannot read "
                             f"(supported: {', '.join(sorted(_SUPPORTED_EXTENSIONS))})")

    # --- buffers ----------------------------------------------------------------------------------------

    def buffer(self, index: int, where: str | None = None) -> bytes:
        """The bytes of buffer ``index``: the GLB BIN chunk, a ``data:`` URI or a file in the folder."""
        if index in self._buffers:
            return self._buffers[index]
        o = self.obj("buffers", index, where)
        at = pointer("buffers", index)
        length = self.field(o, "byteLength", at, int, check=lambda v: v >= 1, expected="an integer >= 1")
        uri = self.field(o, "uri", at, str, None)
        if uri is None:
            if index != 0 or self.bin_chunk is None:
                raise self.error(at, "a buffer without a uri must be buffer 0 of a GLB with a BIN chunk")
            data = self.bin_chunk
            if length > len(data):
                raise self.error(f"{at}/byteLength", f"{length} bytes, but the GLB BIN chunk holds {len(data)}")
        else:
            data = self.bytes_from_uri(uri, f"{at}/uri", length)
            if length > len(data):
                raise self.error(f"{at}/byteLength", f"{length} bytes, but the data at the URI holds {len(data)}")
        data = data[:length]
        self._buffers[index] = data
        return data

    def bytes_from_uri(self, uri: str, where: str, limit: int | None = None) -> bytes:
        """The bytes behind ``uri``: a ``data:`` URI, or a relative path inside the file's folder.

        Any other scheme (``http:``, ``file:``...), an absolute path or a path that leaves the folder
        (``../``) is an error; nothing is fetched and nothing outside the folder is read.
        """
        if uri.startswith("data:"):
            return self._data_uri(uri, where, limit)
        scheme = uri.split(":", 1)[0] if ":" in uri.split("/", 1)[0] else None
        if scheme is not None:
            raise self.error(where, f"URI scheme {scheme + ':'!r} is not allowed; expected a data: URI or a "
                                    "relative path (animkit never fetches)")
        rel = unquote(uri)
        if rel.startswith(("/", "\\")) or Path(rel).is_absolute():
            raise self.error(where, f"absolute path {uri!r}; expected a path relative to the file's folder")
        if self.base is None:
            raise self.error(where, f"external file {uri!r}, but this document has no folder to read it from")
        data = read_referenced(self.path or str(self.base / "<text>"), rel, what="URI", key=where or "/",
                               folder=self.base, limit=limits.MAX_REFERENCED_BYTES)
        return data if limit is None else data[:limit]

    def _data_uri(self, uri: str, where: str, limit: int | None) -> bytes:
        """The payload of a ``data:`` URI, decoded only as far as the first ``limit`` bytes (a buffer's byteLength):

            base64: ⌈limit / 3⌉ · 4 characters;   percent-escaped: chunks of 1 MiB characters until ``limit`` bytes

        so the work and memory are bounded by what is used, however long the URI (percent-decoding a whole URI
        at once makes one object per escape)."""
        head, sep, payload = uri.partition(",")
        if not sep:
            raise self.error(where, "a data: URI needs a ',' before its payload")
        cap = limits.MAX_REFERENCED_BYTES if limit is None else min(limit, limits.MAX_REFERENCED_BYTES)
        if head.endswith(";base64"):
            if len(payload) // 4 * 3 > cap:
                if limit is None:
                    raise self.error(where, f"a data: URI of about {len(payload) // 4 * 3:,} bytes; the limit is "
                                            f"{cap:,} (animkit.limits.MAX_REFERENCED_BYTES)")
                payload = payload[:-(-cap // 3) * 4]
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise self.error(where, f"data: URI is not valid base64 ({exc})") from None
        if not payload.isascii():
            raise self.error(where, "a data: URI must be ASCII (percent-escape other bytes)")
        out: list[bytes] = []
        got, i, step = 0, 0, 1 << 20
        while i < len(payload) and got <= cap:
            j = min(len(payload), i + step)
            cut = payload.rfind("%", max(i, j - 2), j)  # never split an escape between two chunks
            if cut >= 0 and j < len(payload):
                j = cut
            part = unquote_to_bytes(payload[i:j])
            out.append(part)
            got += len(part)
            i = j
        if limit is None and got > cap:
            raise self.error(where, f"a data: URI of more than {cap:,} bytes; the limit is {cap:,} "
                                    "(animkit.limits.MAX_REFERENCED_BYTES)")
        return b"".join(out)

    # --- buffer views and accessors -----------------------------------------------------------------------

    def buffer_view(self, index: int, where: str) -> tuple[bytes, int, int, int | None]:
        """(buffer bytes, byteOffset, byteLength, byteStride or None) of view ``index``, bounds checked."""
        o = self.obj("bufferViews", index, where)
        at = pointer("bufferViews", index)
        b = self.index(o, "buffer", at, "buffers")
        off = self.field(o, "byteOffset", at, int, 0, lambda v: v >= 0, "an integer >= 0")
        length = self.field(o, "byteLength", at, int, check=lambda v: v >= 1, expected="an integer >= 1")
        stride = self.field(o, "byteStride", at, int, None, lambda v: 4 <= v <= 252 and v % 4 == 0,
                            "a multiple of 4 from 4 to 252")
        data = self.buffer(b, f"{at}/buffer")
        if off + length > len(data):
            raise self.error(f"{at}/byteLength", f"the view [{off}, {off + length}) runs past the end of buffer "
                                                 f"{b} ({len(data)} bytes)")
        return data, off, length, stride

    def accessor(self, index: int, where: str | None = None, *, normalize: bool = True) -> NDArray[Any]:
        """Accessor ``index`` as an array (count, rows) or (count, rows, cols) for matrices (row-major in the
        array, column-major in the file), sparse substitution applied.

        Normalized integers become float64 in [0, 1] / [−1, 1] (``c / (2^(b) − 1)``, signed
        ``max(c / (2^(b−1) − 1), −1)``) when ``normalize``; float32 data becomes float64; other integers
        keep their type. Read once per document: the array is read-only and shared by every caller.
        """
        key = (index, normalize) if isinstance(index, int) and not isinstance(index, bool) else None
        if key is not None and key in self._accessors:
            out = self._accessors[key]
            self.charge(out.nbytes, where or pointer("accessors", index))  # every use counts: work done per use
            return out
        out = self._read_accessor(index, where, normalize)
        out.setflags(write=False)
        if key is not None:
            self._accessors[key] = out
        return out

    def _read_accessor(self, index: int, where: str | None, normalize: bool) -> NDArray[Any]:
        o = self.obj("accessors", index, where)
        at = pointer("accessors", index)
        ctype = self.field(o, "componentType", at, int, check=lambda v: v in COMPONENT_DTYPES,
                           expected=f"one of {sorted(COMPONENT_DTYPES)}")
        typ = self.field(o, "type", at, str, check=lambda v: v in TYPE_COMPONENTS,
                         expected=f"one of {', '.join(TYPE_COMPONENTS)}")
        count = self.field(o, "count", at, int, check=lambda v: v >= 1, expected="an integer >= 1")
        normalized = self.field(o, "normalized", at, bool, False)
        if normalized and ctype in (5125, 5126):
            raise self.error(f"{at}/normalized", "only 8- and 16-bit integer accessors may be normalized")
        dt = COMPONENT_DTYPES[ctype]
        rows, cols = TYPE_COMPONENTS[typ]
        col_bytes = rows * dt.itemsize
        if cols > 1:
            col_bytes = (col_bytes + 3) & ~3  # matrix columns start on 4-byte boundaries
        elem = col_bytes * cols
        if count * rows * cols * 8 > MAX_ALLOCATION:
            raise self.error(f"{at}/count", f"{count} elements of {typ} would need "
                                            f"{count * rows * cols * 8} bytes; more than animkit allocates")
        self.charge(count * rows * cols * max(8 if dt.kind == "f" or normalized else dt.itemsize, dt.itemsize),
                    f"{at}/count")
        view = self.field(o, "bufferView", at, int, None)
        if view is not None:
            data, voff, vlen, stride = self.buffer_view(self.index(o, "bufferView", at, "bufferViews"),
                                                        f"{at}/bufferView")
            aoff = self.field(o, "byteOffset", at, int, 0, lambda v: v >= 0, "an integer >= 0")
            if aoff % dt.itemsize:
                raise self.error(f"{at}/byteOffset", f"{aoff} is not a multiple of the component size "
                                                     f"{dt.itemsize}")
            step = elem if stride is None else stride
            if step < elem:
                raise self.error(pointer("bufferViews", view, "byteStride"),
                                 f"stride {step} is smaller than accessor {index}'s element ({elem} bytes)")
            need = aoff + step * (count - 1) + elem
            if need > vlen:
                raise self.error(f"{at}/count", f"{count} elements of {elem} bytes (stride {step}) from offset "
                                                f"{aoff} need {need} bytes, but buffer view {view} has {vlen}")
            start = voff + aoff
            shape: tuple[int, ...] = (count, cols, rows)
            strides: tuple[int, ...] = (step, col_bytes, dt.itemsize)
            raw = np.ndarray(shape, dtype=dt, buffer=data, offset=start, strides=strides)
            arr = np.array(raw)  # copy out of the buffer
        else:
            if o.get("byteOffset", 0) not in (0,):
                raise self.error(f"{at}/byteOffset", "byteOffset without a bufferView")
            arr = np.zeros((count, cols, rows), dtype=dt)
        sparse = o.get("sparse")
        if sparse is not None:
            self._apply_sparse(arr, sparse, f"{at}/sparse", dt, count, cols, rows, col_bytes, elem)
        out = arr.transpose(0, 2, 1) if cols > 1 else arr[:, 0, :]
        if dt.kind == "f":
            out = out.astype(np.float64)
            if not np.all(np.isfinite(out)):
                bad = int(np.argwhere(~np.isfinite(out))[0][0])
                raise self.error(at, f"element {bad} is not finite (NaN or infinity)")
        elif normalized and normalize:
            out = _normalized(out, dt)
        self._check_bounds(o, at, out, normalized and normalize)
        return np.ascontiguousarray(out)

    def _apply_sparse(self, arr: NDArray[Any], sparse: Any, at: str, dt: np.dtype, count: int, cols: int,
                      rows: int, col_bytes: int, elem: int) -> None:
        if not isinstance(sparse, dict):
            raise self.error(at, "expected an object")
        n = self.field(sparse, "count", at, int, check=lambda v: 1 <= v <= count,
                       expected=f"an integer from 1 to the accessor's count {count}")
        ind = self.field(sparse, "indices", at, dict)
        val = self.field(sparse, "values", at, dict)
        iat, vat = f"{at}/indices", f"{at}/values"
        ictype = self.field(ind, "componentType", iat, int, check=lambda v: v in (5121, 5123, 5125),
                            expected="5121, 5123 or 5125 (unsigned integers)")
        idt = COMPONENT_DTYPES[ictype]
        idx = self._view_array(ind, iat, idt, n, (n,), (idt.itemsize,), idt.itemsize).astype(np.int64)
        if np.any(idx >= count):
            bad = int(np.flatnonzero(idx >= count)[0])
            raise self.error(iat, f"sparse index #{bad} is {idx[bad]}, outside the accessor's {count} elements")
        if n > 1 and np.any(np.diff(idx) <= 0):
            raise self.error(iat, "sparse indices must be strictly increasing")
        values = self._view_array(val, vat, dt, n, (n, cols, rows), (elem, col_bytes, dt.itemsize), elem)
        arr[idx] = values

    def _view_array(self, o: dict[str, Any], at: str, dt: np.dtype, n: int, shape: tuple[int, ...],
                    strides: tuple[int, ...], elem: int) -> NDArray[Any]:
        """n tightly packed elements at ``o.bufferView`` + ``o.byteOffset`` (sparse indices and values)."""
        view = self.index(o, "bufferView", at, "bufferViews")
        data, voff, vlen, _ = self.buffer_view(view, f"{at}/bufferView")
        off = self.field(o, "byteOffset", at, int, 0, lambda v: v >= 0, "an integer >= 0")
        if off % dt.itemsize:
            raise self.error(f"{at}/byteOffset", f"{off} is not a multiple of the component size {dt.itemsize}")
        if off + n * elem > vlen:
            raise self.error(at, f"{n} elements of {elem} bytes from offset {off} run past the end of buffer "
                                 f"view {view} ({vlen} bytes)")
        return np.array(np.ndarray(shape, dtype=dt, buffer=data, offset=voff + off, strides=strides))

    def _check_bounds(self, o: dict[str, Any], at: str, out: NDArray[Any], normalized: bool) -> None:
        """min/max, when present, must have one number per component (their values are not trusted)."""
        n = int(np.prod(out.shape[1:]))
        for key in ("min", "max"):
            if key in o:
                self.numbers(o, key, at, n)

    # --- images -----------------------------------------------------------------------------------------------

    def image_bytes(self, index: int, where: str) -> bytes:
        """The encoded bytes of image ``index`` (its URI, or its buffer view)."""
        o = self.obj("images", index, where)
        at = pointer("images", index)
        uri = self.field(o, "uri", at, str, None)
        if uri is not None:
            return self.bytes_from_uri(uri, f"{at}/uri")
        view = self.index(o, "bufferView", at, "bufferViews")
        data, off, length, _ = self.buffer_view(view, f"{at}/bufferView")
        return data[off:off + length]


def _normalized(a: NDArray[Any], dt: np.dtype) -> NDArray[np.float64]:
    """Normalized integers → float: unsigned c / (2ᵇ − 1); signed max(c / (2ᵇ⁻¹ − 1), −1)."""
    info = np.iinfo(dt)
    if info.min < 0:
        return np.maximum(a.astype(np.float64) / info.max, -1.0)
    return a.astype(np.float64) / info.max


def document_from_bytes(data: bytes, path: str, base: Path | None = None) -> GltfDocument:
    """A document from the bytes of a ``.glb`` (magic ``glTF``) or a ``.gltf`` (JSON text)."""
    if data[:4] == b"glTF":
        doc, bin_chunk = json_from_glb(data, path)
        return GltfDocument(path, doc, base=base, bin_chunk=bin_chunk)
    return GltfDocument(path, _parse_json(data, path), base=base)


def document_from_path(path: str | Path) -> GltfDocument:
    """Read ``path`` (``.gltf`` or ``.glb``); external URIs resolve in its folder."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limits.MAX_REFERENCED_BYTES:
            raise ParseError(str(p), f"{size:,} bytes; the limit for a glTF file is {limits.MAX_REFERENCED_BYTES:,} "
                                     "(animkit.limits.MAX_REFERENCED_BYTES)")
        data = p.read_bytes()
    except OSError as exc:
        raise ParseError(str(p), f"cannot read: {exc.strerror}") from None
    return document_from_bytes(data, str(p), p.parent)


# --- encoding (the writer's side): accessors, buffer views, the GLB container -------------------------------------

ARRAY_BUFFER: Final = 34962
ELEMENT_ARRAY_BUFFER: Final = 34963
#: little-endian dtype → componentType (the inverse of COMPONENT_DTYPES)
DTYPE_COMPONENTS: Final[dict[np.dtype, int]] = {dt: code for code, dt in COMPONENT_DTYPES.items()}


class BinaryBuilder:
    """One binary buffer under construction: each array becomes a 4-byte-aligned buffer view and an accessor."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._length = 0
        self.buffer_views: list[dict[str, Any]] = []
        self.accessors: list[dict[str, Any]] = []

    def accessor(self, array: NDArray[Any], kind: str, *, target: int | None = None, bounds: bool = False,
                 name: str | None = None) -> int:
        """Append ``array`` (count, components) or (count, 4, 4) as one accessor of ``kind``; its index.

        Matrices are written column-major, as glTF stores MAT4. ``bounds`` writes min/max (required for
        POSITION and animation inputs).
        """
        a = np.asarray(array)
        dt = a.dtype.newbyteorder("<")
        if dt not in DTYPE_COMPONENTS:  # pragma: no cover - the writer passes only these
            raise ValueError(f"glTF accessor {name or ''}: unsupported dtype {a.dtype}")
        count = a.shape[0]
        flat = np.swapaxes(a, -1, -2).reshape(count, -1) if kind == "MAT4" else a.reshape(count, -1)
        data = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
        acc: dict[str, Any] = {"bufferView": self.view(data, target), "componentType": DTYPE_COMPONENTS[dt],
                               "count": int(count), "type": kind}
        if bounds:
            acc["min"] = [_number(x) for x in flat.min(axis=0)]
            acc["max"] = [_number(x) for x in flat.max(axis=0)]
        if name:
            acc["name"] = name
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def view(self, data: bytes, target: int | None = None) -> int:
        """Append ``data`` as one buffer view (padded to 4 bytes after it); its index."""
        view: dict[str, Any] = {"buffer": 0, "byteOffset": self._length, "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        self._parts.append(data)
        self._length += len(data)
        pad = (-self._length) % 4
        if pad:
            self._parts.append(b"\0" * pad)
            self._length += pad
        self.buffer_views.append(view)
        return len(self.buffer_views) - 1

    def data(self) -> bytes:
        return b"".join(self._parts)


def _number(x: Any) -> float | int:
    return int(x) if isinstance(x, (np.integer, int)) else float(x)


def glb_bytes(document: dict[str, Any], binary: bytes) -> bytes:
    """A GLB: 12-byte header (magic, version 2, length), the JSON chunk (space-padded to 4 bytes), the BIN
    chunk (zero-padded), each chunk as (length, type, data)."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((-len(text)) % 4)
    out = [struct.pack("<II", len(text), CHUNK_JSON), text]
    if binary:
        binary = binary + b"\0" * ((-len(binary)) % 4)
        out += [struct.pack("<II", len(binary), CHUNK_BIN), binary]
    body = b"".join(out)
    return struct.pack("<III", GLB_MAGIC, 2, 12 + len(body)) + body
