"""The one way benchmarks here time things: interleaved rounds, medians of ≥ 5, the spread shown.

    stats = interleaved({"animkit": run_ours, "peer": run_peer}, rounds=7)
    print(markdown_table(stats, unit="ms", scale=1e3, baseline="peer"))

Each round calls every case once, in the same order (A, B, A, B, …), so a slow spell on a shared machine
hits every case alike; a ratio is the ratio of medians of the same run. ``warmup`` rounds run first and are
not recorded (imports, JIT compilation, caches). Cases that need a fresh process build their own callable
(``subprocess_case``) and are timed the same way.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Stats", "interleaved", "stats_of", "ratio", "markdown_table", "subprocess_case", "MIN_ROUNDS", "arguments",
           "write_results"]

MIN_ROUNDS = 5


@dataclass(frozen=True)
class Stats:
    """Seconds of one case over the rounds of one run."""

    name: str
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def spread(self, scale: float = 1.0, spec: str = ".3g") -> str:
        """``median (min–max)`` in the given unit."""
        return f"{self.median * scale:{spec}} ({self.low * scale:{spec}}–{self.high * scale:{spec}})"


def arguments(doc: str | None, *, rounds: int = MIN_ROUNDS, against: str | None = None,
              out: Path | None = None) -> argparse.ArgumentParser:
    """The options every benchmark shares, declared once: ``--rounds`` (interleaved rounds, ``rounds`` by default),
    ``--against`` another checkout to time beside this one (``against`` is ``"optional"``, ``"required"``,
    ``"append"`` for several, or None for no such option) and ``--out`` the results file (when ``out`` is given).
    The benchmark adds its own options to the parser it gets back."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=rounds, help=f"interleaved rounds (default {rounds}; a ratio "
                    f"needs >= {MIN_ROUNDS})")
    help_against = "another checkout of animkit (its C extension built in place), timed interleaved with this one"
    if against == "append":
        ap.add_argument("--against", type=Path, action="append", default=[], help=help_against + " (repeatable)")
    elif against is not None:
        if against not in ("optional", "required"):
            raise ValueError(f"against must be 'optional', 'required', 'append' or None, got {against!r}")
        ap.add_argument("--against", type=Path, required=against == "required", default=None, help=help_against)
    if out is not None:
        ap.add_argument("--out", type=Path, default=out, help=f"the results file (default {out.name})")
    return ap


def stats_of(name: str, samples: Sequence[float]) -> Stats:
    return Stats(name, tuple(float(s) for s in samples))


def interleaved(cases: Mapping[str, Callable[[], Any]], *, rounds: int = 7, warmup: int = 1,
                timer: Callable[[], float] = time.perf_counter) -> dict[str, Stats]:
    """t[case][k] = wall time of round k; rounds run A, B, C, A, B, C, … (``rounds`` ≥ 5)."""
    if rounds < MIN_ROUNDS:
        raise ValueError(f"rounds must be >= {MIN_ROUNDS} (medians of at least five), got {rounds}")
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = timer()
            fn()
            samples[name].append(timer() - t0)
    return {name: stats_of(name, s) for name, s in samples.items()}


def ratio(slow: Stats, fast: Stats) -> float:
    """How many times faster ``fast`` is than ``slow`` (ratio of the medians of one run)."""
    return slow.median / fast.median


def markdown_table(stats: Mapping[str, Stats], *, unit: str = "ms", scale: float = 1e3,
                   baseline: str | None = None) -> str:
    """| case | median (min–max) | × baseline | — one row per case, in the order given."""
    head = f"| case | median ({unit}) (min–max), {len(next(iter(stats.values())).samples)} rounds |"
    rows = [head + (f" speed-up vs {baseline} |" if baseline else ""),
            "|---|---|" + ("---|" if baseline else "")]
    for name, s in stats.items():
        row = f"| {name} | {s.spread(scale)} |"
        if baseline:
            row += f" {ratio(stats[baseline], s):.2f}× |"
        rows.append(row)
    return "\n".join(rows)


def subprocess_case(args: Sequence[str], **kwargs: Any) -> Callable[[], None]:
    """A case that runs ``python args…`` in a fresh process (start-up included), failing loudly."""
    def run() -> None:
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, **kwargs)
    return run


def write_results(path: Path, text: str) -> None:
    """Write a run's results to ``path`` with the file's earlier runs below them: its previous top section under
    "## Earlier runs", headings demoted a level, then the earlier runs it already kept."""
    previous = path.read_text(encoding="utf-8") if path.exists() else ""
    marker = "\n## Earlier runs\n"
    kept = ""
    if previous.strip():
        top, _, rest = previous.partition(marker)
        top = "\n".join("##" + line if line.startswith("# ") else line for line in top.strip().splitlines())
        kept = f"{marker}\n{top}\n" + (f"\n{rest.strip()}\n" if rest.strip() else "")
    path.write_text(text + kept, encoding="utf-8")
