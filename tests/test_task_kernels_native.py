"""The natural solver's tasks' arithmetic in the C extension (animkit._native) against its NumPy reference:
``spread_turns`` (:class:`~animkit.ik.spread.Spread`'s joint groups), ``ranges_values``
(:meth:`~animkit.ik.ranges.Ranges.values`) and ``gaze_rows`` (:func:`~animkit.ik.body.gaze_jacobian`, with and
without the level row), on four figures (the TOML humanoid, a CMU BVH, CesiumMan and
RiggedFigure: revolute, prismatic and scale DOFs, rest turns, Euler orders), random poses, every bound set, a turn
of π (the log map's other branch), to 1e-12 of each array's size; and the main job's hips-up bake with the kernels
and without them to 1e-9. They fail on the tree before (its extension has neither kernel)."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik.body import body_from_figure, figure_state, gaze_jacobian
from animkit.ik.ranges import RANGE_DEGREES, Ranges, ranges_task
from animkit.ik.spread import Spread
from animkit.ik.tasks import configuration
from animkit.model.humanoid import match_figure

from .conftest import DATA, SCENES

KERNELS = ("spread_turns", "ranges_values", "gaze_rows")
FIGURES = [SCENES / "humanoid.toml", DATA / "cmu_02_01_walk.bvh", DATA / "CesiumMan.glb", DATA / "RiggedFigure.glb"]


def _native():  # noqa: ANN202 - the extension
    native = jit.native_kernels()
    if native is None:
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    for name in KERNELS:
        assert hasattr(native, name), f"animkit._native has no {name}: rebuild it (setup.py build_ext)"
    return native


class _Without:
    """The extension with the tasks' kernels set aside (their NumPy references run), the others as they are."""

    def __init__(self, native: object) -> None:
        self.native = native

    def __getattr__(self, name: str) -> object:
        if name in KERNELS:
            raise AttributeError(name)
        return getattr(self.native, name)


def _numpy(fn, *args):  # noqa: ANN001, ANN202 - fn(*args) on the NumPy path
    native = jit.native_kernels()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: _Without(native))
        return fn(*args)


def _answered(name: str, fn, *args) -> int:  # noqa: ANN001
    """How many times fn(*args) called the kernel ``name`` (each call asserted to answer 1: not left to NumPy)."""
    native, got = jit.native_kernels(), []

    class Counting:
        def __getattr__(self, attr: str) -> object:
            kernel = getattr(native, attr)
            if attr != name:
                return kernel

            def counted(*a: object) -> object:
                got.append(kernel(*a))
                return got[-1]
            return counted

    with pytest.MonkeyPatch.context() as m:
        m.setattr(jit, "native_kernels", lambda: Counting())
        fn(*args)
    assert all(v == 1 for v in got), got
    return len(got)


def _close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, float(np.abs(want).max(initial=0.0))))


