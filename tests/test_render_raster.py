from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animkit.errors import RenderError
from animkit.render.camera import Camera, look_at
from animkit.render.raster import (
    draw_grid,
    draw_markers,
    draw_polyline,
    face_shading,
    render_triangles,
    rgb8,
)

CUBE_V = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)], dtype=float)
# corner index = 4*ix + 2*iy + iz
CUBE_F = np.array([
    [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5],  # x = -0.5, x = +0.5
    [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],  # y = -0.5, y = +0.5
    [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],  # z = -0.5, z = +0.5
])


def quad(center: tuple[float, float, float], half: float) -> tuple[np.ndarray, np.ndarray]:
    """A square facing +z."""
    c = np.asarray(center)
    v = c + np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]])
    return v, np.array([[0, 1, 2], [0, 2, 3]])


def convex_hull(p: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain, counter-clockwise."""
    pts = sorted(map(tuple, p))

    def cross(o: tuple, a: tuple, b: tuple) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple] = []
    for q in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    upper: list[tuple] = []
    for q in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1])


def hull_inside_and_edge_distance(hull: np.ndarray, x: np.ndarray, y: np.ndarray
                                  ) -> tuple[np.ndarray, np.ndarray]:
    a = hull
    b = np.roll(hull, -1, axis=0)
    inside = np.ones(x.shape, bool)
    dist = np.full(x.shape, np.inf)
    for (ax, ay), (bx, by) in zip(a, b, strict=True):
        inside &= (bx - ax) * (y - ay) - (by - ay) * (x - ax) >= 0
        t = np.clip(((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2), 0, 1)
        dist = np.minimum(dist, np.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay))))
    return inside, dist


@pytest.mark.parametrize("eye", [(3.0, 2.5, 4.0), (-2.0, -1.5, 2.5), (0.3, 4.0, 0.2)])
@pytest.mark.parametrize("supersample", [1, 2])
def test_cube_covers_its_analytic_silhouette(eye: tuple[float, float, float], supersample: int) -> None:
    cam = look_at(eye, (0.1, 0.0, -0.1), "y", fov_y_deg=40, width=160, height=120, near=0.1, far=100)
    img = render_triangles(cam, CUBE_V, CUBE_F, (0.2, 0.4, 0.8), supersample=supersample)
    covered = np.any(img != 255, axis=2)
    corners, _ = cam.project(CUBE_V)
    hull = convex_hull(corners)
    yy, xx = np.mgrid[0:120, 0:160].astype(float)  # pixel centres at integer coordinates
    inside, dist = hull_inside_and_edge_distance(hull, xx, yy)
    mismatch = covered != inside
    assert inside.sum() > 500
    assert np.all(dist[mismatch] <= 1.0), f"{mismatch.sum()} pixels differ away from the silhouette edge"
    if supersample == 1:
        assert mismatch.sum() <= 0.02 * inside.sum()


def test_pillow_polygon_agrees_with_the_silhouette() -> None:
    # a second, independent oracle: Pillow's polygon fill of the projected hull
    from PIL import Image, ImageDraw

    cam = look_at((2.5, 1.5, 3.0), (0, 0, 0), "y", width=200, height=150)
    img = render_triangles(cam, CUBE_V, CUBE_F, (0.9, 0.3, 0.1))
    covered = np.any(img != 255, axis=2)
    corners, _ = cam.project(CUBE_V)
    hull = convex_hull(corners)
    mask = Image.new("L", (200, 150), 0)
    ImageDraw.Draw(mask).polygon([tuple(p) for p in hull], fill=255)
    ref = np.asarray(mask) > 0
    _, dist = hull_inside_and_edge_distance(hull, *np.mgrid[0:150, 0:200][::-1].astype(float))
    diff = covered != ref
    assert np.all(dist[diff] <= 1.5)


def two_squares() -> tuple[Camera, np.ndarray, np.ndarray, np.ndarray]:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=100, height=100, near=0.1, far=100)
    vn, fn = quad((0.3, 0.0, 0.5), 0.6)   # near, red
    vf, ff = quad((-0.3, 0.0, -0.5), 0.6)  # far, blue
    v = np.concatenate([vf, vn])
    f = np.concatenate([ff, fn + 4])
    colors = np.array([[0, 0, 1.0]] * 2 + [[1.0, 0, 0]] * 2)
    return cam, v, f, colors


@pytest.mark.parametrize("reverse", [False, True])
def test_near_geometry_occludes_far_geometry(reverse: bool) -> None:
    cam, v, f, colors = two_squares()
    if reverse:
        f, colors = f[::-1], colors[::-1]
    img, depth = render_triangles(cam, v, f, colors, light_dir=(0, 0, 1), ambient=0.3, depth_out=True)
    (cx, cy), = cam.project(np.array([[0.0, 0.0, 0.5]]))[0].round().astype(int)
    assert tuple(img[cy, cx]) == (255, 0, 0)  # overlap: the near red square wins
    (bx, by), = cam.project(np.array([[-0.7, 0.0, -0.5]]))[0].round().astype(int)
    assert tuple(img[by, bx]) == (0, 0, 255)  # only the blue one there
    assert depth[cy, cx] == pytest.approx(4.5, rel=1e-4)
    assert depth[by, bx] == pytest.approx(5.5, rel=1e-4)
    assert np.isinf(depth[0, 0]) and tuple(img[0, 0]) == (255, 255, 255)


def test_depth_is_perspective_correct_on_a_slanted_plane() -> None:
    cam = look_at((0, 0, 4), (0, 0, 0), "y", width=120, height=120)
    v = np.array([[-1, -1, -1.0], [1, -1, 1.0], [1, 1, 1.0], [-1, 1, -1.0]])  # z = x
    img, depth = render_triangles(cam, v, [[0, 1, 2], [0, 2, 3]], (0.5, 0.5, 0.5), depth_out=True)
    ys, xs = np.nonzero(np.isfinite(depth))
    # back-project each pixel centre's ray and intersect with the plane z = x
    fpx = cam.focal_px()
    dx = (xs - 59.5) / fpx
    # ray: (t dx, t dy, 4 - t), plane z = x → 4 - t = t dx → t = 4 / (1 + dx); depth = t
    np.testing.assert_allclose(depth[ys, xs], 4 / (1 + dx), rtol=1e-4)


def test_lighting_face_toward_light_is_brighter_and_matches_lambert() -> None:
    cam = look_at((0, 0, 6), (0, 0, 0), "y", width=120, height=80)
    s = 1 / np.sqrt(2)
    # left square tilted to face +x (normal (s, 0, s)), right one tilted to face -x (normal (-s, 0, s))
    left = np.array([[-1.5, -0.5, -0.5 * 0], [-0.5, -0.5, -1.0], [-0.5, 0.5, -1.0], [-1.5, 0.5, 0.0]])
    right = np.array([[0.5, -0.5, -1.0], [1.5, -0.5, 0.0], [1.5, 0.5, 0.0], [0.5, 0.5, -1.0]])
    v = np.concatenate([left, right])
    f = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])
    light = np.array([1.0, 0.0, 0.4])
    img = render_triangles(cam, v, f, (0.8, 0.8, 0.8), light_dir=light, ambient=0.2)
    (lx, ly), = cam.project(left.mean(axis=0)[None])[0].round().astype(int)
    (rx, ry), = cam.project(right.mean(axis=0)[None])[0].round().astype(int)
    assert img[ly, lx, 0] > img[ry, rx, 0]
    lhat = light / np.linalg.norm(light)
    for (x, y), n in (((lx, ly), np.array([s, 0, s])), ((rx, ry), np.array([-s, 0, s]))):
        expect = 0.8 * 255 * (0.2 + 0.8 * max(0.0, float(n @ lhat)))
        assert abs(int(img[y, x, 0]) - expect) <= 1.0


def test_back_faces_are_shaded_as_facing_the_camera() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=60, height=60)
    v, f = quad((0, 0, 0), 1.0)
    a = render_triangles(cam, v, f, (0.6, 0.6, 0.6), light_dir=(0, 0, 1))
    b = render_triangles(cam, v, f[:, ::-1], (0.6, 0.6, 0.6), light_dir=(0, 0, 1))  # winding flipped
    np.testing.assert_array_equal(a, b)
    assert a[30, 30, 0] == round(0.6 * 255)


def test_face_shading_default_light_comes_from_upper_left() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y")

    def tri_with_normal(n: tuple[float, float, float]) -> np.ndarray:
        n_ = np.asarray(n, float)
        u = np.cross(n_, [0.3, 0.2, 0.1])
        return np.array([[np.zeros(3), u, np.cross(n_, u)]])  # u x (n x u) = n |u|^2

    i0 = face_shading(cam, tri_with_normal((0, 0, 1)), None, 0.3)[0]
    i1 = face_shading(cam, tri_with_normal((-1, 1, 1)), None, 0.3)[0]
    i2 = face_shading(cam, tri_with_normal((1, -1, 1)), None, 0.3)[0]
    assert i1 > i0 > i2 >= 0.3


def test_rendering_is_deterministic() -> None:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(600, 3))
    f = rng.integers(0, 600, size=(2000, 3))
    c = rng.uniform(size=(2000, 3))
    cam = look_at((4, 3, 5), (0, 0, 0), "y", width=200, height=150)
    for ss in (1, 3):
        a = render_triangles(cam, v, f, c, supersample=ss)
        b = render_triangles(cam, v.copy(), f.copy(), c.copy(), supersample=ss)
        assert a.tobytes() == b.tobytes()


def test_triangles_behind_or_crossing_the_near_plane_are_dropped() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=80, height=80, near=1.0)
    behind = np.array([[-1, -1, 6.0], [1, -1, 6.0], [0, 1, 6.0]])
    crossing = np.array([[-1, -1, 4.5], [1, -1, 4.5], [0, 1, 3.0]])  # depths 0.5, 0.5, 2
    for tri in (behind, crossing):
        img = render_triangles(cam, tri, [[0, 1, 2]], (0, 0, 0))
        assert np.all(img == 255)


def test_huge_triangle_fills_the_screen_and_offscreen_ones_cost_nothing() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=64, height=48)
    v = np.array([[-100, -100, 0.0], [100, -100, 0.0], [0, 100, 0.0], [50, 50, 0], [51, 50, 0], [50, 51, 0]])
    img = render_triangles(cam, v, [[0, 1, 2], [3, 4, 5]], (0.0, 0.5, 0.0), light_dir=(0, 0, 1))
    assert np.all(img == [0, 128, 0])


def test_supersampling_antialiases_edges_only() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=80, height=80)
    v = np.array([[-1.3, -1.1, 0], [1.2, -0.9, 0], [0.1, 1.4, 0.0]])
    one = render_triangles(cam, v, [[0, 1, 2]], (0.0, 0.0, 0.0))
    three = render_triangles(cam, v, [[0, 1, 2]], (0.0, 0.0, 0.0), supersample=3)
    assert set(np.unique(one)) <= {0, 255}
    grey = (three > 0) & (three < 255)
    assert grey.any()
    # the grey pixels lie where the 1x render changes
    edge = np.zeros(one.shape[:2], bool)
    b = one[..., 0] == 0
    edge[1:-1, 1:-1] = (b[1:-1, 1:-1] != b[:-2, 1:-1]) | (b[1:-1, 1:-1] != b[2:, 1:-1]) | \
        (b[1:-1, 1:-1] != b[1:-1, :-2]) | (b[1:-1, 1:-1] != b[1:-1, 2:])
    near_edge = edge | np.roll(edge, 1, 0) | np.roll(edge, -1, 0) | np.roll(edge, 1, 1) | np.roll(edge, -1, 1)
    assert np.all(near_edge[grey.any(axis=2)])


def test_input_errors() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0))
    v, f = quad((0, 0, 0), 1.0)
    with pytest.raises(RenderError, match="out of range"):
        render_triangles(cam, v, f + 10, (1.0, 0, 0))
    with pytest.raises(RenderError, match="face_colors"):
        render_triangles(cam, v, f, np.ones((5, 3)))
    with pytest.raises(RenderError, match="supersample"):
        render_triangles(cam, v, f, (1.0, 0, 0), supersample=5)
    with pytest.raises(RenderError, match=r"\[0, 1\]"):
        rgb8((2.0, 0.0, 0.0))
    np.testing.assert_array_equal(rgb8((1.0, 0.5, 0.0)), [255, 128, 0])
    np.testing.assert_array_equal(rgb8(np.array([255, 7, 0])), [255, 7, 0])


# ---------------------------------------------------------------- overlays


def test_polyline_is_drawn_and_hidden_behind_nearer_geometry() -> None:
    cam, v, f, colors = two_squares()
    img, depth = render_triangles(cam, v, f, colors, depth_out=True)
    line = np.array([[-1.5, 0.0, 0.0], [1.5, 0.0, 0.0]])  # z = 0: between the squares
    on_top = draw_polyline(img, cam, line, (0.0, 1.0, 0.0), 3.0)
    tested = draw_polyline(img, cam, line, (0.0, 1.0, 0.0), 3.0, depth=depth)
    assert on_top is not img and np.array_equal(img, render_triangles(cam, v, f, colors))  # input untouched
    (nx, ny), = cam.project(np.array([[0.6, 0.0, 0.0]]))[0].round().astype(int)  # in front of the red square?
    (fx, fy), = cam.project(np.array([[-0.7, 0.0, 0.0]]))[0].round().astype(int)  # over the blue one only
    assert tuple(on_top[ny, nx]) == (0, 255, 0)
    assert tuple(tested[ny, nx]) == tuple(img[ny, nx])  # hidden by the nearer red square
    assert tuple(tested[fy, fx]) == (0, 255, 0)  # in front of the far blue square
    (ox, oy), = cam.project(np.array([[1.4, 0.0, 0.0]]))[0].round().astype(int)  # over the background
    assert tuple(tested[oy, ox]) == (0, 255, 0)


@pytest.mark.parametrize("shape", ["disc", "cross"])
def test_markers(shape: str) -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=100, height=100)
    img = np.full((100, 100, 3), 255, np.uint8)
    out = draw_markers(img, cam, np.array([[0.0, 0.0, 0.0]]), (0.0, 0.0, 1.0), 6.0, shape)  # type: ignore[arg-type]
    c = 49.5
    assert tuple(out[int(c), int(c)]) == (0, 0, 255) or tuple(out[50, 50]) == (0, 0, 255)
    changed = np.argwhere(np.any(out != 255, axis=2))
    assert np.all(np.abs(changed - c) <= 8)
    if shape == "cross":
        assert np.all(out[45, 45] == 255)  # a "+" leaves the diagonal empty
    else:
        assert np.all(out[46, 46] == [0, 0, 255])
    with pytest.raises(RenderError, match="'disc', 'cross'"):
        draw_markers(img, cam, np.zeros((1, 3)), shape="star")  # type: ignore[arg-type]


def test_markers_behind_the_camera_are_skipped() -> None:
    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=50, height=50)
    img = np.full((50, 50, 3), 255, np.uint8)
    out = draw_markers(img, cam, np.array([[0.0, 0.0, 10.0]]), radius_px=4)
    assert np.array_equal(out, img)


@pytest.mark.parametrize("up", ["y", "z"])
def test_grid_lies_in_the_ground_plane(up: str) -> None:
    eye = (3.0, 2.0, 4.0) if up == "y" else (3.0, -4.0, 2.0)
    cam = look_at(eye, (0, 0, 0), up, width=160, height=120)
    img = np.full((120, 160, 3), 255, np.uint8)
    out = draw_grid(img, cam, up, spacing=0.5, extent=1.0, color=(0.0, 0.0, 0.0), width_px=1.0)  # type: ignore[arg-type]
    # every grid crossing projects onto a drawn pixel
    k = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    a, b = np.meshgrid(k, k)
    pts = np.stack([a.ravel(), np.zeros(25), b.ravel()], 1) if up == "y" else \
        np.stack([a.ravel(), b.ravel(), np.zeros(25)], 1)
    xy, _ = cam.project(pts)
    ij = xy.round().astype(int)
    assert np.all(out[ij[:, 1], ij[:, 0], 0] < 128)
    # and a point between lines is left alone
    mid = np.array([[0.25, 0, 0.25]]) if up == "y" else np.array([[0.25, 0.25, 0]])
    (mx, my), = cam.project(mid)[0].round().astype(int)
    assert out[my, mx, 0] == 255


def test_grid_crossing_the_near_plane_is_clipped_not_garbled() -> None:
    cam = look_at((0, 0.5, 2), (0, 0, -3), "y", width=80, height=60, near=0.1)
    img = np.full((60, 80, 3), 255, np.uint8)
    out = draw_grid(img, cam, "y", spacing=1.0, extent=20.0)
    assert np.any(out != 255)


def brute_force_face_ids(cam: Camera, v: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pixel centre, per triangle: barycentrics in float64, nearest 1/d wins. Also a 'margin' map
    of how close each pixel was to an edge or a depth tie (where either answer is fine)."""
    xy, d = cam.project(v)
    H, W = cam.height, cam.width
    ids = np.full((H, W), -1)
    best = np.zeros((H, W))
    margin = np.full((H, W), np.inf)
    yy, xx = np.mgrid[0:H, 0:W].astype(float)
    for k, (a, b, c) in enumerate(f):
        if min(d[a], d[b], d[c]) < cam.near:
            continue
        (x0, y0), (x1, y1), (x2, y2) = xy[a], xy[b], xy[c]
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12:
            continue
        b0 = ((x2 - x1) * (yy - y1) - (y2 - y1) * (xx - x1)) / area
        b1 = ((x0 - x2) * (yy - y2) - (y0 - y2) * (xx - x2)) / area
        b2 = 1 - b0 - b1
        inside = (b0 >= 0) & (b1 >= 0) & (b2 >= 0)
        w = b0 / d[a] + b1 / d[b] + b2 / d[c]
        edge = np.minimum(np.minimum(np.abs(b0), np.abs(b1)), np.abs(b2))
        margin = np.where(edge < 1e-3, 0.0, margin)
        tie = inside & (np.abs(w - best) < 1e-4 * np.maximum(w, best))
        margin = np.where(tie, 0.0, margin)
        win = inside & (w > best)
        ids = np.where(win, k, ids)
        best = np.where(win, w, best)
    return ids, margin


@pytest.mark.parametrize("seed", range(6))
def test_matches_a_brute_force_per_pixel_zbuffer(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    scale = rng.choice([0.2, 1.0, 3.0], size=(3 * n, 1))
    v = rng.normal(size=(3 * n, 3)) * scale + rng.normal(size=(3 * n, 1))
    f = np.arange(3 * n).reshape(n, 3)
    cam = look_at((0.5, 1.0, 6.0), (0, 0, 0), "y", width=48, height=36, near=0.5, far=100)
    colors = np.stack([np.arange(n), np.arange(n) * 5 % 256, np.full(n, 7)], axis=1).astype(np.uint8)
    img = render_triangles(cam, v, f, colors, ambient=1.0, background=np.array([255, 255, 255]))
    got = np.where(np.all(img == 255, axis=2), -1, img[..., 0].astype(int))
    ref, margin = brute_force_face_ids(cam, v, f)
    differ = (got != ref) & (margin > 0)
    assert not differ.any(), f"{differ.sum()} pixels disagree with the brute-force z-buffer"
    assert (ref >= 0).sum() > 100


def test_grid_patch_follows_its_center() -> None:
    from animkit.render.camera import look_at
    from animkit.render.raster import draw_grid

    cam = look_at([20.0, 5.0, 30.0], [20.0, 0.0, 20.0], "y", width=80, height=60)
    blank = np.full((60, 80, 3), 255, np.uint8)
    at_origin = draw_grid(blank, cam, "y", spacing=1.0, extent=3.0)
    under_target = draw_grid(blank, cam, "y", spacing=1.0, extent=3.0, center=(20.3, 0.0, 19.8))
    assert (at_origin != 255).sum() == 0  # the patch at the origin is out of view
    assert (under_target != 255).sum() > 200  # the patch under the target is drawn


@pytest.mark.parametrize("shape", ["box", "capsule", "capsule0", "sphere", "cylinder"])
def test_primitive_triangles_are_closed_outward_and_of_the_analytic_volume(shape: str) -> None:
    from animkit.model.geometry import Box, Capsule, Cylinder, Sphere

    g, exact, tol = {"box": (Box((1.0, 2.0, 0.5)), 1.0, 1e-12),
                     "capsule": (Capsule(0.2, 1.0), np.pi * 0.04 * 1.0 + 4 / 3 * np.pi * 0.008, 0.12),
                     "capsule0": (Capsule(0.2, 0.0), 4 / 3 * np.pi * 0.008, 0.12),
                     "sphere": (Sphere(0.5), 4 / 3 * np.pi * 0.125, 0.08),
                     "cylinder": (Cylinder(0.3, 2.0), np.pi * 0.09 * 2.0, 0.03)}[shape]
    v, f = g.triangles()
    # divergence theorem: V = Σ (a · (b × c)) / 6 > 0 for outward, counter-clockwise faces
    vol = np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum() / 6
    assert vol == pytest.approx(exact, rel=tol) and vol <= exact + 1e-12  # inscribed polyhedra are smaller
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2)  # closed: every edge shared by two faces


# ---------------------------------------------------------------- compiled kernel, smooth shading, textures


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("supersample", [1, 2])
def test_compiled_visibility_equals_numpy(seed: int, supersample: int) -> None:
    from animkit import jit

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(300, 3)) * rng.choice([0.3, 1.0, 4.0], size=(300, 1))
    f = rng.integers(0, 300, size=(900, 3))
    c = rng.uniform(size=(900, 3))
    cam = look_at((4, 3, 5), (0, 0, 0), "y", width=97, height=61, near=0.5)
    with pytest.MonkeyPatch.context() as m:  # NumPy's visibility, then numba's kernel: the C one set aside
        m.setattr(jit, "native_kernels", lambda: None)
        a, da = render_triangles(cam, v, f, c, supersample=supersample, jit=False, depth_out=True)
        b, db = render_triangles(cam, v, f, c, supersample=supersample, jit=True, depth_out=True)
    assert a.tobytes() == b.tobytes() and da.tobytes() == db.tobytes()
    if jit.native_kernels() is not None:  # the ahead-of-time port: the same pixels and depths
        n, dn = render_triangles(cam, v, f, c, supersample=supersample, jit=False, depth_out=True)
        assert n.tobytes() == a.tobytes() and dn.tobytes() == da.tobytes()


