"""Progress of long loops (renders, batch IK solves, baking, batch runs), drawn by tqdm.

The library counts; the bar is tqdm's (a terminal line, or a widget in a notebook). Shown only when the stream
is a terminal or the code runs in a Jupyter kernel (or ``enabled=True``), never when ``enabled=False``
(``quiet``), and only once the work has taken more than ``delay`` seconds; redrawn at most every ``interval``
seconds; the line is wiped when the work ends (``leave=False``). tqdm is imported when a bar is made.

Callers that draw their own progress (a GUI, a web page) pass a :data:`ProgressCallback` where a function
takes one (``animkit.apps.batch.run_batch(on_progress=...)``): ``callback(done, total, ...)``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

from animkit.errors import AnimkitError

__all__ = ["progress", "format_duration", "in_notebook", "ProgressCallback"]

T = TypeVar("T")
#: ``callback(done, total)``: how far a job has got, for callers that draw progress themselves.
ProgressCallback = Callable[[int, int], None]


def format_duration(seconds: float) -> str:
    """h:mm:ss, or m:ss under an hour."""
    s = max(0, int(round(seconds)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _has_widgets() -> bool:
    """ipywidgets is importable (tqdm's notebook bar needs it; without it the text bar is used)."""
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def progress(iterable_or_total: Iterable[T] | int, desc: str = "", *, enabled: bool | None = None,
             stream: IO[str] | None = None, total: int | None = None, delay: float = 1.0,
             interval: float = 0.1) -> Any:
    """A tqdm bar over an iterable (``for x in progress(xs, "render")``) or a count (``p.update()``, ``p.close()``).

    ``enabled``: ``None`` shows it on a TTY or in a notebook; ``False`` (quiet) never; ``True`` always.
    ``total`` defaults to ``len(iterable)`` when it has one. ``stream`` defaults to stderr.
    """
    if isinstance(iterable_or_total, int):
        if iterable_or_total < 0:
            raise AnimkitError(f"total must be >= 0, got {iterable_or_total}")
        if total is not None:
            raise AnimkitError("give the total once: either progress(n) or progress(iterable, total=n)")
        iterable: Iterable[T] | None = None
        total = iterable_or_total
    else:
        iterable = iterable_or_total
    out = sys.stderr if stream is None else stream
    notebook = stream is None and in_notebook()
    if enabled is None:
        isatty = getattr(out, "isatty", None)
        enabled = notebook or (bool(isatty()) if callable(isatty) else False)
    if not enabled:  # nothing is drawn: no tqdm (its import alone is a tenth of a second)
        return _Silent(iterable)
    if notebook and _has_widgets():
        from tqdm.notebook import tqdm
    else:
        from tqdm import tqdm
    return tqdm(iterable, desc=desc or None, total=total, file=out, disable=not enabled, delay=delay,
                mininterval=interval, leave=False, dynamic_ncols=True)


class _Silent:
    """A bar that draws nothing: iterates its iterable and counts ``update``s in ``n`` (as tqdm's); ``close`` and
    ``with`` do nothing."""

    def __init__(self, iterable: Iterable[Any] | None) -> None:
        self._iterable = iterable
        self.n = 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self._iterable if self._iterable is not None else ())

    def update(self, n: int = 1) -> None:
        """Count ``n`` more done; nothing to draw."""
        self.n += n

    def close(self) -> None:
        """Nothing to wipe."""

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
