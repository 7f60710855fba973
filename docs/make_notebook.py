"""docs/tutorial.ipynb from docs/tutorial.md: the same prose and code, shown inline instead of written to files.

    python docs/make_notebook.py        # rewrites docs/tutorial.ipynb (tests/test_notebook.py checks it is current)

Scenes are loaded by example name (``animkit.examples.load("humanoid")``), so the notebook runs from any folder
with only ``pip install animkit``; after each block that renders to a file a cell shows the same thing inline.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# After the code block that makes a picture, a cell that shows it inline (block index → cells).
INLINE = {
    1: ['animkit.show(scene, wave, size=(320, 280))  # play/pause, and a slider to step through the frames'],
    2: ["r  # an IK result shows its numbers and its error curve", "reach  # a baked reach plays inline"],
    3: ["comparison  # the panels side by side, as animkit compare draws them",
        "animkit.apps.notebook.show_comparison(comparison, interactive=True)  # the same, to turn around: drag, scrub, "
        "slow down",
        'animkit.still(scene, comparison.panels[-1].poses[-1], targets=[comparison.target], view="front")'],
}
# The notebook's first code: its pictures (compare.gif, reach.toml, ...) go into a fresh temporary folder, never
# beside the notebook (opened in docs/, it would overwrite docs/compare.gif).
WORKDIR = ("import os\nimport tempfile\n\n"
           "os.chdir(tempfile.mkdtemp(prefix=\"animkit-tutorial-\"))  # the files below are written here, not beside "
           "the notebook")
LEAD = ("This notebook is `docs/tutorial.md` run in a kernel (made by `docs/make_notebook.py`). Values show "
        "themselves inline: a scene or clip plays as a video with play/pause and a frame slider, a single pose is "
        "a picture, an IK result a table and its error curve; `interactive=True` gives a 3D viewer to turn around and "
        "scrub.")


def notebook_cells(markdown: str) -> list[tuple[str, str]]:
    """(kind, source) cells: markdown prose, python code (scenes loaded by example name), inline views."""
    cells: list[tuple[str, str]] = []
    parts = re.split(r"^```python\n(.*?)^```\n?", markdown, flags=re.S | re.M)
    for k, part in enumerate(parts):
        if k % 2 == 0:
            text = re.sub(r"!\[[^\]]*\]\([^)]*\)\n?", "", part).strip()  # the pictures appear inline instead
            if k == 0:
                text = re.sub(r"Every code block below.*?here\)\.", LEAD, text, flags=re.S)
            if text:
                cells.append(("markdown", text))
            if k == 0:
                cells.append(("code", WORKDIR))
            continue
        code = re.sub(r'animkit\.load\("scenes/(\w+)\.toml"\)', r'animkit.examples.load("\1")', part).rstrip()
        code = code.replace("import animkit\n", "import animkit\nimport animkit.examples\n", 1)
        cells.append(("code", code))
        cells.extend(("code", extra) for extra in INLINE.get(k // 2, []))
    return cells


def build(markdown_path: Path = DOCS / "tutorial.md"):  # -> nbformat.NotebookNode
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in notebook_cells(markdown_path.read_text(encoding="utf-8")):
        cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        cell.pop("id", None)
        nb.cells.append(cell)
    nb.nbformat_minor = 4  # no cell ids: the file stays the same from run to run
    return nb


def main() -> None:
    import nbformat

    out = DOCS / "tutorial.ipynb"
    nbformat.write(build(), out)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
