"""The docs stay true: the tutorial's code runs as written, and the README opens with its two commands."""

from __future__ import annotations

import importlib.util
import re

from PIL import Image

from .conftest import ROOT


def _make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "docs" / "make_figures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tutorial_code_runs_and_makes_its_pictures(tmp_path) -> None:
    mf = _make_figures()
    assert len(mf.python_blocks((ROOT / "docs" / "tutorial.md").read_text())) == 4
    mf.run_tutorial(tmp_path)
    for name in ("wave.gif", "reach.gif", "compare.gif"):
        assert Image.open(tmp_path / name).n_frames > 10
    text = (ROOT / "docs" / "tutorial.md").read_text()
    for picture in re.findall(r"\]\((figures/[^)]+)\)", text):
        assert (ROOT / "docs" / picture).exists(), picture


def test_readme_python_example_runs(tmp_path) -> None:
    _make_figures().run_tutorial(tmp_path, ROOT / "README.md")
    assert (tmp_path / "compare.gif").exists() and (tmp_path / "reach.bvh").exists()


def test_readme_opens_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    commands = [ln for ln in block.group(1).splitlines() if ln and not ln.startswith("#")]
    assert commands[0].endswith("animkit compare humanoid -o compare.gif")  # an example shipped in the package
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci  # CI runs exactly the README's test command
    for picture in re.findall(r"\]\((docs/[^)]+)\)", text):
        assert (ROOT / picture).exists(), picture
