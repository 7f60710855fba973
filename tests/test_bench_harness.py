"""benchmarks.harness: rounds interleave the cases, medians and spreads are those of the samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness import arguments, interleaved, markdown_table, ratio, stats_of, write_results


def test_rounds_interleave_and_medians_are_the_samples() -> None:
    calls: list[str] = []
    clock = iter(range(1000))
    stats = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=5, warmup=1,
                        timer=lambda: float(next(clock)))
    assert calls == ["a", "b"] * 6  # one warm-up round, then five, always A then B
    assert stats["a"].samples == (1.0,) * 5 and stats["b"].median == 1.0


def test_ratio_spread_and_table() -> None:
    slow, fast = stats_of("slow", [4, 2, 6, 4, 4]), stats_of("fast", [1, 2, 1, 1, 3])
    assert ratio(slow, fast) == 4.0
    assert slow.spread(1, ".0f") == "4 (2–6)"
    table = markdown_table({"slow": slow, "fast": fast}, unit="s", scale=1, baseline="slow")
    assert "| fast | 1 (1–3) | 4.00× |" in table


def test_fewer_than_five_rounds_is_refused() -> None:
    with pytest.raises(ValueError, match="at least five"):
        interleaved({"a": lambda: None}, rounds=3)


def test_write_results_keeps_earlier_runs_below_demoted(tmp_path):
    out = tmp_path / "results.md"
    for k in (1, 2, 3):
        write_results(out, f"# Title\n\nrun {k}\n\n## Detail\n\nd{k}\n")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\nrun 3\n")
    assert text.count("## Earlier runs") == 1
    assert text.index("run 3") < text.index("## Earlier runs") < text.index("### Title\n\nrun 2") < \
        text.index("### Title\n\nrun 1")
    assert "## Detail\n\nd3" in text and "## Detail\n\nd2" in text  # only the title line is demoted


def test_arguments_declares_the_shared_options_once(tmp_path):
    """--rounds, --against (absent, optional, required or repeatable) and --out come from one parser."""
    plain = arguments("doc", rounds=7).parse_args([])
    assert plain.rounds == 7 and not hasattr(plain, "against") and not hasattr(plain, "out")
    out = tmp_path / "results_x.md"
    one = arguments("doc", against="optional", out=out).parse_args(["--rounds", "9", "--against", "/tmp/base"])
    assert (one.rounds, one.against, one.out) == (9, Path("/tmp/base"), out)
    assert arguments("doc", against="optional").parse_args([]).against is None
    many = arguments("doc", against="append").parse_args(["--against", "a", "--against", "b"])
    assert many.against == [Path("a"), Path("b")]
    with pytest.raises(SystemExit):
        arguments("doc", against="required").parse_args([])
    with pytest.raises(ValueError, match="against must be"):
        arguments("doc", against="sometimes")
