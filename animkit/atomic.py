"""Atomic output: write beside the target under a temporary name, rename onto it only when complete.

    .<target name>.ak<owner pid>-<random><suffix>   →   os.replace   →   <target name>

An interrupted write (an error, Ctrl-C, SIGTERM) leaves no file and no temporary file, and whatever was at the
target before is untouched: temporaries are removed on the way out of an error or KeyboardInterrupt, and a
SIGTERM handler (installed with the first temporary, in the main thread) removes the live ones before the
process ends as the signal asks. A run killed outright (SIGKILL, a power cut) cannot clean up; its
temporaries carry the owner's pid, and the next write to that folder removes those whose owner is gone.
A Ctrl-C that compiled code swallows (a KeyboardInterrupt raised inside a ctypes callback, as llvmlite's is, is
printed and dropped) is still honoured where the CLI asked for it (:func:`guard_interrupts`): it is recorded,
and the next frame written or the publish raises it instead of going on.
Finished files get the usual permissions (0666 less the umask), not the private 0600 that temporary files
are created with. This module is the one home for output paths: every writer goes through it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["atomic_path", "publish", "temporary_beside", "discard", "remove_leftovers", "guard_interrupts",
           "raise_if_interrupted"]

_LIVE: set[Path] = set()  # temporaries of this process not yet published or discarded
_LOCK = threading.Lock()
_HANDLED: dict[int, Any] = {}  # signal → the handler that was there before ours
_PENDING_INTERRUPT = threading.Event()  # a SIGINT came (set only under guard_interrupts)
_LEFTOVER = re.compile(r"^\..+\.ak(\d+)-[A-Za-z0-9_]+(?:\.part|\.partial.*)$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _owner_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's live process (or a pid we cannot judge): leave its files alone
    return True


def remove_leftovers(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove animkit temporaries in ``folder`` whose owner process is gone; returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        m = _LEFTOVER.match(e.name)
        if m is None or _owner_alive(int(m.group(1))):
            continue
        p = Path(e.path)
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Remove this process's temporaries, then let the signal do what it did before."""
    with _LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    for p in live:
        _remove(p)
    previous = _HANDLED.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT under :func:`guard_interrupts`: record it, then raise KeyboardInterrupt as Python's handler does."""
    _PENDING_INTERRUPT.set()
    raise KeyboardInterrupt


@contextmanager
def guard_interrupts() -> Iterator[None]:
    """Make Ctrl-C stick while the block runs (the CLI's command): a KeyboardInterrupt swallowed on its way up
    (inside a ctypes callback of the JIT compiler) is raised again by :func:`raise_if_interrupted` at the next
    frame written and before any output is published. Only where SIGINT has Python's default handler; the
    handler is restored afterwards."""
    ours = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous_hook = sys.unraisablehook

    def swallowed(unraisable: Any) -> None:  # the interrupt a callback dropped: kept, not printed as a traceback
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _PENDING_INTERRUPT.set()
        else:
            previous_hook(unraisable)

    if ours:
        _PENDING_INTERRUPT.clear()
        signal.signal(signal.SIGINT, _on_interrupt)
        sys.unraisablehook = swallowed
    try:
        yield
        raise_if_interrupted()
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = previous_hook
            _PENDING_INTERRUPT.clear()


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a SIGINT came under :func:`guard_interrupts` (once; the flag is cleared)."""
    if _PENDING_INTERRUPT.is_set():
        _PENDING_INTERRUPT.clear()
        raise KeyboardInterrupt


def _remove_live() -> None:
    """At exit (a KeyboardInterrupt that ended the program included): remove the temporaries still live."""
    with _LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    for p in live:
        _remove(p)


def _install_handlers() -> None:
    if not _HANDLED.get(0):
        _HANDLED[0] = atexit.register(_remove_live)  # key 0: no signal, the exit hook (registered once)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None or sig in _HANDLED:
            continue
        try:
            current = signal.getsignal(sig)
            if current is _on_signal:
                continue
            signal.signal(sig, _on_signal)
            _HANDLED[sig] = current
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            pass


def _remove(p: Path) -> None:
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def temporary_beside(target: Path, suffix: str = ".part", *, directory: bool = False) -> Path:
    """A new empty file (or folder) ``.<name>.ak<pid>-<random><suffix>`` in the target's folder (created if
    missing), registered for removal on SIGTERM; leftovers of dead owners there are removed first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(target.parent)
    _install_handlers()
    prefix = f".{target.name}.ak{os.getpid()}-"
    signals = {signal.SIGTERM, signal.SIGINT, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}
    blocked = _block(signals)  # a signal between creating the file and registering it would leave it behind
    try:
        if directory:
            name = tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=target.parent)
        else:
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=target.parent)
            os.close(fd)
        p = Path(name)
        with _LOCK:
            _LIVE.add(p)
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return p


def _block(signals: set[signal.Signals]) -> set[int | signal.Signals] | None:
    """Hold back ``signals`` for this thread (delivered when the old mask, returned, is set again); None where that
    is not possible."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return None


def discard(tmp: str | os.PathLike[str]) -> None:
    """Remove a temporary (file or folder) and forget it."""
    p = Path(tmp)
    with _LOCK:
        _LIVE.discard(p)
    _remove(p)


def publish(tmp: str | os.PathLike[str], target: str | os.PathLike[str], *, directory: bool = False) -> None:
    """chmod to the umask's default (0777 for folders, 0666 for files, less the umask), then rename onto target;
    a pending interrupt (:func:`raise_if_interrupted`) is raised instead."""
    raise_if_interrupted()
    os.chmod(tmp, (0o777 if directory else 0o666) & ~_umask())
    os.replace(tmp, target)
    with _LOCK:
        _LIVE.discard(Path(tmp))


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it only if the block ends without error."""
    target = Path(path)
    tmp = temporary_beside(target)
    try:
        yield tmp
        publish(tmp, target)
    except BaseException:
        discard(tmp)
        raise
