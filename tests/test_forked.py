"""Work spread over forked processes (animkit.apps.forked) and ``animkit compare``'s bakes spread that way
(animkit.apps.commands.compare). Oracles: the same jobs run one after another in this process; the process table
(a child left running would show there); reach.compare's one-process comparison, bit for bit."""

from __future__ import annotations

import functools
import os
import signal
import time

import numpy as np
import pytest

import animkit
from animkit.apps import commands
from animkit.apps.forked import fork_map, usable_cores
from animkit.errors import IKError
from animkit.keyframes import Clip
from animkit.motion.reach import compare as compare_in_one

from .conftest import SCENES

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform: jobs run in turn")


def _square(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_fork_map_returns_each_jobs_result_in_order_from_its_own_process() -> None:
    out = fork_map([functools.partial(_square, x) for x in range(4)])
    assert [v for v, _ in out] == [0, 1, 4, 9]
    pids = [p for _, p in out]
    assert pids[0] == os.getpid() and len(set(pids)) == 4  # the first here, each other in a child of its own
    assert fork_map([functools.partial(_square, 3)]) == [(9, os.getpid())]  # one job: here
    assert usable_cores() >= 1


def _raise(exc: BaseException) -> None:
    raise exc


class _Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:  # pickles, but unpickling calls __init__ with one argument
        super().__init__(f"{a}-{b}")


def test_a_childs_error_is_raised_here() -> None:
    with pytest.raises(IKError, match="child says no"):
        fork_map([functools.partial(_square, 1), functools.partial(_raise, IKError("child says no"))])
    # it pickles but does not unpickle; where distributed has loaded tblib's pickling support into this process
    # (a batch test before this one in the same worker), tblib unpickles it without __init__: then it comes as itself
    with pytest.raises((RuntimeError, _Unpicklable), match="1-2"):
        fork_map([functools.partial(_square, 1), functools.partial(_raise, _Unpicklable(1, 2))])

    class Local(Exception):  # a class pickle cannot find by name: the child's error cannot be pickled at all
        pass

    with pytest.raises(RuntimeError, match="Local: made here"):
        fork_map([functools.partial(_square, 1), functools.partial(_raise, Local("made here"))])
    with pytest.raises(ChildProcessError, match="without a result \\(signal 9\\)"):
        fork_map([functools.partial(_square, 1), lambda: os.kill(os.getpid(), signal.SIGKILL)])


def _sleep_and_record(path: str) -> None:
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(60)


def test_a_failure_here_ends_the_children(tmp_path) -> None:
    """The first job (here) fails while a child still works: the child is killed and reaped at once, not left
    running for its minute."""
    pidfile = tmp_path / "child.pid"

    def fail_when_child_started() -> None:
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)
        raise IKError("here first")

    t0 = time.monotonic()
    with pytest.raises(IKError, match="here first"):
        fork_map([fail_when_child_started, functools.partial(_sleep_and_record, str(pidfile))])
    assert time.monotonic() - t0 < 30
    with pytest.raises(ProcessLookupError):  # gone, and reaped (a zombie would still take signal 0)
        os.kill(int(pidfile.read_text()), 0)


def test_a_clip_comes_back_from_a_child_whole() -> None:
    """A Clip's read-only track tables pickle (the pickler's own table): the clip a child built samples the same."""
    arm = animkit.load(SCENES / "three_axis_arm.toml")
    t = np.linspace(0, 1, 5)
    poses = np.outer(t, np.ones(arm.figure.dof_count)) * 0.3

    def build() -> Clip:
        return Clip.from_poses(arm.figure, t, poses, name="c", fps=4)

    here, there = fork_map([build, build])
    ts = np.linspace(0, 1, 17)
    np.testing.assert_array_equal(there.sample(ts), here.sample(ts))
    assert there.name == "c" and dict(there.tracks).keys() == dict(here.tracks).keys()


