"""Panels drawn side by side on threads: :func:`panel_rows` advances each panel's frame stream on a thread of its
own (the rasteriser's kernels release the GIL), a frame or two ahead of the caller who composes and writes them
(:func:`animkit.render.frames.render_panels`). Each stream is advanced by one thread only, in order, so every frame
is the one a single thread draws.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["panel_rows", "render_threads", "RowSource"]

_EMPTY: NDArray[np.uint8] = np.zeros((0, 0, 3), np.uint8)

#: How :func:`animkit.render.frames.render_panels` advances its panels' frame streams: (streams, n) → frame k of
#: every stream for k < n, each row composed before the next is asked for (:func:`panel_rows`, or apps'
#: :func:`animkit.apps.panel_forks.forked_rows`: in forked processes).
RowSource = Callable[[Sequence[Iterator[NDArray[np.uint8]]], int], Iterator[list[NDArray[np.uint8]]]]


def render_threads() -> int:
    """The threads :func:`animkit.render.frames.render_panels` draws panels on: the cores this process may run on
    (at most 4)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def panel_rows(streams: Sequence[Iterator[NDArray[np.uint8]]], n: int, threads: int | None = None
               ) -> Iterator[list[NDArray[np.uint8]]]:
    """Frame k of every stream, for k < n: [next(s) for s in streams], each stream drawn on one of ``threads``
    threads (default :func:`render_threads`; stream i on thread i mod threads), a frame or two ahead of the caller.
    The rasteriser's kernels release the GIL, so panels draw side by side on several cores; each stream is advanced
    by one thread only, in order, so every frame is the one drawn alone."""
    threads = min(len(streams), render_threads() if threads is None else threads)
    if threads <= 1:
        for _ in range(n):
            yield [next(s) for s in streams]
        return
    stop = threading.Event()
    lanes: list[queue.Queue[list[NDArray[np.uint8]] | BaseException]] = [queue.Queue(2) for _ in range(threads)]

    def draw(t: int) -> None:
        mine = streams[t::threads]
        try:
            for _ in range(n):
                if not _put(lanes[t], [next(s) for s in mine], stop):
                    return
        except BaseException as exc:  # handed to the caller, raised there
            _put(lanes[t], exc, stop)

    workers = [threading.Thread(target=draw, args=(t,), name=f"animkit-panels-{t}", daemon=True)
               for t in range(threads)]
    for w in workers:
        w.start()
    try:
        for _ in range(n):
            row: list[NDArray[np.uint8]] = [_EMPTY] * len(streams)  # each slot replaced below
            for t, lane in enumerate(lanes):
                part = lane.get()
                if isinstance(part, BaseException):
                    raise part
                row[t::threads] = part
            yield row
    finally:
        stop.set()
        for w in workers:
            w.join()


def _put(lane: queue.Queue[Any], item: object, stop: threading.Event) -> bool:
    """Put ``item`` on ``lane`` once there is room; False (and nothing put) once ``stop`` is set: the caller left."""
    while not stop.is_set():
        try:
            lane.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
