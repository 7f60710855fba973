"""Shared test set-up: a derandomised hypothesis profile for CI, and paths to shipped data."""

from __future__ import annotations

import os
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


@pytest.fixture(params=["compiled", "numpy"])
def lm_path(request, monkeypatch):
    """Run a test on both loops of a serial chain: the compiled kernel and NumPy's (the kernel's oracle)."""
    if request.param == "compiled" and not jit.enabled():
        pytest.skip("numba is not importable (or ANIMKIT_JIT=0): only the NumPy loop runs here")
    monkeypatch.setattr(jit, "ENABLED", request.param == "compiled" and jit.ENABLED)
    return request.param


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ANIMKIT_NO_SKIPS=1 (what .ci/run sets for its main runs), a skipped test fails the run: CI installs
    everything the tests need (Node, three.js, gltf-validator, pygltflib, Xvfb, Chromium), so a skip there means
    something was not installed."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get("ANIMKIT_NO_SKIPS") != "1" or reporter is None:
        return
    skipped = reporter.stats.get("skipped", [])
    for rep in skipped[:20]:
        reporter.write_line(f"ANIMKIT_NO_SKIPS: skipped in CI: {rep.nodeid}: {rep.longrepr}", red=True)
    if skipped and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
