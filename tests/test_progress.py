"""Progress is tqdm's bar: nothing for quick work or off a terminal, a counted bar past the delay, wiped after."""

from __future__ import annotations

import io
import time

import pytest

from animkit.errors import AnimkitError
from animkit.progress import format_duration, in_notebook, progress


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(items: int, step: float, **kw: object) -> tuple[list[int], str]:
    out = kw.pop("stream", None) or TTY()
    seen = []
    for x in progress(range(items), "solve", stream=out, **kw):  # type: ignore[arg-type]
        seen.append(x)
        time.sleep(step)
    return seen, out.getvalue()  # type: ignore[union-attr]


def test_quick_work_shows_nothing() -> None:
    seen, text = run(50, 0.0)  # far below the 1 s delay
    assert seen == list(range(50)) and text == ""


def test_slow_work_on_a_tty_shows_count_and_wipes_its_line() -> None:
    seen, text = run(20, 0.01, delay=0.05, interval=0.0)
    assert seen == list(range(20))
    draws = [d for d in text.split("\r") if d.strip()]
    assert draws and all(d.startswith("solve:") for d in draws)
    assert any("/20" in d for d in draws) and "it/s" in text
    assert text.rstrip(" ").endswith("\r") or text.endswith("\x1b[A")  # leave=False: the line is wiped


def test_not_a_tty_or_quiet_shows_nothing() -> None:
    _, text = run(20, 0.01, stream=io.StringIO(), delay=0.0)
    assert text == ""
    _, text = run(20, 0.01, enabled=False, delay=0.0)
    assert text == ""
    _, text = run(20, 0.0, stream=io.StringIO(), enabled=True, delay=0.0)
    assert "/20" in text
    assert not in_notebook()


def test_count_mode_and_unknown_total() -> None:
    out = TTY()
    with progress(10, "render", stream=out, delay=0.0, interval=0.0) as p:
        for _ in range(10):
            p.update()
    assert "render: " in out.getvalue() and "/10" in out.getvalue()
    out2 = TTY()
    for _ in progress(iter(range(30)), "frames", stream=out2, delay=0.0, interval=0.0):
        pass
    assert "frames: " in out2.getvalue() and "30it" in out2.getvalue()


def test_errors_and_format() -> None:
    with pytest.raises(AnimkitError):
        progress(-1)
    with pytest.raises(AnimkitError, match="once"):
        progress(5, total=5)
    assert format_duration(65) == "1:05" and format_duration(3725) == "1:02:05"


def test_a_render_reports_through_a_callback_and_draws_no_bar(tmp_path, capsys) -> None:
    from animkit import examples
    from animkit.render.clip import render_clip

    seen: list[tuple[int, int]] = []
    report = render_clip(examples.load("wave"), tmp_path / "w.gif", size=(48, 36), fps=5,
                         on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k + 1, report.frames) for k in range(report.frames)]
    assert capsys.readouterr().err == ""
