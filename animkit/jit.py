"""Compiled kernels for the few measured hot loops that NumPy cannot vectorise well: numba's ``njit`` when it is
installed, otherwise nothing (every kernel has a NumPy path, which is also the reference its tests compare with).

    kernel(f) = numba.njit(f, cache=True, nogil=True)   if numba is installed and ANIMKIT_JIT != "0"
              = None                                     otherwise

numba itself (a quarter of a second, and it pulls in SciPy) is imported only when :func:`enabled` is first asked,
so ``import animkit`` stays light. Callers check :func:`enabled` at call time, before calling a kernel (tests flip
:data:`ENABLED` to run both paths). Compiled code is cached on disk by numba, so only the first run on a machine
pays the compilation (about a second per kernel).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

__all__ = ["kernel", "enabled", "ENABLED"]

_WANTED = os.environ.get("ANIMKIT_JIT", "1").strip() != "0" and importlib.util.find_spec("numba") is not None
_njit: Any = None
_loaded = False

ENABLED = _WANTED


def _numba_njit() -> Any:
    """numba.njit, imported once; None when the import fails."""
    global _njit, _loaded
    if not _loaded:
        _loaded = True
        try:
            from numba import njit as _njit
        except ImportError:  # pragma: no cover - numba is declared; a platform without its wheels runs NumPy
            _njit = None
    return _njit


class _Kernel:
    """``fn``, compiled by numba at its first call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.compiled: Callable[..., Any] | None = None
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None:
            njit = _numba_njit()
            if njit is None:
                raise RuntimeError(f"{self.fn.__name__}: numba is not importable; check animkit.jit.enabled() first")
            self.compiled = njit(cache=True, nogil=True)(self.fn)
        return self.compiled(*args)


def kernel(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` compiled lazily (at its first call) by numba, or None when numba is off or missing."""
    if not _WANTED:
        return None
    return _Kernel(fn)


def enabled() -> bool:
    """Whether compiled kernels run now (numba importable, ANIMKIT_JIT not "0", and :data:`ENABLED` not cleared)."""
    return ENABLED and _WANTED and _numba_njit() is not None
