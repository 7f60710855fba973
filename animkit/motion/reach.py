"""Bake IK reaches into clips, and compare movable sets (and solvers) on one reach.

A reach moves the effector from where it is to the target along a minimum-jerk path (Flash & Hogan 1985),

    w(t) = e₀ + s(t/T) (x_end − e₀),   s(τ) = 10τ³ − 15τ⁴ + 6τ⁵ (one bell-shaped speed profile),

x_end the target, or where the direct solve got when the target is out of reach (the hand goes as far as it can,
on the same smooth path), then holds for ``hold`` seconds: still once within HOLD_TOL of its goal, and a hold
frame's solve is kept only where it brings the hand 1 mm closer (no chatter, no creep). Each frame k solves IK
toward w(t_k) warm-started from frame k−1, and the step is limited to ``max_speed`` rad/s (m/s for prismatic
DOFs), so the joints never pop; DOFs outside the movable set keep their start values. A natural reach's head looks
along a timeline of its own that leads the hand, turns at most HEAD_SPEED in the world, and a reach too quick for a
person is baked slower (:mod:`animkit.motion.reach_frames`). The baked result is an ordinary
:class:`~animkit.keyframes.Clip`.

A comparison bakes the same reach once per movable set (and per solver), and reports for
each: reached or not, final error, iterations, solve time, total joint rotation and the
joints that moved most. It returns clips and metrics and draws nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from animkit.display import html_for
from animkit.errors import IKError, SceneError
from animkit.ik import LM, IKProblem, IKResult, PosePrior, Solver, solver_from_name
from animkit.ik.body import static_effort
from animkit.ik.clear import mesh_radii
from animkit.ik.natural import NULL_PRIORITY, Natural, Priors
from animkit.ik.stance import natural_by_default, stance_priors
from animkit.ik.tasks import Gaze, Plant, Reach
from animkit.keyframes import Clip
from animkit.model.chains import dof_indices
from animkit.model.figure import Figure
from animkit.model.humanoid import match_figure
from animkit.motion.reach_frames import Timeline, bake_paced
from animkit.motion.reach_measures import ReachMeasures, reach_measures
from animkit.motion.reach_rigs import reaching_inputs, reaching_scene
from animkit.motion.reach_surface import Aim, aim
from animkit.scene import Scene

__all__ = ["ReachResult", "Comparison", "Timeline", "bake_reach", "bake_scene_reach", "compare", "smoothstep",
           "priors_from_scene", "chains_moving"]

Array = NDArray[np.float64]
BAKE_TOL = 1e-4  # a bake's IK tolerance (scene units)
TOUCH = 1e-3  # m: a hand whose surface is this close to the target touches it (reached)
NATURAL = "natural"  # compare's name for a natural-reaching panel (animkit.ik.natural), beside the solvers' names


def smoothstep(u: ArrayLike) -> Array:
    """s(u) = 3u² − 2u³ on [0, 1] (zero velocity at both ends), clamped outside."""
    v: Array = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
    return v * v * (3.0 - 2.0 * v)


@dataclass(frozen=True, eq=False)
class ReachResult:
    """One baked reach: the clip, per-frame poses and effector trail, and the solver's result."""

    label: str
    chain: str | None
    solver: str
    effector: str
    target: Array  # (3,) or (4, 4)
    clip: Clip
    times: Array  # (F,)
    poses: Array  # (F, D)
    waypoints: Array  # (F, 3): where the effector was asked to be at each frame
    trail: Array  # (F, 3): where it was
    result: IKResult  # the solve from the start pose straight to the target (table and plot)
    frame_iterations: int  # IK iterations summed over every frame of the bake
    frame_time_s: float  # time spent solving every frame of the bake
    moved: tuple[tuple[str, float], ...]  # joints by rotation over the clip (degrees), most first
    total_rotation_deg: float
    natural: bool = False  # baked with priors (animkit.ik.natural)
    gaze_deg: float | None = None  # at the last frame: head's forward axis vs the direction to the target
    com_margin: float | None = None  # at the last frame: CoM to the support polygon's edge (m, positive inside)
    effort: float | None = None  # at the last frame: Σ |static gravity torque| over the non-root DOFs (N·m)
    feet_drift: float | None = None  # over the clip: the largest distance a planted foot moved (m)
    measures: ReachMeasures | None = None  # timing, gaze, head, hold, free arm, bend (animkit.reach_measures)
    duration_s: float | None = None  # the hand's movement time baked (a natural reach too quick for a person: longer)
    lead_s: float = 0.0  # how long the hand waited for the gaze before it started
    riders: str = ""  # joints beyond the movable set that join a natural reach for posture only ("+neck +free arm")
    surface_error: float | None = None  # the direct solve's target to the hand's surface (m; reach_surface)
    clip_surface_error: float | None = None  # ... at the clip's last frame (None: no hand drawn, or not measured)

    def __repr__(self) -> str:
        """One line: label, effector, reached or not, frames."""
        state = "reached" if self.reached else f"not reached ({self.error:.3g})"
        return f"ReachResult({self.title!r}, {self.effector!r} {state}, {len(self.poses)} frames, {self.solver})"

    @property
    def title(self) -> str:
        """What a panel is headed by: the label (the movable set, and the solver where several are compared), then
        the posture riders, e.g. ``torso +neck +free arm``."""
        return f"{self.label} {self.riders}" if self.riders else self.label

    def _repr_html_(self) -> str | None:
        """In Jupyter: the reach playing, target and trail drawn, labelled with its outcome."""
        return html_for(self)

    @property
    def reached(self) -> bool:
        """The solve met its target, or the hand's surface touches it (within :data:`TOUCH`)."""
        return bool(self.result.converged) or (self.surface_error is not None and self.surface_error <= TOUCH)

    @property
    def error(self) -> float:
        """How far the direct solve leaves the target: from the hand's surface where measured, else from the
        effector."""
        return self.result.position_error if self.surface_error is None else self.surface_error

    @property
    def clip_error(self) -> float:
        """:attr:`error` at the clip's last frame."""
        return self.clip_final_error if self.clip_surface_error is None else self.clip_surface_error

    @property
    def clip_final_error(self) -> float:
        """Distance from the effector to the target at the clip's last frame."""
        return float(np.linalg.norm(self.trail[-1] - _position(self.target)))

    def metrics(self) -> dict[str, Any]:
        """JSON-ready numbers: exactly the solver result's fields, plus the clip's motion."""
        r = self.result
        return {
            "label": self.title,
            "chain": self.chain,
            "solver": self.solver,
            "reached": self.reached,
            "reachable": None if r.reachable is None else bool(r.reachable),
            "reason": r.reason,
            "final_error": float(r.position_error),
            "orientation_error": float(r.orientation_error),
            "iterations": int(r.iterations),
            "solve_time_s": float(r.time_s),
            "clip_final_error": self.clip_final_error,
            "surface_error": self.surface_error,
            "clip_surface_error": self.clip_surface_error,
            "bake_iterations": int(self.frame_iterations),
            "bake_time_s": float(self.frame_time_s),
            "total_rotation_deg": float(self.total_rotation_deg),
            "moved_most": [{"joint": j, "degrees": float(d)} for j, d in self.moved[:3]],
            "errors": [float(e) for e in r.errors],
            "natural": self.natural,
            "gaze_error_deg": self.gaze_deg,
            "com_margin": self.com_margin,
            "effort": self.effort,
            "feet_drift": self.feet_drift,
            "measures": None if self.measures is None else self.measures.to_dict(),
            "duration_s": self.duration_s,
            "lead_s": self.lead_s,
        }


