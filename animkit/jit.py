"""Compiled kernels for the few measured hot loops that NumPy cannot vectorise well: numba's ``njit`` when it is
installed, otherwise nothing (every kernel has a NumPy path, which is also the reference its tests compare with).

    kernel(f) = numba.njit(f, cache=True, nogil=True), compiled at its first call   if numba is installed and
              = None                                                                 ANIMKIT_JIT != "0", else

numba itself (a quarter of a second, and it pulls in SciPy) is imported only when :func:`enabled` is first asked
or a kernel first runs, so ``import animkit`` stays light. A kernel may call other kernels of its module: they are
compiled with it. Callers check :func:`enabled` at call time (tests flip :data:`ENABLED` to run both paths), or
:func:`pays` to use a kernel only where the work repays numba's start-up (tests set :data:`ALWAYS`). numba
caches compiled code on disk, so only the first run on a machine pays the compilation (about a second per kernel);
later processes pay loading it, once.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import Any

__all__ = ["kernel", "enabled", "pays", "ENABLED", "ALWAYS"]

_WANTED = os.environ.get("ANIMKIT_JIT", "1").strip() != "0" and importlib.util.find_spec("numba") is not None
_njit: Any = None
_loaded = False

ENABLED = _WANTED
# Tests set ALWAYS so that kernels run whatever the work size (also ANIMKIT_JIT=always).
ALWAYS = os.environ.get("ANIMKIT_JIT", "").strip().lower() == "always"


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
        return self.compiled()(*args)

    @property
    def ready(self) -> bool:
        """Whether this process has compiled (or loaded) the kernel already."""
        return self._compiled is not None


def kernel(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` as a lazily compiled numba kernel, or None when numba is off (ANIMKIT_JIT=0) or not installed."""
    return _Kernel(fn) if _WANTED else None


def enabled() -> bool:
    """Whether compiled kernels run now (numba importable, ANIMKIT_JIT not "0", :data:`ENABLED` not cleared)."""
    return ENABLED and _WANTED and _numba_njit() is not None


def pays(fn: Callable[..., Any] | None, work: float, threshold: float) -> bool:
    """Whether to run the kernel ``fn`` on ``work`` units: kernels are on and either ``fn`` is ready in this process
    (nothing left to pay) or ``work`` ≥ ``threshold``, the size from which the compiled path beats NumPy with
    numba's start-up and the kernel's loading (0.5–1 s a process when cached, a second or two more to compile on
    an empty cache) counted in. Each caller measures its own threshold and says so beside it.
    """
    if fn is None or not (ENABLED and _WANTED):
        return False
    if (isinstance(fn, _Kernel) and fn.ready) or ALWAYS:
        return enabled()
    return work >= threshold and enabled()
