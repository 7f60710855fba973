"""A tiny progress bar for long loops (renders, batch IK solves); no dependency.

Shown only when the stream is a terminal (or ``enabled=True``), never when ``enabled=False``
(``quiet``), and only once the work has taken more than ``delay`` seconds; redrawn at most
every ``interval`` seconds; the line is wiped when the work ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import IO, Generic, Never, TypeVar, overload

from .errors import AnimkitError

__all__ = ["Progress", "progress", "format_duration", "clock"]

T = TypeVar("T")
clock = time.monotonic  # tests replace this


def format_duration(seconds: float) -> str:
    """h:mm:ss, or m:ss under an hour."""
    s = max(0, int(round(seconds)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress(Generic[T]):
    """Counts work; draws ``desc: n/total [pct%] rate it/s ETA m:ss`` on one line.

    Iterate over it (when built from an iterable) or call :meth:`update`; use it as a context
    manager or call :meth:`close` to wipe the line.
    """

    def __init__(self, iterable: Iterable[T] | None, total: int | None, desc: str, *, enabled: bool | None,
                 stream: IO[str] | None, delay: float = 1.0, interval: float = 0.1) -> None:
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty()) if callable(isatty) else False
        self.enabled = enabled
        self.delay = delay
        self.interval = interval
        self.n = 0
        self.start = clock()
        self._last_draw: float | None = None
        self._width = 0
        self._closed = False

    def __iter__(self) -> Iterator[T]:
        if self.iterable is None:
            raise AnimkitError("this progress counts a total; call update() instead of iterating")
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        """n ← n + ``n``; redraw if shown and the last draw is older than ``interval``."""
        self.n += n
        if not self.enabled:
            return
        now = clock()
        if now - self.start < self.delay:
            return
        if self._last_draw is not None and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(now)

    def line(self, now: float) -> str:
        """The text of the bar at time ``now``."""
        elapsed = max(now - self.start, 1e-9)
        rate = self.n / elapsed
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            pct = 100.0 * self.n / self.total
            eta = (self.total - self.n) / rate if rate > 0 else float("inf")
            eta_s = format_duration(eta) if eta != float("inf") else "?"
            return f"{head}{self.n}/{self.total} [{pct:3.0f}%] {rate:.1f} it/s ETA {eta_s}"
        return f"{head}{self.n} {rate:.1f} it/s {format_duration(elapsed)}"

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = " " * max(0, self._width - len(text))
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Wipe the line if it was drawn."""
        if self._closed:
            return
        self._closed = True
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def __enter__(self) -> Progress[T]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@overload
def progress(iterable_or_total: int, desc: str = "", *, enabled: bool | None = None,
             stream: IO[str] | None = None, total: None = None, delay: float = 1.0,
             interval: float = 0.1) -> Progress[Never]: ...


@overload
def progress(iterable_or_total: Iterable[T], desc: str = "", *, enabled: bool | None = None,
             stream: IO[str] | None = None, total: int | None = None, delay: float = 1.0,
             interval: float = 0.1) -> Progress[T]: ...


def progress(iterable_or_total: Iterable[T] | int, desc: str = "", *, enabled: bool | None = None,
             stream: IO[str] | None = None, total: int | None = None, delay: float = 1.0,
             interval: float = 0.1) -> Progress[T]:
    """Progress over an iterable (``for x in progress(xs, "render")``) or a count (``p.update()``).

    ``enabled``: ``None`` shows it only on a TTY; ``False`` (quiet) never; ``True`` always.
    ``total`` defaults to ``len(iterable)`` when it has one. ``stream`` defaults to stderr.
    """
    if isinstance(iterable_or_total, int):
        if iterable_or_total < 0:
            raise AnimkitError(f"total must be >= 0, got {iterable_or_total}")
        if total is not None:
            raise AnimkitError("give the total once: either progress(n) or progress(iterable, total=n)")
        return Progress(None, iterable_or_total, desc, enabled=enabled, stream=stream, delay=delay,
                        interval=interval)
    it = iterable_or_total
    if total is None and hasattr(it, "__len__"):
        total = len(it)  # type: ignore[arg-type]
    return Progress(it, total, desc, enabled=enabled, stream=stream, delay=delay, interval=interval)