def _cell(v: float | None, fmt: str, width: int) -> str:
    """A table cell: ``v`` right-aligned in ``width`` with ``fmt``, or a dash where there is no value."""
    return f"{'–':>{width}}" if v is None else f"{v:>{width}{fmt}}"


@dataclass(frozen=True, eq=False)
class Comparison:
    """Several reaches of one effector toward one target, one per movable set and solver."""

    effector: str
    target: Array
    panels: tuple[ReachResult, ...]
    fps: float
    start_pose: Array = field(repr=False)
    figure: Figure | None = field(default=None, repr=False)  # the figure the panels' poses are for (compare)

    def __repr__(self) -> str:
        """One line: effector, panels (reached or not), frames."""
        panels = ", ".join(f"{p.title} {'reached' if p.reached else 'not reached'}" for p in self.panels)
        frames = max((len(p.poses) for p in self.panels), default=0)
        return f"Comparison({self.effector!r}: {panels}; {frames} frames at {self.fps:g} fps)"

    def _repr_html_(self) -> str | None:
        """In Jupyter: the panels side by side, as ``animkit compare`` draws them."""
        return html_for(self)

    def metrics(self) -> dict[str, Any]:
        return {"effector": self.effector, "target": [float(x) for x in np.ravel(self.target)],
                "fps": self.fps, "panels": [p.metrics() for p in self.panels]}

    def table(self) -> str:
        """The metrics as a fixed-width text table, one row per panel."""
        head = (f"{'panel':<22}{'reached':>8}{'error (m)':>12}{'iters':>7}{'time (ms)':>11}{'rotation':>10}"
                f"{'gaze':>7}{'CoM (cm)':>10}{'effort':>8}  moved most")
        rows = [head, "-" * len(head)]

        for p in self.panels:
            m = p.metrics()
            moved = ", ".join(f"{j} {d:.0f}°" for j, d in p.moved[:3])
            rows.append(f"{p.title:<22}{'yes' if m['reached'] else 'no':>8}{m['final_error']:>12.4g}"
                        f"{m['iterations']:>7d}{m['solve_time_s'] * 1e3:>11.2f}{m['total_rotation_deg']:>9.0f}°"
                        f"{_cell(p.gaze_deg, '.0f', 6)}{'' if p.gaze_deg is None else '°':1}"
                        f"{_cell(None if p.com_margin is None else p.com_margin * 100, '.1f', 10)}"
                        f"{_cell(p.effort, '.0f', 8)}  {moved}")
        return "\n".join(rows + ["", self.measures_table()])

    def measures_table(self) -> str:
        """Timing and posture (:mod:`animkit.motion.reach_measures`), one row per panel: the speed profile's correlation
        with minimum jerk and its peaks, the gaze lead (s), head roll, pitch and front lean (°) and speed (°/s), the
        hold's travel (°/s), the largest frame-to-frame jitter (°), a bone's largest change of length (mm), the free
        arm from vertical (° at worst while the trunk bends; – where it stays upright), the trunk's side bend and
        twist (° at worst; a person: about 35° and 45°), the pelvis's roll and the knees inside the feet (° at worst)
        and the bend's spine/hip/knee shares."""
        head = (f"{'panel':<22}{'min-jerk r':>11}{'peaks':>6}{'lead (s)':>9}{'roll':>6}{'pitch':>6}{'lean':>6}"
                f"{'head °/s':>9}"
                f"{'hold °/s':>9}{'jitter':>8}{'stretch':>9}"
                f"{'free arm':>9}{'side':>6}{'twist':>6}{'pelvis':>7}{'knee':>6}"
                "  bend spine/hip/knee")
        rows = [head, "-" * len(head)]

        for p in self.panels:
            m = p.measures
            if m is None:
                rows.append(f"{p.title:<22}  –")
                continue
            bend = "–" if m.bend is None else f"{m.bend.spine:.2f}/{m.bend.hip:.2f}/{m.bend.knee:.2f}"
            rows.append(f"{p.title:<22}{m.min_jerk_r:>11.3f}{m.speed_peaks:>6d}{_cell(m.gaze_lead_s, '.2f', 9)}"
                        f"{_cell(m.head_roll_deg, '.0f', 5)}°{_cell(m.head_pitch_deg, '.0f', 5)}°"
                        f"{_cell(m.head_lean_deg, '.0f', 5)}°{_cell(m.head_speed_deg_per_s, '.0f', 9)}"
                        f"{m.hold_deg_per_s:>9.1f}{m.jitter_deg:>7.2f}°{m.stretch_mm:>6.1f} mm"
                        f"{_cell(m.free_arm_deg, '.0f', 8)}{'' if m.free_arm_deg is None else '°':1}"
                        f"{_cell(m.side_bend_deg, '.0f', 5)}°{_cell(m.twist_deg, '.0f', 5)}°"
                        f"{_cell(m.pelvis_roll_deg, '.0f', 6)}°{_cell(m.knee_in_deg, '.0f', 5)}°  {bend}")
        return "\n".join(rows)


