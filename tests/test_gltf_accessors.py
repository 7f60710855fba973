"""The byte layer (animkit.io.gltf_bytes) against bytes laid out by hand from the specification (3.6.2 accessors:
component types, normalized integers, matrix column alignment, byteStride, sparse substitution)."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

from animkit.errors import ParseError
from animkit.io.gltf_bytes import document_from_bytes, json_from_glb, pointer


def _doc(blob: bytes, accessors: list[dict], views: list[dict]) -> bytes:
    uri = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
    return json.dumps({"asset": {"version": "2.0"}, "buffers": [{"byteLength": len(blob), "uri": uri}],
                       "bufferViews": views, "accessors": accessors}).encode()


@pytest.mark.parametrize("ctype, fmt, values, normalized, expect", [
    (5120, "b", [-128, -127, 0, 127], True, [-1.0, -1.0, 0.0, 1.0]),  # signed: max(c / 127, −1)
    (5121, "B", [0, 51, 255, 1], True, [0.0, 0.2, 1.0, 1 / 255]),
    (5122, "h", [-32768, -32767, 16384, 32767], True, [-1.0, -1.0, 16384 / 32767, 1.0]),
    (5123, "H", [0, 65535, 1, 2], True, [0.0, 1.0, 1 / 65535, 2 / 65535]),
    (5125, "I", [0, 4000000000, 7, 9], False, [0, 4000000000, 7, 9]),
    (5126, "f", [0.5, -2.25, 1e-3, 7.0], False, [0.5, -2.25, np.float32(1e-3), 7.0]),
])
def test_component_types_and_normalization(ctype, fmt, values, normalized, expect) -> None:
    blob = struct.pack("<4" + fmt, *values)
    blob += b"\0" * (-len(blob) % 4)
    acc = {"bufferView": 0, "componentType": ctype, "count": 4, "type": "SCALAR"}
    if normalized:
        acc["normalized"] = True
    d = document_from_bytes(_doc(blob, [acc], [{"buffer": 0, "byteLength": len(blob)}]), "t.gltf")
    got = d.accessor(0)[:, 0]
    np.testing.assert_allclose(got, np.array(expect, dtype=float), rtol=1e-7)


def test_matrices_are_column_major_and_mat3_bytes_align_columns() -> None:
    M = np.arange(16, dtype=np.float32).reshape(4, 4)
    blob = M.T.tobytes()  # column-major
    m3 = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=np.int8)
    padded = b"".join(bytes(col.astype(np.int8).tobytes()) + b"\0" for col in m3.T)  # each column padded to 4
    views = [{"buffer": 0, "byteLength": 64}, {"buffer": 0, "byteOffset": 64, "byteLength": 12}]
    accs = [{"bufferView": 0, "componentType": 5126, "count": 1, "type": "MAT4"},
            {"bufferView": 1, "componentType": 5120, "count": 1, "type": "MAT3"}]
    d = document_from_bytes(_doc(blob + padded, accs, views), "t.gltf")
    np.testing.assert_array_equal(d.accessor(0)[0], M)
    np.testing.assert_array_equal(d.accessor(1, normalize=False)[0], m3)


def test_interleaved_stride_and_offsets() -> None:
    rows = [(float(i), float(10 * i), float(100 * i), i, i + 1) for i in range(5)]
    blob = b"".join(struct.pack("<3f2H", *r) + b"\0" * 4 for r in rows)  # 12 + 4 + 4 pad = 20-byte stride
    views = [{"buffer": 0, "byteLength": len(blob), "byteStride": 20}]
    accs = [{"bufferView": 0, "componentType": 5126, "count": 5, "type": "VEC3"},
            {"bufferView": 0, "byteOffset": 12, "componentType": 5123, "count": 5, "type": "VEC2"}]
    d = document_from_bytes(_doc(blob, accs, views), "t.gltf")
    np.testing.assert_array_equal(d.accessor(0), [[r[0], r[1], r[2]] for r in rows])
    np.testing.assert_array_equal(d.accessor(1), [[r[3], r[4]] for r in rows])


def test_sparse_on_zeros_and_on_a_view() -> None:
    idx = struct.pack("<3B", 1, 4, 6) + b"\0"
    vals = struct.pack("<3f", 5.0, 6.0, 7.0)
    base = struct.pack("<8f", *range(8))
    blob = idx + vals + base
    views = [{"buffer": 0, "byteLength": 3}, {"buffer": 0, "byteOffset": 4, "byteLength": 12},
             {"buffer": 0, "byteOffset": 16, "byteLength": 32}]
    sparse = {"count": 3, "indices": {"bufferView": 0, "componentType": 5121}, "values": {"bufferView": 1}}
    accs = [{"componentType": 5126, "count": 8, "type": "SCALAR", "sparse": sparse},
            {"bufferView": 2, "componentType": 5126, "count": 8, "type": "SCALAR", "sparse": sparse}]
    d = document_from_bytes(_doc(blob, accs, views), "t.gltf")
    np.testing.assert_array_equal(d.accessor(0)[:, 0], [0, 5, 0, 0, 6, 0, 7, 0])
    np.testing.assert_array_equal(d.accessor(1)[:, 0], [0, 5, 2, 3, 6, 5, 7, 7])
    bad = json.loads(_doc(blob, accs, views))
    bad["accessors"][0]["sparse"]["indices"]["byteOffset"] = 2  # indices 6, then past the view
    with pytest.raises(ParseError) as info:
        document_from_bytes(json.dumps(bad).encode(), "t.gltf").accessor(0)
    assert info.value.key == "/accessors/0/sparse/indices"


def test_glb_container_and_pointer_escapes() -> None:
    js = json.dumps({"asset": {"version": "2.0"}}).encode()
    js += b" " * (-len(js) % 4)
    binary = b"\1\2\3\4"
    body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", 4, 0x004E4942) + binary
    doc, chunk = json_from_glb(struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body, "x.glb")
    assert doc["asset"]["version"] == "2.0" and chunk == binary
    assert pointer("nodes", 3, "a/b~c") == "/nodes/3/a~1b~0c"
