"""The panels a reach and a comparison are drawn in: one labelled :class:`~animkit.render.frames.Panel` per reach,
the target marked and the effector's trail drawn. Built here, beside :mod:`animkit.motion.reach` (which draws nothing),
for every front end that draws reaches: ``animkit reach`` / ``compare`` (:mod:`animkit.apps.cli`), the notebook
(:mod:`animkit.apps.notebook`) and the HTML viewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from animkit.look.mesh import Mesh
    from animkit.model.figure import Figure
    from animkit.motion.reach import Comparison, ReachResult
    from animkit.render.frames import Panel

__all__ = ["panel_label", "reach_panel", "comparison_panels"]


#: m: a clip that ends this much farther from the target than its direct solve did is labelled by where it ends
#: (the picture shows the clip: a bake that lost the solve's pose must not carry the solve's outcome)
CLIP_LAG = 5e-3


def panel_label(result: ReachResult) -> str:
    """``label: reached``, ``label: out of reach, 16 cm short`` (``2.8 mm short`` under a centimetre),
    ``label: not reached (2.0 cm)``, or, where the baked clip ends more than :data:`CLIP_LAG` farther from the
    target than the solve, ``label: clip ends 49.1 cm off (solve 20.0 cm)``. Distances are from the hand's surface
    where the reach measured it (:attr:`~animkit.motion.reach.ReachResult.error`), else from the effector."""
    r, err, end = result.result, result.error, result.clip_error
    if end > err + CLIP_LAG:
        state = f"clip ends {end * 100:.1f} cm off (solve {err * 100:.1f} cm)"
    elif result.reached:
        state = "reached"
    elif r.reachable is False:
        short = err * 100
        state = f"out of reach, {short:.0f} cm short" if short >= 1 else f"out of reach, {short * 10:.1f} mm short"
    else:
        state = f"not reached ({err * 100:.1f} cm)"
    return f"{result.title}: {state}"


def reach_panel(figure: Figure, result: ReachResult, target: ArrayLike, meshes: Sequence[Mesh] = ()) -> Panel:
    """One reach's panel: its poses, :func:`panel_label`, the ``target`` (a point, or a 4×4 pose whose translation
    is marked) and the effector's trail."""
    from animkit.render.frames import Panel

    t = np.asarray(target, dtype=float)
    point = t[:3, 3] if t.shape == (4, 4) else t.reshape(-1)[:3]
    return Panel(figure, result.poses, panel_label(result), targets=point[None], trail=result.trail,
                 meshes=tuple(meshes))


def comparison_panels(figure: Figure, comparison: Comparison, meshes: Sequence[Mesh] = ()) -> list[Panel]:
    """One labelled panel per reach of the comparison, the target marked and the effector's trail drawn
    (``meshes``: a character's, drawn on the figure)."""
    return [reach_panel(figure, p, comparison.target, meshes) for p in comparison.panels]
