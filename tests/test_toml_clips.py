"""Clips in scene TOML: reading every form, round trips through dumps_clips, errors, shipped clips."""

from __future__ import annotations

import math

import numpy as np
import pytest

import animkit
from animkit.errors import ParseError
from animkit.io.toml_clips import dumps_clips
from animkit.io.toml_scene import loads_scene
from animkit.keyframes import Clip, RotationTrack, Track, blend, crossfade

from .conftest import SCENES

HUMANOID = (SCENES / "humanoid.toml").read_text()
FIGURE = HUMANOID[:HUMANOID.index("[reach]")]
T = np.linspace(-0.7, 7.3, 2001)


def load(clips: str):
    return loads_scene(FIGURE + "\n" + clips, "x.toml")


def round_trip(scene) -> None:
    text = dumps_clips(dict(scene.clips), scene.figure)
    again = load(text)
    assert list(again.clips) == list(scene.clips)
    for name, clip in scene.clips.items():
        back = again.clips[name]
        assert (back.loop, back.fps, back.root_motion) == (clip.loop, clip.fps, clip.root_motion)
        assert back.duration == pytest.approx(clip.duration, abs=1e-12)
        np.testing.assert_allclose(back.sample(T), clip.sample(T), atol=1e-9)


KEYS = """
[clips.wave]
fps = 24
loop = "ping-pong"
easing = "ease_in_out"

[[clips.wave.keys]]
time = 0
pose = { "shoulder_r.rz" = -10, elbow_r.rx = -20, "hips.tx" = 0.1 }

[[clips.wave.keys]]
time = 0.5
interpolation = "linear"
easing = "ease_in"
[clips.wave.keys.pose]
"shoulder_r.rz" = -120
"elbow_r.rx" = -40

[[clips.wave.keys]]
time = 1.25
pose = { "shoulder_r.rz" = -90, "hips.tx" = -0.05 }
"""


def test_keys_sample_to_their_values_in_radians():
    scene = load(KEYS)
    clip = scene.clips["wave"]
    fig = scene.figure
    assert (clip.fps, clip.loop, clip.duration) == (24.0, "ping-pong", 1.25)
    p = clip.sample(np.array([0.0, 0.5, 1.25]))
    rz, el, tx = (fig.dof_index(d) for d in ("shoulder_r.rz", "elbow_r.rx", "hips.tx"))
    np.testing.assert_allclose(p[:, rz], np.radians([-10, -120, -90]), atol=1e-12)
    np.testing.assert_allclose(p[:2, el], np.radians([-20, -40]), atol=1e-12)
    np.testing.assert_allclose(p[[0, 2], tx], [0.1, -0.05], atol=1e-12)   # lengths stay lengths
    tr = clip.tracks["shoulder_r.rz"]
    assert tr.interpolation == ("bezier", "linear", "bezier")        # clip default, per-key override
    assert tr.easing == ("ease_in_out", "ease_in")
    assert list(clip.tracks["hips.tx"].times) == [0.0, 1.25]         # keyed only where mentioned
    round_trip(scene)


TRACKS = """
[clips.t]
loop = "loop"
duration = 2.5
root_motion = "hips"

[clips.t.tracks."head.rx"]
times = [0, 0.4, 1.0, 2.0]
values = [0, 20, -10, 5]
interpolation = "bezier"
in_slopes = [0, 30, -15, 0]
out_slopes = [0, 60, 10, 0]
easing = ["ease_in", "linear", "ease_out"]

[clips.t.tracks.knee_r.rx]
times = [0, 1, 2]
values = [0, 90, 10]
interpolation = ["cubic", "step", "linear"]

[clips.t.tracks."hips.tz"]
times = [0, 2.5]
values = [0, 1.2]
interpolation = "linear"
"""


def test_tracks_with_bezier_slopes_and_easing_round_trip():
    scene = load(TRACKS)
    clip = scene.clips["t"]
    tr = clip.tracks["head.rx"]
    np.testing.assert_allclose(tr.in_slopes, np.radians([0, 30, -15, 0]))
    np.testing.assert_allclose(tr.values, np.radians([0, 20, -10, 5]))
    p = clip.sample(np.array([0.0, 0.4, 1.0, 2.0]))
    np.testing.assert_allclose(p[:, scene.figure.dof_index("head.rx")], np.radians([0, 20, -10, 5]), atol=1e-12)
    assert clip.tracks["knee_r.rx"].interpolation == ("cubic", "step", "linear")
    round_trip(scene)


ROTATIONS = """
[clips.r]
[clips.r.rotations.shoulder_r]
times = [0, 0.5, 1.5, 2]
euler = [[0, 0, 0], [20, -80, 30], [-40, -85, 10], [0, -20, 0]]
interpolation = "squad"

[clips.r.rotations.hip_l]
times = [0, 1]
quaternions = [[1, 0, 0, 0], [0.9238795325112867, -0.3826834323650898, 0, 0]]
"""