def test_compare_baked_in_processes_equals_one_comparison() -> None:
    """``animkit compare``'s bake, its movable sets dealt over two processes, gives the panels (labels, poses,
    trails, clips, solves) of reach.compare in one process, in the same order, bit for bit."""
    scene = animkit.load(SCENES / "humanoid.toml")
    options = {"duration": 0.4, "hold": 0.2, "fps": 10.0, "quiet": True}
    one = compare_in_one(scene, **options)
    ran: list[int] = []
    spread = commands.compare(scene, processes=2, prepare=lambda: ran.append(os.getpid()), **options)
    assert ran == [os.getpid()]  # the caller's set-up ran once, here, beside the children's bakes
    assert len(one.panels) == len(spread.panels) >= 3
    assert spread.effector == one.effector and spread.fps == one.fps
    np.testing.assert_array_equal(spread.target, one.target)
    for a, b in zip(one.panels, spread.panels, strict=True):
        assert (a.label, a.chain, a.solver) == (b.label, b.chain, b.solver)
        np.testing.assert_array_equal(b.poses, a.poses)
        np.testing.assert_array_equal(b.trail, a.trail)
        np.testing.assert_array_equal(b.clip.sample(a.times), a.clip.sample(a.times))
        assert b.result.position_error == a.result.position_error and b.result.converged == a.result.converged
    assert one.table().splitlines()[2].split()[:3] == spread.table().splitlines()[2].split()[:3]


@pytest.mark.skipif(usable_cores() < 2 or not hasattr(os, "fork"), reason="one core or no fork: one process bakes")
def test_compare_one_process_per_set_by_default_equals_one_comparison() -> None:
    """By default (two cores or more) each movable set is baked in a process of its own, the ones beyond the
    costliest at a lower priority: the panels are still reach.compare's in one process, in its order, bit for bit."""
    scene = animkit.load(SCENES / "humanoid.toml")
    options = {"duration": 0.3, "hold": 0.1, "fps": 10.0, "quiet": True}
    one = compare_in_one(scene, **options)
    before = os.nice(0)
    spread = commands.compare(scene, **options)
    assert os.nice(0) == before  # only the forked children lower their priority, never this process
    assert len(one.panels) >= 3 and [p.chain for p in spread.panels] == [p.chain for p in one.panels]
    for a, b in zip(one.panels, spread.panels, strict=True):
        np.testing.assert_array_equal(b.poses, a.poses)
        np.testing.assert_array_equal(b.trail, a.trail)


def test_compare_with_sets_that_cannot_be_dealt_out_is_the_plain_call() -> None:
    scene = animkit.load(SCENES / "humanoid.toml")
    with pytest.raises(IKError, match="legs"):  # an unknown set: reach.compare's own error
        commands.compare(scene, chains=["legs"], processes=2, quiet=True)
    ran: list[int] = []
    one = commands.compare(scene, chains=["arm"], processes=2, duration=0.3, hold=0.0, fps=10.0, quiet=True,
                           prepare=lambda: ran.append(os.getpid()))
    assert [p.chain for p in one.panels] == ["arm"] and ran == [os.getpid()]


def test_compare_finds_the_hands_aim_once_for_every_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forked groups take the aim (the hand's surface and site) found here before the forks: none is found in a
    child (one there raises), one is found here; an aim found on another figure (the scene read again) is not taken
    (found anew), and the panels are the same either way."""
    import animkit.motion.reach as reach

    here, found = os.getpid(), []
    real = reach.aim

    def counted(figure, effector, meshes=()):  # type: ignore[no-untyped-def]
        if os.getpid() != here:
            raise RuntimeError("the aim was found again in a forked group")
        found.append(effector)
        return real(figure, effector, meshes)

    monkeypatch.setattr(reach, "aim", counted)
    scene = animkit.load(SCENES / "humanoid.toml")
    options = {"duration": 0.3, "hold": 0.0, "fps": 10.0, "quiet": True}
    spread = commands.compare(scene, processes=2, **options)
    assert len(found) == 1 and len(spread.panels) >= 3
    other = reach.comparison_aim(animkit.load(SCENES / "humanoid.toml"))
    found.clear()
    alone = reach.compare(scene, chains=["arm"], shared_aim=other, **options)
    assert len(found) == 1  # not its figure: found anew
    np.testing.assert_array_equal(alone.panels[0].poses, spread.panels[0].poses)
