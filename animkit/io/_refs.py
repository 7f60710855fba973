"""Files referred to by a file: a TOML ``[figure] base``, a URDF ``<mesh filename>``, a glTF buffer or image URI.

    allowed(ref) ⇔ realpath(folder(referrer) / ref) ∈ folder tree of the referrer (or of a root the user allowed)
                   ∧ it is a regular file (never a device, a pipe, a socket or a folder) ∧ size ≤ limit

A downloaded scene must not make animkit read ``/dev/zero``, block on a FIFO or probe files elsewhere, so an
absolute path or one that leaves the referring file's folder (``../``, or a symlink pointing out) is refused
unless the user allows more, explicitly: with :func:`allow_roots` (a context manager) or the environment
variable ``ANIMKIT_ALLOW_ROOTS`` (folders separated by ``os.pathsep``). Every reader calls
:func:`referenced_file` (to check a path it keeps, like a mesh drawn later) or :func:`read_referenced` (to read
the bytes now: the file is opened without blocking, checked again through the open handle, and read to at most
``limit`` bytes, so a file swapped or grown after the check still cannot hang or flood the reader).
"""

from __future__ import annotations

import contextvars
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from animkit import limits
from animkit.errors import ParseError

__all__ = ["referenced_file", "read_referenced", "allow_roots", "allowed_roots"]

_EXTRA: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar("animkit_allowed_roots", default=())


@contextmanager
def allow_roots(*folders: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, files referred to by a file may also lie anywhere under ``folders``."""
    token = _EXTRA.set(_EXTRA.get() + tuple(Path(f).resolve() for f in folders))
    try:
        yield
    finally:
        _EXTRA.reset(token)


def allowed_roots(folder: str | os.PathLike[str]) -> tuple[Path, ...]:
    """``folder`` (resolved), then the roots of :func:`allow_roots` and ``ANIMKIT_ALLOW_ROOTS``."""
    env = tuple(Path(f).resolve() for f in os.environ.get("ANIMKIT_ALLOW_ROOTS", "").split(os.pathsep) if f)
    return (Path(folder).resolve(), *_EXTRA.get(), *env)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def referenced_file(referrer: str | os.PathLike[str], ref: str, *, what: str, key: str | None = None,
                    line: int | None = None, limit: int | None = None,
                    folder: str | os.PathLike[str] | None = None) -> Path:
    """The resolved path of ``ref`` (relative to ``referrer``'s folder) once it passes the checks above.

    ``what`` says what the file is ("base scene", "mesh"); ``key`` (or a JSON pointer) / ``line`` place the
    reference in the referring file for the error; ``folder`` replaces the referrer's folder as the tree
    allowed (a URDF read with another ``base_dir``). Raises :class:`ParseError` naming the referring file.
    """
    src = str(referrer)
    limit = limits.MAX_REFERENCED_BYTES if limit is None else limit  # read now: an override takes effect

    def fail(message: str) -> ParseError:
        return ParseError(src, f"{what} {ref!r}: {message}", key=key, line=line)

    if not ref or "\x00" in ref:
        raise fail("expected a file path")
    roots = allowed_roots(Path(referrer).parent if folder is None else folder)
    raw = Path(ref)
    if raw.is_absolute() and not _inside(Path(os.path.abspath(raw)), roots):
        raise fail("an absolute path outside the file's folder; expected a path relative to it (allow other "
                   "folders with animkit.io.allow_roots or ANIMKIT_ALLOW_ROOTS)")
    try:
        target = (roots[0] / raw).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise fail(f"cannot resolve the path ({exc})") from None
    if not _inside(target, roots):
        raise fail(f"leaves the file's folder {str(roots[0])!r}; expected a file inside it (allow other folders with "
                   f"animkit.io.allow_roots or ANIMKIT_ALLOW_ROOTS)")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        raise fail("file not found") from None
    except OSError as exc:
        raise fail(f"cannot read it ({exc.strerror or exc})") from None
    _check_stat(st, limit, fail)
    return target


def _check_stat(st: os.stat_result, limit: int, fail: Callable[[str], ParseError]) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a pipe" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket"
                if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise fail(f"{kind}; expected a regular file")
    if st.st_size > limit:
        raise fail(f"{st.st_size:,} bytes; the limit for a referenced file is {limit:,} "
                   "(animkit.limits.MAX_REFERENCED_BYTES)")


def read_referenced(referrer: str | os.PathLike[str], ref: str, *, what: str, key: str | None = None,
                    line: int | None = None, limit: int | None = None,
                    folder: str | os.PathLike[str] | None = None) -> bytes:
    """The bytes of ``ref`` after :func:`referenced_file`'s checks, read without blocking and to ``limit`` bytes
    (default :data:`animkit.limits.MAX_REFERENCED_BYTES`, read at the call)."""
    limit = limits.MAX_REFERENCED_BYTES if limit is None else limit
    target = referenced_file(referrer, ref, what=what, key=key, line=line, limit=limit, folder=folder)

    def fail(message: str) -> ParseError:
        return ParseError(str(referrer), f"{what} {ref!r}: {message}", key=key, line=line)

    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise fail(f"cannot read it ({exc.strerror or exc})") from None
    try:
        _check_stat(os.fstat(fd), limit, fail)
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise fail(f"more than {limit:,} bytes; the limit for a referenced file is {limit:,} "
                           "(animkit.limits.MAX_REFERENCED_BYTES)")
        return b"".join(chunks)
    except OSError as exc:
        raise fail(f"cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
