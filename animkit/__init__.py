"""animkit: hierarchical character animation — scene graphs, keyframes, inverse kinematics, rendering.

``import animkit`` stays light: rendering, viewer and file-format modules load when used. In Jupyter,
scenes, clips, reaches, comparisons and IK results show themselves inline (their ``_repr_html_`` /
``_repr_png_``: animkit.display, drawn by animkit.notebook).
"""

from __future__ import annotations

from . import examples, ik, keyframes, motion, reach  # motion before the line below: 'animkit.retarget' is the function
from .errors import AnimkitError, ClipError, IKError, ParseError, PoseError, RenderError, SceneError
from .figure import Figure, Rig
from .graph import Arc, Node
from .ik import IKProblem, IKResult, solve
from .io import load, save
from .joints import Dof, Joint
from .keyframes import Clip, RotationTrack, Track, blend, crossfade
from .mesh import Mesh, Skin
from .notebook import show, still
from .reach import bake_reach, compare
from .retarget import retarget
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
    "bake_reach",
    "compare",
    "load",
    "save",
    "show",
    "still",
    "examples",
    "ik",
    "keyframes",
    "reach",
    "motion",
    "retarget",
    "__version__",
]