def test_rotation_tracks_from_euler_and_quaternions_round_trip():
    scene = load(ROTATIONS)
    clip = scene.clips["r"]
    fig = scene.figure
    idx = [fig.dof_index(f"shoulder_r.r{s}") for s in "xzy"]           # the joint's own order, xzy
    p = clip.sample(np.array([0.5, 1.5]))
    np.testing.assert_allclose(p[:, idx], np.radians([[20, -80, 30], [-40, -85, 10]]), atol=1e-9)
    assert clip.rotation_tracks["shoulder_r"].interpolation == "squad"
    assert clip.sample(np.array([1.0]))[0, fig.dof_index("hip_l.rx")] == pytest.approx(math.radians(-45))
    round_trip(scene)


DENSE = """
[clips.baked]
fps = 10
loop = "loop"
interpolation = "cubic"
dofs = ["hips.ty", "knee_r.rx", "elbow_l.rx"]
times = [0, 0.1, 0.2, 0.3]
frames = [[0, 0, 0], [-0.02, 30, -10], [-0.04, 60.5, -20], [0.01, 10, -5]]
"""


def test_dense_frames_round_trip():
    scene = load(DENSE)
    clip = scene.clips["baked"]
    assert clip.dense is not None and clip.dense.interpolation == "cubic"
    p = clip.sample(np.array([0.2]))[0]
    assert p[scene.figure.dof_index("knee_r.rx")] == pytest.approx(math.radians(60.5))
    assert p[scene.figure.dof_index("hips.ty")] == pytest.approx(-0.04)
    round_trip(scene)


def test_dense_clip_from_poses_and_mixes_write_as_frames():
    fig = load("").figure
    rng = np.random.default_rng(3)
    lim = np.clip(fig.dof_limits(), -1.0, 1.0)
    poses = lim[:, 0] + rng.random((12, fig.dof_count)) * (lim[:, 1] - lim[:, 0])
    baked = Clip.from_poses(fig, np.arange(12) / 30, poses, name="baked", loop="loop", root_motion="hips")
    a = Clip.build(fig, [Track("elbow_r.rx", [0, 1], [0, -1.0]), RotationTrack("spine", [0, 1], [[1, 0, 0, 0],
                   [math.cos(0.2), 0, math.sin(0.2), 0]])], name="a")
    b = Clip.build(fig, [Track("elbow_r.rx", [0, 2], [-0.5, -1.5])], name="b")
    mix = crossfade(a, b, 0.5, 0.5, name="mix", fps=20)
    text = dumps_clips({"baked": baked, "mix": mix, "half": blend(a, b, 0.5, name="half")}, fig)
    back = load(text).clips
    np.testing.assert_allclose(back["baked"].sample(T), baked.sample(T), atol=1e-9)
    frames = mix.frame_times()
    np.testing.assert_allclose(back["mix"].sample(frames), mix.sample(frames), atol=1e-9)
    assert back["mix"].dense is not None and back["mix"].fps == 20
    np.testing.assert_allclose(back["half"].sample(back["half"].frame_times()),
                               blend(a, b, 0.5).sample(back["half"].frame_times()), atol=1e-9)


def test_save_and_load_a_scene_with_clips(tmp_path):
    scene = load(KEYS + TRACKS + ROTATIONS + DENSE)
    path = animkit.save(tmp_path / "s.toml", scene)
    again = animkit.load(path)
    for name, clip in scene.clips.items():
        np.testing.assert_allclose(again.clips[name].sample(T), clip.sample(T), atol=1e-9)


# --- errors -------------------------------------------------------------------------------------------

