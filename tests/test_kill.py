"""Long work killed by SIGTERM or SIGINT cleans up after itself (issue 27): ``render``, ``retarget`` and ``batch``
run as real processes; once their partial output holds frames on disk they get the signal; afterwards the output folder
holds no partial file, no output that was not finished, and no process of the command's session is left (batch's
Dask workers). The oracle is the folder's listing and the process table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import DATA, ROOT, SCENES

pytestmark = pytest.mark.slow  # real processes killed mid-work: CI runs these after the rest


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*") if ".animkit-batch" not in p.parts or p.name.endswith(".part"))


def _writing(folder: Path) -> bool:
    """Whether a GIF writer in ``folder`` has written frames to its temporary: the command is past its start-up
    (imports, numba's kernels loaded or compiled for the first frame), so the signal meets the work itself, not a
    compile that a loaded machine stretches (a child killed mid-compile)."""
    for p in folder.rglob(".*.partial.gif"):
        try:
            if p.is_file() and p.stat().st_size > 0:
                return True
        except OSError:  # renamed or removed meanwhile
            pass
    return False


def _semaphores() -> set[str]:
    shm = Path("/dev/shm")
    return {p.name for p in shm.glob("sem.*")} if shm.is_dir() else set()


def _orphaned(names: set[str]) -> set[str]:
    """The semaphores among ``names`` that no running process has mapped: left behind. Other processes (another
    test worker, anything else on the machine) make and hold semaphores of their own meanwhile; those are mapped."""
    mapped: set[str] = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                mapped.update(ln.rsplit("/", 1)[-1] for ln in (d / "maps").read_text().splitlines()
                              if "/dev/shm/sem." in ln)
            except (OSError, ProcessLookupError):
                pass
    return {n for n in names if n not in mapped and (Path("/dev/shm") / n).exists()}


def _session_alive(sid: int) -> list[int]:
    """Processes of session ``sid`` (the command and anything it started) still running."""
    alive = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getsid(int(d.name)) == sid and "(zombie)" not in (d / "status").read_text():
                    alive.append(int(d.name))
            except (OSError, ProcessLookupError):
                pass
    return alive


def _default_sigint() -> None:
    """The command starts with SIGINT's default action, as from a terminal: a test run started in the background
    (``pytest … &``) ignores SIGINT, the command would inherit that and never see the signal the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_and_kill(args: list[str], out: Path, sig: int, ready) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "animkit", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 300  # a cold numba cache on a loaded machine: minutes to the first frame
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"finished before the signal came (make the work longer): {proc.communicate()}")
    assert ready(), "no frames written within 300 s"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    for _ in range(100):  # the command's children get a moment to go after it
        if not _session_alive(proc.pid):
            break
        time.sleep(0.1)
    assert _session_alive(proc.pid) == [], "processes of the killed command are still running"
    return proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_killed_render_leaves_no_partial_gif(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "walk.gif"
    code, err = _run_and_kill(["render", str(SCENES / "walk.toml"), "-o", str(out), "--loops", "200", "--fps", "30",
                               "--size", "320x240", "-q"], out, sig, lambda: _writing(tmp_path))
    assert code != 0 and "Traceback" not in err and "leaked" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_killed_retarget_leaves_nothing(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "r.gif"
    code, err = _run_and_kill(["retarget", str(DATA / "cmu_02_01_walk.bvh"), str(DATA / "CesiumMan.glb"), "-o",
                               str(tmp_path / "r.glb"), "--render", str(out), "-q"], out, sig,
                              lambda: _writing(tmp_path))
    assert code != 0 and "Traceback" not in err and "leaked" not in err, err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_killed_batch_leaves_no_partial_outputs_or_workers(tmp_path: Path, sig: int) -> None:
    pytest.importorskip("distributed", reason="batch runs on Dask (animkit[batch])")
    lib = tmp_path / "lib"
    lib.mkdir()
    for k in range(4):
        (lib / f"walk{k}.bvh").write_bytes((DATA / "cmu_02_01_walk.bvh").read_bytes())
    out = tmp_path / "out"
    before = _semaphores()
    code, err = _run_and_kill(["batch", "render", str(lib), "-o", str(out), "--workers", "2", "--size", "320x240",
                               "-q"], out, sig, lambda: out.exists() and _writing(out))
    assert code != 0 and "Traceback" not in err, err
    # nothing for multiprocessing's resource tracker to clean up: it warned of 2 semaphores (tqdm's locks in the
    # killed workers) and, before that, 14 were left in /dev/shm until the next run
    assert "leaked semaphore" not in err and "resource_tracker" not in err, err
    assert _orphaned(_semaphores() - before) == set()
    assert _hidden(out) == []
    finished = {p.name for p in out.glob("*.gif")}
    records = {p.name[:-5] for p in (out / ".animkit-batch").glob("*.json")} if (out / ".animkit-batch").exists() \
        else set()
    assert finished <= records  # every GIF there is complete (its record written after it)


_DIES_AFTER_WRITING = """
import os, signal, sys
from animkit.apps import batch

def run(scene, src, out, options):  # writes its output, then dies before returning (a worker killed in between)
    out.write_bytes(b"GIF89a")
    os.kill(os.getpid(), signal.SIGKILL)

batch.register("dies", ".gif", run)
batch.run_one("dies", sys.argv[1], sys.argv[2])
"""


def test_a_batch_worker_killed_after_writing_leaves_nothing_the_driver_keeps(tmp_path: Path) -> None:
    """The window test_a_killed_batch… meets only by chance (seen at load 10: two ``.part.gif`` left): a worker
    killed between its command writing the output and the output's rename. What it wrote is a temporary of a dead
    owner, which the driver's clean-up after the cluster closes (``remove_leftovers``) takes back."""
    from animkit.atomic import remove_leftovers

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _DIES_AFTER_WRITING, str(DATA / "cmu_02_01_walk.bvh"),
                           str(out / "walk.gif")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _hidden(out), "the command wrote nothing before it died"
    remove_leftovers(out)
    assert list(out.iterdir()) == []
