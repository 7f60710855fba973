"""The public surface: every ``__all__`` name resolves, the layers hold, ``import animkit`` stays light."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import animkit

PKG = Path(animkit.__file__).resolve().parent

# Core in layer order: the support modules, then the model and its maths (package `model`), what a figure looks
# like (`look`) and the scene; each may import only those before it (a package's own modules import each other freely,
# without cycles: test_no_import_cycles).
CORE = ["errors", "display", "limits", "jit", "atomic", "progress", "recent", "model", "look", "scene"]
# What each package above core may import besides core.
ALLOWED = {
    "keyframes": set(),
    "ik": set(),
    "io": {"keyframes"},
    "render": {"keyframes"},
    "motion": {"ik", "keyframes"},
    "apps": {"*"},
    "examples": {"io"},
    "__init__": {"*"},
    "__main__": {"*"},
}
# Modules inside a package held to less than their package (module → the components it may import besides core and
# its own package's modules).
NARROWER = {
    "animkit.motion.reach_measures": set(),
    "animkit.motion.retarget": {"keyframes"},
    "animkit.motion.retarget_map": set(),
    "animkit.motion.retarget_rest": set(),
    "animkit.motion.retarget_ground": set(),
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


@functools.cache
def _import_nodes(path: Path) -> tuple[tuple[ast.stmt | ast.Call, bool], ...]:
    """The import statements of ``path`` and its imports by name (``importlib.import_module("animkit.x")``,
    ``__import__``), each with whether it sits under ``if TYPE_CHECKING:`` (type-only), at any depth: one parse and
    one walk per file and process, shared by the layer, cycle and front-end tests (the source does not change
    during a run)."""
    found: list[tuple[ast.stmt | ast.Call, bool]] = []
    stack: list[tuple[ast.AST, bool]] = [(ast.parse(path.read_text()), False)]
    while stack:
        node, typing_only = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, typing_only))
            continue
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and node.args[0].value.startswith("animkit.")
                and ast.unparse(node.func).split(".")[-1] in ("import_module", "__import__")):
            found.append((node, typing_only))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend((child, True) for child in node.body)
            stack.extend((child, typing_only) for child in node.orelse)
            continue
        stack.extend((child, typing_only) for child in ast.iter_child_nodes(node))
    return tuple(found)


def _imports(path: Path, module: str) -> set[str]:
    """animkit components that ``path`` imports, at any depth (lazy imports count; type-only ones do not)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node, typing_only in _import_nodes(path):
        if typing_only:
            continue
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
            assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Constant)
            targets = [str(node.args[0].value)]  # an import by name (importlib) is an import too
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
                allowed = NARROWER.get(module, ALLOWED.get(comp, set()))
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


