from __future__ import annotations

import io
import re

import pytest

import animkit.progress as progress_mod
from animkit.errors import AnimkitError
from animkit.progress import format_duration, progress


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress_mod, "clock", c)
    return c


def run(items: int, step: float, clock: Clock, **kw: object) -> tuple[list[int], str]:
    out = kw.pop("stream", None) or TTY()
    seen = []
    for x in progress(range(items), "solve", stream=out, **kw):  # type: ignore[arg-type]
        seen.append(x)
        clock.t += step
    return seen, out.getvalue()  # type: ignore[union-attr]


def test_quick_work_shows_nothing(clock: Clock) -> None:
    seen, text = run(50, 0.01, clock)  # 0.5 s in all
    assert seen == list(range(50)) and text == ""


def test_slow_work_on_a_tty_shows_count_rate_eta_and_wipes_its_line(clock: Clock) -> None:
    seen, text = run(100, 0.05, clock)  # 5 s in all
    assert seen == list(range(100))
    draws = text.split("\r")[1:]
    assert draws[0] == "solve: 21/100 [ 21%] 20.0 it/s ETA 0:04"  # first draw once 1 s has passed
    assert re.fullmatch(r"solve: 99/100 \[ 99%\] 20\.0 it/s ETA 0:00 *", draws[-3])
    # then at most every 0.1 s: at most (5 - 1) / 0.1 = 40 draws (+ the wipe)
    assert 20 <= len(draws) <= 42
    assert text.endswith("\r") and draws[-2].strip() == "" and draws[-1] == ""


def test_not_a_tty_or_quiet_shows_nothing(clock: Clock) -> None:
    _, text = run(100, 0.05, clock, stream=io.StringIO())
    assert text == ""
    _, text = run(100, 0.05, clock, enabled=False)
    assert text == ""
    _, text = run(100, 0.05, clock, stream=io.StringIO(), enabled=True)
    assert "100" in text or "/100" in text


def test_count_mode_and_unknown_total(clock: Clock) -> None:
    out = TTY()
    with progress(10, "render", stream=out) as p:
        for _ in range(10):
            clock.t += 0.3
            p.update()
    assert "render: " in out.getvalue() and "/10" in out.getvalue()
    assert out.getvalue().endswith("\r")
    out2 = TTY()
    for _ in progress(iter(range(30)), "frames", stream=out2):
        clock.t += 0.1
    assert "frames: " in out2.getvalue() and "/" not in out2.getvalue().split("frames: ")[1].split(" ")[0]


def test_errors_and_format() -> None:
    with pytest.raises(AnimkitError):
        progress(-1)
    with pytest.raises(AnimkitError, match="once"):
        progress(5, total=5)
    with pytest.raises(AnimkitError, match="update"):
        iter(progress(5)).__next__()
    assert format_duration(65) == "1:05" and format_duration(3725) == "1:02:05"