def _position(target: Array) -> Array:
    return target[:3, 3] if target.shape == (4, 4) else target


def _check_target(target: ArrayLike) -> Array:
    t = np.asarray(target, dtype=float)
    if t.shape not in ((3,), (4, 4)) or not np.all(np.isfinite(t)):
        raise IKError(f"a reach target is a point (3 numbers) or a 4x4 pose, all finite; got {np.asarray(target)!r}")
    return t


def bake_reach(problem: IKProblem | Figure, timeline: Timeline | str | None = None, target: ArrayLike | None = None,
               *, name: str = "reach", label: str | None = None, quiet: bool = False, up: ArrayLike | None = None,
               priors: Priors | None = None, **older: Any) -> ReachResult:
    """Bake a reach into a clip (see the module docstring): ``problem`` (an :class:`~animkit.ik.IKProblem` of one
    effector: the figure, the movable set, the start pose, the solver and tolerance) toward ``target`` (None: the
    problem's Reach task's) on ``timeline`` (None: :class:`Timeline`'s defaults).

        bake_reach(IKProblem(fig, "hand_r", "torso", pose=p0), Timeline(duration=1.5), target)

    The older form ``bake_reach(figure, effector, target, start_pose=, chain=, solver=, duration=, hold=, fps=,
    path=, max_speed=, frame_iterations=, tol=1e-4, ...)`` builds both and gives the same bake.

    A natural reach is a problem made of tasks (``Priors.problem(figure, effector, chain, pose=p0)``:
    :class:`~animkit.ik.natural.Natural` over Reach, Plant, Balance, Gaze, Spread, Hang, Posture and Prior tasks):
    its head looks along a timeline of its own (the Gaze task's target per frame), plain LM decides reachability
    where it falls short, and the result carries the gaze error, centre-of-mass margin, effort and feet drift. In
    the older form ``priors`` builds that problem. ``up`` (the world up axis; None: +y, or the priors') orients the
    reach's measures (:func:`animkit.motion.reach_measures.reach_measures`).
    """
    if isinstance(problem, IKProblem):
        if priors is not None:
            raise IKError("bake_reach(problem, timeline): the priors belong to the problem (Priors.problem(...))")
        if older:
            raise IKError(f"bake_reach(problem, timeline): {', '.join(sorted(older))} belong to the problem or the "
                          "timeline")
        if timeline is not None and not isinstance(timeline, Timeline):
            raise IKError(f"bake_reach(problem, timeline): expected a Timeline, got {type(timeline).__name__}")
        chain = problem.chain if isinstance(problem.chain, str) else None
        return _bake(problem, timeline or Timeline(), _problem_target(problem, target), (name, label, chain, False),
                     quiet, up)
    if not isinstance(timeline, str) or target is None:
        raise IKError("bake_reach(figure, effector, target, ...) or bake_reach(problem, timeline, target)")
    return _bake_figure(problem, timeline, target, priors, (name, label), quiet, up, **older)


