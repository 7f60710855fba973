"""Tracks: validation at construction, vectorised sampling equal to one-at-a-time sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit.errors import ClipError
from animkit.keyframes import DenseTrackSet, RotationTrack, Track
from animkit.keyframes import interpolate as ip

SETTINGS = settings(deadline=None, max_examples=100, derandomize=True)
KINDS = ("step", "linear", "cubic", "bezier")
EASE = tuple(ip.EASINGS)


@st.composite
def tracks(draw: st.DrawFn) -> Track:
    n = draw(st.integers(1, 7))
    gaps = draw(st.lists(st.floats(0.05, 3.0), min_size=n, max_size=n))
    vals = draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n))
    kinds = tuple(draw(st.lists(st.sampled_from(KINDS), min_size=n, max_size=n)))
    easing = tuple(draw(st.lists(st.sampled_from(EASE), min_size=n - 1, max_size=n - 1)))
    return Track("arm.rz", np.cumsum(gaps) - 1.0, vals, kinds, easing)


@given(tracks(), st.lists(st.floats(-5, 25), min_size=1, max_size=40))
@SETTINGS
def test_vectorised_sampling_equals_one_time_at_a_time(track, ts):
    q = np.array(ts)
    together = track.sample(q)
    alone = np.array([track.sample(np.array([x]))[0] for x in q])
    assert np.array_equal(together, alone)
    assert np.array_equal(track.sample(track.times), track.values)


def test_each_segment_uses_its_own_kind():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    v = np.array([0.0, 1.0, 3.0, 2.0, 5.0])
    tr = Track("a.tx", t, v, ("step", "linear", "cubic", "bezier", "step"))
    q = np.array([0.5, 1.5, 2.5, 3.5])
    expected = [0.0, 2.0,
                ip.cubic_hermite(t, v, np.array([2.5]))[0],
                ip.bezier(t, v, np.array([3.5]))[0]]
    assert np.array_equal(tr.sample(q), expected)


def test_before_and_after_the_keys_hold_first_and_last():
    tr = Track("a.tx", [1.0, 2.0, 3.0], [4.0, 5.0, 7.0], "cubic")
    assert list(tr.sample(np.array([-10.0, 0.999, 3.001, 1e9]))) == [4.0, 4.0, 7.0, 7.0]


def test_single_key_track_is_constant():
    tr = Track("a.tx", [0.5], [2.0])
    assert list(tr.sample(np.array([-1.0, 0.5, 3.0]))) == [2.0, 2.0, 2.0]


def test_explicit_bezier_slopes_are_used():
    t, v = [0.0, 1.0], [0.0, 1.0]
    tr = Track("a.tx", t, v, "bezier", in_slopes=[0.0, 0.0], out_slopes=[3.0, 0.0])
    assert tr.sample(np.array([0.5]))[0] == pytest.approx(ip.bezier(t, v, [0.5], [0.0, 0.0], [3.0, 0.0])[0])
    assert tr.sample(np.array([0.5]))[0] != pytest.approx(ip.bezier(t, v, [0.5])[0])


def test_track_arrays_are_read_only():
    tr = Track("a.tx", [0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError):
        tr.values[0] = 3.0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (dict(times=[0.0, 2.0, 1.0], values=[0, 1, 2]), "strictly increasing"),
        (dict(times=[0.0, 1.0, 1.0], values=[0, 1, 2]), "strictly increasing"),
        (dict(times=[0.0, np.nan], values=[0, 1]), "finite"),
        (dict(times=[0.0, 1.0], values=[0, np.nan]), "not finite"),
        (dict(times=[0.0, 1.0], values=[0, np.inf]), "not finite"),
        (dict(times=[0.0, 1.0, 2.0], values=[0, 1]), "shape"),
        (dict(times=[], values=[]), "non-empty"),
        (dict(times=[0.0, 1.0], values=[0, 1], interpolation="cubicc"), "cubic"),
        (dict(times=[0.0, 1.0], values=[0, 1], interpolation=("linear",)), "2 of them"),
        (dict(times=[0.0, 1.0, 2.0], values=[0, 1, 2], easing=("ease_in",)), "easing"),
        (dict(times=[0.0, 1.0], values=[0, 1], in_slopes=[0, 0]), "both"),
        (dict(times=[0.0, 1.0], values=[0, 1], in_slopes=[0, 0], out_slopes=[0, 0]), "bezier"),
    ],
)
def test_bad_tracks_raise_clip_error_naming_the_dof(kwargs, needle):
    with pytest.raises(ClipError) as err:
        Track("elbow_r.rz", **kwargs)
    assert "elbow_r.rz" in str(err.value) and needle in str(err.value)


def _q(axis: str, angle: float) -> np.ndarray:
    v = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}[axis]
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * np.array(v)])


def test_rotation_track_samples_slerp_and_euler():
    rt = RotationTrack("shoulder_r", [0.0, 1.0], np.stack([_q("z", 0.0), _q("z", 1.2)]))
    q = rt.sample(np.array([0.25]))
    np.testing.assert_allclose(q[0], _q("z", 0.3), atol=1e-12)
    e = rt.sample_euler(np.array([0.25, 1.0]), "zyx")
    np.testing.assert_allclose(e, [[0.3, 0.0, 0.0], [1.2, 0.0, 0.0]], atol=1e-12)
    e = rt.sample_euler(np.array([0.5]), "xyz")  # a z turn is the last angle of an x-y-z order
    np.testing.assert_allclose(e, [[0.0, 0.0, 0.6]], atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (dict(times=[0.0, 1.0], quaternions=[[1, 0, 0, 0], [2, 0, 0, 0]]), "norm"),
        (dict(times=[0.0, 1.0], quaternions=[[1, 0, 0, 0]]), "shape"),
        (dict(times=[1.0, 0.0], quaternions=[[1, 0, 0, 0]] * 2), "strictly increasing"),
        (dict(times=[0.0, 1.0], quaternions=[[1, 0, 0, 0], [np.nan, 0, 0, 0]]), "not finite"),
        (dict(times=[0.0], quaternions=[[1, 0, 0, 0]], interpolation="lerp"), "rotation interpolation"),
    ],
)
def test_bad_rotation_tracks_raise_naming_the_joint(kwargs, needle):
    with pytest.raises(ClipError) as err:
        RotationTrack("shoulder_r", **kwargs)
    assert "shoulder_r" in str(err.value) and needle in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_dense_set_equals_one_track_per_column(kind):
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.1, 1.0, 12))
    v = rng.normal(size=(12, 4))
    dense = DenseTrackSet(("a", "b", "c", "d"), t, v, kind)
    q = np.linspace(t[0] - 1, t[-1] + 1, 333)
    out = dense.sample(q)
    for j in range(4):
        np.testing.assert_allclose(out[:, j], Track("x", t, v[:, j], kind).sample(q), atol=1e-12)
    assert np.array_equal(dense.sample(t), v)


def test_dense_set_validation_names_the_dof():
    with pytest.raises(ClipError, match="'b'.*frame #1"):
        DenseTrackSet(("a", "b"), [0.0, 1.0], [[0.0, 0.0], [0.0, np.nan]])
    with pytest.raises(ClipError, match="shape"):
        DenseTrackSet(("a", "b"), [0.0, 1.0], np.zeros((2, 3)))
    with pytest.raises(ClipError, match="more than once"):
        DenseTrackSet(("a", "a"), [0.0, 1.0], np.zeros((2, 2)))
