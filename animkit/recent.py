"""Results kept by their inputs: up to a few entries, newest last, the oldest dropped.

Shared by threads (the batch). An entry holds the objects its key names by identity, so that no id is reused while
the entry stands; the key itself names the rest by content (:func:`animkit.look.surface.body_surface`,
:func:`animkit.motion.retarget_rest.standing_target` and the ground's skinned sub-meshes keep theirs here)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Recent"]

T = TypeVar("T")


class Recent(Generic[T]):
    """Up to ``keep`` results by key, newest last."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._entries: dict[Hashable, tuple[tuple[object, ...], T]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def fetch(self, key: Hashable, held: tuple[object, ...], make: Callable[[], T],
              valid: Callable[[T], bool] | None = None) -> T:
        """The result kept under ``key`` (while ``valid`` of it holds), else ``make()``, kept as the newest with
        ``held`` (the objects the key names by identity)."""
        with self._lock:
            hit = self._entries.get(key)
        value = hit[1] if hit is not None and (valid is None or valid(hit[1])) else make()
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (held, value)
            while len(self._entries) > self.keep:
                del self._entries[next(iter(self._entries))]
        return value