def _problem_target(problem: IKProblem, target: ArrayLike | None) -> Array:
    """The target given, else the problem's first Reach task's (IKError with neither)."""
    if target is not None:
        return _check_target(target)
    for t in problem.tasks:
        if isinstance(t, Reach) and t.target is not None:
            return _check_target(t.target)
    raise IKError("bake_reach(problem, timeline): no target given and the problem has no Reach task with one")


def _bake_figure(figure: Figure, effector: str, target: ArrayLike, priors: Priors | None, names: tuple[str, str | None],
                 quiet: bool, up: ArrayLike | None, *, start_pose: ArrayLike | None = None,
                 chain: str | Sequence[str] | None = None, solver: Solver | str | None = None, tol: float = BAKE_TOL,
                 **timeline: Any) -> ReachResult:
    """The older form: the problem (a natural one with ``priors``) and the timeline from ``bake_reach``'s keywords."""
    try:
        tl = Timeline(**timeline)
    except TypeError as exc:
        raise IKError(f"bake_reach: {exc}") from None
    tgt = _check_target(target)
    pose0 = figure.rest_pose() if start_pose is None else figure.check_pose(start_pose).astype(float)
    try:
        effector = figure.effector(effector)
        movable = dof_indices(figure, chain, effector=effector)
    except SceneError as exc:
        raise IKError(str(exc)) from None
    dofs = list(np.asarray(figure.dof_names)[movable])
    if priors is not None:
        problem = priors.problem(figure, effector, dofs, pose=pose0, tol=tol, orientation=tgt.shape == (4, 4))
    else:
        base = solver_from_name(solver) if isinstance(solver, str) else (solver or LM())
        problem = IKProblem(figure, effector, dofs, pose=pose0, orientation=tgt.shape == (4, 4), solver=base, tol=tol)
    return _bake(problem, tl, tgt, (names[0], names[1], chain if isinstance(chain, str) else None,
                                    solver is not None), quiet, up if up is not None or priors is None else priors.up)


