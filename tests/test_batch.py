"""animkit batch on a real dask LocalCluster: one task per file, atomic resumable outputs, errors as rows."""

from __future__ import annotations

import csv
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("distributed")

from animkit.apps.batch import COMMANDS, plan_outputs, register, run_batch, run_one  # noqa: E402
from animkit.apps.cli import main  # noqa: E402
from animkit.errors import AnimkitError  # noqa: E402

from .conftest import DATA, SCENES  # noqa: E402


def _root_path_from_text(path: Path) -> tuple[int, float]:
    """The oracle, from the file's text alone: frames, and Σ |Δ(x, z)| of the root's first two position channels
    (CMU: Xposition Yposition Zposition first)."""
    lines = path.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line.strip() == "MOTION")
    rows = np.array([[float(v) for v in line.split()[:3]] for line in lines[k + 3:] if line.strip()])
    return len(rows), float(np.linalg.norm(np.diff(rows[:, [0, 2]], axis=0), axis=1).sum())


def _read_summary(path: Path) -> list[dict[str, str]]:
    """The summary's rows as strings, from the CSV or (pyarrow installed) the Parquet file."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [{k: "" if v is None else str(v) for k, v in row.items()} for row in pq.read_table(path).to_pylist()]
    assert path.name == "summary.csv"
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.fixture()
def library(tmp_path: Path) -> Path:
    src = tmp_path / "lib"
    src.mkdir()
    shutil.copy(DATA / "cmu_09_01_run.bvh", src / "run.bvh")
    shutil.copy(DATA / "cmu_131_03_hop_3dsmax.bvh", src / "hop.bvh")
    shutil.copy(SCENES / "three_axis_arm.toml", src / "arm.toml")
    (src / "broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n")
    return src


def test_a_library_on_a_local_cluster_with_a_broken_file(library: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    seen: list[tuple[int, int]] = []
    report = run_batch("info", [library], out, workers=2, processes=False,
                       on_progress=lambda done, total, row: seen.append((done, total)))
    assert report.workers == 2
    assert [d for d, _ in seen] == [1, 2, 3, 4] and {t for _, t in seen} == {4}
    rows = {Path(r["file"]).name: r for r in report.rows}
    assert rows["broken.bvh"]["status"] == "error" and "broken.bvh:5" in rows["broken.bvh"]["error"]
    assert {rows[n]["status"] for n in ("run.bvh", "hop.bvh", "arm.toml")} == {"ok"}
    assert not (out / "broken.json").exists()
    for name in ("run", "hop"):
        frames, path = _root_path_from_text(library / f"{name}.bvh")
        assert rows[f"{name}.bvh"]["frames"] == frames
        np.testing.assert_allclose(rows[f"{name}.bvh"]["root_path"], path, rtol=1e-6)
    assert rows["arm.toml"]["joints"] == 3
    # the summary holds the same rows, in input order (sorted folder listing)
    table = _read_summary(report.summary)
    assert [Path(r["file"]).name for r in table] == ["arm.toml", "broken.bvh", "hop.bvh", "run.bvh"]
    assert table[0]["status"] == "ok" and table[1]["status"] == "error" and float(table[3]["seconds"]) > 0
    assert int(table[3]["frames"]) == rows["run.bvh"]["frames"]


def test_a_rerun_resumes_and_skips_what_is_complete(library: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    opts = {"size": (48, 36), "fps": 4.0}
    first = run_batch("render", [library / "run.bvh", library / "hop.bvh"], out, workers=1, processes=False,
                      options=opts)
    assert first.counts == {"ok": 2, "skipped": 0, "error": 0}
    gif = out / "run.gif"
    with Image.open(gif) as im:
        assert im.size == (48, 36) and im.n_frames == first.rows[0]["rendered_frames"]
    stamp = gif.stat().st_mtime_ns
    (out / "hop.gif").unlink()  # as if the last run had been stopped before this one finished
    again = run_batch("render", [library / "run.bvh", library / "hop.bvh"], out, workers=1, processes=False,
                      options=opts)
    assert [r["status"] for r in again.rows] == ["skipped", "ok"]
    assert gif.stat().st_mtime_ns == stamp and (out / "hop.gif").exists()
    assert again.rows[0]["frames"] == first.rows[0]["frames"]  # the skipped row keeps its measures
    # nothing half-written is left beside the outputs
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".") and p.is_file()) == []


def test_a_failing_command_is_a_row_and_leaves_no_output(tmp_path: Path) -> None:
    def explode(scene, src, out, options):
        out.write_text("half")
        raise ValueError("boom")

    register("explode", ".txt", explode)
    try:
        row = run_one("explode", DATA / "cmu_09_01_run.bvh", tmp_path / "run.txt")
    finally:
        del COMMANDS["explode"]
    assert row["status"] == "error" and row["error"] == "ValueError: boom"
    assert list(tmp_path.iterdir()) == []


def test_registry_errors_and_name_clashes(tmp_path: Path) -> None:
    with pytest.raises(AnimkitError, match="info"):
        plan_outputs("nope", [], tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(AnimkitError, match="both write"):
        plan_outputs("info", [tmp_path / "a" / "x.bvh", tmp_path / "b" / "x.bvh"], tmp_path / "o")
    assert plan_outputs("render", [tmp_path / "x.bvh"], tmp_path / "o", ".mp4")[0][1].name == "x.mp4"


def test_cli_batch_exit_status_says_whether_all_went_well(library: Path, tmp_path: Path, capsys) -> None:
    assert main(["batch", "info", str(library / "run.bvh"), "-o", str(tmp_path / "o"), "--workers", "1", "-q"]) == 0
    assert "1 done" in capsys.readouterr().out
    assert main(["batch", "info", str(library / "broken.bvh"), "-o", str(tmp_path / "o"), "--workers", "1",
                 "-q"]) == 1
    assert main(["batch", "info", str(tmp_path / "empty"), "-o", str(tmp_path / "o")]) == 2


def test_convert_round_trips_through_the_written_file(tmp_path: Path) -> None:
    import animkit

    row = run_one("convert", DATA / "cmu_09_01_run.bvh", tmp_path / "run.toml")
    assert row["status"] == "ok"
    a, b = animkit.load(DATA / "cmu_09_01_run.bvh"), animkit.load(tmp_path / "run.toml")
    pa = a.figure.world_positions(a.clip().sample_frames())
    pb = b.figure.world_positions(b.clip().sample_frames())
    np.testing.assert_allclose(pb, pa, atol=1e-3 * a.figure.size())


@pytest.mark.slow
def test_a_running_cluster_by_its_address(library: Path, tmp_path: Path) -> None:
    # a scheduler started elsewhere (here: in this process), reached by address as `--scheduler tcp://...` does
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        report = run_batch("info", [library / "run.bvh", library / "hop.bvh"], tmp_path / "o",
                           scheduler=cluster.scheduler_address)
        assert report.workers == 2 and report.counts["ok"] == 2
        assert len(cluster.scheduler.workers) == 2  # the cluster outlives the run: run_batch only closed its client
    with pytest.raises(AnimkitError, match="could not connect"):
        run_batch("info", [library / "run.bvh"], tmp_path / "o2", scheduler="tcp://127.0.0.1:9")


def test_retarget_puts_each_clip_on_the_target_and_measures_the_feet(library: Path, tmp_path: Path) -> None:
    import animkit

    rows = run_batch("retarget", [library / "run.bvh"], tmp_path / "o", workers=1, processes=False,
                     options={"target": "humanoid", "lock": False}).rows
    assert rows[0]["status"] == "ok", rows[0]
    out = animkit.load(rows[0]["output"])
    frames, path = _root_path_from_text(library / "run.bvh")
    humanoid = animkit.examples.load("humanoid").figure
    assert out.figure.dof_names == humanoid.dof_names  # the target's skeleton, DOF for DOF
    assert rows[0]["frames"] == frames == len(out.clip().sample_frames())
    # the root's ground travel is the source's, scaled by the ratio of hip heights (root translation scaled)
    np.testing.assert_allclose(rows[0]["root_path"], rows[0]["retarget_scale"] * path, rtol=0.02)
    locked = run_one("retarget", library / "run.bvh", tmp_path / "l.bvh", {"target": "humanoid"})
    assert locked["skate_mm_after"] <= locked["skate_mm_before"]
    assert run_one("retarget", library / "run.bvh", tmp_path / "x.bvh")["error"].startswith("AnimkitError: ")


_ROWS = (
    {"file": "a.bvh", "status": "ok", "frames": 120, "duration": 1.0, "joints": 18, "dofs": 57, "seconds": 0.25,
     "output": "out/a.glb", "root_path": 2.5, "lock": "not locked: one foot"},
    {"file": "b.bvh", "status": "error", "seconds": float("nan"), "output": "",
     "error": "ParseError: b.bvh:5: expected 3 numbers"},
    {"file": "c.toml", "status": "skipped", "frames": 1, "duration": 0.0, "joints": 3, "dofs": 3, "seconds": 0.0,
     "output": "out/c.glb"},
)


def test_the_summary_is_parquet_with_pyarrow(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="the Parquet summary needs pyarrow (animkit[batch])")
    from animkit.apps.batch import COLUMNS, write_summary

    path = write_summary(_ROWS, tmp_path)
    assert path.name == "summary.csv" and (tmp_path / "summary.parquet").exists()  # the README's CSV, and Parquet
    assert [r["file"] for r in _read_summary(path)] == ["a.bvh", "b.bvh", "c.toml"]
    table = pq.read_table(tmp_path / "summary.parquet")  # read back by pyarrow's reader, column by column
    assert table.column_names == [*COLUMNS, "lock", "root_path"]  # the fixed columns, then measures sorted
    assert str(table.schema.field("frames").type) == "int64" and str(table.schema.field("seconds").type) == "double"
    got = table.to_pylist()
    assert [r["file"] for r in got] == ["a.bvh", "b.bvh", "c.toml"]
    assert got[0]["frames"] == 120 and got[0]["root_path"] == 2.5 and got[1]["frames"] is None
    assert got[1]["error"].startswith("ParseError: b.bvh:5") and np.isnan(got[1]["seconds"])
    assert got[0]["lock"] == "not locked: one foot" and got[2]["lock"] is None


def test_the_summary_is_csv_without_pyarrow(tmp_path: Path, monkeypatch) -> None:
    import sys

    from animkit.apps.batch import COLUMNS, write_summary

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed: importing it fails
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = write_summary(_ROWS, tmp_path)
    assert path.name == "summary.csv" and not (tmp_path / "summary.parquet").exists()
    with path.open(newline="") as fh:
        header = next(csv.reader(fh))
    assert header == [*COLUMNS, "lock", "root_path"]
    rows = _read_summary(path)
    assert [r["status"] for r in rows] == ["ok", "error", "skipped"]
    assert rows[0]["frames"] == "120" and rows[1]["frames"] == "" and rows[1]["seconds"] == "nan"
    assert float(rows[0]["root_path"]) == 2.5 and rows[2]["lock"] == ""


def _loaded(names: tuple[str, ...]) -> dict[str, bool]:
    """In the forked process: which modules are there, and whether the compiled BVH scanner is loaded (or off)."""
    import sys

    out = {n: n in sys.modules for n in names}
    bvh = sys.modules.get("animkit.io.bvh")
    from animkit import jit

    out["scanner"] = bvh is not None and (jit.native_kernels() is not None or bvh.scan_frames_kernel is None
                                          or bvh.scan_frames_kernel.ready)
    return out


def test_local_workers_are_forked_with_what_tasks_need_already_loaded() -> None:
    import multiprocessing

    from animkit.apps.batch import start_forkserver

    if start_forkserver() is None:
        pytest.skip("no forkserver on this platform: workers are spawned and import on their first task")
    # (unpickling _loaded imports this test module in the child: batch_worker and Pillow's GIF writer it does not)
    names = ("animkit.apps.batch_worker", "distributed.worker", "animkit.render.writers", "PIL.GifImagePlugin")
    with multiprocessing.get_context("forkserver").Pool(1) as pool:
        assert pool.apply(_loaded, (names,)) == {**dict.fromkeys(names, True), "scanner": True}


def test_workers_load_numba_only_when_the_bvh_scanner_pays(tmp_path: Path) -> None:
    from animkit.apps.batch import SCANNER_PAYS_BYTES, jit_pays

    small = tmp_path / "small.bvh"
    shutil.copy(DATA / "cmu_09_01_run.bvh", small)
    big = tmp_path / "big.bvh"
    with big.open("wb") as fh:  # sparse: only its size matters here
        fh.truncate(2 * SCANNER_PAYS_BYTES)
    assert not jit_pays("render", [(small, tmp_path / "o.gif")], 1)
    assert jit_pays("render", [(big, tmp_path / "o.gif")], 2)  # a share of exactly the break-even
    assert not jit_pays("convert", [(big, tmp_path / "o.bvh")], 3)
    assert jit_pays("retarget", [(small, tmp_path / "o.bvh")], 1)  # its IK and foot locking have kernels of their own


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A new folder directly under the system's temporary folder: the forkserver's socket lives in TMPDIR, and
    an AF_UNIX path may hold only 107 bytes (pytest's tmp_path under xdist, ``.../popen-gw0/test_.../tmp``, and
    multiprocessing's ``pymp-…/listener-…`` inside it do not fit)."""
    folder = Path(tempfile.mkdtemp(prefix="ak-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_installed_command_ends_at_once_with_everything_in_place(library: Path, tmp_path: Path,
                                                                      short_tmp: Path) -> None:
    # `python -m animkit batch` ends its process with os._exit after the batch: the outputs, the records and the
    # summary must all be there, its output (a pipe: block-buffered) complete, and nothing left in the temporary
    # folder but dask's own scratch space (multiprocessing's folder and semaphores are cleaned by atexit)
    import os
    import subprocess
    import sys

    temp = short_tmp
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("ANIMKIT_JIT", "PYTHONUNBUFFERED")} | {"TMPDIR": str(temp)}
    done = subprocess.run([sys.executable, "-m", "animkit", "batch", "render", str(library), "-o", str(out),
                           "--size", "48x36", "--fps", "4", "--workers", "2"], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert done.returncode == 1, done.stderr  # one broken file
    assert done.stderr == ""  # no traceback, no resource tracker's warning about leaked semaphores
    lines = done.stdout.splitlines()
    assert len(lines) == 6 and lines[-1].startswith("3 done, 0 skipped (already complete), 1 failed in ")
    assert sorted(p.name for p in out.iterdir()) == [".animkit-batch", "arm.gif", "hop.gif", "run.gif",
                                                    "summary.csv", *(["summary.parquet"] if _has("pyarrow") else [])]
    assert sorted(p.name for p in (out / ".animkit-batch").iterdir()) == ["arm.gif.json", "hop.gif.json",
                                                                         "run.gif.json"]
    for name in ("arm", "hop", "run"):
        with Image.open(out / f"{name}.gif") as im:
            assert im.size == (48, 36) and im.n_frames >= 1
    rows = _read_summary(next(out.glob("summary.*")))
    assert sorted((Path(r["file"]).name, r["status"]) for r in rows) == [
        ("arm.toml", "ok"), ("broken.bvh", "error"), ("hop.bvh", "ok"), ("run.bvh", "ok")]
    left = sorted(str(p.relative_to(temp)) for p in temp.rglob("*"))
    assert set(left) <= {"dask-scratch-space", "dask-scratch-space/global.lock", "dask-scratch-space/purge.lock"}


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
