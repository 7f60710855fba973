"""Raster and GIF benchmark: N frames of ~10k flat-shaded triangles at 640x480, then 120 GIF frames.

Standalone: ``python benchmarks/bench_raster.py [--frames N] [--supersample S]``. Prints ms per
frame and frames per second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np
from numpy.typing import NDArray

from animkit.render.camera import fit_camera
from animkit.render.raster import render_triangles
from animkit.render.writers import open_writer


def capsule(a: NDArray[np.float64], b: NDArray[np.float64], r: float, around: int = 16,
            rings: int = 5) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A UV capsule from a to b: two hemispheres of ``rings`` rings joined by a cylinder."""
    axis = b - a
    length = float(np.linalg.norm(axis))
    z = axis / length
    x = np.cross(z, [1.0, 0, 0] if abs(z[0]) < 0.9 else [0, 1.0, 0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    phi = np.linspace(0, 2 * np.pi, around, endpoint=False)
    lat = np.r_[np.linspace(-np.pi / 2, 0, rings + 1)[1:], np.linspace(0, np.pi / 2, rings + 1)[:-1]]
    offs = np.r_[np.zeros(rings), np.full(rings, length)]
    ring_pts = []
    for la, off in zip(lat, offs, strict=True):
        c = r * np.cos(la)
        rim = np.cos(phi)[:, None] * x + np.sin(phi)[:, None] * y
        ring_pts.append(a + (off + r * np.sin(la)) * z + c * rim)
    verts = np.concatenate([a[None] - r * z, *ring_pts, b[None] + r * z])
    faces = []
    n = len(ring_pts)
    j = np.arange(around)
    jn = (j + 1) % around
    faces.append(np.stack([np.zeros(around, int), 1 + jn, 1 + j], 1))
    for i in range(n - 1):
        s0, s1 = 1 + i * around, 1 + (i + 1) * around
        faces.append(np.stack([s0 + j, s0 + jn, s1 + jn], 1))
        faces.append(np.stack([s0 + j, s1 + jn, s1 + j], 1))
    top = len(verts) - 1
    last = 1 + (n - 1) * around
    faces.append(np.stack([np.full(around, top), last + j, last + jn], 1))
    return verts, np.concatenate(faces)


def figure(t: float) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """~30 capsules standing roughly like a figure, swaying with time ``t``."""
    rng = np.random.default_rng(0)
    vs, fs, cs, n = [], [], [], 0
    for k in range(30):
        a = np.array([0.6 * np.sin(k * 1.3 + t), 0.1 * k, 0.4 * np.cos(k * 0.7)])
        b = a + rng.normal(size=3) * 0.25 + np.array([0.0, 0.2, 0.0])
        v, f = capsule(a, b, 0.06)
        vs.append(v)
        fs.append(f + n)
        n += len(v)
        cs.append(np.broadcast_to(rng.uniform(0.2, 0.9, 3), (len(f), 3)))
    return np.concatenate(vs), np.concatenate(fs), np.concatenate(cs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--supersample", type=int, default=1)
    args = ap.parse_args()
    v0, f0, c0 = figure(0.0)
    cam = fit_camera(v0, "y", width=640, height=480)
    scenes = [figure(0.05 * i) for i in range(args.frames)]
    print(f"{len(f0)} triangles per frame, 640x480, supersample {args.supersample}")
    render_triangles(cam, v0, f0, c0, supersample=args.supersample)  # warm-up
    t = time.perf_counter()
    frames = [render_triangles(cam, v, f, c, supersample=args.supersample) for v, f, c in scenes]
    dt = time.perf_counter() - t
    print(f"raster: {1e3 * dt / len(frames):.1f} ms/frame ({len(frames) / dt:.0f} frames/s)")
    gif_frames = [frames[i % len(frames)] for i in range(120)]
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".gif", ".mp4"):
            path = Path(tmp) / f"bench{suffix}"
            t = time.perf_counter()
            with open_writer(path, 30, size=(640, 480), quiet=True) as w:
                for fr in gif_frames:
                    w.write(fr)
            dt = time.perf_counter() - t
            kb = path.stat().st_size / 1024
            print(f"{suffix[1:]}: 120 frames in {dt:.2f} s, {1e3 * dt / 120:.1f} ms/frame "
                  f"({120 / dt:.0f} frames/s), {kb:.0f} KiB")


if __name__ == "__main__":
    main()
