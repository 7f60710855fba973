"""The README's main job with and without natural reaching: `animkit compare scenes/humanoid.toml` in a fresh
process, interleaved, against the same command from a checkout of the `ik` branch (three plain panels).

    flock /tmp/animkit-bench.lock python benchmarks/bench_natural_compare.py /path/to/ik-checkout
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import interleaved, markdown_table, subprocess_case

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    other = Path(sys.argv[1]).resolve()
    cmd = ["-m", "animkit", "compare", "scenes/humanoid.toml", "-o", "/tmp/bench_natural.gif", "-q"]
    stats = interleaved({
        "natural (4 panels, priors)": subprocess_case(cmd, cwd=ROOT),
        "natural, 3 panels (--chains arm,torso,hips-up)": subprocess_case(cmd + ["--chains", "arm,torso,hips-up"],
                                                                          cwd=ROOT),
        "ik branch (3 plain panels)": subprocess_case(cmd, cwd=other),
    }, rounds=5, warmup=1)
    print(markdown_table(stats, unit="s", scale=1.0, baseline="ik branch (3 plain panels)"))


if __name__ == "__main__":
    main()