def _bake_solvers(problem: IKProblem, tl: Timeline) -> tuple[Solver, Solver]:
    """The solver of a bake's frames and of its direct solve: the natural solver stops once the goals are met (its
    other tasks advance a step a frame); the others run without the relaxed-limits retry in the frames (a frame's
    solve must stay near the previous frame: no jump to another branch)."""
    base, fi = problem.solver, int(tl.frame_iterations)
    if isinstance(base, Natural):
        steps = max(1, round(NULL_STEPS_30 * 30.0 / tl.fps))  # the posture advances as fast per second at any fps
        return (replace(base, max_iter=NATURAL_FRAME_ITERATIONS, settle=False, null_steps=steps, track=True),
                replace(base, max_iter=NATURAL_DIRECT_ITERATIONS, settle=False))
    frame = replace(base, max_iter=fi, **({"relax": False} if isinstance(base, LM) else {}))
    return frame, (replace(base, max_iter=max(200, fi)) if hasattr(base, "max_iter") else base)


def _bake(problem: IKProblem, tl: Timeline, tgt: Array, naming: tuple[str, str | None, str | None, bool],
          quiet: bool, up: ArrayLike | None) -> ReachResult:
    """The bake itself. ``naming``: the clip's name, the label, the chain's name and whether the label names the
    solver."""
    figure, name, label = problem.figure, naming[0], naming[1]
    if len(problem.effectors) != 1 and not problem.tasks:
        raise IKError(f"bake_reach bakes one effector; the problem has {len(problem.effectors)}")
    if problem.orientation != (tgt.shape == (4, 4)):
        raise IKError("bake_reach: the target's kind (a point or a 4x4 pose) must be the problem's orientation")
    effector = problem.effectors[0]
    pose0 = problem.pose
    node_index = figure.node_names.index(effector)
    goal = _position(tgt)
    e0 = figure.world_positions(pose0)[0, node_index]
    frame_solver, direct_solver = _bake_solvers(problem, tl)
    frame = problem.using(frame_solver)
    natural = any(not isinstance(t, Reach) for t in problem.tasks)
    # the table's numbers: one solve from the start pose straight to the target, as a plain solve() would
    direct = _direct(problem.using(direct_solver), tgt)
    # a target out of reach: the hand goes as far as it can, on the same smooth path
    end = goal if direct.converged else figure.world_positions(direct.pose)[0, node_index]
    tl, waypoints, poses, iters, t_solve = bake_paced(frame, node_index, tl, (e0, end, tgt), (label or name, quiet),
                                                      None if direct.converged else direct.pose,
                                                      direct.pose if natural and direct.converged else None)
    times = tl.times
    trail = figure.world_positions(poses)[:, node_index]
    moved, total = _rotation_summary(figure, poses)
    up_axis = np.asarray(up if up is not None else (0.0, 1.0, 0.0), dtype=float)
    extra: dict[str, Any] = {}
    if natural:
        aim = {t.name: goal for t in problem.tasks if isinstance(t, Gaze)}
        rep = problem.retasked(tgt, aim or None, None).report(poses[-1])
        plants = [figure.node_names.index(figure.effector(t.node)) for t in problem.tasks if isinstance(t, Plant)]
        P = figure.world_positions(poses)[:, plants]
        extra = {"natural": True, "gaze_deg": rep.get("gaze"), "com_margin": rep.get("balance"),
                 "effort": static_effort(figure, poses[-1], up_axis),
                 "feet_drift": float(np.max(np.linalg.norm(P - P[:1], axis=2), initial=0.0))}
    chain_name, named_solver = naming[2], naming[3]
    clip = Clip.from_poses(figure, times, poses, name=name, fps=tl.fps)
    eyes = next((float(t.eye_range) for t in problem.tasks if isinstance(t, Gaze) and t.eye_range), 0.0)
    extra["measures"] = reach_measures(figure, poses, tl.fps, effector, tgt, tl.arrival, up=up_axis, eye_range=eyes)
    return ReachResult(label or (chain_name or "chain") + (f" · {direct.solver}" if named_solver else ""),
                       chain_name, direct.solver, effector, tgt, clip, times, poses, waypoints, trail, direct,
                       iters, t_solve, moved, total, duration_s=tl.duration, lead_s=tl.lead, **extra)


