"""IK against its peers, 7-DOF 6D (Franka Panda), interleaved: a reused :class:`animkit.ik.IKProblem`, the one-line
:func:`animkit.ik.solve`, ``solve_batch``, robotics-toolbox-python's compiled ``ik_LM``, ikpy and mink.

    OMP_NUM_THREADS=1 flock /tmp/animkit-bench.lock .bench-venv/bin/python -m benchmarks.bench_ik_peers

Protocol: ``--targets`` joint configurations drawn uniformly inside the Panda's limits (seed 0); each library's
target is the pose its own forward kinematics gives for them. Every solver starts from one fixed, non-singular
pose, robotics-toolbox's ``qr`` ("ready"), with no restarts (``slimit=1``). Success, judged the same way for all
(on each library's own FK): position < 1e-4 m, orientation < 1e-3 rad, every joint inside its limits; the
toolbox's own flag (its residual ½eᵀe < 1e-6) is shown too. Time: each round solves every target once per case,
cases interleaved (A, B, C, A, B, C, …); the table holds the medians (min–max) over the rounds of the time per
solve. ikpy (tens of ms per solve) gets the first ``--ikpy`` targets per round.

mink (differential IK on MuJoCo) runs on the same URDF compiled by MuJoCo (:func:`mujoco_panda`: meshes stripped,
the gripper's prismatic fingers fixed so the model has the 7 arm joints, bodies of fixed joints kept so
``panda_grasptarget`` exists); an assertion checks before any timing that its FK equals animkit's to 1e-9 at
random poses. Its loop is its examples' ``converge_ik`` (``examples/franka_emika_panda.py``): ``solve_ik`` (QP
solver daqp, ``ConfigurationLimit``) then ``integrate_inplace``, until its own test on the ``FrameTask`` error
(‖log‖ translation < 1e-4, rotation < 1e-3: its "own success flag") or ``MINK_ITERS`` steps. Two settings: the
example's (``damping`` 1e-3, ``lm_damping`` 1) and the strongest found on these targets (1e-6, 0.1). The example's
``PostureTask`` (cost 1e-2) is left out: it pulls toward the start, and with it 0 of 50 targets reached 1e-4 m.
``dt`` cancels (the QP is in Δq, ``v = Δq/dt`` and ``integrate_inplace`` multiplies back; the limit ignores it;
no velocity limit is set): 1/200 s, the example's rate. ``--mink`` targets per round (default: all).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from animkit.ik import IKProblem, rotation_error, solve

from .bench_ik import DATA, load_robot
from .harness import arguments, interleaved

POS_OK, ORI_OK = 1e-4, 1e-3
MINK_ITERS = 100  # success on these targets: 90.0 % at 100 and at 300 steps (1e-6, 0.1); 77 % at 30
MINK_DT = 1 / 200
MINK_SETTINGS = {  # row label: (solve_ik damping, FrameTask lm_damping)
    "mink solve_ik, daqp (its example: damping 1e-3, lm 1)": (1e-3, 1.0),
    "mink solve_ik, daqp (damping 1e-6, lm 0.1)": (1e-6, 0.1),
}


def mujoco_panda(urdf: Path):
    """MuJoCo's model of a URDF, x = MjModel(URDF without <visual>/<collision>, prismatic joints fixed,
    ``<compiler fusestatic="false">``): the arm's revolute joints only, every link a body."""
    import xml.etree.ElementTree as ET

    import mujoco

    root = ET.parse(urdf).getroot()
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    for joint in root.iter("joint"):
        if joint.get("type") == "prismatic":  # the gripper's fingers: not part of the arm's IK
            joint.set("type", "fixed")
            for tag in ("limit", "mimic", "axis", "dynamics", "safety_controller"):
                for el in joint.findall(tag):
                    joint.remove(el)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", fusestatic="false", discardvisual="false")
    return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))


def _ok(q: np.ndarray, lo: np.ndarray, hi: np.ndarray, W: np.ndarray, T: np.ndarray) -> bool:
    if np.any(q < lo - 1e-9) or np.any(q > hi + 1e-9) or not np.all(np.isfinite(q)):
        return False
    return bool(np.linalg.norm(W[:3, 3] - T[:3, 3]) < POS_OK
                and np.linalg.norm(rotation_error(T[:3, :3], W[:3, :3])) < ORI_OK)