def test_public_names_load_their_modules_on_first_use() -> None:
    # a fresh process: `import animkit` leaves IK, reach, motion and the readers out; a public name imports its module
    # then, and stays what the package promises (animkit.retarget the function, even after its module
    # animkit.motion.retarget is imported)
    code = ("import sys, animkit; pkgs = ('animkit.ik', 'animkit.motion.reach', 'animkit.motion.root_motion', "
            "'animkit.io'); "
            "print([m for m in pkgs if m in sys.modules]); import animkit.motion.root_motion, animkit.motion.retarget; "
            "print(animkit.retarget.__module__, type(animkit.retarget).__name__); "
            "print(animkit.solve is sys.modules['animkit.ik.api'].solve, animkit.Scene.__module__, "
            "animkit.io is sys.modules['animkit.io'], 'IKProblem' in dir(animkit)); "
            "print(hasattr(animkit, 'batch_worker'), 'animkit.apps.batch_worker' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PKG.parent).stdout.splitlines()
    assert out == ["[]", "animkit.motion.retarget function", "True animkit.scene True True", "False False"]
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        animkit.no_such_name  # noqa: B018


def test_errors_share_one_root() -> None:
    for name in ("SceneError", "ParseError", "PoseError", "ClipError", "IKError", "RenderError"):
        assert issubclass(getattr(animkit, name), animkit.AnimkitError)


def _module_graph() -> dict[str, set[str]]:
    """Module → the animkit modules it imports, at any depth and type-only imports included."""
    modules = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        modules[".".join(rel.parts).removesuffix(".__init__")] = path

    def resolve(name: str) -> str | None:  # the longest prefix that is a module of ours
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        deps: set[str] = set()
        for node, _ in _import_nodes(path):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
                elif node.module and node.module.startswith("animkit"):
                    base = node.module
                else:
                    continue
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("animkit")]
            else:
                continue
            deps.update(t for t in map(resolve, targets) if t is not None and t != module)
        graph[module] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set(), "c": {"d"}, "d": {"c"}}) == [["c", "d"]]
    assert _cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others, inside a package too (function-level and
    type-only imports count)."""
    graph = _module_graph()
    assert "animkit.model.figure" in graph["animkit.model.chains"]
    assert "animkit.io._toml" in graph["animkit.io.toml_clips"]
    assert _cycles(graph) == []


def test_an_import_by_name_counts_as_an_import(tmp_path) -> None:
    # the layering test must see importlib's imports too, or a core module could reach upward through a string
    src = tmp_path / "m.py"
    src.write_text("import importlib\n\ndef f():\n    return importlib.import_module('animkit.render.frames')\n")
    assert _imports(src, "animkit.scene") == {"render"}


# --- tests use public names only ----------------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent
_REACHING = {"getattr", "setattr", "delattr", "hasattr", "setitem", "delitem"}  # builtins and monkeypatch's


def _private(name: str) -> bool:
    """A leading underscore, not a dunder (``__dict__`` aside) nor an IPython display hook (``_repr_html_``)."""
    if not name.startswith("_"):
        return False
    if name.startswith("__") and name.endswith("__"):
        return name == "__dict__"
    return not (name.startswith("_repr_") and name.endswith("_"))


def _private_path(dotted: str) -> bool:
    return dotted.split(".")[0] == "animkit" and any(_private(p) for p in dotted.split("."))


def _private_uses(source: str) -> list[str]:
    """Where a test's source reaches past animkit's public names: ``line: what``. Imports of private animkit
    modules or of private names from animkit; ``x._name`` (or ``x.__dict__``) on anything but ``self``/``cls``;
    a private name given to getattr/setattr/… or monkeypatch's setattr/setitem (``"animkit.apps.cli._cmd"`` or
    ``(module, "_name")``). A private-looking string that is data (an import-graph assertion) is not a use."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "animkit":
            if _private_path(node.module or ""):
                out.append(f"{node.lineno}: from {node.module}")
            out += [f"{node.lineno}: import {a.name} from {node.module}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            out += [f"{node.lineno}: import {a.name}" for a in node.names if _private_path(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                out.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name not in _REACHING:
                continue
            args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                    for a in node.args[:2]]
            if args and args[0] is not None and _private_path(args[0]):  # monkeypatch.setattr("animkit.m._f", …)
                out.append(f"{node.lineno}: {name}({args[0]!r})")
            if len(args) == 2 and args[1] is not None and _private(args[1]):  # setattr(module, "_name", …)
                out.append(f"{node.lineno}: {name}({args[1]!r})")
    return out


def test_the_private_use_finder_finds_private_uses() -> None:
    planted = '''
from animkit.io._gltf import pointer
from animkit.apps.batch import _jit_pays, run_batch
import animkit.io._toml
from animkit import jit
from tests.test_gltf import _skinned  # a test module's own helper: fine

def test(monkeypatch, fig, problem):
    jit._warm
    animkit.io.bvh._MOTION.search("")
    problem._opts
    "_build" in fig.__dict__
    monkeypatch.setattr("animkit.apps.cli._cmd_info", print)
    monkeypatch.setattr(jit, "_warm", True)
    monkeypatch.setitem(jit.__dict__, "x", 1)
    getattr(fig, "_compiled")
    self._ok, cls._ok, scene._repr_html_(), fig.__class__, jit.ENABLED
    monkeypatch.setattr(jit, "ALWAYS", True)
    assert "animkit.io._toml" in {"animkit.io._toml"}  # data
'''
    found = [u.split(": ", 1)[1] for u in _private_uses(planted)]
    assert sorted(found) == sorted([
        "from animkit.io._gltf", "import _jit_pays from animkit.apps.batch", "import animkit.io._toml", "._warm",
        "._MOTION", "._opts", ".__dict__", "setattr('animkit.apps.cli._cmd_info')", "setattr('_warm')", ".__dict__",
        "getattr('_compiled')"])
    assert _private_uses("import animkit\n\ndef test():\n    assert animkit.io.gltf_bytes.pointer\n") == []


def test_tests_use_public_names_only() -> None:
    """Issue 13 §7: what a test proves holds through animkit's public surface (a test of a private detail pins an
    implementation, not a behaviour)."""
    uses = [f"{p.relative_to(TESTS.parent)}:{u}" for p in sorted(TESTS.rglob("*.py"))
            if "node_modules" not in p.parts for u in _private_uses(p.read_text(encoding="utf-8"))]
    assert uses == []


def test_dir_shows_public_names_and_modules_only() -> None:
    names = dir(animkit)
    assert set(animkit.__all__) <= set(names)
    for helper in ("Any", "annotations", "import_module", "TYPE_CHECKING"):
        assert helper not in names