def _direct(problem: IKProblem, tgt: Array) -> IKResult:
    """One solve from the start pose to the target; where a problem of tasks falls short, reachable is the plain
    solver's verdict on the same movable set (without planted feet: with them, undecided). A natural problem whose
    only level is its reach (no gaze, plant or enforced balance: the others are null-space terms that leave the
    effector alone) is the stiffness-weighted reach, which LM(stiffness=...) solves directly and faster."""
    sv = problem.solver
    levels = {t.priority for t in problem.tasks if t.weight > 0 and t.priority < NULL_PRIORITY}
    if isinstance(sv, Natural) and levels == {t.priority for t in problem.tasks if isinstance(t, Reach)}:
        movable = set(problem.model.dofs.tolist())
        stiff = {k: float(v) for k, v in dict(sv.stiffness).items()
                 if set(problem.figure.joint_dofs.get(k, ())) & movable} or None
        problem = IKProblem(problem.figure, problem.effectors[0], problem.chain, pose=problem.pose,
                            orientation=problem.orientation, solver=LM(max_iter=200, stiffness=stiff),
                            tol=problem.tol)
        return replace(problem.solve(tgt), solver=sv.name)
    r = problem.solve(tgt)
    if r.converged or r.reachable is not None or any(isinstance(t, Plant) for t in problem.tasks):
        return r
    plain = IKProblem(problem.figure, problem.effectors[0], problem.chain, pose=problem.pose,
                      orientation=problem.orientation, solver=LM(max_iter=200), tol=problem.tol)
    reachable = plain.solve(tgt).reachable
    return replace(r, reachable=reachable, reason="unreachable" if reachable is False else r.reason)


NULL_STEPS_30 = 3  # a natural bake's null-space steps a frame at 30 fps (more at a lower rate: the same per second)
NATURAL_FRAME_ITERATIONS = 8  # a natural bake's most iterations per frame (warm-started: the waypoints move ~1 cm)
NATURAL_DIRECT_ITERATIONS = 100  # the direct solve (the table's numbers) stops once the target is met (~20)


def _rotation_summary(figure: Figure, poses: Array) -> tuple[tuple[tuple[str, float], ...], float]:
    """Per joint, Σ_frames Σ_revolute DOFs |Δθ| in degrees (most first), and the total over all joints."""
    rev = np.array([d.revolute for d in figure.dofs], dtype=bool)
    travel = np.abs(np.diff(poses, axis=0)).sum(axis=0) if len(poses) > 1 else np.zeros(figure.dof_count)
    travel = np.degrees(np.where(rev, travel, 0.0))
    per_joint = [(j, float(travel[idx].sum())) for j, idx in figure.joint_dofs.items() if idx]
    per_joint = [(j, d) for j, d in per_joint if d > 1e-9]
    per_joint.sort(key=lambda jd: -jd[1])
    return tuple(per_joint), float(travel.sum())


