"""What the TOML scene reader and writer share with the clip reader and writer: key paths, the reading context
that finds a key's line for error messages, and value formatting that reads back bit for bit."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from animkit.errors import ParseError

__all__ = ["Seg", "key_text", "split_key", "Context", "fmt_value", "fmt_key"]

Seg = str | int  # one step of a key path: a table key, or an index into an array of tables


def key_text(path: Sequence[Seg]) -> str:
    """("clips", "wave", "keys", 2, "pose", "elbow_r.rx") → clips.wave.keys[2].pose."elbow_r.rx"."""
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            part = seg if re.fullmatch(r"[A-Za-z0-9_-]+", seg) else '"' + seg + '"'
            out += ("." if out else "") + part
    return out


def split_key(text: str) -> list[str]:
    """``clips.wave."elbow_r.rx"`` → ["clips", "wave", "elbow_r.rx"] (quoted parts may hold dots)."""
    return [a or b for a, b in re.findall(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^.\s"]+))\s*\.?', text)]


class Context:
    """Where we are: the file, its text (to find a key's line) and a way to raise errors naming both."""

    def __init__(self, path: str | None, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self._headers: list[tuple[int, list[Seg]]] | None = None

    def headers(self) -> list[tuple[int, list[Seg]]]:
        """(line index, key path) of every table header; ``[[a]]`` tables get their index in the path."""
        if self._headers is None:
            counts: dict[tuple[str, ...], int] = {}
            out: list[tuple[int, list[Seg]]] = []
            for i, line in enumerate(self.lines):
                m = re.match(r"^\s*(\[\[?)(.*?)\]\]?\s*(#.*)?$", line)
                if not m:
                    continue
                names = split_key(m.group(2))
                if m.group(1) == "[[":
                    counts[tuple(names)] = counts.get(tuple(names), 0) + 1
                segs: list[Seg] = []
                for n in range(1, len(names) + 1):  # [a.keys.pose] lies in the last [[a.keys]] table
                    segs.append(names[n - 1])
                    if tuple(names[:n]) in counts:
                        segs.append(counts[tuple(names[:n])] - 1)
                out.append((i, segs))
            self._headers = out
        return self._headers

    def line_at(self, path: Sequence[Seg]) -> int | None:
        """The line of the deepest table header on ``path``, or of ``leaf = ...`` inside that table."""
        best: tuple[int, int] | None = None  # (depth matched, line index)
        flat = list(path)
        for i, segs in self.headers():
            if len(segs) <= len(flat) and flat[:len(segs)] == segs and (best is None or len(segs) >= best[0]):
                best = (len(segs), i)
        if best is None:
            start, depth = -1, 0  # keys of the top-level table, before any header
        else:
            depth, start = best
        if depth < len(flat) and isinstance(flat[depth], str):
            pat = re.compile(r'^\s*("?)' + re.escape(str(flat[depth])) + r'\1\s*[.=]')
            for j in range(start + 1, len(self.lines)):
                if self.lines[j].lstrip().startswith("["):
                    break
                if pat.match(self.lines[j]):
                    return j + 1
        return None if best is None else start + 1

    def line_of(self, key: str) -> int | None:
        return self.line_at(split_key(key))

    def error(self, key: str, message: str) -> ParseError:
        return ParseError(self.path, message, line=self.line_of(key), key=key)

    def error_at(self, path: Sequence[Seg], message: str) -> ParseError:
        return ParseError(self.path, message, line=self.line_at(path), key=key_text(path))



_TOML_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')
_TOML_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    """A TOML basic-string escape: the short forms, \\uXXXX for the other control characters."""
    c = m.group(0)
    return _TOML_SHORT.get(c) or f"\\u{ord(c):04X}"


def is_number(v: Any) -> bool:
    """A TOML int or float that is a finite double (bools are not numbers; a 400-digit int is not finite)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -_FLOAT_MAX <= v <= _FLOAT_MAX  # compared exactly: no overflow
    return isinstance(v, float) and math.isfinite(v)


_FLOAT_MAX = 1.7976931348623157e308


def fmt_value(v: Any) -> str:
    """TOML text of a value; strings with TOML escapes (a newline or any control character reads back)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)  # full precision: reads back bit for bit
    if isinstance(v, str):
        return '"' + _TOML_ESCAPE.sub(_escape_char, v) + '"'
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{fmt_key(k)} = {fmt_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def fmt_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else fmt_value(k)
