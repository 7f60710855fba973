"""Progress is tqdm's bar: nothing for quick work or off a terminal, a counted bar past the delay, wiped after."""

from __future__ import annotations

import io
import sys
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
    from animkit.render.frames import render_clip

    seen: list[tuple[int, int]] = []
    report = render_clip(examples.load("wave"), tmp_path / "w.gif", size=(48, 36), fps=5,
                         on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k + 1, report.frames) for k in range(report.frames)]
    assert capsys.readouterr().err == ""


def test_in_a_notebook_the_bar_is_tqdms_widget(monkeypatch) -> None:
    pytest.importorskip("ipywidgets", reason="tqdm's notebook bar needs ipywidgets (pip install 'animkit[notebook]')")
    import tqdm
    import tqdm.notebook

    import animkit.progress as prog

    monkeypatch.setattr(prog, "in_notebook", lambda: True)
    bar = progress(3, "render", delay=0.0)
    try:
        assert isinstance(bar, tqdm.notebook.tqdm)  # a widget, not a text line
    finally:
        bar.close()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # as if not installed: tqdm's text bar on stderr
    bar = progress(3, "render", delay=0.0)
    try:
        assert type(bar) is tqdm.tqdm
    finally:
        bar.close()


def test_a_real_kernel_draws_the_widget_bar(tmp_path) -> None:
    pytest.importorskip("ipywidgets", reason="tqdm's notebook bar needs ipywidgets (pip install 'animkit[notebook]')")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from .test_notebook import _kernel_env

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(
        "import time\nfrom animkit.progress import in_notebook, progress\nprint(in_notebook())\n"
        "for _ in progress(range(4), 'bake', delay=0.0, interval=0.0):\n    time.sleep(0.01)"))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    outs = nb.cells[0].outputs
    assert [o.text for o in outs if o.output_type == "stream" and o.name == "stdout"] == ["True\n"]
    widgets = [o for o in outs if o.output_type == "display_data"
               and "application/vnd.jupyter.widget-view+json" in o.data]
    assert widgets, f"no widget among {[o.output_type for o in outs]}"  # tqdm.notebook's HBox, not text
    # the widgets' last state (nbclient keeps it): the HBox shown holds a progress bar that reached 4 of 4
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    box = state[widgets[0].data["application/vnd.jupyter.widget-view+json"]["model_id"]]
    assert box["model_name"] == "HBoxModel"
    children = [state[c.removeprefix("IPY_MODEL_")] for c in box["state"]["children"]]
    bars = [c["state"] for c in children if c["model_name"] == "FloatProgressModel"]
    assert len(bars) == 1 and bars[0]["value"] == bars[0]["max"] == 4
    texts = " ".join(c["state"]["value"] for c in children if c["model_name"] == "HTMLModel")
    assert "bake:" in texts and "4/4" in texts
    assert not [o for o in outs if o.output_type == "stream" and o.name == "stderr" and "bake" in o.text]