def _poses(fig, rng: np.random.Generator, n: int = 4) -> list[np.ndarray]:  # noqa: ANN001
    """The rest pose and n random poses about it (0.4 rad, or scene units, per DOF; scale DOFs near 1)."""
    out = [fig.rest_pose()]
    for _ in range(n):
        out.append(fig.rest_pose() + rng.normal(size=fig.compiled.dof_count) * 0.4)
    return out


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_spread_turns_equal_numpys(path) -> None:  # noqa: ANN001
    """Three groups of joints (one with the root, which has no parent's DOFs), at the rest pose and random poses:
    e and J to 1e-12, and the kernel answered for every group (1: not left to NumPy)."""
    _native()
    fig = animkit.load(path).figure
    names = list(fig.compiled.node_names)
    rng = np.random.default_rng(len(names))
    groups = tuple(tuple(names[i] for i in rng.choice(len(names), k, replace=False)) for k in (2, 4, 6))
    groups = (*groups, (names[0], names[len(names) // 2]))
    task = Spread(joints=groups, groups=((0, 1),))
    for q in _poses(fig, rng):
        c = configuration(fig, q)
        got = task.compute(c)
        want = _numpy(task.compute, c)
        _close(got[0], want[0])
        _close(got[1], want[1])
        assert np.abs(got[1]).max() > 0.1  # the Jacobian is not all zero
    assert _answered("spread_turns", task.compute, c) == 4  # the kernel took every group, none left to NumPy


def test_spread_turns_of_pi_take_the_log_s_other_branch() -> None:
    """A BVH joint turned by π about each of its axes (sin θ = 0: the axis from the symmetric part), and just short
    of π either way (the axis's sign from the antisymmetric part): the kernel's turn equals NumPy's to 1e-12 and is
    as long as the turn."""
    _native()
    fig = animkit.load(DATA / "cmu_02_01_walk.bvh").figure
    names = list(fig.compiled.node_names)
    spans = fig.joint_dofs
    joint = next(n for n in names[3:] if n in spans and len(spans[n]) == 3)
    task = Spread(joints=((joint, names[1]),))
    for k in range(3):
        for angle in (np.pi, np.pi - 1e-7, 1e-7 - np.pi):
            q = fig.rest_pose()
            q[spans[joint][k]] = angle
            c = configuration(fig, q)
            got, want = task.compute(c), _numpy(task.compute, c)
            _close(got[0], want[0])
            _close(got[1], want[1])
            r = got[0][:3] - got[0][3:]  # the two turns' difference: the joint's (the other is at rest)
            assert abs(np.linalg.norm(r) - abs(angle)) < 1e-9


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_ranges_values_equal_numpys(path) -> None:  # noqa: ANN001
    """Every bound set a rig can have (all, twist and knees, side bend and roll, knees alone, roll alone), at the
    rest pose and random poses: the names in order, the values and rows to 1e-12."""
    _native()
    fig = animkit.load(path).figure
    bones = match_figure(fig)
    rng = np.random.default_rng(7)
    sets = [dict(RANGE_DEGREES), {"twist": 45.0, "knee_in": 5.0}, {"side_bend": 35.0, "pelvis_roll": 5.0},
            {"knee_in": 5.0}, {"pelvis_roll": 5.0}]
    for bounds in sets:
        task = ranges_task(fig, bones, (0.0, 1.0, 0.0), bounds)
        assert isinstance(task, Ranges)
        for q in _poses(fig, rng, 3):
            c = configuration(fig, q)
            names, v, J = task.values(c)
            names0, v0, J0 = _numpy(task.values, c)
            assert names == names0 and len(names) >= 1
            _close(v, v0)
            _close(J, J0)
            assert np.abs(J).max() > 0.05
            assert _answered("ranges_values", task.values, c) == 1


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_gaze_rows_equal_numpys(path) -> None:  # noqa: ANN001
    """Each figure's head (or a node near its top) aiming at random targets (one at its origin: ρ below 1e-12)
    from random poses, with and without the ear's level row: g and J to 1e-12."""
    _native()
    fig = animkit.load(path).figure
    body = body_from_figure(fig)
    bones = match_figure(fig)
    head = list(fig.compiled.node_names).index(bones.get("head") or fig.compiled.node_names[-1])
    rng = np.random.default_rng(3)
    for q in _poses(fig, rng, 3):
        s = figure_state(fig, q)
        fwd = rng.normal(size=3)
        for target in (s.p[head] + rng.normal(size=3), s.p[head].copy()):
            for level in ((None, None), (rng.normal(size=3), (0.0, 1.0, 0.0))):
                args = (fig, body, s, head, fwd / np.linalg.norm(fwd), target, *level)
                got, want = gaze_jacobian(*args), _numpy(gaze_jacobian, *args)
                assert len(got[0]) == 3 + (level[0] is not None)
                _close(got[0], want[0])
                _close(got[1], want[1])
                assert np.abs(got[1]).max() > 0.05
                assert _answered("gaze_rows", gaze_jacobian, *args) == 1


def test_the_main_job_s_hips_up_bake_is_the_same_with_the_kernels() -> None:
    """The main job's hips-up panel (Spread over the spine, Ranges with the knees, gaze, hang, clear) baked with
    the kernels and with NumPy: every frame's pose within 1e-9 (measured: ~1e-14), the same iterations."""
    from animkit.motion.reach import compare

    _native()
    scene = animkit.load(SCENES / "humanoid.toml")
    got = compare(scene, chains=["hips-up"], quiet=True).panels[0]
    want = _numpy(lambda: compare(scene, chains=["hips-up"], quiet=True).panels[0])
    assert got.poses.shape == want.poses.shape
    np.testing.assert_allclose(got.poses, want.poses, rtol=0, atol=1e-9)
    assert got.frame_iterations == want.frame_iterations and got.result.iterations == want.result.iterations
