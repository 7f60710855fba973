"""Panels drawn in forked processes (animkit.apps.panel_forks.forked_rows), as ``animkit compare`` draws them.
Oracles: the same streams advanced in turn in this process; the file render_panels writes on threads, byte for byte;
the process table (a child left running would show there)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import animkit
from animkit.apps.panel_forks import RING, forked_rows
from animkit.errors import RenderError
from animkit.render.frames import Panel, render_panels

from .conftest import SCENES

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform: streams run here")

SHAPE = (3, 4, 3)


def _stream(k: int, n: int, fail_at: int | None = None, die_at: int | None = None):
    """Frame f of stream k: every byte (31 k + f) mod 256, tagged with the drawing process in its last pixel."""
    for f in range(n):
        if f == fail_at:
            raise RenderError(f"stream {k} broke at {f}")
        if f == die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        img = np.full(SHAPE, (31 * k + f) % 256, np.uint8)
        img[-1, -1] = np.frombuffer(os.getpid().to_bytes(3, "little"), np.uint8)
        yield img


def _pid_of(img: np.ndarray) -> int:
    return int.from_bytes(bytes(img[-1, -1]), "little")


def _children_left() -> bool:
    try:
        return os.waitpid(-1, os.WNOHANG) != (0, 0)
    except ChildProcessError:  # no children at all
        return False


def test_rows_equal_the_streams_advanced_in_turn_each_stream_in_one_process() -> None:
    n = 2 * (RING + 2) + 3  # the children's rings wrap round twice
    rows = [[f.copy() for f in row] for row in forked_rows([_stream(k, n) for k in range(5)], n, SHAPE, processes=2)]
    want = [[next(s) for s in streams] for streams in [[_stream(k, n) for k in range(5)]] for _ in range(n)]
    assert len(rows) == n
    for got, exp in zip(rows, want, strict=True):
        assert [int(f[0, 0, 0]) for f in got] == [int(f[0, 0, 0]) for f in exp]
        np.testing.assert_array_equal(np.stack(got)[:, :-1], np.stack(exp)[:, :-1])
    pids = [{_pid_of(row[k]) for row in rows} for k in range(5)]
    assert all(len(p) == 1 for p in pids)  # each stream drawn by one process, in order
    # 5 streams, 2 cores: 4 groups, stream i in group i mod 4, each group in a child of its own (none here: this
    # process composes and encodes)
    assert pids[0] == pids[4]
    assert len({p for s in pids[:4] for p in s}) == 4 and os.getpid() not in pids[0] | pids[1] | pids[2] | pids[3]
    assert not _children_left()


def test_a_row_stays_valid_until_the_row_after_next_is_asked_for() -> None:
    n = RING + 6
    it = forked_rows([_stream(k, n) for k in range(2)], n, SHAPE, processes=2)
    before = next(it)
    kept = [int(f[0, 0, 0]) for f in before]
    for k in range(1, n):
        row = next(it)
        assert [int(f[0, 0, 0]) for f in before] == kept  # the row before is still as it was drawn
        assert [int(f[0, 0, 0]) for f in row] == [k, 31 + k]
        before, kept = row, [int(f[0, 0, 0]) for f in row]
        time.sleep(0.002 if k < 3 else 0.0)  # the children run ahead meanwhile, as far as their rings allow
    assert next(it, None) is None


def test_one_core_or_one_stream_runs_here() -> None:
    for streams, procs in (([_stream(0, 4), _stream(1, 4)], 1), ([_stream(0, 4)], 2)):
        rows = list(forked_rows(streams, 4, SHAPE, processes=procs))
        assert {_pid_of(f) for row in rows for f in row} == {os.getpid()}


def test_a_childs_error_is_raised_here_and_no_child_is_left() -> None:
    with pytest.raises(RenderError, match="stream 1 broke at 5"):
        list(forked_rows([_stream(0, 9), _stream(1, 9, fail_at=5)], 9, SHAPE, processes=2))
    assert not _children_left()
    with pytest.raises(ChildProcessError, match="ended without its frames"):
        list(forked_rows([_stream(0, 9), _stream(1, 9, die_at=4)], 9, SHAPE, processes=2))
    assert not _children_left()


def test_a_caller_that_stops_early_ends_the_children() -> None:
    n = 3 * (RING + 2)
    it = forked_rows([_stream(k, n) for k in range(3)], n, SHAPE, processes=2)
    for _ in range(4):
        next(it)
    it.close()  # the caller's work failed: the children, waiting for a free slot or drawing, are ended and reaped
    assert not _children_left()


def test_render_panels_in_forked_processes_writes_the_same_file(tmp_path) -> None:
    """The same GIF, byte for byte, as render_panels' default (threads): panels of different lengths, a held pose,
    a trail and a target."""
    fig = animkit.load(SCENES / "three_axis_arm.toml").figure
    poses = np.zeros((14, fig.dof_count))
    poses[:10, 0] = np.linspace(0, 1.2, 10)
    poses[:10, 1] = np.linspace(0, -0.8, 10)
    poses[10:] = poses[9]  # held: drawn once, then copied
    tip = fig.node_names.index("tip")
    trail = fig.world_positions(poses)[:, tip]
    panels = [Panel(fig, poses, "a", targets=np.array([[0.5, 0.5, 1.5]]), trail=trail),
              Panel(fig, poses[::-1], "b"), Panel(fig, poses[:6], "c", trail=trail[:6])]
    size = (60, 50)
    render_panels(panels, tmp_path / "threads.gif", fps=7, up="z", size=size, quiet=True)
    render_panels(panels, tmp_path / "forked.gif", fps=7, up="z", size=size, quiet=True,
                  rows=lambda streams, n: forked_rows(streams, n, (size[1], size[0], 3), processes=2))
    assert (tmp_path / "forked.gif").read_bytes() == (tmp_path / "threads.gif").read_bytes()
    assert not _children_left()
