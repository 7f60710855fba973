"""BVH's HIERARCHY section read into a figure (:mod:`animkit.io.bvh` reads a whole file): the usual layout line by
line, anything else token by token, which names the line of any error; the channel names; the figure built from
the blocks, or given first by its FK arrays (:meth:`animkit.model.figure.Figure.deferred`).

    M_child = M_parent · L(OFFSET) · E₁(c₁) · E₂(c₂) · … · E_k(c_k)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from animkit import limits
from animkit.errors import ParseError, SceneError, unknown_name
from animkit.model.figure import Figure
from animkit.model.fk import CompiledFigure, DofArrays, compile_figure
from animkit.model.joints import DofKind, Joint, JointKind, custom, dof_suffixes, fixed

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


def _after_hierarchy(lines: list[str]) -> int | None:
    """How many lines up to and including the first statement, which must be HIERARCHY alone (None if not)."""
    for n, line in enumerate(lines, start=1):
        t = line.split()
        if t:
            return n if t == ["HIERARCHY"] else None
    return len(lines)


def _channels_by_line(t: list[str]) -> list[tuple[DofKind, str]] | None:
    """A CHANNELS line's channels, its tail not the usual layout: the count and each name checked; None if wrong."""
    if len(t) < 2 or not _DIGITS.match(t[1]) or len(t[1]) > 20 or int(t[1]) != len(t) - 2:
        return None
    chans = [_CHANNEL_BY_LOWER.get(c.lower()) for c in t[2:]]
    return None if None in chans else chans  # type: ignore[return-value]


def _child_by_line(t: list[str], stack: list[_Block], names: set[str], n: int) -> _Block | None:
    """The JOINT or End Site block a ``JOINT name [{]`` / ``End Site [{]`` line opens (added to its parent's
    children); None for anything wrong (a repeated name, too deep, stray tokens)."""
    parent = stack[-1]
    brace = t[-1] == "{"
    if parent.kind == "End Site" or len(stack) >= limits.MAX_DEPTH or len(t) != 2 + brace:
        return None
    if t[0] == "End":
        if t[1] != "Site":
            return None
        b = _Block("End Site", "", n, parent)
    else:
        if t[1] in names:
            return None
        names.add(t[1])
        b = _Block("JOINT", t[1], n, parent)
    parent.children.append(b)
    return b


def _offset_by_tokens(t: list[str], b: _Block) -> bool:
    """An OFFSET line the pattern did not take, read token by token into ``b``; False if it is wrong."""
    if len(t) != 4 or b.offset is not None or not all(_NUMBER.match(x) for x in t[1:]):
        return False
    x, y, z = float(t[1]), float(t[2]), float(t[3])
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return False
    b.offset = (x, y, z)
    return True


# complexity: a reader: one branch per BVH keyword and malformed form
def _hierarchy_by_lines(header: str) -> _Block | None:  # noqa: C901
    """The usual layout — one statement a line, keywords in capitals — read line by line into the blocks
    :func:`_parse_hierarchy` would make; None for anything else (or anything wrong), which that reads (or
    explains) token by token. Three times faster on the CMU files; the tests hold the two equal. An OFFSET line is
    checked whole by one pattern and a CHANNELS line's tail looked up whole in
    :data:`_USUAL_CHANNELS`; lines those miss take the token-wise checks."""
    root: _Block | None = None
    pending: _Block | None = None  # opened, its "{" still to come
    stack: list[_Block] = []
    names: set[str] = set()
    lines = header.split("\n")
    n = _after_hierarchy(lines)
    if n is None:
        return None
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
            chans = _channels_by_line(t)
            if chans is None:
                return None
            b.channels = chans
        elif head == "JOINT" or head == "End":
            child = _child_by_line(t, stack, names, n)
            if child is None:
                return None
            if t[-1] == "{":
                stack.append(child)
            else:
                pending = child
        elif head == "OFFSET":  # one the pattern did not take: token by token
            if not _offset_by_tokens(t, stack[-1]):
                return None
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
    named ``<joint>.<suffix>`` as :func:`~animkit.model.joints.custom` names them."""
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
                          dofs=DofArrays(names, revolute, _EYE3[letters], letters, -inf, inf, np.zeros(D)))


def _columns_of(chans: tuple[tuple[DofKind, str], ...]) -> tuple[tuple[str, ...], tuple[bool, ...], tuple[int, ...]]:
    """Per channel: the DOF's name suffix (:func:`~animkit.model.joints.dof_suffixes`), whether it turns, its axis
    0/1/2."""
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