def uv_sphere(n_lat: int = 48, n_lon: int = 96) -> tuple[np.ndarray, np.ndarray]:
    from animkit.model.geometry import Sphere

    return Sphere(1.0).triangles(sections=n_lon, rings=n_lat)


def test_smooth_sphere_matches_the_analytic_lambert_term() -> None:
    """Each pixel of a smooth unit sphere: I = a + (1 − a) max(0, n̂ · l̂), n̂ the true sphere normal where the
    pixel's ray meets the sphere (ray–sphere intersection, independent of the mesh)."""
    from animkit.render.raster import render_surfaces, surface

    v, f = uv_sphere()
    cam = look_at((0, 0, 4.0), (0, 0, 0), "y", width=160, height=160, fov_y_deg=40, near=0.5)
    light = np.array([-1.0, 1.0, 1.0]) / np.sqrt(3)
    amb = 0.2
    img = render_surfaces(cam, [surface(v, f, normals=v, color=(1.0, 1.0, 1.0))], light_dir=light, ambient=amb,
                          background=(0, 0, 0))
    fpx = cam.focal_px()
    yy, xx = np.mgrid[0:160, 0:160].astype(float)
    d = np.stack([(xx - 79.5) / fpx, -(yy - 79.5) / fpx, -np.ones_like(xx)], axis=-1)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    o = np.array([0, 0, 4.0])
    b = d @ o
    disc = b * b - (o @ o - 1.0)
    hit = disc > 0
    t = -b - np.sqrt(np.where(hit, disc, 0))
    n = o + t[..., None] * d  # on the unit sphere: the normal
    want = amb + (1 - amb) * np.clip(n @ light, 0, 1)
    inner = hit & (disc > 0.05)  # away from the silhouette (where the polygon and the sphere differ)
    got = img[..., 0].astype(float) / 255
    err = np.abs(got - want)[inner]
    assert inner.sum() > 8000
    assert np.percentile(err, 99) < 0.02 and err.max() < 0.05
    # flat shading of the same mesh is visibly faceted: smooth shading is closer to the analytic term
    flat = render_triangles(cam, v, f, (1.0, 1.0, 1.0), light_dir=light, ambient=amb, background=(0, 0, 0))
    assert np.abs(flat[..., 0] / 255 - want)[inner].mean() > np.abs(got - want)[inner].mean()


