"""The fuzz suite's worker process: reads cases from stdin, loads each with ``animkit.load``, answers one line each.

Run as ``python -m tests.fuzz_worker MEMORY_MB FILE...`` from the repository root (the files are copied into the
worker's folder, where a case may refer to them, and loaded once to warm up). Protocol, per case: the parent writes
``<suffix> <byte count>[ <folder>]\\n`` then the bytes (written into ``folder`` when given, beside files the case
refers to, else into the worker's own folder); the worker writes one JSON line: ``{"status": "ok"}``,
``{"status": "error", "type": ..., "message": ...}`` for an AnimkitError, or ``{"status": "bug", "type": ...,
"trace": ...}`` for anything else (MemoryError and RecursionError included). Every answer carries ``seconds`` (the
load's wall time) and ``peak_mb`` (the rise of the resident set's high-water mark over the load, from
``/proc/self/status`` after resetting it through ``/proc/self/clear_refs``; None where Linux does not offer that).

Once warmed up (imports, numba's
cache) the address space is capped at its current size plus MEMORY_MB, so a reader that tries to allocate what
the input merely claims dies with MemoryError (reported as a bug), not the machine. The parent enforces the time
limit (it kills and restarts a worker that does not answer).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:  # pragma: no cover - not Linux
        pass
    return None


def _reset_peak() -> int | None:
    """Reset VmHWM to the current resident set (Linux ≥ 4.0); the resident set in kB, or None."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # pragma: no cover - not Linux, or not allowed
        return None
    return _status_kb("VmRSS")


def main() -> None:
    import animkit
    from animkit.errors import AnimkitError

    memory = int(sys.argv[1]) * 1024 * 1024 if len(sys.argv) > 1 else 1 << 30
    folder = Path(tempfile.mkdtemp(prefix="animkit-fuzz-"))
    warm = []
    for p in map(Path, sys.argv[2:]):  # copied beside the cases (a scene's base), loaded before the cap
        warm.append(folder / p.name)
        warm[-1].write_bytes(p.read_bytes())
    for p in warm:  # imports and compiled kernels before the cap (numba and LLVM reserve much address space)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            animkit.load(p)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (_address_space() + memory, resource.RLIM_INFINITY))
    except (ValueError, OSError):  # pragma: no cover - a platform without RLIMIT_AS
        pass
    inp, out = sys.stdin.buffer, sys.stdout
    out.write(json.dumps({"status": "ready"}) + "\n")
    out.flush()
    n = 0
    while True:
        head = inp.readline()
        if not head:
            break
        suffix, size, *where = head.decode().split()
        data = inp.read(int(size))
        n += 1
        path = (Path(where[0]) if where else folder) / f"case{n}{suffix}"
        path.write_bytes(data)
        rss = _reset_peak()
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                animkit.load(path)
            answer = {"status": "ok"}
        except AnimkitError as exc:
            answer = {"status": "error", "type": type(exc).__name__, "message": str(exc)[:300],
                      "names_file": path.name in str(exc)}
        except BaseException as exc:  # noqa: BLE001 - a reader that raises anything else is what we look for
            answer = {"status": "bug", "type": type(exc).__name__,
                      "trace": "".join(traceback.format_exception(exc))[-2000:]}
        finally:
            path.unlink(missing_ok=True)
        answer["seconds"] = time.perf_counter() - t0
        hwm = _status_kb("VmHWM")
        answer["peak_mb"] = None if rss is None or hwm is None else max(0, hwm - rss) / 1024
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
