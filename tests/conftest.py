"""Shared test set-up: a derandomised hypothesis profile for CI, paths to shipped data, and numba's kernels
compiled once, before the workers start (see docs/testing.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


_CPU_TIMES = os.environ.get("ANIMKIT_CPU_TIMES", "")  # a file: each process appends each test's CPU seconds


def _cpu_seconds() -> float:
    """user + sys of this process and the children it has waited for (a test's subprocesses)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ANIMKIT_CPU_TIMES=FILE, the process that runs a test appends ``nodeid<TAB>CPU s<TAB>wall s<TAB>kernels
    <TAB>worker<TAB>end`` (setup, call and teardown; the numba kernels this test was the first in its process to
    call, compiled or loaded then, comma-separated; the xdist worker; the Unix time it ended): on a loaded machine
    CPU seconds compare where ``--durations``' wall times do not, and the last two columns give each worker's
    timeline (when it waited for a kernel the warming was compiling)."""
    if not _CPU_TIMES:
        yield
        return
    kernels, cpu, wall = jit.ready(), _cpu_seconds(), time.perf_counter()
    yield
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    with open(_CPU_TIMES, "a") as out:
        out.write(f"{item.nodeid}\t{cpu:.3f}\t{wall:.3f}\t{','.join(sorted(jit.ready() - kernels))}"
                  f"\t{os.environ.get('PYTEST_XDIST_WORKER', 'main')}\t{time.time():.2f}\n")


@pytest.hookimpl(tryfirst=True)  # a worker records its kernels before it tells the controller it has finished
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ANIMKIT_NO_SKIPS=1 (what .ci/run sets for its main runs), a skipped test fails the run: CI installs
    everything the tests need (Node, three.js, gltf-validator, pygltflib, Xvfb, Chromium), so a skip there means
    something was not installed."""
    _record_kernels(session)
    if jit.WARMING is not None:  # a worker of a warming run: how long it waited, what it compiled itself
        worker = session.config.workerinput["workerid"]  # type: ignore[attr-defined]
        (jit.WARMING.folder / f"wait.{worker}").write_text(
            f"waited {jit.WARMING.waited:.1f} s, compiled {jit.WARMING.compiled}")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get("ANIMKIT_NO_SKIPS") != "1" or reporter is None:
        return
    skipped = reporter.stats.get("skipped", [])
    for rep in skipped[:20]:
        reporter.write_line(f"ANIMKIT_NO_SKIPS: skipped in CI: {rep.nodeid}: {rep.longrepr}", red=True)
    if skipped and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    """In the controller of a parallel run of the whole suite (pytest-xdist's workers start after this hook), start
    compiling the kernels the tests will call onto numba's disk cache, in one process a worker (``jit.warm`` with
    a shared folder: each takes the next group of kernels, heaviest first). The workers start, collect and run the
    tests meanwhile; a test that reaches a kernel being compiled waits for that kernel alone (``jit.WARMING``),
    then loads it in milliseconds, instead of compiling it a second time at once; a kernel no process has begun,
    its worker compiles itself. On a warm cache it only loads. ANIMKIT_WARM_KERNELS=0 turns it off, =1 on for any
    run; ANIMKIT_RECORD_KERNELS=1 (recording) turns it off."""
    if hasattr(config, "workerinput"):
        folder, _, parts = os.environ.pop(_WARMING, "").partition(os.pathsep)  # not handed on to test processes
        if folder and jit.enabled():
            jit.WARMING = jit.Warming(folder, KERNELS.read_text().splitlines(), int(parts))
        return
    if not jit.enabled() or not KERNELS.exists():
        return
    workers = len(getattr(config.option, "tx", None) or [])
    switch = os.environ.get("ANIMKIT_WARM_KERNELS", "")
    whole = config.args_source != pytest.Config.ArgsSource.ARGS or all(
        Path(a).resolve() in (ROOT, KERNELS.parent) for a in config.args)
    recording = os.environ.get("ANIMKIT_RECORD_KERNELS") == "1"  # compile times to record: nothing compiled before
    if switch == "0" or recording or (switch != "1" and not (workers > 1 and whole)):
        return
    _compile_bytecode()
    _rewrite_test_modules(config)
    parts = max(1, min(workers, os.cpu_count() or 1))
    folder = Path(tempfile.mkdtemp(prefix="animkit-warm-"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    code = ("import os, sys, time; from pathlib import Path; from animkit import jit; t = time.perf_counter()\n"
            "times = os.environ.get('ANIMKIT_CPU_TIMES')  # a row per kernel compiled, as the tests' rows\n"
            "def log(key, s): open(times, 'a').write(\n"
            "    f'warm:{key}\\t{s:.3f}\\t\\t{key}\\twarm{sys.argv[2]}\\t{time.time():.2f}\\n')\n"
            "try: print(*jit.warm(open(sys.argv[1]).readlines(), int(sys.argv[2]), int(sys.argv[3]), "
            "shared=Path(sys.argv[4]).parent, log=log if times else None), f'{time.perf_counter() - t:.1f}', "
            "flush=True)\n"
            "finally: Path(sys.argv[4]).touch()")
    procs = []
    for i in range(parts):
        with open(folder / f"{i}.out", "w") as out, open(folder / f"{i}.err", "w") as err:
            procs.append(subprocess.Popen([sys.executable, "-c", code, str(KERNELS), str(i), str(parts),
                                           str(folder / f"{i}.done")], cwd=ROOT, env=env, stdout=out, stderr=err))
    config.stash[_WARMING_PROCS] = (folder, procs)
    os.environ[_WARMING] = f"{folder}{os.pathsep}{parts}"  # for the workers


def _compile_bytecode() -> None:
    """Compile animkit's modules to bytecode once, in the controller, before the workers, the warming processes and
    the tests' subprocesses (the CLI, batch workers) start: each would otherwise compile from source every module it
    imports, and where PYTHONDONTWRITEBYTECODE is set (as on the machine that runs CI here), every process, every
    time (about 3 s of CPU for a worker's imports). Written explicitly (compileall) into animkit's ``__pycache__``
    folders, beside numba's cache files; a process that then imports animkit reads them whatever that variable."""
    import compileall

    compileall.compile_dir(ROOT / "animkit", quiet=1)


def _rewrite_test_modules(config: pytest.Config) -> int:
    """Rewrite the test modules' asserts (pytest's assertion rewriting) once, in the controller, into the cache pytest
    reads beside them (``tests/__pycache__/*-pytest-*.pyc``), and compile the tests' helper modules: where
    PYTHONDONTWRITEBYTECODE is set, every worker otherwise rewrote every test module it collected, each run (about
    60 % of a worker's collection). pytest checks each file against its source's time stamp and size, as for any
    pyc. Returns the modules written; 0 on a pytest whose rewriting functions have moved (nothing then changes)."""
    import compileall

    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):  # pragma: no cover - another pytest: its workers rewrite as before
        return 0
    written = 0
    tests = Path(__file__).resolve().parent
    for path in sorted(tests.glob("*.py")):
        if not (path.name.startswith("test_") or path.name == "conftest.py"):
            compileall.compile_file(path, quiet=1)  # a helper module: imported plainly
            continue
        pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc, state.trace) is None:
            pyc.parent.mkdir(exist_ok=True)
            source_stat, code = _rewrite_test(path, config)
            written += _write_pyc(state, code, source_stat, pyc)
    return written


_WARMING = "ANIMKIT_WARMING"  # the controller tells its workers the warming's folder and its number of processes
_WARMING_PROCS = pytest.StashKey[tuple[Path, list[subprocess.Popen[bytes]]]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The controller says what the warming did (numba kernels: signatures ready, seconds, how long the workers
    waited for it after collecting); under -q only when something went wrong (a stale list slows the suite)."""
    warming = terminalreporter.config.stash.get(_WARMING_PROCS, None)
    if warming is None:
        return
    folder, procs = warming
    for p in procs:
        p.wait()
    outs = [(folder / f"{i}.out").read_text().split() for i in range(len(procs))]
    ready = sum(int(o[0]) for o in outs if len(o) == 3)
    skipped = sum(int(o[1]) for o in outs if len(o) == 3)
    seconds = max((float(o[2]) for o in outs if len(o) == 3), default=0.0)
    failed = [((folder / f"{i}.err").read_text().strip().splitlines() or ["?"])[-1]
              for i, p in enumerate(procs) if p.returncode]
    waited = ", ".join(f"{w.name[5:]} {w.read_text()}" for w in sorted(folder.glob("wait.*")))
    line = (f"numba kernels: {ready} signatures ready in {seconds:.0f} s ({len(procs)} processes, beside the workers "
            f"running tests; the workers: {waited or '-'}; {skipped} "
            f"stale lines in "
            f"{KERNELS.name}{'; failed: ' + ' | '.join(failed) if failed else ''})")
    if skipped or failed:
        terminalreporter.write_line(f"tests/conftest.py: {line}; see docs/testing.md to write the list again",
                                    red=True)
    elif terminalreporter.verbosity >= 0:
        terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    warming = config.stash.get(_WARMING_PROCS, None)
    if warming is not None:
        for p in warming[1]:
            if p.poll() is None:  # the run ended early (interrupted, a collection error): stop compiling
                p.kill()
                p.wait()
        shutil.rmtree(warming[0], ignore_errors=True)


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