def test_textured_quad_at_an_angle_samples_perspective_correct_uvs() -> None:
    """A checker texture on a square seen at a slant: each pixel's colour is the texel at the UV of the point where
    its ray meets the plane (ray–plane intersection), not the screen-linear UV."""
    from animkit.render.raster import render_surfaces, surface

    n = 8
    tex = ((np.add.outer(np.arange(64) // 8, np.arange(64) // 8) % 2) * 255).astype(np.uint8)
    tex = np.stack([tex, np.zeros_like(tex), 255 - tex], axis=-1)  # red / blue checkers, 8 x 8 texels each
    quad_v = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=float)
    # tilt about x by 60°: the far edge recedes
    c, s = np.cos(np.radians(60)), np.sin(np.radians(60))
    R = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    quad_w = quad_v @ R.T
    uvs = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=float)  # (0, 0) top-left of the texture
    cam = look_at((0, 0, 3.0), (0, 0, 0), "y", width=200, height=200, fov_y_deg=50, near=0.5)
    srf = surface(quad_w, [[0, 1, 2], [0, 2, 3]], normals=np.tile(R[:, 2], (4, 1)), uvs=uvs, texture=tex)
    img = render_surfaces(cam, [srf], light_dir=R[:, 2], ambient=1.0, background=(0, 255, 0))
    # analytic: the pixel ray meets the plane n·x = 0; its local coordinates give u, v
    fpx = cam.focal_px()
    yy, xx = np.mgrid[0:200, 0:200].astype(float)
    d = np.stack([(xx - 99.5) / fpx, -(yy - 99.5) / fpx, -np.ones_like(xx)], axis=-1)
    o = np.array([0, 0, 3.0])
    t = -(o @ R[:, 2]) / (d @ R[:, 2])
    p = (o + t[..., None] * d) @ R  # back to the quad's own frame
    u, v = (p[..., 0] + 1) / 2, (1 - p[..., 1]) / 2
    on = (u > 0) & (u < 1) & (v > 0) & (v < 1)
    cu, cv = u * n, v * n  # checker cell coordinates; away from cell borders the colour is one checker
    inner = on & (np.abs(cu - np.round(cu)) > 0.15) & (np.abs(cv - np.round(cv)) > 0.15)
    red = ((np.floor(cu) + np.floor(cv)) % 2 == 1)
    got_red = img[..., 0] > 127
    assert inner.sum() > 3000
    assert np.mean(got_red[inner] == red[inner]) > 0.995
    # the screen-linear (affine) UV gets many of those pixels wrong: the test tells the two apart
    xy, _ = cam.project(quad_w)
    lin = np.full(u.shape + (2,), np.nan)
    for tri in ([0, 1, 2], [0, 2, 3]):
        (x0, y0), (x1, y1), (x2, y2) = xy[tri]
        den = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
        b0 = ((y1 - y2) * (xx - x2) + (x2 - x1) * (yy - y2)) / den
        b1 = ((y2 - y0) * (xx - x2) + (x0 - x2) * (yy - y2)) / den
        b = np.stack([b0, b1, 1 - b0 - b1], axis=-1)
        ins = np.all(b >= 0, axis=-1)
        lin[ins] = b[ins] @ uvs[tri]
    lin_red = (np.floor(lin[..., 0] * n) + np.floor(lin[..., 1] * n)) % 2 == 1
    assert np.mean(lin_red[inner] != red[inner]) > 0.1
    assert np.all(img[~on & (np.abs(u - 0.5) > 0.52)] == [0, 255, 0])


def test_bilinear_sampling_interpolates_between_texel_centres() -> None:
    from animkit.render.raster import sample_bilinear

    tex = np.array([[[0, 0, 0], [200, 100, 50]]], dtype=np.uint8)  # 1 x 2 texels
    uv = np.array([[0.25, 0.5], [0.75, 0.5], [0.5, 0.5], [0.375, 0.5], [0.0, 0.5]])
    got = sample_bilinear(tex, uv)
    np.testing.assert_allclose(got[0], [0, 0, 0])  # a texel centre
    np.testing.assert_allclose(got[1], [200, 100, 50])
    np.testing.assert_allclose(got[2], [100, 50, 25])  # half way
    np.testing.assert_allclose(got[3], [50, 25, 12.5])
    np.testing.assert_allclose(got[4], [100, 50, 25])  # the left edge wraps to the right texel (REPEAT)


def test_surfaces_share_one_zbuffer_and_keep_their_own_shading() -> None:
    from animkit.render.raster import render_surfaces, surface

    cam, v, f, colors = two_squares()
    near = surface(v[4:], f[2:] - 4, normals=np.tile([0, 0, 1.0], (4, 1)), color=(1.0, 0, 0))
    far = surface(v[:4], f[:2], face_colors=(0, 0, 1.0))
    for order in ([near, far], [far, near]):
        img = render_surfaces(cam, order, light_dir=(0, 0, 1), ambient=0.3)
        (cx, cy), = cam.project(np.array([[0.0, 0.0, 0.5]]))[0].round().astype(int)
        assert tuple(img[cy, cx]) == (255, 0, 0)
        (bx, by), = cam.project(np.array([[-0.7, 0.0, -0.5]]))[0].round().astype(int)
        assert tuple(img[by, bx]) == (0, 0, 255)


@pytest.mark.parametrize("seed", range(3))
def test_compiled_segment_coverage_equals_numpy(seed: int) -> None:
    from animkit import jit
    from animkit.render.raster import segment_coverage

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    cam = look_at((3, 2, 4), (0, 0, 0), "y", width=120, height=90, near=0.5)
    a, b = rng.normal(size=(40, 3)) * 2, rng.normal(size=(40, 3)) * 2
    depth = rng.uniform(3, 7, size=(90, 120)).astype(np.float32)
    for w, d in ((1.0, None), (2.5, depth)):
        p0, a0 = segment_coverage(cam, a, b, w, d)
        p1, a1 = segment_coverage(cam, a, b, w, d, jit=True)
        assert np.array_equal(p0, p1) and np.array_equal(a0, a1)


def test_compiled_smooth_textured_shading_equals_numpy() -> None:
    from animkit import jit
    from animkit.render.raster import render_surfaces, surface

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    v, f = uv_sphere(12, 24)
    rng = np.random.default_rng(0)
    tex = rng.integers(0, 256, size=(17, 13, 4), dtype=np.uint8)
    uv = rng.uniform(-1.5, 2.5, size=(len(v), 2))
    cam = look_at((0.3, 0.8, 3.0), (0, 0, 0), "y", width=90, height=70, near=0.5)
    for srf in (surface(v, f, normals=v, color=(0.9, 0.5, 0.2)),
                surface(v, f, normals=-v, color=(1.0, 0.8, 0.6), uvs=uv, texture=tex)):
        for ss in (1, 2):
            a = render_surfaces(cam, [srf], supersample=ss, jit=False)
            b = render_surfaces(cam, [srf], supersample=ss, jit=True)
            assert a.tobytes() == b.tobytes()


def test_compiled_grid_equals_numpy() -> None:
    from animkit import jit

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    cam = look_at((3, 2, 4), (0, 0, 0), "y", width=160, height=120)
    blank = np.full((120, 160, 3), 240, np.uint8)
    a = draw_grid(blank, cam, "y", spacing=0.25, extent=3.0, color=(0.2, 0.5, 0.7))
    b = draw_grid(blank, cam, "y", spacing=0.25, extent=3.0, color=(0.2, 0.5, 0.7), jit=True)
    assert (a != 240).any() and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("jit_on", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_segment_coverage_integrates_to_the_line_width(seed: int, jit_on: bool) -> None:
    """∫ α across a line = w for the clip(w/2 + ½ − d, 0, 1) profile (w ≥ 1): a column cuts a line of slope m
    over w·√(1 + m²) pixels; each column's sum of α matches that closed form, centred on the projected line."""
    from animkit import jit
    from animkit.render.raster import segment_coverage

    if jit_on and not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    cam = look_at((0, 0, 10), (0, 0, 0), "y", width=160, height=120)
    w = float(rng.choice([1.0, 2.0, 3.0]))
    ang = rng.uniform(-0.7, 0.7)  # shallow: x is the major axis
    c = rng.uniform(-0.5, 0.5, size=2)
    d = np.array([np.cos(ang), np.sin(ang)]) * 2.5
    a, b = np.r_[c - d, 0.0], np.r_[c + d, 0.0]
    pix, alpha = segment_coverage(cam, a[None], b[None], w, jit=jit_on)
    dense = np.zeros(160 * 120)
    dense[pix] = alpha
    img = dense.reshape(120, 160)
    (ax, ay), (bx, by) = cam.project(np.stack([a, b]))[0]
    m = (by - ay) / (bx - ax)
    xs = np.arange(int(min(ax, bx)) + 10, int(max(ax, bx)) - 10)
    sums = img[:, xs].sum(axis=0)
    np.testing.assert_allclose(sums, w * np.sqrt(1 + m * m), rtol=0.08)
    centroid = (np.arange(120)[:, None] * img[:, xs]).sum(axis=0) / sums
    assert np.all(np.abs(centroid - (ay + m * (xs - ax))) <= 0.3)


def ground_hits(cam: Camera, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """(x, z) where the rays through pixel centres (xs, ys) meet the plane y = 0 (NaN behind the camera)."""
    s, u, f = cam.basis()
    fp = cam.focal_px()
    r = f + ((xs - (cam.width / 2 - 0.5)) / fp)[..., None] * s - ((ys - (cam.height / 2 - 0.5)) / fp)[..., None] * u
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -cam.eye[1] / r[..., 1]
    p = np.asarray(cam.eye) + np.where(t > 0, t, np.nan)[..., None] * r
    return p[..., [0, 2]]


@pytest.mark.parametrize("jit_on", [False, True])
def test_grid_stays_inside_its_extent_and_on_its_lines(jit_on: bool) -> None:
    """Every drawn pixel lies within 1.5 px of a grid line u = k·spacing (|u| ≤ extent) of the patch, found by
    casting the rays of its neighbourhood onto the ground (an independent oracle), and the patch is drawn."""
    from animkit import jit

    if jit_on and not jit.enabled():
        pytest.skip("numba is off or missing")
    cam = look_at((2.0, 3.0, 5.0), (0.3, 0, 0), "y", width=160, height=120)
    img = np.full((120, 160, 3), 255, np.uint8)
    out = draw_grid(img, cam, "y", spacing=0.5, extent=1.0, color=(0.0, 0.0, 0.0), width_px=1.0, jit=jit_on)
    ys, xs = np.nonzero(out[..., 0] < 255)
    assert len(xs) > 300
    off = np.linspace(-1.5, 1.5, 7)
    gx = xs[:, None, None] + off[None, :, None]
    gy = ys[:, None, None] + off[None, None, :]
    uv = ground_hits(cam, gx.astype(float), gy.astype(float)).reshape(len(xs), -1, 2)
    inside = np.all(np.abs(uv) <= 1.0 + 1e-9, axis=2)
    assert np.all(np.any(inside, axis=1))  # nothing outside the patch (beyond the anti-aliased rim)
    crosses = np.zeros(len(xs), bool)
    for ax in range(2):  # a line u = k·spacing passes through the neighbourhood: k/2 changes integer part
        k = uv[..., ax] / 0.5
        crosses |= np.floor(np.nanmax(k, axis=1)) >= np.ceil(np.nanmin(k, axis=1))
    assert np.all(crosses)


def test_grid_is_hidden_behind_a_nearer_triangle() -> None:
    cam = look_at((0.0, 3.0, 4.0), (0, 0, 0), "y", width=120, height=90)
    v = np.array([[-0.6, 0.5, 0.6], [0.6, 0.5, 0.6], [0.0, 0.5, -0.6]])  # above the ground, in front of it
    img, depth = render_triangles(cam, v, np.array([[0, 1, 2]]), (1.0, 0.0, 0.0), ambient=1.0, depth_out=True)
    out = draw_grid(img, cam, "y", spacing=0.25, extent=2.0, color=(0.0, 0.0, 1.0), depth=depth)
    covered = np.isfinite(depth)
    assert covered.sum() > 200
    assert np.array_equal(out[covered], img[covered])  # the triangle hides the grid
    assert (out[~covered] != img[~covered]).any()  # which is drawn elsewhere
    bare = draw_grid(img, cam, "y", spacing=0.25, extent=2.0, color=(0.0, 0.0, 1.0))
    assert (bare[covered] != img[covered]).any()  # without the depth buffer it would show there


# ---------------------------------------------------------------- first frame: painted flat faces, sparse backdrop


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("supersample", [1, 2])
def test_compiled_flat_surfaces_paint_the_numpy_pixels(seed: int, supersample: int) -> None:
    """Several flat surfaces (some closed, culled) over a backdrop image: the compiled path, which colours the faces
    while resolving depth, gives the NumPy path's pixels and depth, whatever the order of the surfaces."""
    from animkit import jit
    from animkit.model.geometry import Box, Capsule
    from animkit.render.raster import Surface, render_surfaces, solid_image

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    cam = look_at((2.5, 1.5, 3.0), (0, 0, 0), "y", width=90, height=70, near=0.5)
    srfs = []
    for shape, closed in ((Capsule(0.3, 0.9), True), (Box((0.6, 0.5, 0.4)), True), (Box((1.5, 0.05, 1.5)), False)):
        v, f = shape.triangles()
        v = v + rng.normal(size=3) * 0.3
        c = rng.integers(0, 256, size=(len(f), 3)).astype(np.uint8)
        srfs.append(Surface(v, f.astype(np.int64), face_colors=c, closed=np.full(len(f), closed)))
    backdrop = rng.integers(0, 256, size=(70, 90, 3)).astype(np.uint8)
    for order in (srfs, srfs[::-1]):
        for bd in (None, backdrop, solid_image(70, 90, (0.2, 0.3, 0.4))):
            with pytest.MonkeyPatch.context() as m:  # NumPy, then numba's kernel: the C one set aside
                m.setattr(jit, "native_kernels", lambda: None)
                a, da = render_surfaces(cam, order, backdrop=bd, supersample=supersample, jit=False, depth_out=True)
                b, db = render_surfaces(cam, order, backdrop=bd, supersample=supersample, jit=True, depth_out=True)
                c = render_surfaces(cam, order, backdrop=bd, supersample=supersample, jit=True)
            assert a.tobytes() == b.tobytes() == c.tobytes() and da.tobytes() == db.tobytes()
            assert np.isfinite(da).sum() > 500
            if jit.native_kernels() is not None:  # the ahead-of-time port paints the same pixels
                n, dn = render_surfaces(cam, order, backdrop=bd, supersample=supersample, jit=False, depth_out=True)
                assert n.tobytes() == a.tobytes() and dn.tobytes() == da.tobytes()


@pytest.mark.parametrize("jit_on", [False, True])
def test_grid_backdrop_is_the_grid_drawn_on_the_background(jit_on: bool) -> None:
    """grid_backdrop(...).image() is byte for byte draw_grid on a plain image, and a frame drawn over the sparse
    Backdrop equals one drawn over that image (with and without supersampling)."""
    from animkit import jit
    from animkit.render.raster import Backdrop, grid_backdrop, render_surfaces, solid_image, surface

    if jit_on and not jit.enabled():
        pytest.skip("numba is off or missing")
    cam = look_at((3, 2, 4), (0, 0, 0), "y", width=160, height=120)
    kw = dict(spacing=0.25, extent=3.0, color=(0.2, 0.5, 0.7), center=(0.3, 0.0, -0.2))
    bd = grid_backdrop(cam, "y", background=(0.9, 0.95, 1.0), jit=jit_on, **kw)
    full = draw_grid(solid_image(120, 160, (0.9, 0.95, 1.0)), cam, "y", **kw)  # type: ignore[arg-type]
    assert isinstance(bd, Backdrop) and len(bd.pixels) == len(np.unique(bd.pixels)) > 1000
    assert bd.image().tobytes() == full.tobytes()
    v, f = CUBE_V * 0.8, CUBE_F
    srf = surface(v, f, face_colors=(0.8, 0.3, 0.1))
    for ss in (1, 2):
        a = render_surfaces(cam, [srf], backdrop=bd, supersample=ss, jit=jit_on)
        b = render_surfaces(cam, [srf], backdrop=full, supersample=ss, jit=jit_on)
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(3))
def test_compiled_coverage_by_bands_of_rows_equals_numpy(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled coverage keeps α a band of rows at a time: with bands of 1, 3 and 7 rows (segments crossing many
    bands, steep and shallow, level, points, with a depth test) it gives the NumPy path's pixels and α."""
    from animkit import jit
    from animkit.render import raster, segments

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(40, 3)) * 2, rng.normal(size=(40, 3)) * 2
    b[:4] = a[:4]  # points
    b[4:8, 1:] = a[4:8, 1:]  # level on the screen of the camera on the z axis
    b[8:12, ::2] = a[8:12, ::2]  # upright on it
    depth = rng.uniform(3, 7, size=(90, 120)).astype(np.float32)
    for cam in (look_at((3, 2, 4), (0, 0, 0), "y", width=120, height=90, near=0.5),
                look_at((0, 0, 8), (0, 0, 0), "y", width=120, height=90, near=0.5)):
        for w, d in ((1.0, None), (2.5, depth), (4.0, None)):
            p0, a0 = raster.segment_coverage(cam, a, b, w, d)
            assert len(p0) > 100
            for rows in (1, 3, 7):
                monkeypatch.setattr(segments, "BAND_BYTES", 4 * 120 * rows)
                p1, a1 = raster.segment_coverage(cam, a, b, w, d, jit=True)
                assert np.array_equal(p0, p1) and np.array_equal(a0, a1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), width_px=st.sampled_from([0.6, 1.0, 1.7, 2.0, 3.0, 5.3]),
       rows=st.sampled_from([1, 5, 64]))
def test_compiled_coverage_of_a_grid_by_rows_equals_numpy(seed: int, width_px: float, rows: int) -> None:
    """Without a depth test the compiled coverage takes a long segment's interior by rows (a run of pixels per row,
    α max-ed in place): over a grid seen from a random eye (two pencils of long lines, crossing, and crowding
    together towards the horizon) and in bands of 1, 5 and 64 rows, it gives the NumPy path's pixels and α bit for
    bit, and grid_backdrop's image (grey or coloured) is the NumPy one's byte for byte."""
    from animkit import jit
    from animkit.render import raster, segments

    if not jit.enabled():
        pytest.skip("numba is off or missing")
    rng = np.random.default_rng(seed)
    eye = rng.uniform([-6, 0.3, -6], [6, 4, 6])
    cam = look_at(eye, rng.uniform(-1, 1, 3) * [1, 0.2, 1], "y", width=int(rng.integers(60, 200)),
                  height=int(rng.integers(50, 150)), near=0.2)
    spacing, extent = float(rng.uniform(0.2, 1.0)), float(rng.uniform(2.0, 12.0))
    starts, ends = raster.grid_segments("y", spacing, extent, (0.0, 0.0, 0.0))
    old = segments.BAND_BYTES
    try:
        segments.BAND_BYTES = 4 * cam.width * rows
        p0, a0 = raster.segment_coverage(cam, starts, ends, width_px)
        p1, a1 = raster.segment_coverage(cam, starts, ends, width_px, jit=True)
        grey = seed % 2 == 0  # grey on grey: the kernel blends one channel for three
        kw = dict(background=(1.0, 1.0, 1.0) if grey else (0.9, 0.95, 1.0), spacing=spacing, extent=extent,
                  color=(0.75, 0.75, 0.75) if grey else (0.2, 0.5, 0.7), width_px=width_px)
        b0 = raster.grid_backdrop(cam, "y", jit=False, **kw).image()  # type: ignore[arg-type]
        b1 = raster.grid_backdrop(cam, "y", jit=True, **kw).image()  # type: ignore[arg-type]
    finally:
        segments.BAND_BYTES = old
    assert len(p0) > 0 and np.array_equal(p0, p1) and np.array_equal(a0, a1)
    assert b0.tobytes() == b1.tobytes()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), width_px=st.sampled_from([1.0, 2.0, 3.5]))
