"""Compiled kernels for the few measured hot loops that NumPy cannot vectorise well: numba's ``njit`` when it is
importable, otherwise nothing (every kernel has a NumPy path, which is also the reference its tests compare with).

    kernel(f) = numba.njit(f, cache=True, nogil=True)   if numba imports and ANIMKIT_JIT != "0"
              = None                                     otherwise

Callers check :func:`enabled` at call time (tests flip :data:`ENABLED` to run both paths). Compiled code is cached
on disk by numba, so only the first run on a machine pays the compilation (about a second per kernel).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["kernel", "enabled", "ENABLED"]

_njit: Any = None
if os.environ.get("ANIMKIT_JIT", "1").strip() != "0":
    try:
        from numba import njit as _njit
    except ImportError:  # pragma: no cover - numba is declared; a platform without its wheels runs NumPy
        _njit = None

ENABLED = _njit is not None


def kernel(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` compiled lazily (at its first call) by numba, or None when numba is off or missing."""
    if _njit is None:
        return None
    return _njit(cache=True, nogil=True)(fn)


def enabled() -> bool:
    """Whether compiled kernels run now (numba present, ANIMKIT_JIT not "0", and :data:`ENABLED` not cleared)."""
    return ENABLED and _njit is not None
