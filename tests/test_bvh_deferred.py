"""The BVH reader's fast path: figures built straight into FK arrays, their objects built on first use.

Oracles: the same file's figure built joint by joint through ``Figure.add`` and compiled from its arcs (every
array bit for bit, world positions bit for bit on the NumPy and the compiled path), the textbook traversal
``Figure.world`` and the independent reference reader of ``tests/test_bvh.py`` — on every BVH in tests/data and
on hypothesis-generated hierarchies (every channel order, position channels anywhere or nowhere, repeated axes).
"""

from __future__ import annotations

import copy
import itertools
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from animkit import jit
from animkit.errors import AnimkitError
from animkit.io.bvh import parse_bvh
from animkit.model.figure import Figure
from animkit.model.fk import CompiledFigure
from tests.test_bvh import mutated, ref_positions, ref_read

DATA = Path(__file__).parent / "data"
FILES = sorted(DATA.glob("*.bvh"))
CHANNELS = [f"{a}{k}" for k in ("rotation", "position") for a in "XYZ"]


def built_twin(text: str) -> Figure:
    """The same file's figure made again joint by joint through ``Figure.add`` from the reader's built objects, its
    FK arrays compiled from its arcs (Figure.compiled's general path)."""
    fig = parse_bvh(text).figure
    root = fig.root_arc  # builds the nodes, arcs, joints and DOFs
    twin = Figure(root.child.name, data=root.child.data, T=root.child.T, color=root.child.color, joint=root.joint,
                  L=root.L, name=fig.name)
    for arc in fig.arcs()[1:]:
        assert arc.parent is not None
        node = arc.child
        twin.add(node.name, arc.parent.name, L=arc.L, joint=arc.joint, data=node.data, T=node.T, color=node.color)
    assert fig.built and twin.built
    return twin


def assert_same_compiled(a: CompiledFigure, b: CompiledFigure) -> None:
    for name in CompiledFigure.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
        else:
            assert x == y, name
    np.testing.assert_array_equal(a.order, b.order)
    np.testing.assert_array_equal(a.row, b.row)
    for k, m in zip(a.kernel_tables, b.kernel_tables, strict=True):
        np.testing.assert_array_equal(k, m)


def positions_both_paths(fig: Figure, frames: np.ndarray, monkeypatch: pytest.MonkeyPatch
                         ) -> tuple[np.ndarray, np.ndarray | None]:
    """World positions by NumPy's forward, and by the compiled kernel where numba is on (tests set jit.ALWAYS)."""
    with monkeypatch.context() as m:
        m.setattr(jit, "ENABLED", False)
        numpy_path = fig.world_positions(frames)
    return numpy_path, (fig.world_positions(frames) if jit.enabled() else None)


def token_twin(text: str) -> str:
    """The same file with its first word, HIERARCHY, in lower case: the reader's line-by-line path takes only the
    usual layout (keywords in capitals, one statement a line) and declines it, so its token-by-token path reads it,
    which takes keywords in any case; nothing else changes (not a line number)."""
    m = re.match(r"\s*(HIERARCHY)(?=\s|$)", text)
    return text if m is None else text[:m.start(1)] + "hierarchy" + text[m.end(1):]


def assert_line_reader_agrees(text: str) -> None:
    """The line-by-line hierarchy reader gives the token reader's figure, bit for bit, or declines; it never
    accepts what the token reader refuses: the file and its :func:`token_twin` read the same, or fail the same."""
    try:
        slow = parse_bvh(token_twin(text))
    except AnimkitError as e:
        with pytest.raises(type(e)) as fast_error:
            parse_bvh(text)
        assert str(fast_error.value) == str(e)
        return
    fast = parse_bvh(text)
    assert fast.figure.node_names == slow.figure.node_names and fast.figure.dof_names == slow.figure.dof_names
    assert_same_compiled(fast.figure.compiled, slow.figure.compiled)
    assert fast.frames.tobytes() == slow.frames.tobytes() and fast.fps == slow.fps