def test_segment_coverage_each_merged_is_segment_coverage(seed: int, width_px: float) -> None:
    """segment_coverage_each gives each segment's own α: per segment, it is segment_coverage of that segment alone,
    bit for bit; the largest α per pixel over all of them is segment_coverage of them all; segments behind the
    camera or off the picture give nothing, and the others keep their index in the input."""
    from animkit.render.raster import segment_coverage, segment_coverage_each

    rng = np.random.default_rng(seed)
    cam = look_at((0, 1, 6), (0, 0, 0), "y", width=90, height=70, near=0.5)
    a, b = rng.normal(size=(12, 3)) * 1.5, rng.normal(size=(12, 3)) * 1.5
    a[3], b[3] = (0, 0, 9), (1, 0, 10)  # behind the camera
    a[5], b[5] = (40, 0, 0), (45, 1, 0)  # off the picture
    seg, pix, alpha = segment_coverage_each(cam, a, b, width_px)
    assert np.all(np.diff(seg) >= 0) and not np.isin([3, 5], seg).any() and np.all(alpha > 0)
    for s in range(len(a)):
        p1, a1 = segment_coverage(cam, a[s:s + 1], b[s:s + 1], width_px)
        order = np.argsort(pix[seg == s])
        np.testing.assert_array_equal(pix[seg == s][order], p1)
        np.testing.assert_array_equal(alpha[seg == s][order], a1)
    dense = np.zeros(90 * 70, np.float32)
    np.maximum.at(dense, pix, alpha)
    p_all, a_all = segment_coverage(cam, a, b, width_px)
    np.testing.assert_array_equal(np.flatnonzero(dense), p_all)
    np.testing.assert_array_equal(dense[p_all], a_all)


