"""Clips: sampling into poses, loop modes, root motion, from_poses, limits, blend and crossfade."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

import animkit.keyframes as kf
from animkit.errors import ClipError
from animkit.keyframes import Clip, RotationTrack, Track, blend, crossfade

SETTINGS = settings(deadline=None, max_examples=100, derandomize=True)
INF = np.inf


class StubLayout:
    """A tiny PoseLayout: free root 'hips' (zyx + translation), ball 'shoulder_r' (xyz), hinge 'elbow_r'."""

    def __init__(self) -> None:
        self.dof_names = ["hips.tx", "hips.ty", "hips.tz", "hips.rz", "hips.ry", "hips.rx",
                          "shoulder_r.rx", "shoulder_r.ry", "shoulder_r.rz", "elbow_r.rz"]
        self.joint_dofs = {"hips": [0, 1, 2, 3, 4, 5], "shoulder_r": [6, 7, 8], "elbow_r": [9]}
        self.joint_orders = {"hips": "zyx", "shoulder_r": "xyz"}

    def rest_pose(self) -> np.ndarray:
        return np.array([0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.2])

    def dof_limits(self) -> np.ndarray:
        lim = np.tile([-INF, INF], (10, 1))
        lim[9] = [0.0, 2.5]
        lim[6:9] = [-np.pi, np.pi]
        return lim


LAYOUT = StubLayout()
D = 10


def _walk(loop: str = "loop", root_motion: str | None = "hips") -> Clip:
    """A 1-second cycle: hips move 0.8 m forward in z, elbow swings and comes back."""
    return Clip.build(LAYOUT, [
        Track("hips.tz", [0.0, 1.0], [0.0, 0.8]),
        Track("hips.ty", [0.0, 0.5, 1.0], [0.9, 0.95, 0.9], "cubic"),
        Track("elbow_r.rz", [0.0, 0.5, 1.0], [0.2, 1.2, 0.2], "bezier"),
    ], name="walk", loop=loop, root_motion=root_motion)


def _q(axis: str, angle: float) -> np.ndarray:
    return Rotation.from_euler(axis, angle).as_quat(scalar_first=True)


def test_dofs_without_tracks_hold_rest_and_tracks_land_in_layout_order():
    clip = _walk("once", None)
    t = np.array([0.0, 0.25, 1.0])
    poses = clip.sample(t)
    assert poses.shape == (3, D)
    rest = LAYOUT.rest_pose()
    for j in (0, 3, 4, 5, 6, 7, 8):
        assert np.all(poses[:, j] == rest[j])
    assert np.array_equal(poses[:, 2], clip.tracks["hips.tz"].sample(t))
    assert np.array_equal(poses[:, 9], clip.tracks["elbow_r.rz"].sample(t))


def test_rotation_track_sets_the_ball_joint_dofs_in_its_euler_order():
    q = np.stack([_q("x", 0.0), _q("x", 0.8)])
    clip = Clip.build(LAYOUT, [RotationTrack("shoulder_r", [0.0, 2.0], q)])
    poses = clip.sample(np.array([1.0, 2.0]))
    np.testing.assert_allclose(poses[:, 6:9], [[0.4, 0, 0], [0.8, 0, 0]], atol=1e-12)
    # independent oracle: scipy's intrinsic 'XYZ' Euler angles of the slerped rotation
    hq = np.stack([_q("z", 0.3), Rotation.from_euler("ZYX", [0.5, 0.2, -0.1]).as_quat(scalar_first=True)])
    clip = Clip.build(LAYOUT, [RotationTrack("hips", [0.0, 1.0], hq)])
    poses = clip.sample(np.array([0.0, 0.37, 1.0]))
    from scipy.spatial.transform import Slerp

    rots = Slerp([0.0, 1.0], Rotation.from_quat(hq, scalar_first=True))([0.0, 0.37, 1.0])
    np.testing.assert_allclose(poses[:, 3:6], rots.as_euler("ZYX"), atol=1e-9)


@given(st.lists(st.floats(-50, 50), min_size=1, max_size=30))
@SETTINGS
def test_vectorised_clip_sampling_equals_one_time_at_a_time(ts):
    for clip in (_walk("loop"), _walk("ping-pong"), _walk("once")):
        q = np.array(ts)
        together = clip.sample(q)
        alone = np.stack([clip.sample(np.array([x]))[0] for x in q])
        assert np.array_equal(together, alone)


def test_once_clamps():
    clip = _walk("once", None)
    ref = clip.sample(np.array([0.0, 1.0]))
    assert np.array_equal(clip.sample(np.array([-3.0, 7.0])), ref)


def test_loop_wraps_explicit_times():
    clip = _walk("loop", None)
    base = clip.sample(np.array([0.0, 0.25, 0.5, 0.75]))
    for shift in (1.0, 2.0, 5.0, -1.0, -3.0, 100.0):
        got = clip.sample(np.array([0.0, 0.25, 0.5, 0.75]) + shift)
        np.testing.assert_allclose(got, base, atol=1e-12)
    tau, n = clip.local_time(np.array([-0.25, 2.5, 7.0, -7.75]))
    np.testing.assert_allclose(tau, [0.75, 0.5, 0.0, 0.25], atol=1e-12)
    assert list(n) == [-1, 2, 7, -8]


def test_ping_pong_reflects_explicit_times():
    clip = Clip.build(LAYOUT, [Track("hips.tx", [0.0, 2.0], [0.0, 2.0])], loop="ping-pong")
    t = np.array([0.0, 0.5, 2.0, 2.5, 3.5, 4.0, 4.5, -0.5, -2.5, 41.0, 42.5])
    expected = np.array([0.0, 0.5, 2.0, 1.5, 0.5, 0.0, 0.5, 0.5, 1.5, 1.0, 1.5])
    np.testing.assert_allclose(clip.sample(t)[:, 0], expected, atol=1e-12)


def test_zero_duration_does_not_divide_by_zero():
    for loop in kf.LOOP_MODES:
        clip = Clip.build(LAYOUT, [Track("hips.tx", [0.0], [1.5])], loop=loop, root_motion="hips")
        assert clip.duration == 0.0
        with np.errstate(all="raise"):
            poses = clip.sample(np.array([-1.0, 0.0, 3.0]))
        assert np.all(poses[:, 0] == 1.5)
        assert list(clip.frame_times()) == [0.0]


def test_root_motion_accumulates_across_loops():
    clip = _walk("loop", "hips")
    t = np.array([0.0, 0.5, 1.0, 1.5, 3.25, -0.5])
    poses = clip.sample(t)
    np.testing.assert_allclose(poses[:, 2], 0.8 * t, atol=1e-12)  # z walks on, 0.8 m per cycle
    # other root translations have no net displacement, non-root DOFs just wrap
    np.testing.assert_allclose(poses[:, 1], _walk("loop", None).sample(t)[:, 1], atol=1e-12)
    np.testing.assert_allclose(poses[:, 9], _walk("loop", None).sample(t)[:, 9], atol=1e-12)
    # continuous across the cycle boundary
    eps = 1e-9
    a, b = clip.sample(np.array([2.0 - eps, 2.0]))[:, 2]
    assert abs(a - b) < 1e-6
    # without root motion it snaps back
    assert _walk("loop", None).sample(np.array([2.25]))[0, 2] == pytest.approx(0.2)


def test_frame_times_cover_zero_to_duration():
    clip = Clip.build(LAYOUT, [Track("hips.tx", [0.0, 1.0], [0.0, 1.0])], fps=4)
    assert list(clip.frame_times()) == [0.0, 0.25, 0.5, 0.75, 1.0]
    clip = Clip.build(LAYOUT, [Track("hips.tx", [0.0, 0.9], [0.0, 1.0])], fps=4)
    assert list(clip.frame_times()) == [0.0, 0.25, 0.5, 0.75, 0.9]
    assert clip.sample_frames().shape == (5, D)


def test_from_poses_reproduces_frames_exactly():
    rng = np.random.default_rng(0)
    F = 240
    times = np.arange(F) / 120.0
    poses = np.tile(LAYOUT.rest_pose(), (F, 1)) + rng.normal(scale=0.3, size=(F, D))
    poses[:, 9] = rng.uniform(0.0, 2.5, F)
    poses[:, 6:9] = rng.uniform(-1, 1, (F, 3))
    for kind in ("linear", "step", "cubic", "bezier"):
        clip = Clip.from_poses(LAYOUT, times, poses, fps=120, interpolation=kind)
        assert np.array_equal(clip.sample(times), poses)
        assert np.array_equal(clip.sample_frames(), poses)
    clip = Clip.from_poses(LAYOUT, times, poses, fps=120)
    mid = (times[:-1] + times[1:]) / 2
    np.testing.assert_allclose(clip.sample(mid), (poses[:-1] + poses[1:]) / 2, atol=1e-12)
    with pytest.raises(ClipError, match="shape"):
        Clip.from_poses(LAYOUT, times, poses[:, :5])


def test_from_poses_keeps_10000_frames_by_96_dofs_as_one_dense_set():
    """A baked clip is one dense array, not 960,000 keys (its speed is bench_motion's business, not a test's)."""

    class Wide:
        dof_names = [f"j{i}.rz" for i in range(96)]
        joint_dofs = {f"j{i}": [i] for i in range(96)}
        joint_orders: dict[str, str] = {}

        def rest_pose(self) -> np.ndarray:
            return np.zeros(96)

        def dof_limits(self) -> np.ndarray:
            return np.tile([-4.0, 4.0], (96, 1))

    poses = np.random.default_rng(1).uniform(-3, 3, (10_000, 96))
    times = np.arange(10_000) / 120.0
    clip = Clip.from_poses(Wide(), times, poses, fps=120)
    out = clip.sample(clip.frame_times())
    assert np.array_equal(out, poses)
    assert clip.dense is not None and not clip.tracks


def test_keys_outside_limits_raise_naming_dof_time_and_limit():
    with pytest.raises(ClipError) as err:
        Clip.build(LAYOUT, [Track("elbow_r.rz", [0.0, 0.5, 1.0], [0.0, 2.7, 1.0])], name="wave")
    msg = str(err.value)
    assert "elbow_r.rz" in msg and "t=0.5" in msg and "2.5" in msg and "wave" in msg
    poses = np.tile(LAYOUT.rest_pose(), (3, 1))
    poses[2, 9] = -0.1
    with pytest.raises(ClipError, match=r"elbow_r\.rz.*t=2.*lower limit 0"):
        Clip.from_poses(LAYOUT, [0.0, 1.0, 2.0], poses)


def test_unknown_names_and_conflicts_raise():
    with pytest.raises(ClipError, match="did you mean 'elbow_r.rz'"):
        Clip.build(LAYOUT, [Track("elbow_r.rzz", [0.0], [0.0])])
    with pytest.raises(ClipError, match="ball joint"):
        Clip.build(LAYOUT, [RotationTrack("elbow_r", [0.0], [[1.0, 0, 0, 0]])])
    with pytest.raises(ClipError, match="also driven"):
        Clip.build(LAYOUT, [Track("shoulder_r.rx", [0.0], [0.0]),
                            RotationTrack("shoulder_r", [0.0], [[1.0, 0, 0, 0]])])
    with pytest.raises(ClipError, match="loop mode"):
        Clip.build(LAYOUT, [], loop="bounce")  # type: ignore[arg-type]
    with pytest.raises(ClipError, match="translation"):
        Clip.build(LAYOUT, [], root_motion="elbow_r")
    with pytest.raises(ClipError, match="sample times"):
        _walk().sample(np.array([0.0, np.nan]))


def test_clip_is_frozen():
    clip = _walk()
    with pytest.raises(AttributeError):
        clip.fps = 60  # type: ignore[misc]
    with pytest.raises(TypeError):
        clip.tracks["x"] = clip.tracks["hips.tz"]  # type: ignore[index]


def _two_clips() -> tuple[Clip, Clip]:
    a = Clip.build(LAYOUT, [
        Track("hips.tz", [0.0, 2.0], [0.0, 1.0]),
        Track("elbow_r.rz", [0.0, 2.0], [0.5, 1.5]),
        RotationTrack("shoulder_r", [0.0, 2.0], np.stack([_q("x", 0.0), _q("x", 0.6)])),
    ], name="a")
    b = Clip.build(LAYOUT, [
        Track("hips.tz", [0.0, 1.0], [2.0, 3.0], "cubic"),
        Track("elbow_r.rz", [0.0, 1.0], [2.0, 0.1]),
        RotationTrack("shoulder_r", [0.0, 1.0], np.stack([_q("y", 0.4), _q("z", 0.9)])),
    ], name="b")
    return a, b


def test_blend_at_weight_zero_and_one_gives_the_sources():
    a, b = _two_clips()
    t = np.linspace(-0.5, 2.5, 31)
    assert np.array_equal(blend(a, b, 0.0).sample(t), a.sample(t))
    assert np.array_equal(blend(a, b, 1.0).sample(t), b.sample(t))
    assert blend(a, b, 0.3).duration == 2.0


def test_blend_is_linear_on_dofs_and_slerps_ball_joints():
    a, b = _two_clips()
    t = np.array([0.0, 0.4, 1.3])
    w = 0.3
    out = blend(a, b, w).sample(t)
    pa, pb = a.sample(t), b.sample(t)
    np.testing.assert_allclose(out[:, [2, 9]], (1 - w) * pa[:, [2, 9]] + w * pb[:, [2, 9]], atol=1e-12)
    ra = Rotation.from_euler("XYZ", pa[:, 6:9])
    rb = Rotation.from_euler("XYZ", pb[:, 6:9])
    expected = ra * Rotation.from_rotvec(w * (ra.inv() * rb).as_rotvec())  # geodesic from a toward b
    got = Rotation.from_euler("XYZ", out[:, 6:9])
    np.testing.assert_allclose((got * expected.inv()).magnitude(), 0.0, atol=1e-9)
    with pytest.raises(ClipError, match="weight"):
        blend(a, b, 1.5)


def test_crossfade_outside_the_window_gives_the_sources():
    a, b = _two_clips()
    fade = crossfade(a, b, start=1.0, length=0.5)
    assert fade.duration == 2.0
    before = np.linspace(-1.0, 1.0, 11)
    after = np.linspace(1.5, 3.0, 11)
    assert np.array_equal(fade.sample(before), a.sample(before))
    assert np.array_equal(fade.sample(after), b.sample(after - 1.0))
    mid = fade.sample(np.array([1.25]))[0]
    pa, pb = a.sample(np.array([1.25]))[0], b.sample(np.array([0.25]))[0]
    assert mid[9] == pytest.approx(0.5 * pa[9] + 0.5 * pb[9])
    cut = crossfade(a, b, start=1.0, length=0.0)
    assert np.array_equal(cut.sample(np.array([0.999, 1.0]))[0], a.sample(np.array([0.999]))[0])
    assert np.array_equal(cut.sample(np.array([1.0]))[0], b.sample(np.array([0.0]))[0])


def test_mixing_clips_on_different_layouts_raises():
    class Other(StubLayout):
        def __init__(self) -> None:
            super().__init__()
            self.dof_names = [n.replace("elbow_r", "knee_r") for n in self.dof_names]

    a, _ = _two_clips()
    other = Clip.build(Other(), [], name="other")
    with pytest.raises(ClipError, match="different layout"):
        blend(a, other, 0.5)


def test_public_names_resolve():
    for name in kf.__all__:
        assert getattr(kf, name) is not None
