"""Hostile glTF files (issue 27): small files that claim huge work. Each case goes through ``animkit.load`` in the
fuzz suite's worker process (tests/fuzz_worker.py: address space capped at 1 GiB above the warmed-up worker, wall
time and peak resident set measured per load) and must end in one clean ``ParseError`` naming the JSON pointer and
the limit, quickly, or in a bounded load. Nothing else (a raw exception, a MemoryError, a hang) passes.

The budgets are those of :mod:`animkit.limits`; the cases sit just past them (and the "within" cases just inside),
so a limit that stops being checked, or checked only after the allocation, fails here.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from animkit import limits

from .conftest import DATA
from .test_fuzz import Worker

#: a refusal must come within this many seconds (the goal is 1 s; the margin is for two cores shared by many)
REFUSAL_S = 3.0
#: a load of any of these (files under 1 MB, except the sparse-file case) must peak below this many MiB
PEAK_MB = 1024.0


def _gltf(nodes: list[dict[str, Any]], roots: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"asset": {"version": "2.0"}, "nodes": nodes,
                           "scenes": [{"nodes": list(range(len(nodes))) if roots is None else roots}], "scene": 0}
    doc.update(extra)
    return doc


def _text(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _b64(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _chain(n: int) -> bytes:
    nodes = [{"name": f"n{i}", "children": [i + 1]} for i in range(n - 1)] + [{"name": f"n{n - 1}"}]
    return _text(_gltf(nodes, [0]))


def _flat(n: int) -> bytes:
    return _text(_gltf([{"name": f"n{i}"} for i in range(n)]))


def _fan(n: int) -> bytes:
    """One node with n - 1 children."""
    nodes = [{"name": "hub", "children": list(range(1, n))}] + [{"name": f"n{i}"} for i in range(1, n)]
    return _text(_gltf(nodes, [0]))


def _cycle(n: int) -> bytes:
    """A chain of n nodes whose last node's child is the first: no root, every node has one parent."""
    nodes = [{"children": [(i + 1) % n]} for i in range(n)]
    return _text(_gltf(nodes, []))