def test_reprs_are_short_and_say_what_matters() -> None:
    """A Mesh, a Skin and an IKProblem print in a line that names them and counts what they hold (no arrays)."""
    from animkit.ik import IKProblem

    mesh = animkit.load(Path(__file__).parent / "data" / "CesiumMan.glb").meshes[0]
    assert repr(mesh) == ("Mesh('Cesium_Man' on 'Cesium_Man', 3273 vertices, 4672 triangles, skinned by 'Armature' "
                          "(19 joints, ≤ 4 influences), textured 1024×1024)")
    assert repr(mesh.skin) == "Skin('Armature', 19 joints, skeleton 'Skeleton_torso_joint_1')"
    figure = animkit.load(Path(__file__).parents[1] / "scenes" / "humanoid.toml").figure
    assert repr(IKProblem(figure, "hand_r", "arm")) == \
        "IKProblem('humanoid', chain 'arm': 6 of 46 DOFs move 'hand_r' to positions (3,), solver LM)"


def test_the_format_registry_holds_each_formats_reader_writer_and_check(tmp_path) -> None:
    """animkit.io.FORMATS is the one place a format is named: load and save dispatch through it, and each entry's
    reader, writer and check import and are callables (a new format is one entry and its module)."""
    from animkit.io import FORMATS, LOADERS, SAVE_OPTIONS, SAVERS

    for suffix, fmt in FORMATS.items():
        assert callable(fmt.function("reader")), suffix
        if fmt.writes:
            assert callable(fmt.function("writer")) and callable(fmt.function("check")), suffix
            assert suffix in SAVE_OPTIONS
        else:
            with pytest.raises(animkit.AnimkitError, match="no writer"):
                fmt.function("writer")
    assert set(LOADERS) == set(FORMATS) and set(SAVERS) == {".toml", ".bvh", ".gltf", ".glb"}
    scene = animkit.load(Path(__file__).parent / "data" / "cmu_09_01_run.bvh")
    direct = FORMATS[".bvh"].function("reader")(Path(__file__).parent / "data" / "cmu_09_01_run.bvh")
    assert direct.figure.node_names == scene.figure.node_names
    with pytest.raises(animkit.AnimkitError, match="unknown .bvh save option 'buffers'"):
        animkit.save(tmp_path / "a.bvh", scene, buffers="embedded")
    assert animkit.save(tmp_path / "a.bvh", scene, precision=4).is_file()


def test_the_ik_interfaces_are_abstract() -> None:
    """A solver must run (a stepped one must step), a descent solver must minimise and a task must compute: a
    subclass that leaves its method out cannot be made, rather than failing at its first solve."""
    from dataclasses import dataclass

    from animkit.ik import SteppedSolver
    from animkit.ik.objective import DescentSolver
    from animkit.ik.tasks import Task

    @dataclass(frozen=True, eq=False, kw_only=True)
    class NoStep(SteppedSolver):
        name = "nostep"

    @dataclass(frozen=True, eq=False, kw_only=True)
    class NoMinimise(DescentSolver):
        name = "nominimise"

    @dataclass(frozen=True, eq=False, kw_only=True)
    class NoCompute(Task):
        kind = "nocompute"

    for cls in (NoStep, NoMinimise, NoCompute):
        with pytest.raises(TypeError, match="abstract"):
            cls()


def test_no_two_modules_share_a_short_name() -> None:
    # one obvious home per concept (issue 26 §5): a module's or a package's last name is unique in the package
    names: dict[str, list[str]] = {}
    for path in PKG.rglob("*.py"):
        if "vendor" in path.parts or path.name == "__main__.py":
            continue
        rel = path.relative_to(PKG)
        short = rel.parent.name if path.name == "__init__.py" else path.stem
        if short:
            names.setdefault(short, []).append(str(rel))
    assert {k: v for k, v in names.items() if len(v) > 1} == {}


def _module_imports(path: Path) -> set[str]:
    """The animkit modules ``path`` names in its imports at any depth (type-only ones dropped), dotted."""
    found: set[str] = set()
    for node, typing_only in _import_nodes(path):
        if typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("animkit"):
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("animkit")}
    return found


def test_the_front_ends_build_panels_outside_the_notebook() -> None:
    """Issue 26 §5: the CLI, the commands and the batch runner draw reaches through animkit.apps.reach_panels, which
    the notebook uses too; none of them imports the notebook module."""
    apps = PKG / "apps"
    for name in ("cli", "cli_parser", "commands", "batch", "batch_worker", "reach_panels", "panel_forks"):
        assert "animkit.apps.notebook" not in _module_imports(apps / f"{name}.py"), name
    for name in ("cli", "notebook"):
        assert any(m.startswith("animkit.apps.reach_panels") for m in _module_imports(apps / f"{name}.py")), name
    assert not any(m.startswith("animkit.apps.notebook") for m in _module_imports(apps / "reach_panels.py"))
