"""Make the pictures the docs show, from the docs themselves, so that they stay true.

    python docs/make_figures.py

Runs every ```python block of docs/tutorial.md, in order, in docs/figures/ (the tutorial writes its pictures
there), then renders the README's comparison exactly as its first command does, into docs/compare.gif.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def python_blocks(markdown: str) -> list[str]:
    """The ```python blocks of a markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def run_tutorial(workdir: Path, markdown: Path = DOCS / "tutorial.md") -> None:
    """Execute a markdown file's python blocks in one namespace: scene paths from the repo root, outputs in
    ``workdir``."""
    code = "\n".join(python_blocks(markdown.read_text()))
    code = code.replace('"scenes/', f'"{ROOT}/scenes/').replace('"tests/data/', f'"{ROOT}/tests/data/')
    workdir.mkdir(parents=True, exist_ok=True)
    old = Path.cwd()
    os.chdir(workdir)
    try:
        exec(compile(code, str(markdown), "exec"), {"__name__": "__tutorial__"})
    finally:
        os.chdir(old)


def main() -> None:
    run_tutorial(DOCS / "figures")
    for name in ("reach.toml",):  # by-products the docs do not show
        (DOCS / "figures" / name).unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "animkit", "compare", "humanoid", "-o", "docs/compare.gif",
                    "--size", "320x320", "-q"], cwd=ROOT, check=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's animkit, not whichever one is installed
    main()