def _skin(joints: int) -> bytes:
    """A flat skeleton of ``joints`` nodes, one skinned triangle."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32).tobytes()
    jw = np.zeros((3, 4), np.uint16).tobytes() + np.tile(np.float32([1, 0, 0, 0]), (3, 1)).tobytes()
    binary = pos + jw
    nodes = [{"name": f"j{i}"} for i in range(joints)] + [{"name": "body", "mesh": 0, "skin": 0}]
    doc = _gltf(nodes, buffers=[{"byteLength": len(binary), "uri": _b64(binary)}],
                bufferViews=[{"buffer": 0, "byteOffset": 0, "byteLength": 36},
                             {"buffer": 0, "byteOffset": 36, "byteLength": 24},
                             {"buffer": 0, "byteOffset": 60, "byteLength": 48}],
                accessors=[{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
                           {"bufferView": 1, "componentType": 5123, "count": 3, "type": "VEC4"},
                           {"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC4"}],
                meshes=[{"primitives": [{"attributes": {"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2}}]}],
                skins=[{"joints": list(range(joints))}])
    return _text(doc)


def _keys(nodes: int, last: float, keys: int = 2) -> bytes:
    """``nodes`` animated nodes, each rotated by ``keys`` keys from 0 to ``last`` seconds."""
    times = np.linspace(0.0, last, keys).astype(np.float32)
    q = np.tile(np.float32([0, 0, 0, 1]), (keys, 1))
    q[-1] = [0, 0, 0.70710677, 0.70710677]
    binary = times.tobytes() + q.tobytes()
    doc = _gltf([{"name": f"n{i}"} for i in range(nodes)],
                buffers=[{"byteLength": len(binary), "uri": _b64(binary)}],
                bufferViews=[{"buffer": 0, "byteLength": 4 * keys},
                             {"buffer": 0, "byteOffset": 4 * keys, "byteLength": 16 * keys}],
                accessors=[{"bufferView": 0, "componentType": 5126, "count": keys, "type": "SCALAR",
                            "min": [0.0], "max": [float(times[-1])]},
                           {"bufferView": 1, "componentType": 5126, "count": keys, "type": "VEC4"}],
                animations=[{"samplers": [{"input": 0, "output": 1}],
                             "channels": [{"sampler": 0, "target": {"node": i, "path": "rotation"}}
                                          for i in range(nodes)]}])
    return _text(doc)


def _glb_parts(data: bytes) -> tuple[dict[str, Any], bytes]:
    (jlen,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + jlen])
    at = 20 + jlen
    (blen,) = struct.unpack_from("<I", data, at)
    return doc, data[at + 8:at + 8 + blen]


def _glb(doc: dict[str, Any], binary: bytes) -> bytes:
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    binary += b"\0" * (-len(binary) % 4)
    body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body


def _cesium_keys(last: float) -> bytes:
    """CesiumMan with every sampler cut to two keys, the second at ``last`` seconds."""
    doc, binary = _glb_parts((DATA / "CesiumMan.glb").read_bytes())
    extra = np.float32([0.0, last]).tobytes()
    view = len(doc["bufferViews"])
    doc["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": 8})
    binary += extra
    doc["buffers"][0]["byteLength"] = len(binary)
    acc = len(doc["accessors"])
    doc["accessors"].append({"bufferView": view, "componentType": 5126, "count": 2, "type": "SCALAR",
                             "min": [0.0], "max": [last]})
    for s in doc["animations"][0]["samplers"]:
        s["input"] = acc
        out = doc["accessors"][s["output"]]
        out["count"] = 2
        out.pop("min", None)
        out.pop("max", None)
    return _glb(doc, binary)


def _percent_uri(n: int, length: int = 4) -> bytes:
    """A buffer whose data: URI is n percent escapes (3n characters of JSON)."""
    doc = _gltf([{"name": "a"}], buffers=[{"byteLength": length, "uri": "data:application/octet-stream,"
                                           + "%41" * n}])
    doc["bufferViews"] = [{"buffer": 0, "byteLength": 4}]
    doc["accessors"] = [{"bufferView": 0, "componentType": 5126, "count": 1, "type": "SCALAR"}]
    doc["animations"] = [{"samplers": [{"input": 0, "output": 0}], "channels": []}]
    return _text(doc)


def _png(width: int, height: int) -> bytes:
    """A grey PNG of width × height made by hand (zlib of zero rows: tiny for any size)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = zlib.compress(b"\0" * ((width + 1) * height), 9)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", raw) + chunk(b"IEND", b""))


