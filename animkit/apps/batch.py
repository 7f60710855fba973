"""Whole motion libraries on Dask: one task per file, atomic outputs, resumable runs and a summary table.

``run_batch("render", files, "out/")`` sends one task per input file to a dask.distributed cluster (a
LocalCluster by default, or the scheduler at ``scheduler``). Each task loads its file, runs the command and
writes ``out/<stem><suffix>`` atomically, then a one-row record ``out/.animkit-batch/<stem>.json``; a file
whose output and record both exist is skipped, so a rerun resumes where the last one stopped. A file that
fails is recorded with its error (``status = "error"``) and the others go on. At the end the rows are written
to ``out/summary.csv`` (and ``summary.parquet`` when pyarrow is installed): file, status, frames, duration, joints,
time taken and the motion measures the command gives.

Commands live in a small registry (:data:`COMMANDS`): adding one is one call to :func:`register` with a
function ``(scene, input, output, options) -> measures``. dask and distributed are optional
(``pip install 'animkit[batch]'``) and imported only by :func:`run_batch`.
"""

from __future__ import annotations

import json
import math
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from animkit.apps import commands
from animkit.atomic import atomic_path, remove_leftovers
from animkit.errors import AnimkitError, unknown_name

if TYPE_CHECKING:
    from animkit.motion.measures import SourceMotion
    from animkit.scene import Scene

__all__ = ["BatchCommand", "BatchReport", "COMMANDS", "register", "run_one", "run_batch", "plan_outputs",
           "motion_measures", "MOTION_COLUMNS", "COLUMNS", "start_local_workers", "SCANNER_PAYS_BYTES", "jit_pays",
           "start_forkserver"]

RECORDS = ".animkit-batch"
#: The summary's columns, in order; a command's own measures follow them.
COLUMNS = ("file", "status", "frames", "duration", "joints", "dofs", "seconds", "output", "error")

