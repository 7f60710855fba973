"""One exception hierarchy, rooted at :class:`AnimkitError`.

Normal failure (a target out of reach) is data in a result, never an exception;
these are for input that cannot be used: a malformed file, an unknown name, a
pose of the wrong length.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "AnimkitError",
    "SceneError",
    "ParseError",
    "PoseError",
    "ClipError",
    "IKError",
    "RenderError",
    "unknown_name",
]


class AnimkitError(Exception):
    """Base of every error animkit raises on purpose."""


class SceneError(AnimkitError):
    """A figure or scene description that cannot be built (bad name, parent, matrix, limit...)."""


class ParseError(SceneError):
    """A file that cannot be read: names the file, the line (or key) and what was expected."""

    def __init__(self, path: str | Path | None, message: str, *, line: int | None = None,
                 key: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.key = key
        where = self.path or "<input>"
        if line is not None:
            where += f":{line}"
        if key is not None:
            where += f": [{key}]"
        super().__init__(f"{where}: {message}")
        self.message = message


class PoseError(AnimkitError):
    """A pose vector of the wrong shape, or holding NaN/inf."""


class ClipError(AnimkitError):
    """A keyframed clip or track that cannot be built or sampled."""


class IKError(AnimkitError):
    """An IK problem that is not a problem: unknown effector, NaN target, a set that cannot move the effector."""


class RenderError(AnimkitError):
    """A render or output request that cannot be carried out (bad size, unknown format...)."""


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> str:
    """Message for an unknown ``name``: lists the valid names, close matches first."""
    valid = list(valid)
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
    rest = [v for v in valid if v not in close]
    shown = close + rest
    listing = ", ".join(repr(v) for v in shown[:12])
    if len(shown) > 12:
        listing += f", ... ({len(shown) - 12} more)"
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {kind} {name!r}{hint}; expected one of: {listing}"