def _textured(images: list[bytes]) -> bytes:
    """One triangle per image, each textured with its image."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32).tobytes()
    uv = np.array([[0, 0], [1, 0], [0, 1]], np.float32).tobytes()
    binary = pos + uv
    views = [{"buffer": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 24}]
    for im in images:
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(im)})
        binary += im + b"\0" * (-len(im) % 4)
    k = len(images)
    doc = _gltf([{"name": f"m{i}", "mesh": i} for i in range(k)],
                bufferViews=views,
                accessors=[{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
                           {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"}],
                images=[{"bufferView": 2 + i, "mimeType": "image/png"} for i in range(k)],
                textures=[{"source": i} for i in range(k)],
                materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}} for i in range(k)],
                meshes=[{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "material": i}]}
                        for i in range(k)])
    doc["buffers"] = [{"byteLength": len(binary)}]
    return _glb(doc, binary)


def _zeros(count: int, attributes: int = 1, meshes: int = 1) -> bytes:
    """Meshes whose POSITION (and more attributes) are accessors with no buffer view: all zeros, no bytes."""
    accs = [{"componentType": 5126, "count": count, "type": "VEC3"} for _ in range(attributes)]
    names = ["POSITION", "NORMAL", "TEXCOORD_0", "COLOR_0"][:attributes]
    prim = {"attributes": {n: k for k, n in enumerate(names)}}
    if "TEXCOORD_0" in names:
        accs[names.index("TEXCOORD_0")]["type"] = "VEC2"
    doc = _gltf([{"name": f"m{i}", "mesh": 0} for i in range(meshes)], accessors=accs,
                meshes=[{"primitives": [prim]}])
    return _text(doc)


def _sparse_zeros(count: int) -> bytes:
    """A POSITION accessor of ``count`` zeros, one sparse element substituted."""
    binary = struct.pack("<I", count - 1) + np.float32([1, 2, 3]).tobytes()
    doc = _gltf([{"name": "m", "mesh": 0}], buffers=[{"byteLength": len(binary), "uri": _b64(binary)}],
                bufferViews=[{"buffer": 0, "byteLength": 4}, {"buffer": 0, "byteOffset": 4, "byteLength": 12}],
                accessors=[{"componentType": 5126, "count": count, "type": "VEC3",
                            "sparse": {"count": 1, "indices": {"bufferView": 0, "componentType": 5125},
                                       "values": {"bufferView": 1}}}],
                meshes=[{"primitives": [{"attributes": {"POSITION": 0}}]}])
    return _text(doc)


def _shared_accessor(vertices: int, users: int) -> bytes:
    """One real POSITION accessor of ``vertices`` vertices used by ``users`` primitives (bytes present once)."""
    pos = np.zeros((vertices, 3), np.float32)
    pos[1::3, 0] = 1
    pos[2::3, 1] = 1
    binary = pos.tobytes()
    doc = _gltf([{"name": f"m{i}", "mesh": 0} for i in range(users)],
                buffers=[{"byteLength": len(binary)}], bufferViews=[{"buffer": 0, "byteLength": len(binary)}],
                accessors=[{"bufferView": 0, "componentType": 5126, "count": vertices, "type": "VEC3"}],
                meshes=[{"primitives": [{"attributes": {"POSITION": 0}}]}])
    doc["buffers"][0].pop("uri", None)
    return _glb(doc, binary)


def _many_animations(animations: int, channels: int) -> bytes:
    """``animations`` animations of ``channels`` channels each, all using one 2-key sampler (bytes present once)."""
    times = np.float32([0, 1]).tobytes()
    q = np.float32([[0, 0, 0, 1], [0, 0, 0.70710677, 0.70710677]]).tobytes()
    binary = times + q
    anim = {"samplers": [{"input": 0, "output": 1}],
            "channels": [{"sampler": 0, "target": {"node": i, "path": "rotation"}} for i in range(channels)]}
    doc = _gltf([{"name": f"n{i}"} for i in range(channels)],
                buffers=[{"byteLength": len(binary), "uri": _b64(binary)}],
                bufferViews=[{"buffer": 0, "byteLength": 8}, {"buffer": 0, "byteOffset": 8, "byteLength": 32}],
                accessors=[{"bufferView": 0, "componentType": 5126, "count": 2, "type": "SCALAR",
                            "min": [0], "max": [1]},
                           {"bufferView": 1, "componentType": 5126, "count": 2, "type": "VEC4"}],
                animations=[anim] * animations)
    return _text(doc)


def _sparse_file(folder: Path, size: int) -> bytes:
    """A .gltf whose buffer is a sparse file of ``size`` bytes beside it (no disk used)."""
    with open(folder / "huge.bin", "wb") as f:
        f.truncate(size)
    doc = _gltf([{"name": "m", "mesh": 0}], buffers=[{"byteLength": size, "uri": "huge.bin"}],
                bufferViews=[{"buffer": 0, "byteLength": size}],
                accessors=[{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}],
                meshes=[{"primitives": [{"attributes": {"POSITION": 0}}]}])
    return _text(doc)


def _deep_json(depth: int) -> bytes:
    return b'{"asset":{"version":"2.0"},"extras":' + b"[" * depth + b"]" * depth + b"}"


def _children_list(n: int) -> bytes:
    """One node listing n children that do not exist."""
    return _text(_gltf([{"children": list(range(1, n + 1))}]))


def _gltf_file(data: bytes) -> tuple[str, bytes]:
    return ".gltf", data


#: name → (build: folder → (suffix, bytes), expected): expected is a regex the ParseError must match (the limit
#: it names) or "load" for a file within the budgets that must load.
Case = tuple[Callable[[Path], tuple[str, bytes]], str]
CASES: dict[str, Case] = {
    "chain of 10,000 nodes": (lambda d: _gltf_file(_chain(10_000)), r"MAX_DEPTH"),
    "chain of 100,000 nodes": (lambda d: _gltf_file(_chain(100_000)), r"MAX_NODES|MAX_DEPTH"),
    "chain at the depth limit": (lambda d: _gltf_file(_chain(limits.MAX_DEPTH)), "load"),
    "100,000 root nodes": (lambda d: _gltf_file(_flat(100_000)), r"MAX_NODES"),
    "10,000 root nodes": (lambda d: _gltf_file(_flat(10_000)), "load"),
    "a node with 100,000 children": (lambda d: _gltf_file(_fan(100_000)), r"MAX_NODES"),
    "a node with 10,000 children": (lambda d: _gltf_file(_fan(10_000)), "load"),
    "a cycle of 100,000 nodes": (lambda d: _gltf_file(_cycle(100_000)), r"MAX_NODES"),
    "a cycle of 20,000 nodes": (lambda d: _gltf_file(_cycle(20_000)), r"cycle"),
    "a node listing 1,000,000 children": (lambda d: _gltf_file(_children_list(1_000_000)), r"index into nodes"),
    "a skin of 10,000 joints": (lambda d: _gltf_file(_skin(10_000)), r"MAX_SKIN_JOINTS"),
    "a skin at the joint limit": (lambda d: _gltf_file(_skin(limits.MAX_SKIN_JOINTS)), "load"),
    "two keys, the last at a day, CesiumMan": (lambda d: (".glb", _cesium_keys(86_400.0)), r"MAX_SAMPLES"),
    "two keys, the last at a day, 1,000 nodes": (lambda d: _gltf_file(_keys(1000, 86_400.0)), r"MAX_SAMPLES"),
    "two keys, the last at 10 minutes, 1 node": (lambda d: _gltf_file(_keys(1, 600.0)), "load"),
    "one animation, 1,000 channels": (lambda d: _gltf_file(_many_animations(1, 1_000)), "load"),
    "10 animations of 200 channels, one sampler": (lambda d: _gltf_file(_many_animations(10, 200)), "load"),
    "a data: URI of 20 M percent escapes": (lambda d: _gltf_file(_percent_uri(20_000_000)), "load"),
    "a data: URI of 1 M percent escapes": (lambda d: _gltf_file(_percent_uri(1_000_000, 1_000_000)), "load"),
    "an image of 67 M x 1 pixels": (lambda d: (".glb", _textured([_png(1 << 26, 1)])), r"MAX_IMAGE_PIXELS"),
    "eight 8192x8192 images": (lambda d: (".glb", _textured([_png(8192, 8192)] * 8)), r"MAX_IMAGE_PIXELS"),
    "five 4096x4096 images": (lambda d: (".glb", _textured([_png(4096, 4096)] * 5)), r"MAX_TOTAL_IMAGE_PIXELS"),
    "two 4096x4096 images": (lambda d: (".glb", _textured([_png(4096, 4096)] * 2)), "load"),
    "11 M zero vertices, no buffer view": (lambda d: _gltf_file(_zeros(11_100_000)), r"MAX_DECODED_BYTES"),
    "4 attributes of 11.1 M zeros": (lambda d: _gltf_file(_zeros(11_100_000, 4)), r"MAX_DECODED_BYTES"),
    "1 M zero vertices used by 100 nodes": (lambda d: _gltf_file(_zeros(1_000_002, 1, 100)), r"MAX_DECODED_BYTES"),
    "300 k zero vertices": (lambda d: _gltf_file(_zeros(300_000, 2)), "load"),
    "2.1 M zero vertices, just inside the budget": (lambda d: _gltf_file(_zeros(2_100_000)), "load"),
    "sparse accessor of 11.1 M zeros": (lambda d: _gltf_file(_sparse_zeros(11_100_000)), r"MAX_DECODED_BYTES"),
    "one accessor used by 2,000 primitives": (lambda d: (".glb", _shared_accessor(30_000, 2_000)),
                                              r"MAX_DECODED_BYTES"),
    "a 1.9 GiB sparse buffer file": (lambda d: _gltf_file(_sparse_file(d, 1_900 << 20)),
                                     r"MAX_REFERENCED_BYTES"),
    "JSON nested 100,000 deep": (lambda d: _gltf_file(_deep_json(100_000)), r"cannot be read|not JSON"),
}


RESULTS: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()
    if RESULTS:  # the numbers (pytest -s shows them)
        refused = [r["seconds"] for r in RESULTS.values() if r["status"] == "error"]
        peaks = [r["peak_mb"] for r in RESULTS.values() if r.get("peak_mb") is not None and r["bytes"] < 1 << 20]
        bugs = sum(r["status"] == "bug" for r in RESULTS.values())
        print(f"\nhostile glTF: {len(RESULTS)} cases, {len(refused)} refused, "
              f"{sum(r['status'] == 'ok' for r in RESULTS.values())} loaded, {bugs} raw/hang/blow-up; "
              f"slowest refusal {max(refused, default=0):.2f} s; "
              f"highest peak (files < 1 MB) {max(peaks, default=0):.0f} MiB")
        for name, r in RESULTS.items():
            print(f"  {name}: {r['status']} in {r.get('seconds', float('nan')):.2f} s, "
                  f"peak {r.get('peak_mb') or 0:.0f} MiB, "
                  f"{r['bytes']:,} bytes")


@pytest.mark.slow  # 32 loads in a memory-capped worker process, ~2 min in all: CI runs these after the rest
@pytest.mark.parametrize("name", list(CASES))
def test_hostile_gltf_is_refused_or_loads_within_bounds(worker: Worker, name: str, tmp_path: Path) -> None:
    build, expected = CASES[name]
    suffix, data = build(tmp_path)
    answer = worker.run(suffix, data, tmp_path)
    RESULTS[name] = answer | {"bytes": len(data)}
    assert answer["status"] != "bug", f"{name}: {answer['type']}\n{answer.get('trace', '')}"
    if expected == "load":
        assert answer["status"] == "ok", f"{name}: refused: {answer.get('message')}"
    else:
        assert answer["status"] == "error", f"{name}: loaded; expected a refusal matching {expected!r}"
        assert answer["type"] == "ParseError" and answer["names_file"], answer
        import re
        assert re.search(expected, answer["message"]), f"{name}: {answer['message']}"
        assert answer["seconds"] <= REFUSAL_S, f"{name}: refused after {answer['seconds']:.2f} s"
    if answer.get("peak_mb") is not None and len(data) < 1 << 20:
        assert answer["peak_mb"] < PEAK_MB, f"{name}: peaked at {answer['peak_mb']:.0f} MiB"


def test_keys_per_animation_are_limited(monkeypatch) -> None:
    """CesiumMan's animation holds 19 channels of 48 keys; with MAX_KEYS below that it is refused, naming the
    channel where the sum passes the limit."""
    import animkit
    from animkit.errors import ParseError

    monkeypatch.setattr(limits, "MAX_KEYS", 500)
    with pytest.raises(ParseError, match=r"\[/animations/0/channels/\d+\].*MAX_KEYS"):
        animkit.load(DATA / "CesiumMan.glb")
