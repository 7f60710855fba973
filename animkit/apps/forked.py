"""Work spread over forked processes, for CPU-bound Python that threads cannot spread over cores (the GIL): the
reach bakes of ``animkit compare`` (:func:`animkit.apps.commands.compare`).

:func:`fork_map` runs its first job in this process and each other job in a child forked from it: the child starts
with this process's imports and data (copy-on-write, nothing pickled on the way in) and pickles its result back
through a pipe. Where there is no ``os.fork`` (Windows), or one job, the jobs run here one after another. A child
never outlives this process: it is killed when the work here fails or is interrupted, and on Linux when this
process dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import copyreg
import gc
import io
import os
import pickle
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar, cast

__all__ = ["fork_map", "usable_cores"]

T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def fork_map(jobs: Sequence[Callable[[], T]]) -> list[T]:
    """[job() for job in jobs], the first job in this process and each other in a forked child, all at once. A
    job's exception is raised here (the first job's first, then the children's in order); a child that dies
    without a result raises :class:`ChildProcessError`."""
    if len(jobs) < 2 or not hasattr(os, "fork"):
        return [job() for job in jobs]
    children: list[tuple[int, int]] = []
    try:
        for job in jobs[1:]:
            children.append(_spawn(job))
        results = [jobs[0]()]
        while children:
            pid, fd = children.pop(0)
            results.append(cast(T, _collect(pid, fd)))
        return results
    finally:
        for pid, fd in children:  # the work here failed or was interrupted: the rest is not wanted
            os.close(fd)
            _end(pid)


def _spawn(job: Callable[[], object]) -> tuple[int, int]:
    """A child forked to run ``job``: (its pid, the read end of the pipe its pickled (ok, value) comes through)."""
    r, w = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # what is buffered here is printed once, not again by the child
        stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: run the job, write the result, end without running this process's exit handlers
        code = 1
        try:
            os.close(r)
            _orphan_dies(parent)
            try:
                payload = _dumps((True, job()))
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, raised there
                payload = _pickled_error(exc)
            with os.fdopen(w, "wb") as fh:
                fh.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _end(pid: int) -> None:
    """Kill the child ``pid`` and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _orphan_dies(parent: int) -> None:
    """In a child: the default actions of SIGINT, SIGTERM and SIGHUP (the parent's handlers clean up the parent's
    files, not the child's business; a Ctrl-C ends the child quietly, the parent reports it), on Linux SIGKILL
    when the parent dies, and the parent's objects frozen out of the garbage collector (``gc.freeze``)."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    gc.freeze()  # what the parent made stays out of this child's collections: no page of it copied for the GC's sake


def _pickled_error(exc: BaseException) -> bytes:
    """(False, exc) pickled; an exception that does not pickle goes as a RuntimeError carrying its text."""
    try:
        data = _dumps((False, exc))
        pickle.loads(data)  # some exceptions pickle but do not unpickle (required arguments)
        return data
    except Exception:  # noqa: BLE001
        return _dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


def _dumps(value: object) -> bytes:
    """``value`` pickled, read-only mappings (``MappingProxyType``, as a Clip's tracks) included: as read-only
    mappings of copies of their items (the pickler's own table, nothing registered process-wide)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}
    pickler.dump(value)
    return buf.getvalue()


def _reduce_proxy(m: Mapping[Any, Any]) -> tuple[Callable[[dict[Any, Any]], Mapping[Any, Any]], tuple[Any, ...]]:
    return _read_only, (dict(m),)


def _read_only(items: dict[Any, Any]) -> Mapping[Any, Any]:
    """A read-only view of ``items`` (``MappingProxyType``): how a pickled one comes back."""
    return MappingProxyType(items)


def _collect(pid: int, fd: int) -> object:
    """The child's result, read to the end before it is reaped (a pipe holds only so much); its error raised."""
    chunks = []
    try:
        with os.fdopen(fd, "rb") as fh:
            while chunk := fh.read(1 << 20):
                chunks.append(chunk)
    except BaseException:  # interrupted while waiting: the child's work is not wanted
        _end(pid)
        raise
    _, status = os.waitpid(pid, 0)
    if not chunks:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
        raise ChildProcessError(f"a forked worker (pid {pid}) ended without a result ({how})")
    ok, value = pickle.loads(b"".join(chunks))
    if not ok:
        raise value
    return value
