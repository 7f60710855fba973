"""Rich display without upward imports: values ask this registry how to draw themselves.

The core types (:class:`~animkit.Scene`, :class:`~animkit.Clip`, :class:`~animkit.IKResult`, a reach, a
comparison) implement ``_repr_html_`` and ``_repr_png_``, which every Jupyter front end calls (classic notebook,
JupyterLab, VS Code, anything that speaks IPython's display protocol), by asking :func:`draw` for their picture.
The drawings live higher up (:mod:`animkit.apps.notebook`, which imports the renderer) and are registered here by
the *name* of the type they draw: the core names the hook, the upper layer fills it (dependency inversion), so
no core module imports the renderer, not even lazily.

A drawer that fails never raises into the front end (IPython would print a traceback in the cell's output):
``text/html`` falls back to a short note saying what went wrong, ``image/png`` to None (the front end then shows
the one-line ``repr``). A drawer may return None itself: nothing to draw for this value.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["Mime", "register", "draw", "html_for", "png_for", "registered"]

Mime = Literal["text/html", "image/png"]
#: (mime, "module.QualName") -> drawer(value) -> str (HTML), bytes (PNG) or None
_DRAWERS: dict[tuple[str, str], Callable[[Any], Any]] = {}


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(mime: Mime, type_name: str, drawer: Callable[[Any], Any] | None) -> None:
    """Draw values of the type called ``type_name`` (``"animkit.scene.Scene"``; subclasses too) as ``mime`` with
    ``drawer(value)``; ``drawer=None`` removes it."""
    if mime not in ("text/html", "image/png"):
        raise ValueError(f"mime must be 'text/html' or 'image/png', got {mime!r}")
    if drawer is None:
        _DRAWERS.pop((mime, type_name), None)
    else:
        _DRAWERS[(mime, type_name)] = drawer


def registered() -> dict[tuple[str, str], Callable[[Any], Any]]:
    """A copy of the registry: (mime, type name) -> drawer."""
    return dict(_DRAWERS)


def _fallback(value: Any, exc: BaseException) -> str:
    """A short HTML note in place of the picture: the value's one-line repr and the error's first line."""
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    return (f"<pre>{html.escape(repr(value))}</pre><p style='color:#a33;font-size:smaller'>not drawn: "
            f"{html.escape(type(exc).__name__)}: {html.escape(text[:300])}</p>")


def draw(value: Any, mime: Mime) -> Any:
    """The registered drawing of ``value`` as ``mime`` (found by its type's name, then its bases'), or None: none
    registered, the drawer had nothing to draw, or it failed (HTML: a short note instead; see the module)."""
    drawer = None
    for cls in type(value).__mro__:
        drawer = _DRAWERS.get((mime, _type_name(cls)))
        if drawer is not None:
            break
    if drawer is None:
        return None
    try:
        return drawer(value)
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be made must not break the cell's output
        return _fallback(value, exc) if mime == "text/html" else None


def html_for(value: Any) -> str | None:
    """``value``'s ``_repr_html_``: :func:`draw` as ``text/html``."""
    out = draw(value, "text/html")
    return out if isinstance(out, str) else None


def png_for(value: Any) -> bytes | None:
    """``value``'s ``_repr_png_``: :func:`draw` as ``image/png``."""
    out = draw(value, "image/png")
    return out if isinstance(out, bytes) else None
