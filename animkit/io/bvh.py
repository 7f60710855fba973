"""BVH motion capture (Biovision Hierarchy): read into a figure and frames, write back.

    M_child = M_parent · L(OFFSET) · E₁(c₁) · E₂(c₂) · … · E_k(c_k)

Each ROOT/JOINT becomes a node whose arc has L = the translation OFFSET and a joint
whose DOFs are the joint's CHANNELS in the file's order (``Xposition`` → a prismatic
DOF ``joint.tx``, ``Zrotation`` → a revolute DOF ``joint.rz``); the product runs in
channel order, so a ``Zrotation Xrotation Yrotation`` joint is the intrinsic Euler
rotation R_z R_x R_y. An ``End Site`` becomes a leaf node ``<parent>_end`` with a
fixed joint. The file holds degrees; poses hold radians (positions stay in file units).

The MOTION block is read in one pass by a compiled scanner (built at install in ``animkit._native``, else numba's,
see :mod:`animkit.jit`) that declines anything it cannot read bit-identically to ``float()``; then in one vectorised
call; only when that fails is it walked line by line, to name the offending line in the error.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import jit, limits
from ..errors import AnimkitError, ParseError, SceneError, unknown_name
from ..figure import Figure
from ..fk import CompiledFigure, compile_figure
from ..jit import enabled as _jit_enabled
from ..jit import kernel
from ..jit import pays as jit_pays
from ..joints import DofKind, Joint, JointKind, custom, dof_suffixes, fixed
from ..rig import character_rig
from ..scene import Scene
from ..transforms import euler_intrinsic_from_matrix

__all__ = ["BvhData", "parse_bvh", "read_bvh", "dumps_bvh", "bvh_baked", "CHANNEL_NAMES", "parse_frames",
           "frames_compiled", "load_scanner", "scan_frames_kernel"]

Array = NDArray[np.float64]

#: BVH channel name → (DOF kind, axis letter).
CHANNEL_NAMES: dict[str, tuple[DofKind, str]] = {
    "Xposition": ("prismatic", "x"), "Yposition": ("prismatic", "y"), "Zposition": ("prismatic", "z"),
    "Xrotation": ("revolute", "x"), "Yrotation": ("revolute", "y"), "Zrotation": ("revolute", "z"),
}
_CHANNEL_BY_LOWER = {k.lower(): v for k, v in CHANNEL_NAMES.items()}
_NAME_OF = {v: k for k, v in CHANNEL_NAMES.items()}
_KEYWORDS = ("OFFSET", "CHANNELS", "JOINT", "End Site", "}")

def _usual_channels() -> dict[tuple[str, ...], tuple[tuple[DofKind, str], ...]]:
    """The CHANNELS tails (count and names) of the usual layout: three rotations in any order, after the three
    positions X Y Z or alone → their channels (a table of the names, the same for every file)."""
    out: dict[tuple[str, ...], tuple[tuple[DofKind, str], ...]] = {}
    positions = ("Xposition", "Yposition", "Zposition")
    for a in "XYZ":
        for b in "XYZ":
            for c in "XYZ":
                if len({a, b, c}) == 3:
                    rotations = (f"{a}rotation", f"{b}rotation", f"{c}rotation")
                    for names in (rotations, positions + rotations):
                        out[(str(len(names)),) + names] = tuple(CHANNEL_NAMES[nm] for nm in names)
    return out


_USUAL_CHANNELS = _usual_channels()
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
_MOTION = re.compile(r"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE | re.IGNORECASE)
_MOTION_LINE = re.compile(r"[ \t]*MOTION[ \t]*\r?", re.IGNORECASE)  # one line of _MOTION
_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"  # _NUMBER's token
# an OFFSET line whose three tokens are _NUMBER's (space, tab and CR are str.split's whitespace too)
_OFFSET_LINE = re.compile(rf"[ \t\r]*OFFSET[ \t\r]+{_NUM}[ \t\r]+{_NUM}[ \t\r]+{_NUM}[ \t\r]*")


@dataclass(frozen=True, eq=False)
class BvhData:
    """A parsed BVH file: the figure, frames (F, D) in ``figure.dof_names`` order (radians, file units)."""

    figure: Figure
    frames: Array
    frame_time: float

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def times(self) -> Array:
        """t_i = i · frame_time, shape (F,)."""
        return np.arange(self.frames.shape[0], dtype=np.float64) * self.frame_time

    @property
    def duration(self) -> float:
        """(F − 1) · frame_time."""
        return (self.frames.shape[0] - 1) * self.frame_time


# --- reading the hierarchy -------------------------------------------------------------------------------


@dataclass
class _Block:
    """One ROOT / JOINT / End Site block while it is being read."""

    kind: str  # "ROOT", "JOINT" or "End Site"
    name: str
    line: int
    parent: _Block | None
    offset: tuple[float, float, float] | None = None
    channels: list[tuple[DofKind, str]] | None = None
    children: list[_Block] = field(default_factory=list)


class _Tokens:
    """Whitespace-separated tokens of the header, each with its 1-based line number."""

    def __init__(self, header: str) -> None:
        self.items: list[tuple[str, int]] = []
        for n, line in enumerate(header.split("\n"), start=1):
            self.items.extend((tok, n) for tok in line.split())
        self.pos = 0
        self.last_line = header.count("\n") + 1

    def peek(self) -> tuple[str, int] | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def next(self) -> tuple[str, int] | None:
        item = self.peek()
        if item is not None:
            self.pos += 1
        return item

    def rest_of_line(self, line: int) -> list[str]:
        """The remaining tokens on ``line``, consumed."""
        out = []
        while self.pos < len(self.items) and self.items[self.pos][1] == line:
            out.append(self.items[self.pos][0])
            self.pos += 1
        return out


def _number(path: str | None, tok: tuple[str, int] | None, what: str, end_line: int) -> float:
    if tok is None:
        raise ParseError(path, f"expected {what}, got end of file", line=end_line)
    text, line = tok
    if not _NUMBER.match(text) or not math.isfinite(float(text)):
        raise ParseError(path, f"expected {what} (a finite number), got {text!r}", line=line)
    return float(text)


# complexity: a reader: one branch per BVH keyword and malformed form
def _hierarchy_by_lines(header: str) -> _Block | None:  # noqa: C901
    """The usual layout — one statement a line, keywords in capitals — read line by line into the blocks
    :func:`_parse_hierarchy` would make; None for anything else (or anything wrong), which that reads (or
    explains) token by token. Three times faster on the CMU files; the tests hold the two equal.

    An OFFSET line is checked whole by one pattern and a CHANNELS line's tail looked up whole in
    :data:`_USUAL_CHANNELS`; lines those miss take the token-wise checks."""
    root: _Block | None = None
    stack: list[_Block] = []
    names: set[str] = set()
    pending: _Block | None = None  # opened, its "{" still to come
    lines = header.split("\n")
    n = 0
    for line in lines:  # until the first statement, which must be HIERARCHY alone
        n += 1
        t = line.split()
        if t:
            if t != ["HIERARCHY"]:
                return None
            break
    offset_line = _OFFSET_LINE.fullmatch
    usual_channels = _USUAL_CHANNELS
    for line in lines[n:]:
        n += 1
        m = offset_line(line)
        if m is not None and stack and pending is None:
            b = stack[-1]
            if b.offset is not None:
                return None
            x, y, z = float(m[1]), float(m[2]), float(m[3])
            if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
                return None
            b.offset = (x, y, z)
            continue
        t = line.split()
        if not t:
            continue
        head = t[0]
        if pending is not None:
            if t != ["{"]:
                return None
            stack.append(pending)
            pending = None
        elif not stack:
            if head != "ROOT" or root is not None:
                return None
            brace = t[-1] == "{"
            if len(t) != 2 + brace:
                return None
            root = _Block("ROOT", t[1], n, None)
            names.add(t[1])
            if brace:
                stack.append(root)
            else:
                pending = root
        elif head == "}":
            b = stack[-1]
            if len(t) != 1 or b.offset is None or (b.channels is None and b.kind != "End Site"):
                return None
            stack.pop()
        elif head == "CHANNELS":
            b = stack[-1]
            if b.kind == "End Site" or b.channels is not None:
                return None
            usual = usual_channels.get(tuple(t[1:]))
            if usual is not None:
                b.channels = list(usual)
                continue
            if len(t) < 2 or not _DIGITS.match(t[1]) or len(t[1]) > 20 or int(t[1]) != len(t) - 2:
                return None
            chans = [_CHANNEL_BY_LOWER.get(c.lower()) for c in t[2:]]
            if None in chans:
                return None
            b.channels = chans  # type: ignore[assignment]
        elif head == "JOINT" or head == "End":
            parent = stack[-1]
            brace = t[-1] == "{"
            if parent.kind == "End Site" or len(stack) >= limits.MAX_DEPTH or len(t) != 2 + brace:
                return None
            if head == "End":
                if t[1] != "Site":
                    return None
                b = _Block("End Site", "", n, parent)
            else:
                if t[1] in names:
                    return None
                names.add(t[1])
                b = _Block("JOINT", t[1], n, parent)
            parent.children.append(b)
            if brace:
                stack.append(b)
            else:
                pending = b
        elif head == "OFFSET":  # one the pattern did not take: token by token
            b = stack[-1]
            if len(t) != 4 or b.offset is not None or not all(_NUMBER.match(x) for x in t[1:]):
                return None
            x, y, z = float(t[1]), float(t[2]), float(t[3])
            if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
                return None
            b.offset = (x, y, z)
        else:
            return None
    return root if pending is None and not stack else None


def _usual_split(text: str) -> tuple[str, _Block, int] | None:
    """(header, its blocks, the end of the MOTION line) when the first "MOTION" in ``text`` is on a MOTION line and
    the text before that line reads line by line (:func:`_hierarchy_by_lines`, which takes no MOTION line: then
    that line is ``_MOTION``'s first match too, found without running the pattern over the text); else None."""
    at = text.find("MOTION")
    if at < 0:
        return None
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    if _MOTION_LINE.fullmatch(text, start, end) is None:
        return None
    header = text[:start]
    root = _hierarchy_by_lines(header)
    return None if root is None else (header, root, end)


def _parse_hierarchy(header: str, path: str | None) -> _Block:
    """Read HIERARCHY … up to (not including) MOTION into a tree of blocks: the usual layout line by line, anything
    else token by token (which names the line of any error)."""
    root = _hierarchy_by_lines(header)
    return root if root is not None else _parse_hierarchy_tokens(header, path)


def _parse_hierarchy_tokens(header: str, path: str | None) -> _Block:
    """Read HIERARCHY … up to (not including) MOTION into a tree of blocks, with an explicit stack."""
    toks = _Tokens(header)
    first = toks.next()
    if first is None or first[0].upper() != "HIERARCHY":
        got = "end of file" if first is None else repr(first[0])
        raise ParseError(path, f"expected 'HIERARCHY' to start a BVH file, got {got}",
                         line=1 if first is None else first[1])
    root: _Block | None = None
    stack: list[_Block] = []
    names: dict[str, int] = {}
    while (tok := toks.next()) is not None:
        word, line = tok
        up = word.upper()
        if not stack:
            if up == "ROOT" and root is None:
                root = _open(toks, "ROOT", line, None, names, path)
                stack.append(root)
            elif up == "ROOT":
                raise ParseError(path, f"a second ROOT: animkit figures have one root (the first is "
                                       f"{root.name!r} on line {root.line})", line=line)  # type: ignore[union-attr]
            else:
                what = "'ROOT'" if root is None else "'MOTION' after the hierarchy"
                raise ParseError(path, f"expected {what}, got {word!r}", line=line)
            continue
        block = stack[-1]
        if up == "OFFSET":
            if block.offset is not None:
                raise ParseError(path, f"{_desc(block)} has a second OFFSET", line=line)
            block.offset = tuple(_number(path, toks.next(), f"OFFSET value {i + 1} of 3 for {_desc(block)}",
                                         toks.last_line) for i in range(3))  # type: ignore[assignment]
        elif up == "CHANNELS":
            if block.kind == "End Site":
                raise ParseError(path, f"an End Site has only an OFFSET; got CHANNELS in {_desc(block)}",
                                 line=line)
            if block.channels is not None:
                raise ParseError(path, f"{_desc(block)} has a second CHANNELS line", line=line)
            block.channels = _channels(toks.rest_of_line(line), line, block, path)
        elif up == "JOINT" or up == "END":
            if block.kind == "End Site":
                raise ParseError(path, f"an End Site cannot have children; expected '}}' to close "
                                       f"{_desc(block)}, got {word!r}", line=line)
            if up == "END":
                site = toks.next()
                if site is None or site[0].upper() != "SITE" or site[1] != line:
                    got = "end of line" if site is None or site[1] != line else repr(site[0])
                    raise ParseError(path, f"expected 'End Site', got 'End' followed by {got}", line=line)
                child = _Block("End Site", "", line, block)
                _expect_brace(toks, child, path)
            else:
                child = _open(toks, "JOINT", line, block, names, path)
            if len(stack) >= limits.MAX_DEPTH:
                raise ParseError(path, f"joints nested more than {limits.MAX_DEPTH} deep (animkit.limits.MAX_DEPTH); "
                                       f"expected a shallower hierarchy", line=line)
            block.children.append(child)
            stack.append(child)
        elif word == "}":
            _close(block, line, path)
            stack.pop()
        elif up == "MOTION":
            raise ParseError(path, f"missing '}}': {_desc(block)} is still open at MOTION", line=line)
        else:
            raise ParseError(path, f"unknown keyword {word!r} in {_desc(block)}; expected one of: "
                                   + ", ".join(repr(k) for k in _KEYWORDS), line=line)
    if stack:
        raise ParseError(path, f"missing '}}': {_desc(stack[-1])} is not closed at the end of the hierarchy",
                         line=toks.last_line)
    if root is None:
        raise ParseError(path, "expected 'ROOT' after 'HIERARCHY', got end of hierarchy", line=toks.last_line)
    return root


def _desc(block: _Block) -> str:
    if block.kind == "End Site":
        parent = block.parent.name if block.parent is not None else "?"
        return f"the End Site of {parent!r} (line {block.line})"
    return f"{block.kind} {block.name!r} (line {block.line})"


def _open(toks: _Tokens, kind: str, line: int, parent: _Block | None, names: dict[str, int],
          path: str | None) -> _Block:
    rest = toks.rest_of_line(line)
    brace_here = bool(rest) and rest[-1] == "{"
    if brace_here:
        rest = rest[:-1]
    if len(rest) != 1:
        got = "nothing" if not rest else " ".join(rest)
        raise ParseError(path, f"expected one name (no spaces) after {kind}, got {got!r}", line=line)
    name = rest[0]
    if name in names:
        raise ParseError(path, f"duplicate joint name {name!r} (first on line {names[name]}): joint names "
                               f"must be unique", line=line)
    names[name] = line
    block = _Block(kind, name, line, parent)
    if not brace_here:
        _expect_brace(toks, block, path)
    return block


def _expect_brace(toks: _Tokens, block: _Block, path: str | None) -> None:
    tok = toks.next()
    if tok is None or tok[0] != "{":
        got = "end of file" if tok is None else repr(tok[0])
        raise ParseError(path, f"expected '{{' to open {_desc(block)}, got {got}",
                         line=toks.last_line if tok is None else tok[1])


def _channels(rest: list[str], line: int, block: _Block, path: str | None) -> list[tuple[DofKind, str]]:
    if not rest or not _DIGITS.match(rest[0]):
        got = "nothing" if not rest else repr(rest[0])
        raise ParseError(path, f"expected the channel count after CHANNELS in {_desc(block)}, got {got}",
                         line=line)
    count, names = (int(rest[0]) if len(rest[0]) <= 20 else -1), rest[1:]
    if count != len(names):
        raise ParseError(path, f"CHANNELS says {count} channels but lists {len(names)} "
                               f"({' '.join(names) or 'none'}) in {_desc(block)}", line=line)
    out = []
    for nm in names:
        ch = _CHANNEL_BY_LOWER.get(nm.lower())
        if ch is None:
            raise ParseError(path, f"{_desc(block)}: " + unknown_name("channel", nm, CHANNEL_NAMES), line=line)
        out.append(ch)
    return out


def _close(block: _Block, line: int, path: str | None) -> None:
    if block.offset is None:
        raise ParseError(path, f"{_desc(block)} has no OFFSET; expected 'OFFSET x y z' before its '}}' "
                               f"on line {line}", line=block.line)
    if block.channels is None and block.kind != "End Site":
        raise ParseError(path, f"{_desc(block)} has no CHANNELS line; expected 'CHANNELS n name…' before "
                               f"its '}}' on line {line}", line=block.line)


def _joint(block: _Block) -> Joint:
    """The joint of a block: its channels as DOFs, in order.

    Kind "free" for x, y, z positions then three distinct rotations; "ball" (with that Euler order) for
    three distinct rotations alone; "custom" for anything else.
    """
    chans = block.channels or []
    if not chans:
        return fixed(block.name)
    letters = "".join(a for k, a in chans if k == "revolute")
    euler = len(letters) == 3 and len(set(letters)) == 3
    positions_first = [a for k, a in chans[:3]] == ["x", "y", "z"] and all(k == "prismatic" for k, _ in chans[:3])
    rotations_only = len(chans) == 3 and all(k == "revolute" for k, _ in chans)
    kind: JointKind = ("free" if len(chans) == 6 and positions_first and euler
                       else "ball" if rotations_only and euler else "custom")
    order = letters if kind in ("free", "ball") else None
    return custom(block.name, chans, kind=kind, order=order)


def _preorder(root: _Block) -> list[_Block]:
    """Every block depth-first, pre-order (the figure's node order), each End Site named ``<parent>_end`` (with a
    number where that name is taken)."""
    taken: set[str] = set()
    todo = [root]
    while todo:
        b = todo.pop()
        if b.kind != "End Site":
            taken.add(b.name)
        todo.extend(b.children)
    out: list[_Block] = []
    todo = [root]
    while todo:
        b = todo.pop()
        if b.kind == "End Site":
            assert b.parent is not None
            b.name = _unique(f"{b.parent.name}_end", taken)
            taken.add(b.name)
        out.append(b)
        todo.extend(reversed(b.children))
    return out


def _build_figure(blocks: list[_Block], name: str, path: str | None) -> Figure:
    """The figure of the blocks (in :func:`_preorder`'s order): a node, arc and joint per block."""
    root = blocks[0]
    try:
        fig = Figure(root.name, joint=_joint(root), L=_translation(root.offset), name=name)
    except SceneError as exc:
        raise ParseError(path, str(exc), line=root.line) from None
    for b in blocks[1:]:
        assert b.parent is not None
        try:
            fig.add(b.name, b.parent.name, offset=b.offset, joint=_joint(b))
        except SceneError as exc:
            raise ParseError(path, str(exc), line=b.line) from None
    return fig


def _compiled_from_blocks(blocks: list[_Block]) -> CompiledFigure:
    """The FK arrays of the blocks' figure straight from the blocks, equal to ``_build_figure(…).compiled``:
    L_i = the translation OFFSET_i, T_i = I, one DOF per channel (axis e_x, e_y or e_z, no limits, rest 0),
    named ``<joint>.<suffix>`` as :func:`~animkit.joints.custom` names them."""
    N = len(blocks)
    row = {id(b): i for i, b in enumerate(blocks)}
    parent = [-1] + [row[id(b.parent)] for b in blocks[1:]]
    L = np.zeros((N, 4, 4))
    L[:, (0, 1, 2, 3), (0, 1, 2, 3)] = 1.0
    L[:, :3, 3] = [b.offset for b in blocks]
    T = np.zeros((N, 4, 4))
    T[:, (0, 1, 2, 3), (0, 1, 2, 3)] = 1.0
    counts: list[int] = []
    names: list[str] = []
    revolute: list[bool] = []
    letters: list[int] = []
    for b in blocks:
        chans = b.channels
        if not chans:
            counts.append(0)
            continue
        key = tuple(chans)
        columns = _USUAL_COLUMNS.get(key) or _columns_of(key)
        counts.append(len(key))
        prefix = b.name + "."
        names += [prefix + sfx for sfx in columns[0]]
        revolute += columns[1]
        letters += columns[2]
    D = len(names)
    inf = np.full(D, np.inf)
    return compile_figure(node_names=[b.name for b in blocks], parent=parent, L=L, T=T, dof_counts=counts,
                          dof_names=names, dof_revolute=revolute, dof_axis=_EYE3[letters], dof_letter=letters,
                          lower=-inf, upper=inf, rest=np.zeros(D))


def _columns_of(chans: tuple[tuple[DofKind, str], ...]) -> tuple[tuple[str, ...], tuple[bool, ...], tuple[int, ...]]:
    """Per channel: the DOF's name suffix (:func:`~animkit.joints.dof_suffixes`), whether it turns, its axis 0/1/2."""
    return dof_suffixes(chans), tuple(k == "revolute" for k, _ in chans), tuple("xyz".index(a) for _, a in chans)


# the columns of the usual CHANNELS lines (a table of the channel names, the same for every file)
_USUAL_COLUMNS = {chans: _columns_of(chans) for chans in _USUAL_CHANNELS.values()}
_EYE3 = np.eye(3)


def _translation(offset: Sequence[float] | None) -> Array:
    L = np.eye(4)
    if offset is not None:
        L[:3, 3] = offset
    return L


def _unique(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    i = 2
    while f"{base}{i}" in taken:
        i += 1
    return f"{base}{i}"


# --- reading the motion -----------------------------------------------------------------------------------


def _motion_header(text: str, start: int, line: int, path: str | None) -> tuple[int, float, int, int, int]:
    """Read ``Frames:`` and ``Frame Time:`` after MOTION; return (F, frame_time, Frames line, data offset, line)."""
    values: list[tuple[str, int]] = []
    patterns = [("Frames:", re.compile(r"^\s*Frames\s*:\s*(\S*)\s*$", re.IGNORECASE)),
                ("Frame Time:", re.compile(r"^\s*Frame\s+Time\s*:\s*(\S*)\s*$", re.IGNORECASE))]
    pos, n = start, line + 1  # n: the number of the line that starts at pos
    for label, pat in patterns:
        while True:
            if pos >= len(text):
                raise ParseError(path, f"expected '{label} …' after MOTION, got end of file", line=n - 1)
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            current, current_line = text[pos:end], n
            pos, n = end + 1, n + 1
            if current.strip():
                break
        m = pat.match(current)
        if m is None:
            raise ParseError(path, f"expected '{label} …', got {current.strip()!r}", line=current_line)
        values.append((m.group(1), current_line))
    (frames_text, frames_line), (time_text, time_line) = values
    if not _DIGITS.match(frames_text):
        raise ParseError(path, f"expected a whole number of frames after 'Frames:', got {frames_text!r}",
                         line=frames_line)
    count = int(frames_text) if len(frames_text) <= 20 else limits.MAX_FRAMES + 1
    if count < 1:
        raise ParseError(path, "expected at least one frame, got 'Frames: 0'", line=frames_line)
    if count > limits.MAX_FRAMES:
        raise ParseError(path, f"'Frames: {frames_text}' is more than animkit reads from one file "
                               f"({limits.MAX_FRAMES:,} frames, animkit.limits.MAX_FRAMES)", line=frames_line)
    if not _NUMBER.match(time_text) or not 1.0 / limits.MAX_FPS <= float(time_text) <= limits.MAX_TIME:
        raise ParseError(path, f"expected a number of seconds in [{1.0 / limits.MAX_FPS:g}, {limits.MAX_TIME:g}] "
                               "after 'Frame Time:' (positive, animkit.limits.MAX_FPS and MAX_TIME), "
                               f"got {time_text!r}", line=time_line)
    return count, float(time_text), frames_line, pos, n


# exact powers of ten: 10**k is a double for k <= 22, so m · 10**k and m / 10**k round once (Clinger's fast path)
_POW10 = np.array([float(10 ** k) for k in range(23)])
_MANTISSA_LIMIT = 2 ** 53  # every integer below it is a double
_RADIANS_PER_DEGREE = math.pi / 180.0  # NumPy's deg2rad multiplies by this double


# complexity: a numba kernel: a byte-level number scanner, one flat loop
def _scan_frames(buf: NDArray[np.uint8], out: Array, pow10: Array, scale: Array) -> int:  # noqa: C901
    """out[r, c] = float(token c of the r-th non-blank line of ``buf`` (ASCII)) · scale[c] when every token takes the
    fast path (one more rounding: a scale of π/180 gives ``np.deg2rad``'s value, of 1 the number itself).

    A token is [+-]?(d+.?d*|.d+)([eE][+-]?d+)?; its digits give an integer mantissa m < 2**53 and a decimal
    exponent e, and x = ±m · 10**e with |e| <= 22 is one correctly rounded multiply or divide, bit-identical to
    Python's float(). Tokens of at most 15 digits take m as written (m < 10**15, no check per digit); others, and
    any whose e falls outside, are read again with trailing zeros moved from m to e. Separators: space, tab, LF,
    and CR before LF or at the end. Returns 0 when ``out`` (count, width) is filled exactly; -1 on anything else
    (another separator or character, a token off the fast path, a line without exactly ``width`` tokens, too many
    or too few lines), leaving the caller's slower, exact path to read or explain it.
    """
    count, width = out.shape
    n = buf.shape[0]
    i = 0
    row = 0
    col = 0
    while i < n:
        c = buf[i]
        if c == 32 or c == 9:
            i += 1
            continue
        if c == 10 or c == 13:
            if c == 13 and i + 1 < n and buf[i + 1] != 10:
                return -1
            if c == 10 and col != 0:
                if col != width:
                    return -1
                row += 1
                col = 0
            i += 1
            continue
        if row >= count or col >= width:
            return -1
        negative = c == 45
        if c == 43 or c == 45:
            i += 1
        token = i
        full = 0  # the digits as written, point left out
        nd = 0
        point = -1
        while i < n:
            d = int(buf[i]) - 48
            if 0 <= d <= 9:
                full = full * 10 + d
                nd += 1
            elif d == -2 and point < 0:
                point = nd
            else:
                break
            i += 1
        if nd == 0:
            return -1
        exponent = 0 if point < 0 else point - nd
        if i < n and (buf[i] == 101 or buf[i] == 69):
            i += 1
            sign = 1
            if i < n and (buf[i] == 43 or buf[i] == 45):
                sign = -1 if buf[i] == 45 else 1
                i += 1
            power = 0
            exp_digits = 0
            while i < n and 48 <= buf[i] <= 57:
                if power < 100000:
                    power = power * 10 + (buf[i] - 48)
                exp_digits += 1
                i += 1
            if exp_digits == 0:
                return -1
            exponent += sign * power
        if i < n and not (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
            return -1
        if nd <= 15 and -22 <= exponent <= 22:  # full < 10**15 < 2**53: one rounding
            if full == 0:
                value = 0.0
            elif exponent >= 0:
                value = full * pow10[exponent]
            else:
                value = full / pow10[-exponent]
        else:  # the digits again, trailing zeros kept out of the mantissa
            mantissa = 0
            zeros = 0
            j = token
            while j < n:
                d = int(buf[j]) - 48
                if d == 0:
                    zeros += 1
                elif 0 < d <= 9:
                    if zeros != 0:
                        if mantissa != 0:
                            for _ in range(zeros):
                                mantissa *= 10
                                if mantissa >= _MANTISSA_LIMIT:
                                    return -1
                        zeros = 0
                    mantissa = mantissa * 10 + d
                    if mantissa >= _MANTISSA_LIMIT:
                        return -1
                elif d != -2:
                    break
                j += 1
            exponent += zeros
            if mantissa == 0:
                value = 0.0
            elif 0 <= exponent <= 22:
                value = mantissa * pow10[exponent]
            elif -22 <= exponent < 0:
                value = mantissa / pow10[-exponent]
            else:
                return -1
        out[row, col] = (-value if negative else value) * scale[col]
        col += 1
    if col != 0:
        if col != width:
            return -1
        row += 1
    return 0 if row == count else -1


scan_frames_kernel = kernel(_scan_frames)

# The scanner reads ~18 ns a value, NumPy's loadtxt ~160 ns. numba's start-up and the scanner's first loading cost
# ~0.45 s a process (~6 ms when another kernel already runs): ~3M values sent to loadtxt repay the first, ~40k the
# second (a process reading one CMU clip of 149–2,236 frames × 96 channels never starts numba for it; a long-lived
# one switches after some 30 MB of BVH text, or at once when numba is already up).
SCAN_JIT_MIN = 3e6
SCAN_JIT_WARM = 4e4


def load_scanner() -> bool:
    """Load the compiled scanner now, whatever the work (a process about to read much BVH, such as a batch worker,
    pays numba's start-up once up front); whether it is loaded."""
    if scan_frames_kernel is None or not _jit_enabled():
        return False
    scan_frames_kernel(np.frombuffer(b"0 0\n", dtype=np.uint8), np.empty((1, 2)), _POW10, np.ones(2))
    return bool(getattr(scan_frames_kernel, "ready", False))


def frames_compiled(block: str, count: int, width: int, scale: Array | None = None) -> Array | None:
    """The (count, width) frame values of ``block`` (column c times ``scale[c]`` where given) from a compiled
    scanner: the one built at install (from a process's first read, no start-up), else numba's where it pays
    (see :data:`SCAN_JIT_MIN`); None when neither runs or the scanner declined."""
    if width == 0 or not block.isascii():
        return None
    native = jit.native_kernels()
    if native is None and (scan_frames_kernel is None or
                           not jit_pays(scan_frames_kernel, count * width, SCAN_JIT_MIN, SCAN_JIT_WARM)):
        return None
    out = np.empty((count, width))
    if scale is None:
        scale = np.ones(width)
    raw = block.encode("ascii")
    if native is not None:
        done = native.scan_frames(raw, out, count, width, scale) == 0
    else:
        assert scan_frames_kernel is not None
        done = scan_frames_kernel(np.frombuffer(raw, dtype=np.uint8), out, _POW10, scale) == 0
    return out if done else None


def parse_frames(block: str, first_line: int, count: int, width: int, frames_line: int,
                  path: str | None, revolute: NDArray[np.bool_] | None = None) -> Array:
    """The (count, width) numbers of the MOTION data: compiled, else vectorised, then line by line only to explain
    a failure; the ``revolute`` columns (where given) from degrees to radians, x · π/180 as ``np.deg2rad``."""
    # each value takes a digit and a separator at least: a block shorter than that cannot fill 'Frames:', and
    # nothing of the size 'Frames:' claims is allocated before the lines present are read (and found short)
    short = width > 0 and len(block) < 2 * count * width - 1
    if width == 0 and block.count("\n") + 1 < count:  # no channels: one (empty) line per frame
        raise ParseError(path, f"the file ends after {block.count(chr(10)) + 1} lines; 'Frames: {count}' (line "
                               f"{frames_line}) expects {count} (empty) lines for a figure without channels",
                         line=first_line + block.count("\n"))
    turns = revolute is not None and bool(revolute.any())
    scale = np.where(revolute, _RADIANS_PER_DEGREE, 1.0) if revolute is not None and turns else None
    fast = None if short else frames_compiled(block, count, width, scale)
    if fast is not None:
        return fast
    lines = block.split("\n")
    if width == 0:
        data = np.zeros((0, 0))
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data": handled below
                data = np.loadtxt(lines, dtype=float, comments=None, ndmin=2)
        except ValueError:
            data = None
    if data is not None and data.shape == (count, width) and np.isfinite(data).all():
        if turns:
            data[:, revolute] = np.deg2rad(data[:, revolute])
        return data
    # slow path: find the first offending line
    seen = 0
    for n, line in enumerate(lines, start=first_line):
        toks = line.split()
        if not toks:
            continue
        seen += 1
        if seen > count:
            raise ParseError(path, f"more frame lines than 'Frames: {count}' (line {frames_line}) says; "
                                   f"expected {count} lines of {width} numbers", line=n)
        if len(toks) != width:
            raise ParseError(path, f"frame {seen} has {len(toks)} values; expected {width}, one per channel",
                             line=n)
        for i, tok in enumerate(toks):
            if not _NUMBER.match(tok) or not math.isfinite(float(tok)):
                raise ParseError(path, f"frame {seen}, value {i + 1}: expected a finite number, got {tok!r}",
                                 line=n)
    if width == 0 and seen == 0:
        return np.zeros((count, 0))
    if seen < count:
        last = first_line + len(lines) - 1
        raise ParseError(path, f"the file ends after {seen} frames; 'Frames: {count}' (line {frames_line}) "
                               f"expects {count} lines of {width} numbers", line=last)
    if width == 0:
        return np.zeros((count, 0))
    raise ParseError(path, f"could not read the {count} x {width} frame values", line=first_line)


def parse_bvh(text: str, path: str | Path | None = None) -> BvhData:
    """Parse BVH ``text`` into a figure and its frames (F, D) in ``dof_names`` order, radians and file units."""
    spath = None if path is None else str(path)
    if text.startswith("\ufeff"):
        text = text[1:]
    usual = _usual_split(text)
    if usual is not None:
        header, root, motion_end = usual
    else:
        m = _MOTION.search(text)
        header = text if m is None else text[:m.start()]
        root = _parse_hierarchy(header, spath)
        if m is None:
            raise ParseError(spath, "expected 'MOTION' after the hierarchy, got end of file",
                             line=header.count("\n") + 1)
        motion_end = m.end()
    motion_line = header.count("\n") + 1
    count, frame_time, frames_line, pos, line = _motion_header(text, motion_end + 1, motion_line, spath)
    blocks = _preorder(root)
    compiled = _compiled_from_blocks(blocks)
    name = Path(spath).stem if spath else "bvh"
    # the Joint/Dof/Node/Arc objects are built on first use: world positions need only the arrays
    figure = Figure.deferred(name, compiled, lambda: _build_figure(blocks, name, spath))
    frames = parse_frames(text[pos:], line, count, compiled.dof_count, frames_line, spath, compiled.dof_revolute)
    figure.defer_rig(character_rig)  # a humanoid's or a quadruped's chains and effectors, where the names say
    return BvhData(figure, frames, frame_time)


def read_bvh(path: str | Path) -> Scene:
    """Load a BVH file as a Scene: its figure (Y up) and one clip named after the file's stem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ParseError(str(p), f"cannot read file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(str(p), f"expected UTF-8 text, got byte 0x{raw[exc.start]:02x}",
                         line=raw.count(b"\n", 0, exc.start) + 1) from None
    data = parse_bvh(text, p)
    return Scene(data.figure, clips={p.stem: _clip_from_frames(data, p.stem)}, up="y", source=str(p))


def _clip_from_frames(data: BvhData, name: str) -> Any:
    """The keyframed clip of ``data``: key i at t = i · frame_time, fps = 1 / frame_time."""
    from ..keyframes import Clip

    return Clip.from_poses(data.figure, data.times, data.frames, name=name, fps=data.fps)


# --- writing ------------------------------------------------------------------------------------------------


class _Sampled(Protocol):
    @property
    def fps(self) -> float: ...
    @property
    def duration(self) -> float | None: ...

    def sample(self, times: ArrayLike) -> Array: ...


def _channel_of(figure_dof: Any, joint: Joint) -> tuple[str, float]:
    """The BVH channel of a DOF and the sign its values take (an axis −e_i is channel i with −θ)."""
    axis = figure_dof.axis
    for i, letter in enumerate("xyz"):
        for sign in (1.0, -1.0):
            e = np.zeros(3)
            e[i] = sign
            if np.allclose(axis, e, atol=1e-12):
                return _NAME_OF[(figure_dof.kind, letter)], sign
    raise SceneError(f"joint {joint.name!r}: DOF {figure_dof.name!r} has axis {np.round(axis, 6).tolist()}; BVH "
                     f"channels turn or slide only along the coordinate axes x, y, z")


def _frames_of(figure: Figure, motion: _Sampled | ArrayLike, frame_time: float | None) -> tuple[Array, float]:
    if hasattr(motion, "sample") and hasattr(motion, "fps"):
        clip: Any = motion
        ft = 1.0 / float(clip.fps) if frame_time is None else float(frame_time)
        if not math.isfinite(ft) or ft <= 0:
            raise AnimkitError(f"frame time must be a positive number of seconds, got {ft}")
        n = int(math.floor(float(clip.duration) / ft + 1e-9)) + 1
        frames = np.asarray(clip.sample(np.arange(n) * ft), dtype=float)
    else:
        if frame_time is None:
            raise AnimkitError("dumps_bvh of raw frames needs frame_time (seconds per frame)")
        ft = float(frame_time)
        if not math.isfinite(ft) or ft <= 0:
            raise AnimkitError(f"frame time must be a positive number of seconds, got {frame_time!r}")
        frames = np.asarray(motion, dtype=float)
    frames = figure.check_pose(frames)
    return np.atleast_2d(frames), ft


#: the baked BVH's Euler order (CMU's): R = R_z R_x R_y
BAKED_ORDER = "zxy"


def _writable(figure: Figure) -> bool:
    """Whether every arc's L is a pure translation and every DOF turns or slides along a coordinate axis."""
    for arc in figure.arcs():
        if not np.allclose(arc.L[:3, :3], np.eye(3), atol=1e-12):
            return False
        for d in arc.joint.dofs:
            if d.kind == "scale" or d.axis_letter is None and not any(
                    np.allclose(d.axis, -np.eye(3)[i], atol=1e-12) for i in range(3)):
                return False
    return True


def _nearest_rotation(M: Array) -> Array:
    """R = U Vᵀ from M = U Σ Vᵀ (the polar factor: the rotation nearest M), for (..., 3, 3)."""
    U, _, Vt = np.linalg.svd(M)
    R = U @ Vt
    flip = np.linalg.det(R) < 0
    if flip.any():
        U = U.copy()
        U[flip, :, 2] *= -1
        R = U @ Vt
    return R


def bvh_baked(figure: Figure, frames: ArrayLike) -> tuple[Figure, Array]:
    """Any figure and its frames (F, D) as a BVH-shaped figure (OFFSETs only, ``zxy`` rotations) and its frames.

    Rest frames become world-aligned: with W_j(t) the world matrix of node j and W_j⁰ its rest, the baked joint
    turns by G_j = W_j W_j⁰⁻¹ (rotation part; the rest rotation is baked into the channels), its OFFSET is
    p_j⁰ − p_parent⁰ (world axes) and its channels hold R_j = G_parentᵀ G_j, so
    p_j(t) = p_parent(t) + G_parent(t) OFFSET_j wherever the node's own translation does not move; a node whose
    position leaves that (an animated translation) gets position channels holding G_parentᵀ (p_j − p_parent) − OFFSET.
    The root gets six channels. Leaves that never move off their rest offset become End Sites. A static root with
    one child (glTF's ``world``) is left out. SceneError where a node's world matrix is not a rotation times its
    rest (an animated scale).
    """
    F = np.atleast_2d(figure.check_pose(frames))
    W = figure.world_batch(F)
    W0 = figure.world_batch(figure.rest_pose()[None])[0]
    names = figure.node_names
    index = {n: i for i, n in enumerate(names)}
    parent = [-1 if (up := figure.parent_of(n)) is None else index[up] for n in names]
    size = max(figure.size(), 1e-9)
    G = W[:, :, :3, :3] @ np.linalg.inv(W0[:, :3, :3])
    R = _nearest_rotation(G)
    bad = np.abs(G - R).max(axis=(0, 2, 3))
    if (bad > 1e-5).any():
        j = int(np.argmax(bad))
        raise SceneError(f"node {names[j]!r}: its world matrix is not a turn of its rest (an animated scale, off by "
                         f"{bad[j]:.3g}); BVH channels hold turns and positions only")
    p = W[:, :, :3, 3]
    p0 = W0[:, :3, 3]
    skip_root = (not figure.root_arc.joint.dofs and np.allclose(W0[0], np.eye(4), atol=1e-12)
                 and len(list(figure.root.arcs())) == 1)
    first = 1 if skip_root else 0
    kids: dict[int, list[int]] = {}
    for i in range(first + 1, len(names)):
        kids.setdefault(parent[i], []).append(i)
    cols: list[Array] = []
    root = first
    root_chans: list[tuple[DofKind, str]] = [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
    root_chans += [("revolute", a) for a in BAKED_ORDER]
    fig = Figure(names[root], joint=custom(names[root], root_chans, kind="free", order=BAKED_ORDER),
                 L=_translation(p0[root]), name=figure.name)
    cols += [p[:, root] - p0[root], euler_intrinsic_from_matrix(R[:, root], BAKED_ORDER)]
    todo = list(reversed(kids.get(root, [])))
    while todo:
        j = todo.pop()
        pj = parent[j]
        offset = p0[j] - p0[pj]
        local = np.einsum("fji,fj->fi", R[:, pj], p[:, j] - p[:, pj])  # G_parentᵀ (p_j − p_parent)
        moves = np.abs(local - offset).max() > 1e-9 * size
        rel = np.swapaxes(R[:, pj], 1, 2) @ R[:, j]
        leaf = j not in kids
        chans: list[tuple[DofKind, str]] = []
        if moves:
            chans += [("prismatic", "x"), ("prismatic", "y"), ("prismatic", "z")]
            cols.append(local - offset)
        if not leaf or moves:
            chans += [("revolute", a) for a in BAKED_ORDER]
            cols.append(euler_intrinsic_from_matrix(rel, BAKED_ORDER))
        kind: JointKind = "free" if moves else "ball"
        fig.add(names[j], names[pj], offset=offset,
                joint=custom(names[j], chans, kind=kind, order=BAKED_ORDER) if chans else fixed(names[j]))
        todo.extend(reversed(kids.get(j, [])))
    out = np.concatenate([c.reshape(len(F), -1) for c in cols], axis=1) if cols else np.zeros((len(F), 0))
    # continuity: each angle moved by whole turns toward the previous frame's
    rev = np.array([d.kind == "revolute" for d in fig.dofs])
    if len(F) > 1 and rev.any():
        out[:, rev] = np.unwrap(out[:, rev], axis=0)
    return fig, out


def bvh_files(path: Path, scene: Scene, clips: Sequence[Any], *, frame_time: float | None = None,
              precision: int | None = None) -> list[tuple[Path, bytes]]:
    """The one file a ``.bvh`` save writes (the format registry's writer, :data:`animkit.io.FORMATS`): the given
    clip, else the scene's first; a BVH file holds one."""
    if len(clips) > 1:
        raise AnimkitError(f"{path}: a BVH file holds one clip, got {len(clips)} "
                           f"({', '.join(c.name for c in clips)}); save each to its own file")
    text = dumps_bvh(scene.figure, clips[0] if clips else scene.clip(), frame_time=frame_time, precision=precision)
    return [(path, text.encode("utf-8"))]


def check_bvh_files(path: Path, files: Sequence[tuple[Path, bytes]]) -> None:
    """Read the bytes :func:`bvh_files` made as :func:`read_bvh` would (the registry's check before writing)."""
    parse_bvh(dict(files)[path].decode("utf-8"), str(path))


def dumps_bvh(figure: Figure, clip_or_frames: _Sampled | ArrayLike, *, frame_time: float | None = None,
              precision: int | None = None) -> str:
    """BVH text for ``figure`` and its motion: a clip (sampled every 1/fps s) or raw frames (F, D) in radians.

    Every arc's L must be a pure translation (its OFFSET) and every DOF turn or slide along a coordinate
    axis (a DOF along −x is written as ``Xrotation``/``Xposition`` with its values negated). A leaf with a
    fixed joint becomes an End Site (its name is not stored: it reads back as ``<parent>_end``) and any
    other fixed joint a JOINT with ``CHANNELS 0``. animkit and bvhio read ``CHANNELS 0``; pybvh 0.9 and
    fairmotion 0.0.4 accept only the usual layout (6 channels on the root, 3 rotations on every JOINT),
    which figures read from such files keep. Angles are written in degrees, everything with ``precision``
    decimals (the default 6 keeps world positions within 1e-6 of the figure's size for sizes above ~1).

    Any other figure (a glTF character: rest rotations in its nodes, scale channels) is written baked
    (:func:`bvh_baked`): world-aligned rest frames, each node's rest rotation folded into its channels, so the
    written file's FK gives the figure's world positions at every frame; its ``precision`` defaults to
    max(6, ⌈8 − log₁₀ size⌉) decimals, which keeps them within 1e-6 of the figure's size.
    """
    if precision is not None and (not isinstance(precision, int) or precision < 1):
        raise AnimkitError(f"precision must be a positive whole number of decimals, got {precision!r}")
    frames, ft = _frames_of(figure, clip_or_frames, frame_time)
    if not _writable(figure):
        if precision is None:
            precision = max(6, math.ceil(8.0 - math.log10(max(figure.size(), 1e-9))))
        figure, frames = bvh_baked(figure, frames)
    precision = 6 if precision is None else precision
    fmt = f"{{:.{precision}f}}"
    out = ["HIERARCHY"]
    columns: list[tuple[int, float, bool]] = []  # (DOF index, sign, revolute)
    dof_index = 0
    # depth-first with an explicit stack: ("open", arc, depth) / ("close", depth)
    todo: list[tuple[str, Any, int]] = [("open", figure.root_arc, 0)]
    while todo:
        what, arc, depth = todo.pop()
        ind = "\t" * depth
        if what == "close":
            out.append(ind + "}")
            continue
        L = arc.L
        if not np.allclose(L[:3, :3], np.eye(3), atol=1e-12):
            raise SceneError(f"node {arc.child.name!r}: its arc's L has a rotation; BVH stores only an OFFSET "
                             f"(a translation), so it cannot store this figure")
        offset = " ".join(fmt.format(v + 0.0) for v in L[:3, 3])
        children = list(arc.child.arcs())
        joint: Joint = arc.joint
        if arc.parent is not None and not joint.dofs and not children:
            out += [ind + "End Site", ind + "{", ind + "\tOFFSET " + offset, ind + "}"]
            continue
        names = []
        for d in joint.dofs:
            channel, sign = _channel_of(d, joint)
            names.append(channel)
            columns.append((dof_index, sign, d.revolute))
            dof_index += 1
        head = "ROOT" if arc.parent is None else "JOINT"
        out += [f"{ind}{head} {arc.child.name}", ind + "{", f"{ind}\tOFFSET {offset}",
                f"{ind}\tCHANNELS {len(names)}" + "".join(" " + n for n in names)]
        todo.append(("close", None, depth))
        todo.extend(("open", c, depth + 1) for c in reversed(children))
    values = frames.copy()
    for i, sign, revolute in columns:
        values[:, i] = sign * (np.rad2deg(values[:, i]) if revolute else values[:, i])
    values += 0.0  # -0.0 + 0.0 is +0.0
    out += ["MOTION", f"Frames: {values.shape[0]}", f"Frame Time: {ft:.10g}"]
    if values.shape[1]:
        row = " ".join([f"%.{precision}f"] * values.shape[1])
        out.extend(row % tuple(r) for r in values.tolist())
    else:
        out.extend("" for _ in range(values.shape[0]))
    return "\n".join(out) + "\n"
