"""animkit: hierarchical character animation — scene graphs, keyframes, inverse kinematics, rendering.

``import animkit`` stays light: rendering, viewer and file-format modules load when used.
"""

from __future__ import annotations

from .errors import AnimkitError, ClipError, IKError, ParseError, PoseError, RenderError, SceneError
from .graph import Arc, Figure, Node
from .io import load, save
from .joints import Dof, Joint
from .scene import CameraSpec, ReachSpec, Scene

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
    "CameraSpec",
    "ReachSpec",
    "load",
    "save",
    "__version__",
]
