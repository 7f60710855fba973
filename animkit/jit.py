"""Compiled kernels for the few measured hot loops that NumPy cannot vectorise well: numba's ``njit`` when it is
installed, otherwise nothing (every kernel has a NumPy path, which is also the reference its tests compare with).

    kernel(f) = numba.njit(f, cache=True, nogil=True), compiled at its first call   if numba is installed and
              = None                                                                 ANIMKIT_JIT != "0", else

numba itself (a quarter of a second, and it pulls in SciPy) is imported only when :func:`enabled` is first asked
or a kernel first runs, so ``import animkit`` stays light. A kernel may call other kernels of its module: they are
compiled with it. Callers check :func:`enabled` at call time (tests flip :data:`ENABLED` to run both paths). numba
caches compiled code on disk, so only the first run on a machine pays the compilation (about a second per kernel);
later processes pay loading it, once. Where numba cannot cache (no writable cache folder) or cannot compile, the
kernels are turned off with one warning and the NumPy paths run: compiled code never blocks use.
"""

from __future__ import annotations

import functools
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
    """numba.njit, imported once; None when the import fails or numba cannot cache here (warned once)."""
    global _njit, _loaded
    if not _loaded:
        _loaded = True
        try:
            from numba import njit as _njit
        except ImportError:  # pragma: no cover - numba is declared; a platform without its wheels runs NumPy
            _njit = None
        else:
            try:  # numba looks for a cache folder when a cached function is declared: probe it once
                _njit(cache=True)(_probe)
            except Exception as exc:  # noqa: BLE001 - numba raises RuntimeError, OSError...; any means "cannot"
                _fall_back(f"numba cannot cache compiled code here ({exc})")
                _njit = None
    return _njit


def _probe() -> int:  # pragma: no cover - compiled only to find numba's cache folder
    return 0


def _fall_back(reason: str) -> None:
    """Turn compiled kernels off for this process and say so once (a warning)."""
    global ENABLED
    if ENABLED:
        import warnings

        warnings.warn(f"{reason}; using the NumPy paths instead (set NUMBA_CACHE_DIR to a writable folder, or "
                      f"ANIMKIT_JIT=0 to silence this)", RuntimeWarning, stacklevel=3)
    ENABLED = False


class _Kernel:
    """``fn`` compiled by numba at its first call; kernels named in ``fn``'s code are compiled first and rebound
    in its module, so that numba sees compiled callees."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._compiled: Callable[..., Any] | None = None
        functools.update_wrapper(self, fn)

    def compiled(self) -> Callable[..., Any]:
        if self._compiled is None:
            njit = _numba_njit()
            if njit is None:
                raise RuntimeError(f"{self.fn.__name__}: numba is not importable; check animkit.jit.enabled() first")
            g = self.fn.__globals__
            for name in self.fn.__code__.co_names:
                callee = g.get(name)
                if isinstance(callee, _Kernel) and callee is not self:
                    g[name] = callee.compiled()
            self._compiled = njit(cache=True, nogil=True)(self.fn)
        return self._compiled

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            try:
                self.compiled()
            except Exception as exc:  # noqa: BLE001 - a compiler that fails must not block use
                _fall_back(f"numba could not compile {self.fn.__name__} ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''})")
                return self.fn(*args)  # this once, as plain Python; callers see enabled() False from now on
        assert self._compiled is not None
        return self._compiled(*args)


def kernel(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` as a lazily compiled numba kernel, or None when numba is off (ANIMKIT_JIT=0) or not installed."""
    return _Kernel(fn) if _WANTED else None


def enabled() -> bool:
    """Whether compiled kernels run now (numba importable, ANIMKIT_JIT not "0", :data:`ENABLED` not cleared)."""
    return ENABLED and _WANTED and _numba_njit() is not None