BAD = [
    ('[clips.w]\nloop = "repeat"\n', "clips.w.loop", "unknown loop mode 'repeat'"),
    ('[clips.w]\nfps = 0\n', "clips.w.fps", "positive"),
    ('[clips.w]\nfps = "fast"\n', "clips.w.fps", "expected a positive number"),
    ('[clips.w]\nduration = -1\n', "clips.w.duration", "≥ 0"),
    ('[clips.w]\nroot_motion = "hip"\n', "clips.w.root_motion", "did you mean 'hips'"),
    ('[clips.w]\nroot_motion = "spine"\n', "clips.w", "no translation DOFs"),
    ('[clips.w]\ninterpolation = "smooth"\n', "clips.w.interpolation", "unknown interpolation 'smooth'"),
    ('[clips.w]\nspeed = 2\n', "clips.w.speed", "unknown key 'speed'"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = -10 }\n[[clips.w.keys]]\ntime = 1\n'
     'pose = { "elbo_r.rx" = -10 }\n', 'clips.w.keys[1].pose."elbo_r.rx"', "did you mean 'elbow_r.rx'"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = -10 }\n[[clips.w.keys]]\ntime = 1\n'
     'pose = { "elbow_r.rx" = 20 }\n', 'clips.w.keys[1].pose."elbow_r.rx"', "above the upper limit 0"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 1\npose = { "elbow_r.rx" = -10 }\n[[clips.w.keys]]\ntime = 1\n'
     'pose = { "elbow_r.rx" = -20 }\n', "clips.w.keys[1].time", "strictly increasing"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = "bent" }\n',
     'clips.w.keys[0].pose."elbow_r.rx"', "expected a number"),
    ('[clips.w]\n[[clips.w.keys]]\npose = { "elbow_r.rx" = -1 }\n', "clips.w.keys[0].time", "expected time"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = -1 }\neasing = "bouncy"\n',
     "clips.w.keys[0].easing", "unknown easing 'bouncy'"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 2, 1]\nvalues = [0, -1, -2]\n', "clips.w.tracks.\"elbow_r.rx\""
     ".times[2]", "strictly increasing"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 1, 2]\nvalues = [0, -1]\n', 'clips.w.tracks."elbow_r.rx".values',
     "expected 3 values"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 1]\nvalues = [0, -1]\ninterpolation = ["linear"]\n',
     'clips.w.tracks."elbow_r.rx".interpolation', "a list of 2"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 1]\nvalues = [0, -1]\nin_slopes = [0, 0]\n',
     'clips.w.tracks."elbow_r.rx".out_slopes', "both in_slopes and out_slopes"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 1]\nvalues = [0, -1]\ninterpolation = "linear"\n'
     'in_slopes = [0, 0]\nout_slopes = [0, 0]\n', 'clips.w.tracks."elbow_r.rx"', "no segment uses 'bezier'"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, 1]\nvalues = [0, -200]\n', 'clips.w.tracks."elbow_r.rx".values[1]',
     "below the lower limit -150"),
    ('[clips.w.tracks."elbow_r.rz"]\ntimes = [0]\nvalues = [0]\n', 'clips.w.tracks."elbow_r.rz"',
     "did you mean 'elbow_r.rx'"),
    ('[clips.w.tracks."elbow_r.rx"]\ntimes = [0, "1"]\nvalues = [0, -1]\n', 'clips.w.tracks."elbow_r.rx".times[1]',
     "expected a number"),
    ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = -1 }\n[clips.w.tracks."elbow_r.rx"]\n'
     'times = [0]\nvalues = [-2]\n', 'clips.w.tracks."elbow_r.rx"', "keep one"),
    ('[clips.w.rotations.elbow_r]\ntimes = [0]\neuler = [[0, 0, 0]]\n', "clips.w.rotations.elbow_r",
     "unknown ball joint 'elbow_r'"),
    ('[clips.w.rotations.spine]\ntimes = [0, 1]\neuler = [[0, 0, 0]]\n', "clips.w.rotations.spine.euler",
     "expected 2 rotations"),
    ('[clips.w.rotations.spine]\ntimes = [0]\neuler = [[0, 0]]\n', "clips.w.rotations.spine.euler[0]",
     "a list of 3 numbers"),
    ('[clips.w.rotations.spine]\ntimes = [0]\n', "clips.w.rotations.spine", "exactly one of euler"),
    ('[clips.w.rotations.spine]\ntimes = [0]\nquaternions = [[2, 0, 0, 0]]\n', "clips.w.rotations.spine",
     "unit quaternion"),
    ('[clips.w.rotations.spine]\ntimes = [0]\neuler = [[0, 80, 0]]\n', "clips.w.rotations.spine",
     "above the upper limit"),
    ('[clips.w.rotations.spine]\ntimes = [0]\neuler = [[0, 0, 0]]\ninterpolation = "lerp"\n',
     "clips.w.rotations.spine.interpolation", "unknown rotation interpolation 'lerp'"),
    ('[clips.w]\ndofs = ["knee_r.rx"]\ntimes = [0, 1]\nframes = [[0], [200]]\n', "clips.w.frames[1]",
     "above the upper limit 150"),
    ('[clips.w]\ndofs = ["knee_r.rx", "kne_l.rx"]\ntimes = [0]\nframes = [[0, 0]]\n', "clips.w.dofs[1]",
     "did you mean 'knee_l.rx'"),
    ('[clips.w]\ndofs = ["knee_r.rx"]\ntimes = [0, 1]\nframes = [[0]]\n', "clips.w.frames", "expected 2 frames"),
    ('[clips.w]\ndofs = ["knee_r.rx"]\ntimes = [0]\nframes = [[0, 1]]\n', "clips.w.frames[0]", "1 values"),
    ('[clips.w]\ndofs = ["knee_r.rx"]\ntimes = [0]\nframes = [[0]]\n[[clips.w.keys]]\ntime = 0\n'
     'pose = { "knee_r.rx" = 0 }\n', "clips.w.dofs", "not both"),
    ('[clips]\nw = 3\n', "clips.w", "expected a clip table"),
]