Runner = Callable[["Scene", Path, Path, Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class BatchCommand:
    """A command the batch runs per file: ``run(scene, input, output, options) -> measures`` writes ``output``
    (a path ending in ``suffix``; it becomes the real output only if ``run`` returns)."""

    name: str
    suffix: str
    run: Runner
    help: str = ""


COMMANDS: dict[str, BatchCommand] = {}


def register(name: str, suffix: str, run: Runner, help: str = "") -> BatchCommand:
    """Add (or replace) a batch command: ``register("convert", ".glb", _convert, "…")``."""
    cmd = BatchCommand(name, suffix, run, help)
    COMMANDS[name] = cmd
    return cmd


def command(name: str) -> BatchCommand:
    try:
        return COMMANDS[name]
    except KeyError:
        raise AnimkitError(unknown_name("batch command", name, COMMANDS)) from None


# --- the commands: each the same function the CLI calls (animkit.commands) ------------------------------------

#: The honest motion measures (:mod:`animkit.motion.measures`) each row carries when its clip has legs or joints.
MOTION_COLUMNS = commands.MOTION_COLUMNS


def motion_measures(scene: Scene, source: SourceMotion | None = None) -> dict[str, Any]:
    """A row's measures: :func:`animkit.apps.commands.scene_measures`."""
    return commands.scene_measures(scene, source)


def _info(scene: Scene, src: Path, out: Path, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The scene's tree as text (``animkit info``) and its measures as JSON, in one file."""
    return commands.info_json(scene, src.name, out)


def _render(scene: Scene, src: Path, out: Path, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """A thumbnail of the first clip (or the rest pose) at ``size`` and ``fps``; the format follows ``suffix``
    (``animkit render``'s :func:`animkit.apps.commands.render`)."""
    import dataclasses

    camera = options.get("camera")
    if camera is not None:
        scene = dataclasses.replace(scene, camera=camera)
    report = commands.render(scene, out, size=options.get("size", (160, 120)), fps=options.get("fps"),
                             style=options.get("style"), quiet=True)
    return motion_measures(scene) | {"rendered_frames": getattr(report, "frames", 1)}


def _convert(scene: Scene, src: Path, out: Path, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The scene and its clips in another format (``animkit convert``'s :func:`animkit.apps.commands.convert`; the
    format follows the suffix; a character's meshes left out of .bvh/.toml, as ``--no-meshes`` does)."""
    commands.convert(scene, out, drop_meshes=True, keys=options.get("keys"))
    return motion_measures(scene)


def _convert_suffix() -> str:
    from animkit.io import SAVERS

    return ".glb" if ".glb" in SAVERS else ".bvh"


def _retarget(scene: Scene, src: Path, out: Path, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The file's clip on ``options["target"]`` (a file or an example's name), feet locked unless
    ``options["lock"]`` is False (``animkit retarget``'s :func:`animkit.apps.commands.retarget`); measures: the
    result's, and foot skate / penetration / knee pops before and after locking (animkit.motion)."""
    if "target" not in options:
        raise AnimkitError("batch retarget needs a target skeleton: --to FILE (or an example's name)")
    done = commands.retarget(scene, commands.load_scene(options["target"]), lock=options.get("lock", True))
    commands.save_clip(out, done.scene, None, options.get("keys"))
    return motion_measures(done.scene, done.source) | commands.retarget_measures(done)


def _prior_features(scene: Scene, src: Path, out: Path, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pose prior's features (:meth:`animkit.ik.PosePrior.features_of`) of every ``every``-th frame, as .npy."""
    from animkit.ik.prior import PosePrior

    X = PosePrior.features_of(scene, every=int(options.get("every", 4)))
    with open(out, "wb") as f:
        np.save(f, X.astype(np.float32))
    return motion_measures(scene) | {"prior_frames": len(X)}


register("prior-features", ".npy", _prior_features, "the pose prior's features of each file (animkit prior fit)")
register("info", ".json", _info, "the tree and the measures of each file, as JSON")
register("render", ".gif", _render, "a thumbnail per file (GIF; --format mp4, or png for a contact sheet)")
register("convert", _convert_suffix(), _convert, f"each file saved as {_convert_suffix()} (--format: another)")
register("retarget", ".bvh", _retarget, "each clip on the skeleton --to names, feet locked (--format: glb, toml)")


# --- one file ----------------------------------------------------------------------------------------------


def _record_path(outdir: Path, output_name: str) -> Path:
    return outdir / RECORDS / f"{output_name}.json"


def _progress_without_semaphore() -> None:
    """In a batch worker process, give tqdm a thread lock before its first bar. Otherwise tqdm makes a
    multiprocessing RLock, a named semaphore registered with multiprocessing's resource tracker. A killed batch's
    workers are ended by their nannies without running exit handlers. The tracker would then report that
    semaphore as leaked ("There appear to be 2 leaked semaphore objects"). A worker's bars are its own, so a
    thread lock is enough."""
    import multiprocessing

    if multiprocessing.parent_process() is None:  # the driver (or threads in it): its exit releases its own
        return
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return
    if not hasattr(tqdm, "_lock"):
        tqdm.set_lock(threading.RLock())


def run_one(name: str, src: str | Path, out: str | Path, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run command ``name`` on one file: the row of the summary. Never raises for a bad file: the error is data.

    Skips the work (``status = "skipped"``, the earlier row's measures) when ``out`` and its record exist.
    """
    cmd = command(name)
    _progress_without_semaphore()
    src, out = Path(src), Path(out)
    record = _record_path(out.parent, out.name)
    if out.exists() and record.exists():
        try:
            return dict(json.loads(record.read_text(encoding="utf-8"))) | {"status": "skipped", "seconds": 0.0}
        except (OSError, ValueError):
            pass  # an unreadable record: do the work again
    t0 = time.perf_counter()
    row: dict[str, Any] = {"file": str(src), "output": str(out)}
    try:
        from animkit.io import load

        scene = load(src)
        with atomic_path(out) as part:
            # writers choose the format by the suffix; named as a temporary (``….partial.gif``) so that, where a
            # worker is killed before the rename below, the driver's remove_leftovers takes it back
            work = part.with_suffix(f".partial{out.suffix}")
            try:
                measures = cmd.run(scene, src, work, options or {})
                work.replace(part)
            finally:
                work.unlink(missing_ok=True)
        row |= {"status": "ok", **measures}
    except Exception as exc:  # a bad file is a row, not the end of the run
        text = (str(exc).strip() or repr(exc)).splitlines()[0]
        row |= {"status": "error", "error": f"{type(exc).__name__}: {text}", "output": ""}
    row["seconds"] = time.perf_counter() - t0
    if row["status"] == "ok":
        with atomic_path(record) as tmp:
            tmp.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return row


# --- many files --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchReport:
    """What a batch did: one row per file (input order), the summary's path and the wall time."""

    rows: tuple[Mapping[str, Any], ...]
    summary: Path
    seconds: float
    workers: int
    counts: Mapping[str, int] = field(default_factory=dict)

    def table(self) -> str:
        """A short text table: file, status, frames, duration, seconds (and the error, for failures)."""
        lines = [f"{'file':<32s} {'status':<8s} {'frames':>7s} {'duration':>9s} {'time (s)':>9s}"]
        for r in self.rows:
            dur = r.get("duration")
            lines.append(f"{Path(str(r['file'])).name[:32]:<32s} {r['status']:<8s} {r.get('frames', '') or '':>7} "
                         f"{'' if dur is None else f'{dur:.2f}':>9s} {r.get('seconds', 0.0):9.2f}"
                         + (f"  {r['error']}" if r.get("error") else ""))
        return "\n".join(lines)


def plan_outputs(name: str, inputs: Iterable[str | Path], outdir: str | Path, suffix: str | None = None
                 ) -> list[tuple[Path, Path]]:
    """(input, output) pairs: ``outdir/<stem><suffix>`` (the command's suffix unless given); two inputs with one
    stem are an error (named)."""
    cmd = command(name)
    if suffix is not None:
        cmd = BatchCommand(cmd.name, suffix, cmd.run, cmd.help)
    out = Path(outdir)
    pairs: list[tuple[Path, Path]] = []
    seen: dict[str, Path] = {}
    for p in map(Path, inputs):
        if p.stem in seen:
            raise AnimkitError(f"{p} and {seen[p.stem]} would both write {out / (p.stem + cmd.suffix)}: "
                               "rename one, or run them into different folders")
        seen[p.stem] = p
        pairs.append((p, out / f"{p.stem}{cmd.suffix}"))
    return pairs


def expand_inputs(inputs: Sequence[str | Path], patterns: Sequence[str] = ("*.bvh", "*.toml", "*.urdf", "*.glb",
                                                                          "*.gltf", "*.fbx")) -> list[Path]:
    """Files as given; a folder stands for the scene files in it (sorted)."""
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            files.extend(sorted({f for pat in patterns for f in item.glob(pat)}))
        elif item.exists():
            files.append(item)
        else:
            raise AnimkitError(f"{item}: no such file or folder")
    if not files:
        raise AnimkitError("no input files (give files, or folders holding .bvh/.toml/.urdf/.glb/.fbx files)")
    return files


def run_batch(name: str, inputs: Sequence[str | Path], outdir: str | Path, *, workers: int | None = None,
              scheduler: str | None = None, options: Mapping[str, Any] | None = None, processes: bool = True,
              on_progress: Callable[[int, int, Mapping[str, Any]], None] | None = None) -> BatchReport:
    """Run ``name`` on every input, one dask task per file, and write the summary table.

    ``scheduler`` is a dask.distributed address (``tcp://host:8786``); without it a LocalCluster of ``workers``
    single-threaded workers (default: the machine's cores) runs here (``processes=False``: threads in this
    process, for tests). ``on_progress(done, total, row)`` is called as each file finishes.
    """
    import os

    t0 = time.perf_counter()
    cmd = command(name)
    files = expand_inputs(inputs)
    pairs = plan_outputs(cmd.name, files, outdir, (options or {}).get("suffix"))
    n = workers if workers is not None else (os.cpu_count() or 1)
    if scheduler is None and n < 1:
        raise AnimkitError(f"--workers must be >= 1, got {n}")
    Path(outdir).mkdir(parents=True, exist_ok=True)
    # the local workers' imports run in a forkserver beside the driver's own (below)
    method = start_forkserver(jit=jit_pays(cmd.name, pairs, n)) if scheduler is None and processes else None
    import importlib.util

    if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
        raise AnimkitError("animkit batch needs dask.distributed: pip install 'animkit[batch]'")
    summary_writer = _preload_in_background("pyarrow.parquet")  # while the driver waits for its workers
    previous = _sigterm_interrupts()
    try:
        return _run_on_cluster(cmd.name, pairs, outdir, options, scheduler, n, processes, method, on_progress,
                               summary_writer, t0)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _sigterm_interrupts() -> Any:
    """While a batch runs, SIGTERM raises KeyboardInterrupt in the driver (as Ctrl-C does), so that the cluster is
    closed (workers ended, their semaphores released) and partial outputs removed on the way out; the handler
    that was there before (returned; None off the main thread, where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        return signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        return None


def _run_on_cluster(name: str, pairs: list[tuple[Path, Path]], outdir: str | Path, options: Mapping[str, Any] | None,
                    scheduler: str | None, n: int, processes: bool, method: str | None,
                    on_progress: Callable[[int, int, Mapping[str, Any]], None] | None, summary_writer: Any,
                    t0: float) -> BatchReport:
    import dask
    from distributed import Client, LocalCluster, as_completed

    cmd = command(name)
    cluster = None
    if scheduler is None:
        with dask.config.set({"distributed.worker.multiprocessing-method": method or "spawn", **QUIET_MONITORS}):
            # no dashboard; the scheduler's small HTTP server on any free port (not 8787: another cluster's)
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=40)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=10)
        except OSError as exc:
            raise AnimkitError(f"scheduler {scheduler}: could not connect ({exc})") from None
    try:
        n_workers = len(client.scheduler_info().get("workers", {}))
        # largest files first (dask runs higher priorities first): the last tasks to finish are short ones
        sizes = [_size(src) for src, _ in pairs]
        futures = {client.submit(run_one, cmd.name, str(src), str(out), dict(options or {}), pure=False,
                                 key=f"animkit-{cmd.name}-{k}-{src.name}", priority=sizes[k]): k
                   for k, (src, out) in enumerate(pairs)}
        rows: list[dict[str, Any] | None] = [None] * len(pairs)
        done = 0
        for fut in as_completed(futures):
            k = futures[fut]
            try:
                row = fut.result()
            except Exception as exc:  # the worker itself died (killed, out of memory): still a row
                row = {"file": str(pairs[k][0]), "status": "error", "error": f"worker: {exc}".splitlines()[0],
                       "output": "", "seconds": math.nan}
            rows[k] = row
            done += 1
            if on_progress is not None:
                on_progress(done, len(pairs), row)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        if scheduler is None:  # the local workers are gone: what they left half-written has no owner now
            remove_leftovers(Path(outdir))
            import gc

            gc.collect()  # the closed cluster's multiprocessing locks: their finalizers unlink the semaphores now
    final = tuple(r for r in rows if r is not None)
    summary_writer.join()
    summary = write_summary(final, Path(outdir))
    counts = {s: sum(1 for r in final if r["status"] == s) for s in ("ok", "skipped", "error")}
    return BatchReport(final, summary, time.perf_counter() - t0, n_workers, counts)


#: dask settings for the LocalCluster run_batch starts (its scheduler, nannies and workers, which no one else can
#: reach): the monitors that feed dask's live dashboard, which a batch does not start, look less often, and the workers'
#: statistical profiler is off. Dask's defaults (the event loop's tick every 20 ms, the system monitor with disk
#: counters every 0.5 s, each nanny's and worker's memory check every 0.1 s, a stack sample of the running task every
#: 10 ms) cost the driver ~0.2 s of CPU in a 5 s render of 40 clips, and the tasks of 2 workers on 2 cores ~2 % of
#: their time: taken from the workers when they have every core (benchmarks/results_batch.md).
QUIET_MONITORS = {
    "distributed.admin.tick.interval": "100ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.worker.memory.monitor-interval": "500ms",
    "distributed.worker.profile.enabled": False,
}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


#: Local workers run without numba (ANIMKIT_JIT=0) when each has less BVH text than this to read, for commands
#: whose only kernel that pays at their sizes is the BVH scanner (:data:`SCANNER_ONLY`): the compiled scanner
#: reads ~19 ms/MB faster than NumPy's reader but costs ~0.65 s to load in a fresh process (numba, its registries,
#: SciPy), so it pays from ~34 MB a worker (measured on the CMU clips of tests/data; benchmarks/results_batch.md).
SCANNER_PAYS_BYTES = 32 * 2**20
SCANNER_ONLY = frozenset({"info", "convert", "render"})


def jit_pays(name: str, pairs: Sequence[tuple[Path, Path]], workers: int) -> bool:
    """Whether the local workers should load numba for this run (see :data:`SCANNER_PAYS_BYTES`)."""
    if name not in SCANNER_ONLY:
        return True
    share = sum(_size(src) for src, _ in pairs if src.suffix.lower() == ".bvh") / max(workers, 1)
    return share >= SCANNER_PAYS_BYTES


def start_local_workers(name: str, inputs: Sequence[str | Path], workers: int | None = None) -> None:
    """Begin warming the local workers of ``run_batch(name, inputs, workers=...)`` now (its forkserver, see
    :func:`start_forkserver`), so that their imports overlap whatever the caller does before calling run_batch
    (the CLI: parsing its options). Nothing when the inputs are wrong: run_batch says so."""
    import os

    try:
        pairs = plan_outputs(name, expand_inputs(inputs), ".")
    except AnimkitError:
        return
    start_forkserver(jit=jit_pays(name, pairs, workers if workers is not None else (os.cpu_count() or 1)))


def _preload_in_background(module: str) -> Any:
    """A started thread importing ``module`` (when installed); ``.join()`` it before use."""
    import importlib
    import threading

    def load() -> None:
        try:
            importlib.import_module(module)
        except ImportError:
            pass

    thread = threading.Thread(target=load, name=f"animkit-import-{module}", daemon=True)
    thread.start()
    return thread


def start_forkserver(jit: bool = True) -> str | None:
    """Start multiprocessing's forkserver, importing :mod:`animkit.apps.batch_worker` first (dask, animkit's readers,
    writers, renderer, numba's cached BVH scanner), and return ``"forkserver"``; None where there is none.

    Called before the driver imports dask, so the server's imports run beside the driver's; the LocalCluster's
    workers are then forked from it, warm. ``jit=False``: the server and its workers run without numba
    (ANIMKIT_JIT=0, unless the caller's environment sets ANIMKIT_JIT). A server already running (a second batch
    in this process) is reused as it is.
    """
    import multiprocessing
    import multiprocessing.forkserver
    import os

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    multiprocessing.get_context("forkserver").set_forkserver_preload(["animkit.apps.batch_worker"])
    no_jit = not jit and "ANIMKIT_JIT" not in os.environ
    if no_jit:
        os.environ["ANIMKIT_JIT"] = "0"  # the server copies this process's environment when it starts
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if no_jit:
            del os.environ["ANIMKIT_JIT"]
    try:  # dask would set its own preload list, importing pandas and more in the driver first: ours is in place
        import distributed.utils

        if hasattr(distributed.utils, "_forkserver_preload_set"):
            distributed.utils._forkserver_preload_set = True
    except ImportError:
        return None
    return "forkserver"


def write_summary(rows: Sequence[Mapping[str, Any]], outdir: Path) -> Path:
    """``summary.csv`` (always, as the README promises) and ``summary.parquet`` too when pyarrow is installed:
    :data:`COLUMNS`, then every other measure. Returns the CSV's path."""
    import csv

    extra = sorted({k for r in rows for k in r} - set(COLUMNS))
    columns = list(COLUMNS) + extra
    path = outdir / "summary.csv"
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return path
    table = pa.table({c: [r.get(c) for r in rows] for c in columns})
    with atomic_path(outdir / "summary.parquet") as tmp:
        pq.write_table(table, tmp)
    return path
