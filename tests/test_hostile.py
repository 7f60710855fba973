"""Hostile and broken input (issue 15): files referred to by files, claimed sizes, deep nesting, absurd rates,
the environment (OS errors, numba that cannot compile), outputs (temporaries, folders), names with newlines,
and the IK reachability decision."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import animkit
from animkit import jit
from animkit.apps.cli import main
from animkit.atomic import remove_leftovers, temporary_beside
from animkit.errors import AnimkitError, ClipError, ParseError
from animkit.io import allow_roots, read_referenced, referenced_file
from animkit.io.bvh import dumps_bvh, parse_bvh
from animkit.keyframes import Clip
from animkit.limits import MAX_DEPTH, MAX_FPS, MAX_FRAMES
from animkit.model.figure import Figure
from animkit.model.joints import ball, hinge

from .conftest import DATA, ROOT, SCENES

ARM = (SCENES / "three_axis_arm.toml").read_text()


# --- files referred to by a file ----------------------------------------------------------------------------


def _scene_with_base(folder: Path, base: str) -> Path:
    p = folder / "scene.toml"
    p.write_text(f'[figure]\nbase = "{base}"\n')
    return p


@pytest.mark.parametrize("base", ["/dev/zero", "/etc/passwd", "../outside.toml", "sub/../../outside.toml"])
def test_base_outside_the_folder_or_a_device_is_refused(tmp_path: Path, base: str) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "outside.toml").write_text(ARM)
    with pytest.raises(ParseError, match="base scene") as info:
        animkit.load(_scene_with_base(inner, base))
    assert info.value.line == 2 and "scene.toml" in str(info.value)


def test_base_fifo_device_symlink_and_folder_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.toml")
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.toml"
    outside.write_text(ARM)
    (tmp_path / "link.toml").symlink_to(outside)
    (tmp_path / "dir.toml").mkdir()
    for base, why in [("pipe.toml", "a pipe"), ("zero.toml", "leaves the file's folder"),
                      ("link.toml", "leaves the file's folder"), ("dir.toml", "a folder")]:
        with pytest.raises(ParseError, match=why):
            animkit.load(_scene_with_base(tmp_path, base))
    outside.unlink()


def test_base_inside_the_tree_or_an_allowed_folder_loads(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "arm.toml").write_text(ARM)
    assert animkit.load(_scene_with_base(tmp_path, "sub/arm.toml")).figure.dof_count == 3
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "arm.toml").write_text(ARM)
    scene = _scene_with_base(tmp_path / "sub", str(other / "arm.toml"))
    with pytest.raises(ParseError, match="absolute path outside"):
        animkit.load(scene)
    with allow_roots(other):
        assert animkit.load(scene).figure.dof_count == 3


def test_referenced_file_is_size_capped(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 100)
    referrer = tmp_path / "a.gltf"
    assert read_referenced(referrer, "big.bin", what="buffer", limit=100) == b"x" * 100
    with pytest.raises(ParseError, match="the limit for a referenced file is 99"):
        read_referenced(referrer, "big.bin", what="buffer", key="/buffers/0/uri", limit=99)
    with pytest.raises(ParseError, match="file not found"):
        referenced_file(referrer, "nope.bin", what="buffer")


def test_urdf_mesh_that_is_a_pipe_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "m.stl")
    (tmp_path / "r.urdf").write_text('<robot name="r"><link name="a"><visual><geometry><mesh filename="m.stl"/>'
                                     '</geometry></visual></link></robot>')
    with pytest.raises(ParseError, match="a pipe"):
        animkit.load(tmp_path / "r.urdf")


def test_urdf_unknown_encoding_is_a_parse_error(tmp_path: Path) -> None:
    p = tmp_path / "r.urdf"
    p.write_bytes(b'<?xml version="1.0" encoding="no-such-codec"?><robot name="r"><link name="a"/></robot>')
    with pytest.raises(ParseError, match="no-such-codec"):
        animkit.load(p)


# --- sizes claimed before the data, nesting -----------------------------------------------------------------


def _walk_with_frames(frames: str, rows: int = 1) -> str:
    text = (DATA / "cmu_02_01_walk.bvh").read_text()
    head, rest = text.split("Frames:", 1)
    data = rest.split("\n")[2:2 + rows]
    return head + f"Frames: {frames}\nFrame Time: 0.0083333\n" + "\n".join(data) + "\n"


@pytest.mark.parametrize("frames, message", [("1000000000", "more than animkit reads"),
                                              ("1e20", "whole number of frames"),
                                              ("99999999999999999999999", "more than animkit reads"),
                                              (str(MAX_FRAMES), "the file ends after 1 frames")])
def test_bvh_frame_count_is_checked_against_the_data(frames: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_bvh(_walk_with_frames(frames), "walk.bvh")


def _deep_bvh(depth: int) -> str:
    lines = ["HIERARCHY", "ROOT r", "{", "OFFSET 0 0 0", "CHANNELS 3 Zrotation Xrotation Yrotation"]
    for i in range(depth):
        lines += [f"JOINT j{i}", "{", "OFFSET 0 1 0", "CHANNELS 1 Xrotation"]
    lines += ["}"] * (depth + 1) + ["MOTION", "Frames: 1", "Frame Time: 0.04", " ".join(["0"] * (3 + depth))]
    return "\n".join(lines) + "\n"


def test_bvh_nesting_beyond_the_limit_is_refused_and_within_it_reads() -> None:
    with pytest.raises(ParseError, match=f"nested more than {MAX_DEPTH} deep"):
        parse_bvh(_deep_bvh(10_000), "deep.bvh")
    assert parse_bvh(_deep_bvh(MAX_DEPTH - 1), "ok.bvh").frames.shape == (1, MAX_DEPTH + 2)


def test_bvh_with_ten_thousand_channels_reads() -> None:
    n = 10_000
    text = (f"HIERARCHY\nROOT r\n{{\nOFFSET 0 0 0\nCHANNELS {n} {' '.join(['Xrotation'] * n)}\n}}\nMOTION\n"
            f"Frames: 1\nFrame Time: 0.04\n{' '.join(['90'] * n)}\n")
    data = parse_bvh(text, "wide.bvh")
    assert data.frames.shape == (1, n) and np.allclose(data.frames, np.pi / 2)
    assert len(set(data.figure.dof_names)) == n


def test_deeply_nested_toml_is_a_parse_error(tmp_path: Path) -> None:
    p = tmp_path / "deep.toml"
    p.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ParseError, match="nested too deeply"):
        animkit.load(p)


def test_a_long_toml_chain_keeps_file_order_and_reads(tmp_path: Path) -> None:
    n = 1500
    lines = ["[figure]", 'name = "chain"', "[nodes.n0]"]
    for i in range(n, 0, -1):  # children before parents in the file: the order still comes out right
        lines += [f"[nodes.n{i}]", f'parent = "n{i - 1}"', "offset = [0, 0, 1]", 'joint = { kind = "hinge" }']
    p = tmp_path / "chain.toml"
    p.write_text("\n".join(lines) + "\n")
    fig = animkit.load(p).figure
    assert fig.node_names == [f"n{i}" for i in range(n + 1)]
    assert fig.world_positions(np.zeros(fig.dof_count))[0, -1, 2] == pytest.approx(n)


@pytest.mark.slow
def test_a_ten_thousand_node_toml_chain_loads_and_renders_a_still_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """``animkit render chain.toml -o still.png`` on a chain of 10,001 nodes, as a real process: it once took
    52-60 s and 5.4 GB (a capsule, a closedness check and a level of FK per node; np.unique's hash on edge keys);
    now a few seconds on a quiet machine (docs/hostile-input.md). Generous bounds, not a timing: done within
    120 s (a loaded machine), peak resident set under 1.5 GiB, and the still (no grid) shows the chain: a chain
    10,000 long drawn 640 px wide is far thinner than a pixel, so only a few of its pixels differ from the backdrop
    (8 here), and an empty still has none."""
    from PIL import Image

    n = 10_000
    lines = ["[figure]", 'name = "chain"', "[nodes.n0]"]
    for i in range(1, n + 1):
        lines += [f"[nodes.n{i}]", f'parent = "n{i - 1}"', "offset = [0, 0, 1]", 'joint = { kind = "hinge" }']
    src = tmp_path / "chain.toml"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "still.png"
    code = ("import resource, sys\nfrom animkit.apps.cli import main\nrc = main(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code, "render", str(src), "-o", str(out), "-q", "--no-grid"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 1.5 * 1024 * 1024, f"peak {peak_kib / 1024:.0f} MiB"
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert (np.abs(img - img[0, 0]).sum(axis=2) > 60).sum() >= 4  # the chain is drawn


# --- rates, spans, sizes ------------------------------------------------------------------------------------


def _arm() -> Figure:
    return animkit.load(SCENES / "three_axis_arm.toml").figure


@pytest.mark.parametrize("fps", [1e12, 1e300, MAX_FPS * 1.01])
def test_absurd_fps_is_a_clip_error(fps: float) -> None:
    with pytest.raises(ClipError, match="fps"):
        Clip.from_poses(_arm(), [0.0, 1.0], np.zeros((2, 3)), fps=fps)


def test_keys_far_in_time_and_spans_beyond_the_frame_limit_are_clip_errors() -> None:
    with pytest.raises(ClipError, match="key times lie within"):
        Clip.from_poses(_arm(), [0.0, 1e9], np.zeros((2, 3)))
    with pytest.raises(ClipError, match="frames; the limit"):
        Clip.from_poses(_arm(), [0.0, 9e5], np.zeros((2, 3)), fps=1000.0)


def test_cli_absurd_fps_and_size_exit_2_with_one_line(tmp_path: Path, capsys) -> None:
    scene = str(SCENES / "wave.toml")
    for extra in (["--fps", "1e12"], ["--fps", "1e300"], ["--size", "100000x10"]):
        assert main(["render", scene, "-o", str(tmp_path / "out.gif"), "-q", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("animkit: error:") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


# --- the environment ----------------------------------------------------------------------------------------


def test_cli_missing_output_folder_and_unreadable_input_exit_2(tmp_path: Path, capsys) -> None:
    scene = str(SCENES / "three_axis_arm.toml")
    assert main(["render", scene, "-o", str(tmp_path / "no" / "such" / "out.gif"), "-q"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "missing.toml")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_os_error_is_one_line(monkeypatch, capsys) -> None:
    def full(*args):
        raise OSError(28, "No space left on device", "/tmp/x.gif")

    monkeypatch.setattr("animkit.apps.cli.load_scene", full)  # the first thing `info` does
    assert main(["info", "x.toml"]) == 2
    assert capsys.readouterr().err == "animkit: error: /tmp/x.gif: No space left on device\n"


def test_save_into_a_missing_place_is_an_animkit_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(AnimkitError, match="cannot write"):
        animkit.save(tmp_path / "file" / "x.toml", _arm())


def test_numba_that_cannot_compile_falls_back_with_one_warning(tmp_path: Path) -> None:
    """A kernel numba cannot compile runs as Python with one warning, and numba stays off in that process (a fresh
    one: the fall-back is for the rest of a process's life, so it must not leak into other tests)."""
    if not jit.enabled():
        pytest.skip("numba is off or missing")
    code = textwrap.dedent("""
        import warnings
        from fractions import Fraction
        from animkit import jit

        def add(a, b):
            return a + b

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            one = jit.Kernel(add)(Fraction(1, 2), Fraction(1, 3))  # numba has no type for a Fraction
            two = jit.Kernel(add)(Fraction(1), Fraction(1))  # a second failure says nothing more
        print(one, two, len([x for x in w if "NumPy paths" in str(x.message)]), jit.enabled(), jit.native())
    """)
    script = tmp_path / "fraction_kernel.py"  # a file: numba caches only functions defined in one
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5/6", "2", "1", "False", "True"]


def test_numba_without_a_cache_folder_falls_back(tmp_path: Path) -> None:
    """A fresh process where numba's cache probe fails: BVH loads that ask for the compiled scanner still work,
    with one warning."""
    code = textwrap.dedent("""
        import warnings, numba
        real = numba.njit
        def njit(*a, **k):
            if k.get("cache"):
                raise RuntimeError("cannot cache function: no locator available for file")
            return real(*a, **k)
        numba.njit = njit
        import os
        os.environ["ANIMKIT_JIT"] = "always"  # a short clip alone would not start numba (its scanner must pay)
        import animkit
        animkit.jit.native_kernels = lambda: None  # numba's scanner, not the one compiled at install
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = animkit.load(PATH)
        print(len([x for x in w if "NumPy paths" in str(x.message)]), animkit.jit.enabled(),
              s.figure.dof_count, animkit.jit.native())
        animkit.jit.ENABLED = False  # the tests' switch still turns the ahead-of-time code off after a fall-back
        print(animkit.jit.native())
    """).replace("PATH", repr(str(DATA / "cmu_09_01_run.bvh")))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    dofs = str(animkit.load(DATA / "cmu_09_01_run.bvh").figure.dof_count)
    assert out.stdout.split() == ["1", "False", dofs, "True", "False"]


# --- outputs ------------------------------------------------------------------------------------------------


def test_leftovers_of_dead_owners_are_removed_on_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".out.gif.ak{dead}-abc123.partial.gif"
    stale.write_bytes(b"x" * 1000)
    stale_dir = tmp_path / f".frames.ak{dead}-xyz.partial"
    stale_dir.mkdir()
    mine = tmp_path / f".out.gif.ak{os.getpid()}-live.part"
    mine.write_bytes(b"")
    unrelated = tmp_path / ".out.gif.12345.part"
    unrelated.write_bytes(b"")
    animkit.save(tmp_path / "arm.toml", _arm())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["arm.toml", mine.name, unrelated.name])
    assert remove_leftovers(tmp_path) == []


def test_sigterm_removes_temporaries(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from animkit.atomic import temporary_beside
        t = temporary_beside(Path(sys.argv[1]) / "out.gif", suffix=".partial.gif")
        d = temporary_beside(Path(sys.argv[1]) / "frames", suffix=".partial", directory=True)
        (d / "frame_00000.png").write_bytes(b"png")
        print(t, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    tmp = Path(proc.stdout.readline().strip())
    assert tmp.exists() and len(list(tmp_path.iterdir())) == 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM  # the signal still ends the process as it would have
    assert list(tmp_path.iterdir()) == []


_SWALLOWED_CTRL_C = textwrap.dedent("""
    import ctypes, os, signal, sys
    import numpy as np
    from pathlib import Path
    from animkit.atomic import guard_interrupts
    from animkit.render.writers import GifWriter

    signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, even if started with SIGINT ignored
    def callback():  # what llvmlite's object-cache hook is: Python called from C, whose exceptions are dropped
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(1000))  # the handler runs here, inside the callback

    swallow = ctypes.CFUNCTYPE(None)(callback)
    frame = np.zeros((8, 8, 3), np.uint8)
    guarded = sys.argv[2] == "guarded"
    try:
        with guard_interrupts() if guarded else open(os.devnull):
            with GifWriter(Path(sys.argv[1]) / "out.gif", 10, (8, 8), quiet=True) as w:
                w.write(frame)
                swallow()
                w.write(frame)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
""")


@pytest.mark.parametrize("guarded", [False, True])
def test_a_ctrl_c_swallowed_by_a_callback_still_stops_the_writer(tmp_path: Path, guarded: bool) -> None:
    """The CI failure of 2026-11-27: a SIGINT that arrives while numba's compiler is in a ctypes callback raises
    KeyboardInterrupt there; CPython prints it as unraisable and goes on, and the render finished. Unguarded,
    this reproduces that (the GIF is written); under the CLI's guard the next frame raises it, nothing is left,
    and no traceback is printed."""
    proc = subprocess.run([sys.executable, "-c", _SWALLOWED_CTRL_C, str(tmp_path), "guarded" if guarded else "bare"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    if guarded:
        assert proc.stdout.strip() == "interrupted" and "Traceback" not in proc.stderr, proc.stderr
        assert list(tmp_path.iterdir()) == []
    else:
        assert proc.stdout.strip() == "finished" and "KeyboardInterrupt" in proc.stderr, proc.stderr
        assert [p.name for p in tmp_path.iterdir()] == ["out.gif"]


def test_output_folder_is_never_mixed_into_without_overwrite(tmp_path: Path, capsys) -> None:
    out = tmp_path / "shots"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"mine")
    scene = str(SCENES / "three_axis_arm.toml")
    for target in (str(out), str(out) + "/"):
        assert main(["render", scene, "-o", target, "-q", "--size", "32x32"]) == 2
        assert "not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["holiday.jpg"]
    assert main(["render", scene, "-o", str(out), "-q", "--size", "32x32", "--overwrite"]) == 0
    assert "holiday.jpg" in [p.name for p in out.iterdir()] and (out / "frame_00000.png").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["shots"]


def test_temporary_names_carry_the_owner(tmp_path: Path) -> None:
    t = temporary_beside(tmp_path / "x.toml")
    assert f".ak{os.getpid()}-" in t.name
    t.unlink()


# --- writers: names and values round-trip -------------------------------------------------------------------


_node_names = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=10)
_any_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
_angles = st.floats(-3.0, 3.0, allow_nan=False, width=64)


@given(names=st.lists(_node_names, min_size=2, max_size=4, unique=True), chain=_any_names, effector=_any_names,
       values=st.lists(_angles, min_size=4, max_size=4), length=st.floats(0.0, 10.0, allow_nan=False))
def test_toml_round_trip_of_any_names_and_values(tmp_path_factory, names, chain, effector, values, length) -> None:
    """Node names (no white space, as the figure demands), chain and effector names (anything: newlines, quotes,
    control characters, backslashes) and values written to TOML read back the same."""
    from animkit.model.rig import Rig

    assume(effector not in names)
    fig = Figure(names[0])
    prev = names[0]
    for n in names[1:]:
        fig.add(n, prev, offset=(0.0, 0.0, length), joint=hinge(n, "x"))
        prev = n
    fig.rig = Rig({chain: tuple(names[1:])}, {effector: names[-1]})
    path = tmp_path_factory.mktemp("rt") / "fig.toml"
    animkit.save(path, fig)
    back = animkit.load(path).figure
    assert back.node_names == fig.node_names and back.dof_names == fig.dof_names
    assert dict(back.rig.chains) == {chain: tuple(names[1:])} and dict(back.rig.effectors) == {effector: names[-1]}
    q = np.array(values[:fig.dof_count])
    np.testing.assert_allclose(back.world_positions(q), fig.world_positions(q), atol=1e-12)


_bvh_names = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="_-.:"), min_size=1,
                     max_size=10)


@given(names=st.lists(_bvh_names, min_size=2, max_size=4, unique=True),
       frames=st.lists(st.lists(st.floats(-170.0, 170.0, allow_nan=False), min_size=12, max_size=12),
                       min_size=1, max_size=4))
def test_bvh_round_trip_of_any_names_and_values(names, frames) -> None:
    fig = Figure(names[0], joint=ball(names[0] + "_r", "zxy"))
    prev = names[0]
    for n in names[1:]:
        fig.add(n, prev, offset=(0.0, 1.0, 0.0), joint=ball(n, "zxy"))
        prev = n
    D = fig.dof_count
    poses = np.deg2rad(np.array([row[:D] for row in frames]))
    text = dumps_bvh(fig, poses, frame_time=1 / 30, precision=9)
    back = parse_bvh(text, "rt.bvh")
    assert [n for n in back.figure.node_names if not n.endswith("_end")] == names
    np.testing.assert_allclose(back.frames, poses, atol=1e-9)


# --- IK: what "out of reach" claims -------------------------------------------------------------------------


def test_reachability_never_claims_a_target_inside_the_reach_bound() -> None:
    """Zero-length bone, nearly stretched and stopped after one iteration short of an in-line target inside the
    bound: not proven out of reach (the old "nearly stretched" rule said it was). Beyond the bound: proven."""
    from animkit.ik import LM, solve

    fig = Figure("base")
    fig.add("a", "base", joint=ball("shoulder", "zyx"))
    fig.add("b", "a", offset=(0, 0, 0), joint=hinge("twist", "z"))  # zero-length bone
    fig.add("c", "b", offset=(0, 0, 1.0), joint=hinge("elbow", "x"))
    fig.add("d", "c", offset=(0, 0, 1.0))
    q = np.zeros(fig.dof_count)
    q[-1] = 0.03
    p = fig.world_positions(q)[0, fig.node_names.index("d")]
    de = float(np.linalg.norm(p))
    assert de > 0.999 * 2.0
    inside = solve(fig, q, "d", p / de * (de + 2.0) / 2, solver=LM(max_iter=1))
    assert not inside.converged and inside.reachable is None
    beyond = solve(fig, q, "d", p / de * 2.001, solver=LM(max_iter=1))
    assert beyond.reachable is False
    assert solve(fig, q, "d", p / de * (de + 2.0) / 2).converged  # and it is reachable indeed


def test_the_cli_is_quick_to_refuse(tmp_path: Path, capsys) -> None:
    """A FIFO given as the base of a scene must not block the command (run in a thread with a deadline)."""
    import threading

    os.mkfifo(tmp_path / "pipe.toml")
    scene = _scene_with_base(tmp_path, "pipe.toml")
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(main(["info", str(scene)])), daemon=True)
    t.start()
    t.join(timeout=60)
    assert result == [2]
    assert "a pipe" in capsys.readouterr().err



# --- FK output: chunked, float32 on request -----------------------------------------------------------------


@pytest.mark.parametrize("compiled", [True, False])
def test_world_positions_in_chunks_and_float32(monkeypatch, compiled: bool) -> None:
    """Chunk boundaries change nothing (oracle: world_batch's translations, bit for bit); float32 is the float64
    result rounded once."""
    from animkit.model.fk import CHUNK_FRAMES

    if compiled and not jit.enabled():
        pytest.skip("numba is off")
    monkeypatch.setattr(jit, "ENABLED", compiled and jit.ENABLED)
    fig = animkit.load(SCENES / "humanoid.toml").figure
    poses = np.random.default_rng(3).uniform(-1.0, 1.0, (2 * CHUNK_FRAMES + 5, fig.dof_count))
    p64 = fig.world_positions(poses)
    np.testing.assert_array_equal(p64, fig.world_batch(poses)[:, :, :3, 3])
    p32 = fig.world_positions(poses, dtype=np.float32)
    assert p32.dtype == np.float32 and p32.shape == p64.shape
    np.testing.assert_array_equal(p32, p64.astype(np.float32))
    with pytest.raises(AnimkitError, match="float64 or float32"):
        fig.world_positions(poses[:1], dtype=np.int32)