@pytest.mark.parametrize(("text", "key", "message"), BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_malformed_clips_raise_parse_errors_naming_key_and_line(text, key, message):
    with pytest.raises(ParseError) as info:
        load(text)
    err = info.value
    assert err.key == key
    assert message in err.message
    assert err.line is not None
    line = (FIGURE + "\n" + text).splitlines()[err.line - 1]
    leaf = key.rsplit(".", 1)[-1].split("[")[0].strip('"')
    assert leaf in line or line.startswith("[")
    assert f"x.toml:{err.line}: [{key}]" in str(err)


def test_error_lines_point_at_the_key():
    text = FIGURE + "\n" + ('[clips.w]\n[[clips.w.keys]]\ntime = 0\npose = { "elbow_r.rx" = -1 }\n'
                            '[[clips.w.keys]]\ntime = 1\n[clips.w.keys.pose]\n"knee_r.rx" = 10\n"elbow_r.rx" = 5\n')
    with pytest.raises(ParseError) as info:
        loads_scene(text, "x.toml")
    assert text.splitlines()[info.value.line - 1] == '"elbow_r.rx" = 5'


# --- the shipped clips --------------------------------------------------------------------------------


def _within_limits(scene, clip) -> None:
    lim = scene.figure.dof_limits()
    p = clip.sample(np.linspace(0, clip.duration, 601))
    assert np.all(p >= lim[:, 0] - 1e-9) and np.all(p <= lim[:, 1] + 1e-9)


def test_wave_raises_the_right_hand_above_the_shoulder():
    scene = animkit.load(SCENES / "wave.toml")
    clip = scene.clip("wave")
    fig = scene.figure
    assert clip.loop == "loop" and 2.5 <= clip.duration <= 3.5
    wave_keys = [0.9, 1.2, 1.5, 1.8, 2.1]
    xs = []
    for t in [0.6, *wave_keys, 2.4]:
        w = fig.world(clip.sample(np.array([t]))[0])
        assert w["hand_r"][1, 3] > w["shoulder_r"][1, 3] + 0.25, t
        assert w["hand_r"][0, 3] < w["shoulder_r"][0, 3], t          # out on the right side (−x)
        xs.append(w["hand_r"][0, 3])
    assert max(xs) - min(xs) > 0.2                                     # the forearm waves side to side
    ends = clip.sample(np.array([0.0, clip.duration - 1e-9]))
    np.testing.assert_allclose(ends[0], ends[1], atol=1e-6)            # loops seamlessly
    _within_limits(scene, clip)


def test_walk_walks_on_and_alternates_feet():
    scene = animkit.load(SCENES / "walk.toml")
    clip = scene.clip("walk")
    fig = scene.figure
    d = clip.duration
    assert clip.loop == "loop" and clip.root_motion == "hips" and 1.0 <= d <= 1.2
    tz = fig.dof_index("hips.tz")
    stride = clip.sample(np.array([d - 1e-9]))[0, tz] - clip.sample(np.array([0.0]))[0, tz]
    assert stride > 0.5
    hips = [fig.world(clip.sample(np.array([t]))[0])["hips"][2, 3] for t in (0.0, 3 * d)]
    assert hips[1] - hips[0] == pytest.approx(3 * stride, abs=1e-6)
    z = {}
    for phase in (0.0, 0.5):
        w = fig.world(clip.sample(np.array([2 * d + phase * d]))[0])
        z[phase] = w["toe_r"][2, 3] - w["toe_l"][2, 3]
    assert z[0.0] > 0.3 and z[0.5] < -0.3                             # right foot ahead, then left
    _within_limits(scene, clip)


def test_pick_and_place_reaches_the_table_and_stays_above_it():
    scene = animkit.load(SCENES / "six_axis_arm.toml")
    assert scene.reach is not None
    clip = scene.clip("pick_and_place")
    fig = scene.figure
    assert 5.0 <= clip.duration <= 7.0
    for t in (1.6, 2.1, 4.4, 4.9):                                     # pick, grip, place, release
        w = fig.world(clip.sample(np.array([t]))[0])
        assert 0.1 <= w["tool"][2, 3] <= 0.2, t
        assert w["flange"][2, 2] < -0.99                               # pointing straight down
    tt = np.linspace(0, clip.duration, 1201)
    tool = fig.world_batch(clip.sample(tt))[:, fig.node_names.index("tool"), 2, 3]
    assert tool.min() >= 0.05
    _within_limits(scene, clip)
