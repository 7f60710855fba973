"""Thread safety (issue 27): loads, solves and renders run from many threads at once give exactly what they give one
at a time. The oracle is the same call made serially in the main thread; every result is compared bit for bit (a
digest of the figure's names, rest pose and world matrices, every clip's sampled frames; an IK answer; a PNG)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import animkit

from .conftest import DATA, SCENES

THREADS = 200
FILES = [SCENES / "walk.toml", SCENES / "wave.toml", DATA / "cmu_02_01_walk.bvh", DATA / "RiggedSimple.glb",
         DATA / "CesiumMan.glb"]


def _digest(path: Path) -> str:
    scene = animkit.load(path)
    fig = scene.figure
    h = hashlib.sha256()
    h.update("\n".join(fig.node_names + fig.dof_names).encode())
    rest = fig.rest_pose()
    h.update(rest.tobytes())
    h.update(fig.world_batch(rest[None]).tobytes())
    for name, clip in sorted(scene.clips.items()):
        h.update(name.encode())
        h.update(clip.sample(clip.frame_times()[:50]).tobytes())
    return h.hexdigest()


def _all_at_once(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run every job on its own thread, all released together by a barrier; results or exceptions, in order."""
    barrier = threading.Barrier(len(jobs))

    def run(job: Callable[[], Any]) -> Any:
        barrier.wait()
        try:
            return job()
        except Exception as exc:  # noqa: BLE001 - a spurious error is what we count
            return exc

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(pool.map(run, jobs))


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_200_concurrent_loads_equal_serial_loads() -> None:
    expected = {p: _digest(p) for p in FILES}
    paths = [FILES[k % len(FILES)] for k in range(THREADS)]
    got = _all_at_once([lambda p=p: _digest(p) for p in paths])
    errors = [f"{p.name}: {g!r}" for p, g in zip(paths, got, strict=True) if isinstance(g, Exception)]
    assert not errors, f"{len(errors)} of {THREADS} concurrent loads failed: {errors[:3]}"
    wrong = [p.name for p, g in zip(paths, got, strict=True) if g != expected[p]]
    assert not wrong, f"{len(wrong)} concurrent loads differ from the serial load: {wrong[:5]}"


@pytest.mark.slow  # 9-33 s alone: CI runs it after the fast set (.ci/run)
def test_200_concurrent_loads_of_scenes_sharing_a_base(tmp_path: Path) -> None:
    """The case the TOML reader's shared cycle set broke: many scenes on one base, loaded at once."""
    (tmp_path / "humanoid.toml").write_bytes((SCENES / "humanoid.toml").read_bytes())
    (tmp_path / "walk.toml").write_bytes((SCENES / "walk.toml").read_bytes())
    expected = _digest(tmp_path / "walk.toml")
    got = _all_at_once([lambda: _digest(tmp_path / "walk.toml")] * THREADS)
    assert [g for g in got if isinstance(g, Exception)] == []
    assert set(got) == {expected}


def test_concurrent_solves_equal_serial_solves() -> None:
    fig = animkit.load(SCENES / "humanoid.toml").figure
    rng = np.random.default_rng(5)
    targets = [np.array([-0.3, 1.25, 0.45]) + rng.uniform(-0.15, 0.15, 3) for _ in range(40)]

    def solve(t: np.ndarray) -> bytes:
        r = animkit.solve(fig, fig.rest_pose(), "hand_r", t, chain="arm")
        return r.pose.tobytes() + bytes([r.converged])

    expected = [solve(t) for t in targets]
    got = _all_at_once([lambda t=t: solve(t) for t in targets * 5])
    assert [g for g in got if isinstance(g, Exception)] == []
    assert got == expected * 5


def test_concurrent_stills_equal_serial_stills() -> None:
    scenes = [animkit.load(SCENES / "walk.toml"), animkit.load(DATA / "RiggedSimple.glb")]
    expected = [animkit.still(s, size=(96, 72)).png for s in scenes]
    got = _all_at_once([lambda s=s: animkit.still(s, size=(96, 72)).png for s in scenes * 20])
    assert [g for g in got if isinstance(g, Exception)] == []
    assert got == expected * 20
