"""The public surface: every ``__all__`` name resolves, the layers hold, ``import animkit`` stays light."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import animkit

PKG = Path(animkit.__file__).resolve().parent

# Core modules in layer order: each may import only those before it.
CORE = ["errors", "jit", "atomic", "progress", "transforms", "joints", "geometry", "fk", "graph", "chains", "scene"]
# What each package (or top-level module) may import besides core.
ALLOWED = {
    "keyframes": set(),
    "ik": set(),
    "io": {"keyframes"},
    "render": {"keyframes"},
    "reach": {"ik", "keyframes"},
    "cli": {"*"},
    "notebook": {"*"},
    "batch": {"*"},
    "examples": {"io"},
    "__init__": {"*"},
    "__main__": {"*"},
}


def _modules() -> list[str]:
    names = ["animkit"]
    for info in pkgutil.walk_packages([str(PKG)], prefix="animkit."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_every_all_name_resolves(name) -> None:
    if name.endswith("viewer"):
        pytest.importorskip("pyglet")
    mod = importlib.import_module(name)
    for attr in getattr(mod, "__all__", []):
        assert hasattr(mod, attr), f"{name}.__all__ names {attr!r}, which is not there"


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, module: str) -> set[str]:
    """animkit components that ``path`` imports, at any depth (lazy imports count; type-only ones do not)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):  # drop `if TYPE_CHECKING:` bodies
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                targets = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            elif node.module and node.module.startswith("animkit"):
                targets = [node.module]
            else:
                continue
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("animkit")]
        else:
            continue
        for t in targets:
            if t.startswith("animkit.") and t.count(".") >= 1:
                found.add(t.split(".")[1])
    return found


def test_layers_hold() -> None:
    problems = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        comp = _component(module)
        for dep in _imports(path, module) - {comp}:
            if comp in CORE:
                ok = dep in CORE and CORE.index(dep) < CORE.index(comp)
            else:
                allowed = ALLOWED.get(comp, set())
                ok = dep in CORE or dep in allowed or "*" in allowed
            if not ok:
                problems.append(f"{module} imports animkit.{dep}")
    assert not problems, "layer violations:\n" + "\n".join(problems)


def test_import_animkit_stays_light() -> None:
    code = ("import sys, animkit; heavy = [m for m in ('pyglet', 'imageio', 'trimesh', 'PIL', 'matplotlib', "
            "'scipy', 'numba') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PKG.parent).stdout.strip()
    assert out == "", f"import animkit pulled in: {out}"


def test_errors_share_one_root() -> None:
    for name in ("SceneError", "ParseError", "PoseError", "ClipError", "IKError", "RenderError"):
        assert issubclass(getattr(animkit, name), animkit.AnimkitError)
