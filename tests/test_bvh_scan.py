"""The compiled MOTION scanners (the C extension built at install, and numba's compile of the same Python) against
their oracles: Python's float() per token, the NumPy path per file, and each other, bit for bit."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import animkit.jit
from animkit.errors import ParseError
from animkit.io import bvh

pytestmark = pytest.mark.skipif(bvh.scan_frames_kernel is None, reason="numba is off or missing")

DATA = Path(__file__).parent / "data"
FILES = sorted(DATA.glob("*.bvh"))
NATIVE = animkit.jit.native_kernels()


@pytest.fixture(scope="module", autouse=True, params=["native", "numba"])
def scanner(request: pytest.FixtureRequest) -> object:
    """Every test below runs on each compiled scanner: the C extension, then numba's (the C one set aside)."""
    if request.param == "native":
        if NATIVE is None:
            pytest.skip("the C extension animkit._native is not built here (no C compiler at install)")
        yield NATIVE
        return
    with pytest.MonkeyPatch.context() as m:
        m.setattr(animkit.jit, "native_kernels", lambda: None)
        yield bvh.scan_frames_kernel


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """pip install builds animkit._native wherever a C compiler is on PATH: a silent fallback would hide a
    broken build (and a fresh process would pay numba's start-up or NumPy's slower read)."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is not None:
        assert NATIVE is not None


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def spellings(x: float) -> list[str]:
    """``x`` written the ways files and printf write it, and with a leading '+', '.5' and '5.' where they apply."""
    out = [repr(x)] + [format(x, spec) for spec in (".6f", "g", "e", ".3E", ".15g", ".17g", ".4f")]
    more = []
    for s in out:
        if not s.startswith("-"):
            more.append("+" + s)
        body = s.lstrip("+-")
        sign = s[: len(s) - len(body)]
        if body.startswith("0."):
            more.append(sign + body[1:])  # .5
        if "." in body and "e" not in body.lower():
            more.append(s.rstrip("0"))  # 5.
    return out + more


numbers = (st.floats(allow_nan=False, allow_infinity=False)
           | st.floats(-1e4, 1e4).map(lambda v: round(v, 4))
           | st.integers(-10**6, 10**6).map(float)
           | st.sampled_from([0.0, -0.0, 0.1, 1e22, 1e23, 5e-324, 2.0**53, 2.0**53 + 2, 9007199254740993.0]))


@given(numbers)
def test_each_token_is_bit_identical_to_float(x: float) -> None:
    for s in spellings(x):
        got = bvh.frames_compiled(s, 1, 1)
        if got is not None:  # None: off the fast path, left to the exact NumPy path
            assert bits(got)[0, 0] == bits(np.array(float(s)))[()], s


@pytest.mark.parametrize("s", ["1.5", "-0.000000", "-0", "+0.0", ".5", "-.5", "5.", "+3e2", "1E-5", "-2.5e+3",
                               "0e99999", "10.4194", "-30.1003", "0.0083333", "123456.789012", "1e-22",
                               "900719925474099.1", "1" + "0" * 22, "0." + "0" * 30 + "1e30",
                               "123456789012345", "1234567890123456", "1000000000e20", "0.1234567890123450"])
def test_usual_tokens_take_the_fast_path(s: str) -> None:
    got = bvh.frames_compiled(s, 1, 1)
    assert got is not None, s
    assert bits(got)[0, 0] == bits(np.array(float(s)))[()]


@pytest.mark.parametrize("block, count, width", [
    ("1 2\n3\n", 2, 2), ("1 2 3\n4 5\n", 2, 2), ("1 2\n3 4\n", 1, 2), ("1 2\n", 2, 2), ("1 2\n3 4\n5 6", 2, 2),
    ("1 x\n", 1, 2), ("1 nan\n", 1, 2), ("1 inf\n", 1, 2), ("1 1e999\n", 1, 2), ("1 2.5.1\n", 1, 2),
    ("1 -\n", 1, 2), ("1 .\n", 1, 2), ("1 1e\n", 1, 2), ("1 e5\n", 1, 2), ("1 1e+\n", 1, 2), ("1 0x10\n", 1, 2),
    ("1 2\r3 4\n", 2, 2), ("1 2\f\n", 1, 2), ("1\v2\n", 1, 2), ("1,2\n", 1, 2), ("1 2\x00\n", 1, 2),
    ("1 12345678901234567\n", 1, 2), ("1 1e23\n", 1, 2), ("1 1e-23\n", 1, 2), ("1 1_000\n", 1, 2),
    ("1 2 # comment\n", 1, 2), ("1 \u00e9\n", 1, 2), ("", 1, 2), ("\n\n", 1, 2),
])
def test_the_scanner_declines_what_it_does_not_read_exactly(block: str, count: int, width: int) -> None:
    assert bvh.frames_compiled(block, count, width) is None


separators = st.sampled_from([" ", "  ", "\t", " \t "])
line_ends = st.sampled_from(["\n", "\r\n", " \n", "\n\n", "\n \t\n", "\r\n\r\n"])


@st.composite
def motion_blocks(draw: st.DrawFn) -> tuple[str, int, int]:
    count, width = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    lines = []
    for _ in range(count):
        toks = [draw(st.sampled_from(spellings(draw(numbers)))) for _ in range(width)]
        lines.append(draw(separators).join(toks) if width else "")
    text = draw(st.sampled_from(["", "\n", " "])) + "".join(ln + draw(line_ends) for ln in lines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no newline after the last line
    return text, count, width


@given(motion_blocks())
def test_blocks_read_the_same_compiled_and_in_numpy(case: tuple[str, int, int]) -> None:
    block, count, width = case
    animkit.jit.ENABLED = False
    try:
        want = bvh.parse_frames(block, 1, count, width, 0, None)
    except ParseError:  # a spelling that rounds to infinity ('%.3E' of 1.7977e308)
        assert bvh.frames_compiled(block, count, width) is None
        with pytest.raises(ParseError):
            bvh.parse_frames(block, 1, count, width, 0, None)
        return
    finally:
        animkit.jit.ENABLED = True
    got = bvh.frames_compiled(block, count, width)
    if got is not None:
        np.testing.assert_array_equal(bits(got), bits(want))
    np.testing.assert_array_equal(bits(bvh.parse_frames(block, 1, count, width, 0, None)), bits(want))


@given(motion_blocks(), st.data())
def test_degrees_become_radians_as_deg2rad_does(case: tuple[str, int, int], data: st.DataObject) -> None:
    """parse_frames' ``revolute`` columns (scaled inside the scanner) equal np.deg2rad of the plain read, bit for bit,
    compiled and in NumPy."""
    block, count, width = case
    revolute = np.array(data.draw(st.lists(st.booleans(), min_size=width, max_size=width)), dtype=bool)
    try:
        plain = bvh.parse_frames(block, 1, count, width, 0, None)
    except ParseError:
        return
    want = plain.copy()
    want[:, revolute] = np.deg2rad(plain[:, revolute])
    np.testing.assert_array_equal(bits(bvh.parse_frames(block, 1, count, width, 0, None, revolute)), bits(want))
    animkit.jit.ENABLED = False
    try:
        numpy_path = bvh.parse_frames(block, 1, count, width, 0, None, revolute)
    finally:
        animkit.jit.ENABLED = True
    np.testing.assert_array_equal(bits(numpy_path), bits(want))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_real_files_parse_identically_and_take_the_fast_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text()
    monkeypatch.setattr(animkit.jit, "ENABLED", False)
    want = bvh.parse_bvh(text, path)
    monkeypatch.setattr(animkit.jit, "ENABLED", True)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("np.loadtxt ran: the compiled scanner declined a real file")

    monkeypatch.setattr(np, "loadtxt", refuse)
    got = bvh.parse_bvh(text, path)
    assert got.figure.dof_names == want.figure.dof_names
    assert got.frame_time == want.frame_time
    np.testing.assert_array_equal(bits(got.frames), bits(want.frames))


def test_load_scanner_loads_it_whatever_the_work() -> None:
    """A batch worker loads the scanner up front (frames_compiled alone runs it only where a read pays)."""
    assert bvh.load_scanner()
    assert bvh.scan_frames_kernel.ready
    assert bvh.frames_compiled("1 2\n3 4\n", 2, 2).tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.skipif(NATIVE is None, reason="the C extension is not built here (no C compiler at install)")
@given(motion_blocks(), st.data())
def test_the_c_scanner_equals_numbas_bit_for_bit(case: tuple[str, int, int], data: st.DataObject) -> None:
    """The C port returns what the Python reference compiled by numba returns: the same status and, where it reads,
    the same bits (scales included), on blocks it reads and on blocks cut short or spoiled by one byte."""
    block, count, width = case
    if data.draw(st.booleans()) and block:
        at = data.draw(st.integers(0, len(block) - 1))
        block = block[:at] + data.draw(st.sampled_from(["x", "\r", "", ".", "-", "e", "9" * 18])) + block[at + 1:]
    raw = block.encode("ascii")
    scale = np.array(data.draw(st.lists(st.sampled_from([1.0, np.pi / 180, -2.5]), min_size=width,
                                        max_size=width)))
    a, b = np.zeros((count, width)), np.zeros((count, width))
    status_c = NATIVE.scan_frames(raw, a, count, width, scale)
    status_numba = bvh.scan_frames_kernel(np.frombuffer(raw, dtype=np.uint8), b, np.array([float(10 ** k) for k in
                                                                                           range(23)]), scale)
    assert status_c == status_numba
    if status_c == 0:
        np.testing.assert_array_equal(bits(a), bits(b))