def check_against_oracles(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_line_reader_agrees(text)
    data = parse_bvh(text)
    fig = data.figure
    assert not fig.built  # the reader's figure starts deferred
    names, dof_names = fig.node_names, fig.dof_names
    fast_numpy, fast_kernel = positions_both_paths(fig, data.frames, monkeypatch)
    assert not fig.built  # world positions, names and DOF count built no objects

    twin = built_twin(text)
    assert names == twin.node_names and dof_names == twin.dof_names
    assert_same_compiled(fig.compiled, twin.compiled)
    twin_numpy, twin_kernel = positions_both_paths(twin, data.frames, monkeypatch)
    assert fast_numpy.tobytes() == twin_numpy.tobytes()
    if fast_kernel is not None:
        assert twin_kernel is not None and fast_kernel.tobytes() == twin_kernel.tobytes()

    joints, rows = ref_read(text)
    assert len(joints) == len(names)  # the reference names End Sites <parent>_end without numbering clashes
    assert all(n == j["name"] or n.startswith(j["name"]) for j, n in zip(joints, names, strict=True))
    scale = max(1.0, float(np.abs(fast_numpy).max()))
    for f in range(len(rows)):
        ref = ref_positions(joints, rows[f])
        np.testing.assert_allclose(fast_numpy[f], ref, rtol=0, atol=1e-9 * scale)
        if fast_kernel is not None:
            np.testing.assert_allclose(fast_kernel[f], ref, rtol=0, atol=1e-9 * scale)
    world = fig.world(data.frames[-1])  # the textbook traversal (builds the objects)
    trav = np.array([world[n][:3, 3] for n in names])
    np.testing.assert_allclose(fast_numpy[-1], trav, rtol=0, atol=1e-12 * scale)
    assert fig.built and fig.node_names == names and fig.dof_names == dof_names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_shipped_bvh_matches_the_built_figure(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_against_oracles(path.read_text(), monkeypatch)


# --- generated hierarchies -------------------------------------------------------------------------------


def bvh_text(names: list[str], parents: list[int], channels: list[list[str]], offsets: np.ndarray,
             end_sites: list[bool], values: np.ndarray) -> str:
    """BVH text for a tree given in pre-order (``parents[i] < i``), with End Sites where asked on leaves."""
    children: dict[int, list[int]] = {i: [] for i in range(len(names))}
    for i, p in enumerate(parents[1:], start=1):
        children[p].append(i)
    out = ["HIERARCHY"]

    def write(i: int, depth: int) -> None:
        ind = "  " * depth
        out.append(f"{ind}{'ROOT' if i == 0 else 'JOINT'} {names[i]}")
        out.append(ind + "{")
        out.append(f"{ind}  OFFSET " + " ".join(f"{v:.5f}" for v in offsets[i]))
        out.append(f"{ind}  CHANNELS {len(channels[i])}" + "".join(" " + c for c in channels[i]))
        for c in children[i]:
            write(c, depth + 1)
        if end_sites[i] and not children[i]:
            out.extend([f"{ind}  End Site", f"{ind}  {{", f"{ind}    OFFSET 0.5 -1.25 2", f"{ind}  }}"])
        out.append(ind + "}")

    write(0, 0)
    out += ["MOTION", f"Frames: {len(values)}", "Frame Time: 0.0333333"]
    out += [" ".join(f"{v:.4f}" for v in row) for row in values]
    return "\n".join(out) + "\n"


@st.composite
def hierarchies(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 7))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    # any channels in any order, repeats included (the root has one at least, so frame lines are not empty)
    channels = [draw(st.lists(st.sampled_from(CHANNELS), min_size=1 if i == 0 else 0, max_size=7))
                for i in range(n)]
    names = [f"j{i}" for i in range(n)]
    if n > 1 and draw(st.booleans()):  # a JOINT named like its parent's End Site would be
        names[-1] = f"{names[parents[-1]]}_end"
    end_sites = [draw(st.booleans()) for _ in range(n)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offsets = rng.uniform(-20, 20, size=(n, 3))
    width = sum(len(c) for c in channels)
    values = rng.uniform(-200, 200, size=(draw(st.integers(1, 6)), width))
    return bvh_text(names, parents, channels, offsets, end_sites, values)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_line_reader_agrees_on_the_shipped_files(path: Path) -> None:
    text = path.read_text()
    assert token_twin(text) != text  # the twin goes the token way
    assert_line_reader_agrees(text)
    assert_line_reader_agrees(text.replace("\n", "\r\n"))


@given(mutated())
def test_the_line_reader_agrees_with_the_token_reader_on_mutated_files(text: str) -> None:
    assert_line_reader_agrees(text)


@given(hierarchies())
def test_generated_hierarchies_match_the_built_figure(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        check_against_oracles(text, monkeypatch)


@pytest.mark.parametrize("order", ["".join(p) for p in itertools.permutations("XYZ")])
@pytest.mark.parametrize("positions", ["none", "before", "after", "between"])
def test_every_euler_order_with_and_without_position_channels(order: str, positions: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rot = [f"{a}rotation" for a in order]
    pos = [f"{a}position" for a in "XYZ"]
    chans = {"none": rot, "before": pos + rot, "after": rot + pos, "between": rot[:1] + pos + rot[1:]}[positions]
    rng = np.random.default_rng(len(order) * 7 + len(positions))
    text = bvh_text(["hips", "spine", "head", "arm"], [-1, 0, 1, 1], [chans, chans, rot, chans],
                    rng.uniform(-10, 10, size=(4, 3)), [False, False, True, True],
                    rng.uniform(-180, 180, size=(5, 3 * len(chans) + 3)))
    check_against_oracles(text, monkeypatch)


# --- a deferred figure behaves as a built one --------------------------------------------------------------


def test_deferred_figure_pickles_copies_and_grows_as_a_built_one() -> None:
    text = (DATA / "cmu_09_01_run.bvh").read_text()
    data = parse_bvh(text)
    want = built_twin(text)
    for other in (pickle.loads(pickle.dumps(parse_bvh(text).figure)), copy.deepcopy(parse_bvh(text).figure)):
        assert other.built
        assert other.node_names == want.node_names and other.dof_names == want.dof_names
        assert [j.kind for j in other.joints] == [j.kind for j in want.joints]
        np.testing.assert_array_equal(other.world_positions(data.frames[:3]), want.world_positions(data.frames[:3]))
    grown = parse_bvh(text).figure
    grown.add("prop", "LeftHand", offset=(0, 0, 1))
    assert "prop" in grown.node_names and set(want.node_names) < set(grown.node_names)
    assert grown.compiled.node_count == len(want.node_names) + 1
    assert repr(parse_bvh(text).figure) == repr(want)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        parse_bvh(text).figure.nonsense  # noqa: B018
