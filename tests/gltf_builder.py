"""A small glTF writer for tests: JSON + one binary buffer, written as .glb, .gltf with data: URIs, or .gltf
with an external .bin. Written from the specification (sections 5.1–5.3: buffers, views, accessors; 4.4 GLB),
independently of animkit's reader, so the reader is checked against it rather than against itself."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

CTYPE = {np.dtype("int8"): 5120, np.dtype("uint8"): 5121, np.dtype("int16"): 5122, np.dtype("uint16"): 5123,
         np.dtype("uint32"): 5125, np.dtype("float32"): 5126}
TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}


class Builder:
    def __init__(self) -> None:
        self.json: dict[str, Any] = {"asset": {"version": "2.0", "generator": "animkit tests"}, "buffers": [],
                                     "bufferViews": [], "accessors": [], "nodes": [], "scenes": [], "scene": 0}
        self.bin = bytearray()

    def _pad(self) -> None:
        while len(self.bin) % 4:
            self.bin.append(0)

    def view(self, data: bytes, stride: int | None = None) -> int:
        self._pad()
        v: dict[str, Any] = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if stride is not None:
            v["byteStride"] = stride
        self.bin += data
        self.json["bufferViews"].append(v)
        return len(self.json["bufferViews"]) - 1

    def accessor(self, array: Any, dtype: str = "float32", *, normalized: bool = False, minmax: bool = False
                 ) -> int:
        a = np.asarray(array)
        a = a.reshape(a.shape[0], -1).astype(dtype)
        acc: dict[str, Any] = {"bufferView": self.view(a.tobytes()), "componentType": CTYPE[a.dtype],
                               "count": a.shape[0], "type": TYPE[a.shape[1]]}
        if normalized:
            acc["normalized"] = True
        if minmax:
            acc["min"] = a.min(axis=0).tolist()
            acc["max"] = a.max(axis=0).tolist()
        self.json["accessors"].append(acc)
        return len(self.json["accessors"]) - 1

    def interleaved(self, arrays: list[np.ndarray]) -> list[int]:
        """Float32 arrays (V, c_i) in one view with byteStride = Σ 4 c_i; one accessor each."""
        V = arrays[0].shape[0]
        widths = [a.shape[1] for a in arrays]
        stride = 4 * sum(widths)
        block = np.concatenate([a.astype("float32") for a in arrays], axis=1)
        view = self.view(block.tobytes(), stride=stride)
        out, off = [], 0
        for w in widths:
            self.json["accessors"].append({"bufferView": view, "byteOffset": off, "componentType": 5126,
                                           "count": V, "type": TYPE[w]})
            out.append(len(self.json["accessors"]) - 1)
            off += 4 * w
        return out

    def node(self, **fields: Any) -> int:
        self.json["nodes"].append({k: v for k, v in fields.items() if v is not None})
        return len(self.json["nodes"]) - 1

    def add(self, key: str, value: dict[str, Any]) -> int:
        self.json.setdefault(key, []).append(value)
        return len(self.json[key]) - 1

    def _finish(self, uri: str | None) -> dict[str, Any]:
        self._pad()
        doc = json.loads(json.dumps(self.json))
        if self.bin:
            doc["buffers"] = [{"byteLength": len(self.bin)} | ({"uri": uri} if uri else {})]
        else:
            doc.pop("buffers")
            doc.pop("bufferViews")
        return doc

    def glb(self) -> bytes:
        doc = self._finish(None)
        js = json.dumps(doc).encode()
        js += b" " * (-len(js) % 4)
        chunks = struct.pack("<II", len(js), 0x4E4F534A) + js
        if self.bin:
            chunks += struct.pack("<II", len(self.bin), 0x004E4942) + bytes(self.bin)
        return struct.pack("<III", 0x46546C67, 2, 12 + len(chunks)) + chunks

    def gltf_data_uri(self) -> str:
        uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(self.bin)).decode()
        return json.dumps(self._finish(uri))

    def write(self, path: Path, kind: str = "glb") -> Path:
        """Write as ``glb``, ``data`` (.gltf, data: URI) or ``bin`` (.gltf + external ``<stem>.bin``)."""
        if kind == "glb":
            path.write_bytes(self.glb())
        elif kind == "data":
            path.write_text(self.gltf_data_uri())
        else:
            bin_name = path.stem + ".bin"
            (path.parent / bin_name).write_bytes(bytes(self.bin))
            path.write_text(json.dumps(self._finish(bin_name)))
        return path


def gltf_text_from_glb(data: bytes, *, drop_images: bool = True) -> str:
    """A .glb's JSON as .gltf text with its BIN chunk as a data: URI (for three.js under Node, which cannot
    decode images without a DOM: images, textures and base colour textures are dropped)."""
    (jlen,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + jlen])
    at = 20 + jlen
    blen = struct.unpack_from("<I", data, at)[0]
    binary = data[at + 8:at + 8 + blen]
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(binary).decode()
    if drop_images:
        doc.pop("images", None)
        doc.pop("textures", None)
        for m in doc.get("materials", []):
            m.get("pbrMetallicRoughness", {}).pop("baseColorTexture", None)
    return json.dumps(doc)
