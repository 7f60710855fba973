"""Shared test set-up: a derandomised hypothesis profile for CI, paths to shipped data, and numba's kernels
compiled once, before the workers start (see docs/testing.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from animkit import jit

jit.ALWAYS = True  # the kernels run in the tests whatever the work size (the CLI decides by measured size)

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile("deep", deadline=None, max_examples=3000)  # pytest --hypothesis-profile=deep
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "scenes"
DATA = Path(__file__).resolve().parent / "data"
#: the numba signatures the suite compiles (``jit.signatures()`` lines), recorded by a run with
#: ANIMKIT_RECORD_KERNELS=1 on an empty cache (the seconds column is each kernel's compile time there)
KERNELS = Path(__file__).resolve().parent / "kernel_signatures.txt"


@pytest.fixture(params=["compiled", "numpy"])
def lm_path(request, monkeypatch):
    """Run a test on both loops of a serial chain: the compiled kernel and NumPy's (the kernel's oracle)."""
    if request.param == "compiled" and not jit.enabled():
        pytest.skip("numba is not importable (or ANIMKIT_JIT=0): only the NumPy loop runs here")
    monkeypatch.setattr(jit, "ENABLED", request.param == "compiled" and jit.ENABLED)
    return request.param


@pytest.hookimpl(tryfirst=True)  # a worker records its kernels before it tells the controller it has finished
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ANIMKIT_NO_SKIPS=1 (what .ci/run sets for its main runs), a skipped test fails the run: CI installs
    everything the tests need (Node, three.js, gltf-validator, pygltflib, Xvfb, Chromium), so a skip there means
    something was not installed."""
    _record_kernels(session)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get("ANIMKIT_NO_SKIPS") != "1" or reporter is None:
        return
    skipped = reporter.stats.get("skipped", [])
    for rep in skipped[:20]:
        reporter.write_line(f"ANIMKIT_NO_SKIPS: skipped in CI: {rep.nodeid}: {rep.longrepr}", red=True)
    if skipped and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    """In the controller of a parallel run of the whole suite (pytest-xdist's workers start after this hook), compile
    the kernels the tests will call, split across one process a worker, onto numba's disk cache
    (``jit.warm``): the workers then load each kernel in milliseconds instead of compiling it each on its own
    (two workers reaching the same kernel at the same time both compile it). On a warm cache it only loads.
    ANIMKIT_WARM_KERNELS=0 turns it off, =1 on for any run; ANIMKIT_RECORD_KERNELS=1 (recording) turns it off."""
    if hasattr(config, "workerinput") or not jit.enabled() or not KERNELS.exists():
        return
    workers = len(getattr(config.option, "tx", None) or [])
    switch = os.environ.get("ANIMKIT_WARM_KERNELS", "")
    whole = config.args_source != pytest.Config.ArgsSource.ARGS or all(
        Path(a).resolve() in (ROOT, KERNELS.parent) for a in config.args)
    recording = os.environ.get("ANIMKIT_RECORD_KERNELS") == "1"  # compile times to record: nothing compiled before
    if switch == "0" or recording or (switch != "1" and not (workers > 1 and whole)):
        return
    parts = max(1, min(workers, os.cpu_count() or 1))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    code = ("import sys; from animkit import jit; "
            "print(*jit.warm(open(sys.argv[1]).readlines(), int(sys.argv[2]), int(sys.argv[3])))")
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(KERNELS), str(i), str(parts)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(parts)]
    outs = [p.communicate() for p in procs]
    ready = sum(int(o.split()[0]) for o, _ in outs if o.split())
    skipped = sum(int(o.split()[1]) for o, _ in outs if o.split())
    failed = [err.strip().splitlines()[-1] for (_, err), p in zip(outs, procs, strict=True) if p.returncode]
    config.stash[_WARMED] = (f"numba kernels: {ready} signatures ready in {time.perf_counter() - start:.0f} s "
                             f"({parts} processes; {skipped} stale lines in {KERNELS.name}"
                             f"{'; failed: ' + ' | '.join(failed) if failed else ''})")
    if skipped or failed:  # the header is not shown under -q: a stale list slows the suite, so say it
        print(f"tests/conftest.py: {config.stash[_WARMED]}; see docs/testing.md to write the list again",
              file=sys.stderr)


_WARMED = pytest.StashKey[str]()


def pytest_report_header(config: pytest.Config) -> str | None:
    return config.stash.get(_WARMED, None)


def _record_kernels(session: pytest.Session) -> None:
    """With ANIMKIT_RECORD_KERNELS=1, each process writes the signatures its kernels compiled, and the controller
    (or the only process) gathers them into tests/kernel_signatures.txt (run it on an empty cache: the seconds
    are then compile times)."""
    if os.environ.get("ANIMKIT_RECORD_KERNELS") != "1":
        return
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if worker is not None:
        KERNELS.with_name(f"{KERNELS.name}.{worker}").write_text("".join(f"{line}\n" for line in jit.signatures()))
        return
    parts = sorted(KERNELS.parent.glob(f"{KERNELS.name}.*"))
    lines = [line for p in parts for line in p.read_text().splitlines()] or jit.signatures()
    slowest: dict[str, float] = {}
    for line in lines:  # key, seconds, the signature pickled, the same as text (jit.signatures)
        key, seconds, *_ = line.split("\t")
        slowest[key] = max(slowest.get(key, 0.0), float(seconds))
    rows = sorted({(key, "\t".join(sig)) for key, _, *sig in (line.split("\t") for line in lines)})
    header = [line for line in KERNELS.read_text().splitlines() if line.startswith("#")] if KERNELS.exists() else []
    KERNELS.write_text("".join(f"{line}\n" for line in header)
                       + "".join(f"{key}\t{slowest[key]:.2f}\t{sig}\n" for key, sig in rows))
    for p in parts:
        p.unlink()