def test_markers_that_overlap_take_the_largest_coverage() -> None:
    """Discs drawn together equal discs drawn one by one over each other where they do not overlap, and where they
    do, α is the larger of the two (not their sum): a pixel drawn by both equals the disc that covers it more."""
    from animkit.render.raster import draw_markers

    cam = look_at((0, 0, 5), (0, 0, 0), "y", width=60, height=40, near=0.5)
    bg = np.full((40, 60, 3), 255, np.uint8)
    pts = np.array([[0.0, 0.0, 0.0], [0.15, 0.05, 0.0], [-1.0, 0.3, 0.0]])
    both = draw_markers(bg, cam, pts, (0.0, 0.0, 0.0), 4.0)
    singles = [draw_markers(bg, cam, p[None], (0.0, 0.0, 0.0), 4.0) for p in pts]
    np.testing.assert_array_equal(both, np.min(singles, axis=0))  # black ink: more coverage is darker


def test_disc_coverage_blended_is_what_draw_markers_draws() -> None:
    """A renderer covers fixed markers once (disc_coverage) and blends them on each frame: the same pixels as
    draw_markers, for discs overlapping one another, half off the image and behind the camera."""
    from animkit.render.overlays import disc_coverage
    from animkit.render.segments import blend

    cam = look_at((0.0, -3.0, 1.0), (0.0, 0.0, 1.0), up="z", width=64, height=48)
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
    for n in (1, 2, 5):
        pts = rng.normal(size=(n, 3)) * [1.0, 2.0, 0.8] + [0.0, 0.0, 1.0]
        pts[-1] = [0.3, 0.05, 1.2] if n > 1 else pts[-1]  # near another: the discs overlap
        for r in (2.5, 6.0):
            want = draw_markers(base, cam, pts, (0.85, 0.1, 0.1), r, "disc")
            got = blend(base, *disc_coverage(cam, pts, r), (0.85, 0.1, 0.1))
            np.testing.assert_array_equal(got, want)
    assert len(disc_coverage(cam, [[0.0, -4.0, 1.0]], 6.0)[0]) == 0  # behind the eye: nothing
    with pytest.raises(RenderError, match="radius_px"):
        disc_coverage(cam, [[0.0, 0.0, 1.0]], 0.0)
