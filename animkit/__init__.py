"""animkit: hierarchical character animation — scene graphs, keyframes, inverse kinematics, rendering.

``import animkit`` stays light: IK, reach, motion, rendering, viewer and file-format modules load when used
(module ``__getattr__``, PEP 562: ``animkit.Scene`` and the other public names import their module on first use).
In Jupyter, scenes, clips, reaches, comparisons and IK results show themselves inline (their ``_repr_html_`` /
``_repr_png_``: animkit.display, drawn by animkit.notebook).
"""

from __future__ import annotations

import sys as _sys
from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

from animkit.apps import notebook  # noqa: F401  registers the inline drawings (animkit.display) of scenes, clips...
from animkit.errors import AnimkitError, ClipError, IKError, ParseError, PoseError, RenderError, SceneError

if TYPE_CHECKING:
    from animkit import examples, ik, keyframes
    from animkit.apps.notebook import show, still
    from animkit.ik import IKProblem, IKResult, pose_from_effectors, solve
    from animkit.io import load, save
    from animkit.keyframes import Clip, RotationTrack, Track, blend, crossfade
    from animkit.look.mesh import Mesh, Skin
    from animkit.model.figure import Figure, Rig
    from animkit.model.graph import Arc, Node
    from animkit.model.joints import Dof, Joint
    from animkit.motion import root_motion as motion
    from animkit.motion.reach import Timeline, bake_reach, compare
    from animkit.motion.retarget import retarget
    from animkit.scene import CameraSpec, ReachSpec, Scene

#: Public name -> the module that holds it, imported on first use (PEP 562): ``import animkit`` loads errors and the
#: drawings, and retarget, IK, reach, motion, the readers and the rest only when a program asks for them.
_LAZY = {
    "Figure": "model.figure", "Rig": "model.figure", "Node": "model.graph", "Arc": "model.graph",
    "Dof": "model.joints", "Joint": "model.joints", "Mesh": "look.mesh", "Skin": "look.mesh",
    "IKProblem": "ik", "IKResult": "ik", "solve": "ik", "pose_from_effectors": "ik", "load": "io", "save": "io",
    "Clip": "keyframes", "RotationTrack": "keyframes", "Track": "keyframes", "blend": "keyframes",
    "crossfade": "keyframes", "bake_reach": "motion.reach", "Timeline": "motion.reach", "compare": "motion.reach",
    "show": "apps.notebook", "still": "apps.notebook", "CameraSpec": "scene", "ReachSpec": "scene", "Scene": "scene",
    "retarget": "motion.retarget",  # the function
}


#: The modules ``animkit.<name>`` reaches without an import of its own (those an eager ``import animkit`` loaded);
#: the others (render, cli, batch, batch_worker…) are attributes once imported, as any submodule.
_SUBMODULES = frozenset({
    "apps", "atomic", "display", "errors", "examples", "ik", "io", "jit", "keyframes", "limits", "look", "model",
    "motion", "progress", "scene",
})


def __getattr__(name: str) -> Any:
    """``animkit.Scene``, ``animkit.solve``…: the name from its module (:data:`_LAZY`); ``animkit.io``, ``animkit.ik``…
    (:data:`_SUBMODULES`): the module itself, imported now."""
    if name in _LAZY:
        value = getattr(_import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = _import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and the submodules loaded so far: no typing or import helpers (``Any``, ``annotations``,
    ``import_module``)."""
    loaded = {name for name, value in globals().items() if isinstance(value, type(_sys)) and not name.startswith("_")}
    return sorted(set(__all__) | loaded | {"__version__"})


__version__ = "0.1.0"

__all__ = [
    "AnimkitError",
    "SceneError",
    "ParseError",
    "PoseError",
    "ClipError",
    "IKError",
    "RenderError",
    "Figure",
    "Node",
    "Arc",
    "Dof",
    "Joint",
    "Scene",
    "Rig",
    "Mesh",
    "Skin",
    "CameraSpec",
    "ReachSpec",
    "Clip",
    "Track",
    "RotationTrack",
    "blend",
    "crossfade",
    "IKProblem",
    "IKResult",
    "solve",
    "pose_from_effectors",
    "bake_reach",
    "Timeline",
    "compare",
    "load",
    "save",
    "show",
    "still",
    "examples",
    "ik",
    "keyframes",
    "motion",
    "retarget",
    "__version__",
]