def compare(scene: Scene, *, effector: str | None = None, target: ArrayLike | None = None,
            chains: Sequence[str] | None = None, solvers: Sequence[str | None] | None = None,
            duration: float | None = None, hold: float | None = None, fps: float | None = None,
            start_pose: ArrayLike | None = None, priors: Priors | None | bool = True, quiet: bool = False,
            shared_aim: Aim | None = None) -> Comparison:
    """One reach per movable set × solver, defaults from the scene's ``[reach]`` section; without chains there or
    here, every chain of the rig that moves the effector (``hand_r``: the right arm, torso, hips-up, whole-body;
    never the left arm).

    A panel's solver is a solver name (:func:`animkit.ik.solver_from_name`; None: LM) or ``"natural"``: natural
    reaching (:mod:`animkit.ik.natural`) with ``priors``: True takes the scene's ``[reach.priors]``, a
    :class:`~animkit.ik.natural.Priors` is used as given. Without ``solvers`` (and none in the scene) every set gets
    one panel: ``"natural"`` when there are priors (True and the scene has them, or given) or, with ``priors`` True,
    the figure stands as a matched humanoid (:func:`~animkit.ik.stance.natural_by_default`: a glTF, BVH or FBX
    character whose frames are rigid), else LM; False or None leaves the priors out. Natural panels of a scene
    without priors take :func:`~animkit.ik.stance.stance_priors` (a matched humanoid's feet planted).
    ``solvers=["natural", "lm", "fabrik"]`` puts the natural reach beside plain ones.

    A matched humanoid whose hips never translate in its file is reached on
    :func:`~animkit.motion.reach_rigs.reaching_figure` (its hips given translation DOFs, so the knees can bend over
    planted feet), and one in its file's own units (a CMU BVH) in metres
    (:func:`~animkit.motion.reach_rigs.in_metres`: the natural reach's lengths are metres; ``target`` and
    ``start_pose`` are read in the scene's units): then the panels' poses, clips, targets and errors are that
    figure's (``Comparison.figure``), not ``scene.figure``'s. ``shared_aim``: :func:`comparison_aim` of the scene and
    effector, made once for several comparisons of its sets (``animkit compare``'s forked groups); one made for
    another figure is not used."""

    spec = scene.reach
    eff = effector or (spec.effector if spec else None)
    if eff is None:
        raise IKError(f"{scene.source or 'scene'}: no effector given and the scene has no [reach] effector")
    given = scene.figure
    scene, unit = reaching_scene(scene)  # in metres; a humanoid's hips drop over its planted feet
    fig = scene.figure
    # the hand's site, on the surface people see (a robot's tool: its frame)
    at = shared_aim if shared_aim is not None and _aims_at(shared_aim, fig, eff) else _aim(scene, eff)
    node, aimed, site = at.node, at.aimed, at.site
    tgt = target if target is not None else (spec.target if spec else None)
    if tgt is None:
        raise IKError(f"{scene.source or 'scene'}: no target given and the scene has no [reach] target")
    names = list(chains) if chains else list(spec.chains) if spec and spec.chains else chains_moving(fig, node)
    if not names:
        raise IKError(f"{scene.source or 'scene'}: no movable sets that move {node!r}: give chains or declare "
                      "[chains]")
    for c in names:
        try:
            fig.chain(c)  # unknown names fail here, listing the valid ones
        except SceneError as exc:
            raise IKError(str(exc)) from None
    pri = priors_from_scene(scene) if priors is True else (priors or None)
    natural = pri is not None or (priors is True and natural_by_default(fig))  # a matched humanoid: natural
    solver_list: list[str | None] = list(solvers) if solvers else (list(spec.solvers) if spec and spec.solvers
                                                                    else [NATURAL if natural else None])
    if priors not in (True, False, None) and NATURAL not in solver_list:
        raise IKError(f"priors= shapes the {NATURAL!r} panels, and these solvers compare plain reaches only: add "
                      f"{NATURAL!r} to solvers, or give priors=False")
    if NATURAL in solver_list and pri is None:
        pri = stance_priors(fig, (0.0, 1.0, 0.0) if scene.up == "y" else (0.0, 0.0, 1.0))  # feet planted
    skins = [m for m in scene.meshes if m.skin is not None]
    if pri is not None and pri.clear > 0 and not pri.volumes and skins:  # the skinned body's own volume
        pri = replace(pri, volumes=mesh_radii(fig, max(skins, key=lambda m: m.vertex_count), match_figure(fig)))
    duration = duration if duration is not None else (spec.duration if spec else 2.0)
    hold = hold if hold is not None else (spec.hold if spec else 0.5)
    fps = fps if fps is not None else (spec.fps if spec else 30.0)
    if start_pose is None and spec is not None and spec.start_clip is not None:
        start_pose = scene.clip(spec.start_clip).sample(np.zeros(1))[0]
    pose0 = given.rest_pose() if start_pose is None else given.check_pose(start_pose)
    panels = []
    pose0, goal = reaching_inputs(given, fig, unit, pose0, _check_target(tgt))  # in metres where it reaches
    timeline = Timeline(duration=duration, hold=hold, fps=fps)
    up = (0.0, 1.0, 0.0) if scene.up == "y" else (0.0, 0.0, 1.0)
    for c in names:
        for s in solver_list:
            label = c if len(solver_list) == 1 else f"{c} · {s or 'default'}"
            rides = s == NATURAL and pri is not None and pri.movable(aimed, site, c)[1]
            problem = _panel_problem(aimed, site, c, s, pri, pose0, goal)
            done = bake_reach(problem, timeline, goal, name=f"reach-{c}", label=label, quiet=quiet, up=up)
            done = _on_surface(done, at)
            panels.append(replace(done, chain=c, riders=RIDERS if rides else ""))  # neck, free arm: posture only
    return Comparison(node, goal, tuple(panels), fps, pose0, fig)


RIDERS = "+neck +free arm"  # a natural panel whose set tips the head and free arm: they join for posture


def _aims_at(aimed: Aim | None, figure: Figure, effector: str) -> bool:
    """Whether ``aimed`` is the aim of ``effector`` on ``figure`` (itself, not a copy)."""
    if aimed is None or aimed.figure is not figure:
        return False
    try:
        return aimed.node == figure.effector(effector)
    except SceneError:
        return False


