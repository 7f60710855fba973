"""Motion made from other motion: retargeting, feet on the ground, the measures that see what the eye sees, and
reaches baked from IK. The package is the place to import the legs', the foot lock's and root motion's public
names from (``from animkit.motion import lock_feet, legs_of, in_place``); each is loaded from its module on
first use, so ``import animkit`` (which loads ``retarget``) stays light."""

from importlib import import_module as _import_module
from typing import Any

#: Public name -> its module in this package.
_HOMES = {
    **dict.fromkeys(["MotionError", "Leg", "legs_of", "Contacts", "detect_contacts", "MotionMeasures", "measure",
                     "metres_per_unit", "knee_angles", "SKATE_WINDOW", "windowed_speed"], "legs"),
    **dict.fromkeys(["LockResult", "lock_feet"], "foot_lock"),
    **dict.fromkeys(["RootMotion", "in_place", "with_root_motion", "loop_poses", "aligned_crossfade"], "root_motion"),
}  # the function root_motion is animkit.motion.root_motion.root_motion (the name here is its module)
__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    """``animkit.motion.lock_feet``…: the name from its home module (:data:`_HOMES`), imported now."""
    if name in _HOMES:
        return getattr(_import_module(f"animkit.motion.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