# complexity: a benchmark driver: one branch per peer that may be missing
def main(argv: list[str] | None = None) -> int:  # noqa: C901
    ap = arguments(__doc__, rounds=7)
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--ikpy", type=int, default=10)
    ap.add_argument("--mink", type=int, default=None, help="targets per round for mink (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    fig = load_robot(DATA / "franka_panda.urdf")
    eff = "panda_grasptarget"
    arm = [fig.dof_index(f"panda_joint{k}") for k in range(1, 8)]
    lim = fig.dof_limits()
    lo, hi = lim[arm, 0], lim[arm, 1]
    rng = np.random.default_rng(args.seed)
    qs = rng.uniform(lo, hi, size=(args.targets, 7))
    qr = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, np.pi / 4])  # robotics-toolbox's Panda.qr
    start = np.clip(np.zeros(fig.dof_count), lim[:, 0], lim[:, 1])
    start[arm] = qr
    poses = np.repeat(start[None], args.targets, 0)
    poses[:, arm] = qs
    ours_T = np.array([fig.world(p)[eff] for p in poses])

    problem = IKProblem(fig, eff, "arm", pose=start, orientation=True)
    from animkit.ik import lm_batch_jit, lm_jit

    lm_jit.warm_up()  # the compiled loops load (or compile) once per process, before any timing
    lm_batch_jit.warm_up()
    cases = {}
    results: dict[str, list[bool]] = {}

    def reused() -> None:
        for T in ours_T:
            problem.solve(T)

    def one_line() -> None:
        for T in ours_T:
            solve(fig, start, eff, T, chain="arm")

    def batch() -> None:
        problem.solve_batch(ours_T, quiet=True)

    cases["animkit IKProblem.solve (reused)"] = reused
    cases["animkit solve() (one line)"] = one_line
    cases["animkit IKProblem.solve_batch"] = batch
    rs = [problem.solve(T) for T in ours_T]
    results["animkit IKProblem.solve (reused)"] = [_ok(r.pose[arm], lo, hi, fig.world(r.pose)[eff], T)
                                                   for r, T in zip(rs, ours_T, strict=True)]
    b = problem.solve_batch(ours_T, quiet=True)
    results["animkit IKProblem.solve_batch"] = [_ok(b.poses[i][arm], lo, hi, fig.world(b.poses[i])[eff], T)
                                                for i, T in enumerate(ours_T)]
    results["animkit solve() (one line)"] = results["animkit IKProblem.solve (reused)"]
    own_flag = {}
    try:
        import roboticstoolbox as rtb

        panda = rtb.models.Panda()
        ets = panda.ets()
        rtb_T = [ets.fkine(q).A for q in qs]
        rlo, rhi = panda.qlim[0], panda.qlim[1]

        def toolbox() -> None:
            for T in rtb_T:
                ets.ik_LM(T, q0=qr, ilimit=30, slimit=1, joint_limits=True)

        cases["robotics-toolbox ik_LM (C++)"] = toolbox
        sols = [ets.ik_LM(T, q0=qr, ilimit=30, slimit=1, joint_limits=True) for T in rtb_T]
        results["robotics-toolbox ik_LM (C++)"] = [_ok(s.q, rlo, rhi, ets.fkine(s.q).A, T)
                                                  for s, T in zip(sols, rtb_T, strict=True)]
        own_flag["robotics-toolbox ik_LM (C++)"] = float(np.mean([s.success for s in sols]))
    except ImportError:
        print("robotics-toolbox-python not importable: skipped", file=sys.stderr)
    n_ikpy = min(args.ikpy, args.targets)
    try:
        from ikpy.chain import Chain

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = fig.path_to(eff)
            elements = [fig.root.name]
            for a in path[1:]:
                elements += [a.joint.name, a.child.name]
            urdf = str(DATA / "franka_panda.urdf")
            chain = Chain.from_urdf_file(urdf, base_elements=elements, base_element_type="link")
            mask = [lk.joint_type != "fixed" for lk in chain.links]
            mask[0] = False
            chain = Chain.from_urdf_file(urdf, base_elements=elements, base_element_type="link",
                                         active_links_mask=mask)
        col = [i for i, m in enumerate(mask) if m]
        init = np.zeros(len(chain.links))
        init[col] = qr

        def ikpy_solve(T: np.ndarray) -> np.ndarray:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(chain.inverse_kinematics_frame(T, initial_position=init, orientation_mode="all"))

        def ikpy_round() -> None:
            for T in ours_T[:n_ikpy]:
                ikpy_solve(T)

        cases["ikpy"] = ikpy_round
        ok = []
        for p, T in zip(poses[:n_ikpy], ours_T[:n_ikpy], strict=True):
            q = ikpy_solve(T)[col]
            full = p.copy()
            full[arm] = q
            ok.append(_ok(q, lo, hi, fig.world(full)[eff], T))
        results["ikpy"] = ok
    except ImportError:
        print("ikpy not importable: skipped", file=sys.stderr)
    n_mink = min(args.targets if args.mink is None else args.mink, args.targets)
    try:
        import mink
        import mujoco

        model = mujoco_panda(DATA / "franka_panda.urdf")
        names = [model.joint(j).name for j in range(model.njnt)]
        assert model.nq == model.nv == 7 and names == [f"panda_joint{k}" for k in range(1, 8)], names
        assert np.allclose(model.jnt_range, np.stack([lo, hi], 1), rtol=0, atol=1e-12), model.jnt_range
        body = model.body(eff).id
        data = mujoco.MjData(model)
        for p in np.vstack([poses[:20], start[None]]):  # FK must agree before anything is timed
            data.qpos[:] = p[arm]
            mujoco.mj_kinematics(model, data)
            W = fig.world(p)[eff]
            assert np.abs(data.xpos[body] - W[:3, 3]).max() < 1e-9, "MuJoCo's Panda FK differs from animkit's"
            assert np.abs(data.xmat[body].reshape(3, 3) - W[:3, :3]).max() < 1e-9, "MuJoCo's Panda frame differs"
        configuration = mink.Configuration(model)
        limits = [mink.ConfigurationLimit(model)]
        targets_se3 = [mink.SE3.from_matrix(T) for T in ours_T[:n_mink]]

        def mink_solver(damping: float, lm_damping: float):
            task = mink.FrameTask(eff, "body", position_cost=1.0, orientation_cost=1.0, lm_damping=lm_damping)
            tasks = [task]

            def solve_one(target) -> bool:
                configuration.update(qr)
                task.set_target(target)
                for _ in range(MINK_ITERS):
                    vel = mink.solve_ik(configuration, tasks, MINK_DT, "daqp", damping=damping, limits=limits)
                    configuration.integrate_inplace(vel, MINK_DT)
                    err = task.compute_error(configuration)
                    if np.linalg.norm(err[:3]) < POS_OK and np.linalg.norm(err[3:]) < ORI_OK:
                        return True
                return False

            return solve_one

        for label, (damping, lm_damping) in MINK_SETTINGS.items():
            solve_one = mink_solver(damping, lm_damping)

            def mink_round(solve_one=solve_one) -> None:
                for target in targets_se3:
                    solve_one(target)

            cases[label] = mink_round
            ok, own = [], []
            for T, target in zip(ours_T[:n_mink], targets_se3, strict=True):
                own.append(solve_one(target))
                q = configuration.q.copy()
                W = np.eye(4)
                W[:3, :3] = configuration.data.xmat[body].reshape(3, 3)
                W[:3, 3] = configuration.data.xpos[body]
                ok.append(_ok(q, lo, hi, W, T))
            results[label] = ok
            own_flag[label] = float(np.mean(own))
    except ImportError:
        print("mink or mujoco not importable: skipped", file=sys.stderr)
    stats = interleaved(cases, rounds=args.rounds, warmup=1)
    per = {name: (n_ikpy if name == "ikpy" else n_mink if name in MINK_SETTINGS else args.targets)
           for name in cases}
    print(f"{args.targets} Panda 6D targets (seed {args.seed}), start qr, no restarts; {args.rounds} rounds, "
          "interleaved; time per solve, median (min–max) over rounds\n")
    print("| solver | success (1e-4 m, 1e-3 rad, limits) | own success flag | µs per solve | solves/s | "
          "× robotics-toolbox |")
    print("|---|---|---|---|---|---|")
    ref = stats.get("robotics-toolbox ik_LM (C++)")
    for name, s in stats.items():
        k = per[name]
        med, low, high = s.median / k * 1e6, s.low / k * 1e6, s.high / k * 1e6
        flag = f"{100 * own_flag[name]:.1f} %" if name in own_flag else "–"
        speed = f"{(ref.median / per['robotics-toolbox ik_LM (C++)']) / (s.median / k):.2f}×" if ref else "–"
        note = f" ({k} targets)" if k != args.targets else ""
        print(f"| {name}{note} | {100 * np.mean(results[name]):.1f} % | {flag} | {med:.1f} ({low:.1f}–{high:.1f}) | "
              f"{1e6 / med:,.0f} | {speed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
