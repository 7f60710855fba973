"""The ``animkit`` command run in the test's own process (:func:`animkit.apps.cli.main`), with what it printed: a
fresh ``python -m animkit`` costs a second of imports and kernel loads a call, which the tests that check what a
command does (not how its process starts and ends) need not pay. Tests of the process itself (exit codes seen by a
shell, signals, ``console_main``'s early exit) start a real one."""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from animkit.apps.cli import main

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class CliRun:
    """What ``subprocess.run(..., capture_output=True, text=True)`` gives a test: status, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path = ROOT) -> CliRun:
    """``animkit ARGS`` in this process, from ``cwd`` (the repository root, as the tests' subprocesses ran): its exit
    status and what it wrote to ``sys.stdout`` and ``sys.stderr``; the warnings hook it sets is put back."""
    out, err = io.StringIO(), io.StringIO()
    hook = warnings.showwarning
    try:
        with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        warnings.showwarning = hook
    return CliRun(code, out.getvalue(), err.getvalue())
