"""Run every benchmark in turn: ``python -m benchmarks`` (from the repository's root).

Peers (pybvh, bvhio, fairmotion, ikpy, matplotlib, trimesh with pyglet<2) are skipped, each with a message,
when they are not importable; install them in the benchmark's own environment as README.md says.
"""

from __future__ import annotations

import subprocess
import sys

SUITES = ("bench_fk", "bench_bvh", "bench_ik", "bench_ik_unseen", "bench_ik_peers", "bench_gltf", "bench_render",
          "bench_main", "bench_motion", "bench_batch")


def main() -> int:
    failed = []
    for name in SUITES:
        print(f"\n=== benchmarks.{name} ===", flush=True)
        if subprocess.run([sys.executable, "-m", f"benchmarks.{name}"]).returncode:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