def comparison_aim(scene: Scene, effector: str | None = None) -> Aim | None:
    """The :class:`~animkit.motion.reach_surface.Aim` :func:`compare` takes for ``effector`` (default the scene's
    ``[reach]`` one) on the figure it reaches (:func:`~animkit.motion.reach_rigs.reaching_scene`); None where there is
    no effector or it is not the figure's (compare then says what is wrong)."""
    spec = scene.reach
    eff = effector or (spec.effector if spec else None)
    if eff is None:
        return None
    try:
        return _aim(reaching_scene(scene)[0], eff)
    except IKError:
        return None


def _aim(scene: Scene, effector: str) -> Aim:
    """:func:`~animkit.motion.reach_surface.aim` on the scene's figure and meshes (IKError for an unknown name)."""
    try:
        return aim(scene.figure, effector, scene.meshes)
    except SceneError as exc:
        raise IKError(str(exc)) from None


def _on_surface(done: ReachResult, at: Aim) -> ReachResult:
    """``done`` measured from the hand's surface (:meth:`~animkit.motion.reach_surface.Aim.distances` at the direct
    solve's pose and the clip's last frame; none without a hand), its clip and effector the scene's own figure's
    where it was baked on a site's copy (the same DOFs; its trail is the site's)."""
    fig = at.figure
    d = at.distances(np.stack([done.result.pose, done.poses[-1]]), _position(done.target))
    clip = Clip.from_poses(fig, done.times, done.poses, name=done.clip.name, fps=done.clip.fps) if at.sited \
        else done.clip
    return replace(done, clip=clip, effector=at.node,
                   surface_error=None if d is None else float(d[0]),
                   clip_surface_error=None if d is None else float(d[1]))


def bake_scene_reach(scene: Scene, effector: str, target: ArrayLike, **bake: Any) -> ReachResult:
    """:func:`bake_reach`'s figure form (``bake``: its keywords) on ``scene``'s figure, aiming and measured as
    :func:`compare`'s panels are: a humanoid's hand aims its site, and ``reached`` / ``error`` read the distance from
    the target to the hand's surface (``animkit reach``)."""
    at = _aim(scene, effector)
    return _on_surface(bake_reach(at.aimed, at.site, target, **bake), at)


def _panel_problem(figure: Figure, node: str, chain: str, solver: str | None, priors: Priors | None, pose0: Array,
                   goal: Array) -> IKProblem:
    """One panel's problem: a natural reach's tasks (``"natural"``), else the named solver's plain reach."""
    if solver == NATURAL:
        assert priors is not None
        return priors.problem(figure, node, chain, pose=pose0, tol=BAKE_TOL, orientation=goal.shape == (4, 4))
    return IKProblem(figure, node, chain, pose=pose0, orientation=goal.shape == (4, 4),
                     solver=solver_from_name(solver) if solver else LM(), tol=BAKE_TOL)


def chains_moving(figure: Figure, effector: str) -> list[str]:
    """The rig's chains with a DOF on the path from the root to ``effector`` (the effector decides the side: a
    right hand's reach never gets the left arm), in the rig's order."""
    path = set(dof_indices(figure, None, effector=effector).tolist())
    return [c for c in figure.rig.chains if path & set(dof_indices(figure, c).tolist())]


def priors_from_scene(scene: Scene) -> Priors | None:
    """The scene's ``[reach.priors]`` as :class:`~animkit.ik.natural.Priors` (its up axis included); None when the
    scene has none. Bad values raise IKError naming the scene file."""
    spec = scene.reach
    if spec is None or spec.priors is None:
        return None
    kw: dict[str, Any] = dict(spec.priors)
    up = (0.0, 1.0, 0.0) if scene.up == "y" else (0.0, 0.0, 1.0)
    try:
        if isinstance(kw.get("prior"), str):  # "default" or a file relative to the scene (checked when read)
            ref = kw["prior"]
            kw["prior"] = PosePrior.load(None if ref == "default" or scene.source is None
                                         else Path(scene.source).parent / ref)
        return Priors(**kw, up=up)
    except TypeError as exc:
        raise IKError(f"{scene.source or 'scene'}: [reach.priors]: {exc}") from None
    except IKError as exc:
        raise IKError(f"{scene.source or 'scene'}: [reach.priors]: {exc}") from None
