"""Motion made from other motion: retargeting, feet on the ground, the measures that see what the eye sees, and
reaches baked from IK."""

from importlib import import_module as _import_module
from typing import Any


def __getattr__(name: str) -> Any:
    """``animkit.motion.lock_feet``…: root motion's and the feet's public names (:mod:`animkit.motion.root_motion`
    re-exports them), imported on first use so ``import animkit`` (which loads ``retarget``) stays light."""
    module = _import_module("animkit.motion.root_motion")
    if name in module.__all__:
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
