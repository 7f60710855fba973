"""The C extension's ``chain_fk`` (animkit._native), the natural solver's FK of one configuration
(:meth:`ChainModel.frames_one`, what :meth:`TaskStack.config` reads every iteration), against NumPy's
:meth:`ChainModel.frames` and against the figure's own FK (:func:`animkit.ik.body.figure_state`, an independent
path through :mod:`animkit.model.fk`), on the humanoid's chains (the whole body's root has a free joint: its
translations are prismatic links). They fail on the tree before (its extension has no ``chain_fk``)."""

from __future__ import annotations

import numpy as np
import pytest

import animkit
from animkit import jit
from animkit.ik.body import figure_state
from animkit.ik.natural import Priors
from animkit.ik.stack import TaskStack, stack_tasks
from animkit.ik.tasks import body_from_figure, configuration

from .conftest import SCENES

FIG = animkit.load(SCENES / "humanoid.toml").figure


def _stack(chain: str) -> TaskStack:
    p0 = FIG.rest_pose()
    prob = Priors().problem(FIG, "hand_r", chain, pose=p0)
    body = body_from_figure(FIG)
    return TaskStack(FIG, body, prob.model, p0, tuple(stack_tasks(prob.tasks, configuration(FIG, p0, body))),
                     prob.tol, prob.orientation_tol)


def _native() -> None:
    native = jit.native_kernels()
    if native is None:
        pytest.skip("the C extension animkit._native is off (ANIMKIT_JIT=0) or not built")
    assert hasattr(native, "chain_fk"), "animkit._native has no chain_fk: rebuild it (setup.py build_ext)"


@pytest.mark.parametrize("chain", ["arm", "torso", "hips-up", "whole-body"])
def test_chain_fk_equals_numpys_frames(chain: str) -> None:
    """Effector frames, DOF origins and axes of 20 random configurations: the kernel against ChainModel.frames to
    1e-14 (NumPy's BLAS sums the 4x4 products in its own order)."""
    _native()
    m = _stack(chain).model
    assert chain != "whole-body" or not m.revolute.all()  # the prismatic links are exercised
    rng = np.random.default_rng(len(chain))
    for _ in range(20):
        q = rng.uniform(-1.5, 1.5, m.n)
        fr = m.frames(q[None])
        R, p, r, a = m.frames_one(q)
        for got, want in ((R, fr.R[0]), (p, fr.p[0]), (r, fr.r[0]), (a, fr.a[0])):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


@pytest.mark.parametrize("chain", ["torso", "whole-body"])
def test_the_stack_s_configuration_is_the_figure_s_fk(chain: str) -> None:
    """TaskStack.config (the kernel's frames) against figure_state of the full pose (another FK): every node the
    chain reaches (its effectors) and the movable DOFs' origins and axes, to 1e-12."""
    _native()
    stack = _stack(chain)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = stack.clamp(rng.uniform(-0.6, 0.6, len(stack.dofs)))
        c = stack.config(q)
        s = figure_state(FIG, stack.full(q))
        rows = [FIG.compiled.node_names.index(e) for e in stack.model.effectors]
        np.testing.assert_allclose(c.state.R[rows], s.R[rows], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c.state.p[rows], s.p[rows], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c.state.r[stack.dofs], s.r[stack.dofs], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c.state.a[stack.dofs], s.a[stack.dofs], rtol=0, atol=1e-12)
