"""Panels drawn in forked processes: :func:`forked_rows` is :func:`animkit.render.panel_threads.panel_rows` with the
panels' frame streams advanced in processes forked from this one, so the rasteriser's Python work (most of a
panel's time: the NumPy set-up around the compiled kernels) runs on every core instead of under one GIL, beside
this process composing and encoding the frames (its own work: every panel is drawn in a child, so the GIF's
encoding, the longest serial part, never waits on a panel of its own). ``animkit compare`` draws its panels this way
(:func:`animkit.apps.cli._draw_panels`).

Each child starts with this process's streams as they are (fork: copy-on-write, nothing pickled on the way in),
advances its own in order, as one thread would, and copies each frame into a ring of frames in memory shared with
this process (``mmap``); a byte per row through a pipe says a row is ready, a byte back says its slot is free. A
child's error comes back pickled, as :func:`animkit.apps.forked.fork_map`'s do, and is raised here; a child never
outlives this process (killed when the work here fails or stops early, and on Linux when this process dies).
"""

from __future__ import annotations

import mmap
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from animkit.apps.forked import _end, _orphan_dies, _pickled_error, usable_cores

__all__ = ["forked_rows", "RING"]

Frame = NDArray[np.uint8]

#: Rows a child may draw ahead of this process (its ring holds RING + 2: those, the row read now and the one before
#: it, which the caller may still compare with): enough to keep drawing while this process works out the GIF's
#: palette from the first row (a median cut, tens of milliseconds).
RING = 16
_READY, _FAILED = b"\x01", b"\x00"


@dataclass
class _Child:
    """A forked child drawing the streams ``mine`` (indices into the caller's list) into ``ring``
    (slots, len(mine), H, W, 3)."""

    pid: int
    mine: list[int]
    ring: NDArray[np.uint8]
    ready: int  # read end: a byte per row drawn, or _FAILED then the pickled error
    free: int  # write end: a byte per slot given back


def forked_rows(streams: Sequence[Iterator[Frame]], n: int, shape: tuple[int, int, int],
                processes: int | None = None) -> Iterator[list[Frame]]:
    """Frame k of every stream, for k < n: [next(s) for s in streams], where stream i is advanced in forked
    child i mod g (g = min(len(streams), 2 × ``processes``); ``processes`` default: the cores this process may use),
    none here: this process only waits for the rows (the caller composes and encodes them meanwhile). Every frame is
    ``shape`` (H, W, 3) uint8. A row's frames stay valid until the row after next is asked for. One core, one
    stream or no ``os.fork``: every stream is advanced here."""
    cores = usable_cores() if processes is None else max(1, processes)
    groups = min(len(streams), 2 * cores)
    if cores < 2 or groups < 2 or not hasattr(os, "fork"):
        for _ in range(n):
            yield [next(s) for s in streams]
        return
    children: list[_Child] = []
    try:
        for g in range(groups):
            children.append(_fork_child(streams, list(range(g, len(streams), groups)), n, shape))
        row: list[Frame] = [np.zeros((0, 0, 3), np.uint8)] * len(streams)
        for k in range(n):
            for c in children:
                _wait_row(c)
                for j, i in enumerate(c.mine):
                    row[i] = c.ring[k % len(c.ring), j]
            yield list(row)
            if k >= 1 and k - 1 + len(children[0].ring) < n:  # row k − 1 is no longer read: its slot is free for
                for c in children:                              # the child's row k − 1 + slots
                    _give_back(c)
        for c in children:
            os.close(c.ready)
            os.close(c.free)
            os.waitpid(c.pid, 0)
        children.clear()
    finally:
        for c in children:  # the work here failed or stopped early: the rest is not wanted
            for fd in (c.ready, c.free):
                os.close(fd)
            _end(c.pid)


def _fork_child(streams: Sequence[Iterator[Frame]], mine: list[int], n: int, shape: tuple[int, int, int]) -> _Child:
    """A child forked to draw ``streams[i]`` for i in ``mine``, n frames each, into a shared ring."""
    slots = RING + 2
    size = slots * len(mine) * int(np.prod(shape))
    ring = np.frombuffer(mmap.mmap(-1, size), np.uint8).reshape(slots, len(mine), *shape)  # shared across fork
    ready_r, ready_w = os.pipe()
    free_r, free_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # what is buffered here is printed once, not again by the child
        stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: draw, hand each row over, end without this process's exit handlers
        code = 1
        try:
            os.close(ready_r)
            os.close(free_w)
            _orphan_dies(parent)
            code = _draw(streams, mine, n, ring, ready_w, free_r)
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(free_r)
    return _Child(pid, mine, ring, ready_r, free_w)


def _draw(streams: Sequence[Iterator[Frame]], mine: list[int], n: int, ring: NDArray[np.uint8], ready: int,
          free: int) -> int:
    """In a child: rows 0..n−1 of its streams into ``ring``, a byte on ``ready`` after each; waits for a byte on
    ``free`` before reusing a slot. Returns the exit status (0: done or the parent left)."""
    slots = len(ring)
    try:
        for k in range(n):
            if k >= slots and not os.read(free, 1):
                return 0  # the parent closed its end: nothing more is wanted
            for j, i in enumerate(mine):
                ring[k % slots, j] = next(streams[i])
            os.write(ready, _READY)
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, raised there
        with os.fdopen(ready, "wb") as fh:
            fh.write(_FAILED + _pickled_error(exc))
        return 0
    return 0


def _give_back(c: _Child) -> None:
    """Tell child ``c`` a slot of its ring is free (a child that is gone says why at the next :func:`_wait_row`)."""
    try:
        os.write(c.free, _READY)
    except BrokenPipeError:
        pass


def _wait_row(c: _Child) -> None:
    """Wait until child ``c`` has drawn its next row; its error (or its death) raised here."""
    got = os.read(c.ready, 1)
    if got == _READY:
        return
    chunks = []
    while chunk := os.read(c.ready, 1 << 20):
        chunks.append(chunk)
    if got == _FAILED and chunks:
        import pickle

        ok, value = pickle.loads(b"".join(chunks))
        raise value
    raise ChildProcessError(f"a forked panel renderer (pid {c.pid}) ended without its frames")
