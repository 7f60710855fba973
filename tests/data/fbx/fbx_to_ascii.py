"""Binary FBX → ASCII FBX (7.x), a recipe for tests/data/fbx (not part of animkit): ``python fbx_to_ascii.py
IN.fbx OUT.fbx [VERSION]`` writes the same node tree as text, headed ``; FBX 7.x.0 project file`` with
``FBXVersion`` set to VERSION (default: the binary's own). It reads both record layouts (32-bit offsets before 7.5,
64-bit from 7.5), every property type (arrays zlib-inflated), turns binary names ``Name\\x00\\x01Class`` into
ASCII's ``Class::Name`` and raw bytes (embedded images) into base64 on the line after ``Content: ,``, and leaves out
the binary-only top-level FileId, CreationTime and Creator, as the FBX SDK's ASCII writer does.
"""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

MAGIC = b"Kaydara FBX Binary  \x00\x1a\x00"
ARRAYS = {b"f": ("f", 4), b"d": ("d", 8), b"l": ("q", 8), b"i": ("i", 4), b"b": ("?", 1)}
SCALARS = {b"Y": ("h", 2), b"C": ("?", 1), b"I": ("i", 4), b"F": ("f", 4), b"D": ("d", 8), b"L": ("q", 8)}

Node = tuple[str, list[Any], list["Node"]]
#: top-level records only binary files have (the FBX SDK's ASCII writer leaves them out; three.js cannot read them)
BINARY_ONLY = {"FileId", "CreationTime", "Creator"}


def read_binary(data: bytes) -> tuple[int, list[Node]]:
    """(version, top-level nodes) of a binary FBX file."""
    if not data.startswith(MAGIC):
        raise ValueError("not a binary FBX file")
    version = struct.unpack_from("<I", data, 23)[0]
    wide = version >= 7500
    head = struct.Struct("<QQQ" if wide else "<III")

    def node(pos: int) -> tuple[Node | None, int]:
        end, count, _ = head.unpack_from(data, pos)
        pos += head.size
        length = data[pos]
        name = data[pos + 1:pos + 1 + length].decode("utf-8", "replace")
        pos += 1 + length
        if end == 0:
            return None, pos
        props: list[Any] = []
        for _ in range(count):
            code = data[pos:pos + 1]
            pos += 1
            if code in SCALARS:
                fmt, size = SCALARS[code]
                props.append(struct.unpack_from("<" + fmt, data, pos)[0])
                pos += size
            elif code in ARRAYS:
                n, encoding, size = struct.unpack_from("<III", data, pos)
                raw = data[pos + 12:pos + 12 + size]
                pos += 12 + size
                raw = zlib.decompress(raw) if encoding == 1 else raw
                fmt, _ = ARRAYS[code]
                props.append(list(struct.unpack(f"<{n}{fmt}", raw)))
            elif code in (b"S", b"R"):
                (size,) = struct.unpack_from("<I", data, pos)
                raw = data[pos + 4:pos + 4 + size]
                pos += 4 + size
                props.append(raw if code == b"R" else raw.decode("utf-8", "replace"))
            else:
                raise ValueError(f"unknown property type {code!r} at byte {pos - 1}")
        children: list[Node] = []
        while pos < end:
            child, pos = node(pos)
            if child is None:
                break
            children.append(child)
        return (name, props, children), end

    out: list[Node] = []
    pos = 27
    while pos < len(data):
        top, pos = node(pos)
        if top is None:
            break
        out.append(top)
    return version, out


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "T" if v else "F"  # a C (bool) scalar: ASCII writes T/F (Y, N for some); ufbx and three read both
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, bytes):
        return '"' + base64.b64encode(v).decode() + '"'
    name, sep, cls = v.partition("\x00\x01")
    text = f"{cls}::{name}" if sep else v
    return '"' + text.replace('"', "&quot;") + '"'


def write_ascii(version: int, nodes: list[Node]) -> str:
    """The ASCII form of a node tree (FBXVersion rewritten to ``version``)."""
    lines = [f"; FBX {version // 1000}.{version % 1000 // 100}.0 project file",
             "; ----------------------------------------------------", ""]

    def emit(node: Node, depth: int, parent: str = "") -> None:
        name, props, children = node
        pad = "\t" * depth
        if name == "FBXVersion":
            props = [version]
        arrays = [p for p in props if isinstance(p, list)]
        if arrays:  # ASCII arrays: Name: *N { a: v,v,... }
            values = arrays[0]
            body = ",".join("1" if x is True else "0" if x is False else repr(x) if isinstance(x, float) else str(x)
                            for x in values)
            lines.append(f"{pad}{name}: *{len(values)} {{")
            lines.append(f"{pad}\ta: {body}")
            lines.append(f"{pad}}}")
            return
        # the SDK's spacing: ", " before a string, "," before a number ("A",1,1,1; three.js reads no other)
        text = "".join(("" if i == 0 else ", " if isinstance(p, (str, bytes)) else ",") + _value(p)
                       for i, p in enumerate(props))
        if name == "Content" and props and isinstance(props[0], bytes):  # embedded image, as the SDK writes it
            lines.append(f"{pad}{name}: ,")
            lines.append(f"{pad}\t{_value(props[0])}")
            return
        if children or not props or parent == "Objects":  # every object is a block, even an empty one
            lines.append(f"{pad}{name}: {text} {{")
            for c in children:
                emit(c, depth + 1, name)
            lines.append(f"{pad}}}")
        else:
            lines.append(f"{pad}{name}: {text}")

    for n in nodes:
        if n[0] not in BINARY_ONLY:
            emit(n, 0)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    src, dst = Path(argv[0]), Path(argv[1])
    version, nodes = read_binary(src.read_bytes())
    Path(dst).write_text(write_ascii(int(argv[2]) if len(argv) > 2 else version, nodes), encoding="utf-8")
    print(f"{dst}: ASCII FBX {int(argv[2]) if len(argv) > 2 else version} from {src} (binary {version})")


if __name__ == "__main__":
    main(sys.argv[1:])
