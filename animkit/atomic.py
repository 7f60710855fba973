"""Atomic output: write beside the target under a temporary name, rename onto it only when complete.

An interrupted write (an error, Ctrl-C) leaves no file and no temporary file, and whatever was at the
target before is untouched. Finished files get the usual permissions (0666 less the umask), not the
private 0600 that temporary files are created with.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "publish", "temporary_beside"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temporary_beside(target: Path, suffix: str = ".part") -> Path:
    """A new empty file ``.<name>.<random><suffix>`` in the target's folder (created if missing)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    return Path(name)


def publish(tmp: str | os.PathLike[str], target: str | os.PathLike[str], *, directory: bool = False) -> None:
    """chmod to the umask's default (0777 for folders, 0666 for files, less the umask), then rename onto target."""
    os.chmod(tmp, (0o777 if directory else 0o666) & ~_umask())
    os.replace(tmp, target)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it only if the block ends without error."""
    target = Path(path)
    tmp = temporary_beside(target)
    try:
        yield tmp
        publish(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
