"""Compiled kernels for the few measured hot loops that NumPy cannot vectorise well: numba's ``njit`` when it is
installed, otherwise nothing (every kernel has a NumPy path, which is also the reference its tests compare with).

    kernel(f) = numba.njit(f, cache=True, nogil=True), compiled at its first call   if numba is installed and
              = None                                                                 ANIMKIT_JIT != "0", else

numba itself (a quarter of a second, and it pulls in SciPy) is imported only when :func:`enabled` is first asked
or a kernel first runs, so ``import animkit`` stays light. A kernel that calls other kernels names them
(``kernel(f, calls=(g, h))``): they are compiled first and handed to numba in f's own copy of its globals, so no
module's namespace is rewritten. Callers check :func:`enabled` at call time (tests flip :data:`ENABLED` to run
both paths), or :func:`pays` to use a kernel only where the work repays numba's start-up (tests set
:data:`ALWAYS`). numba caches compiled code on disk, so only the first run on a machine pays the compilation (about
a second per kernel); later processes pay loading it, once: about 0.3 s for the first kernel a process runs (numba
starting its compiler), a few milliseconds for each one after that. So :func:`pays` can also add up the work its
caller sent to NumPy: a long-lived process making many small calls switches to the kernel once that sum has paid
for numba's start-up, or, when another kernel already runs, for loading this one from disk.
Where numba cannot cache (no writable cache folder) or cannot compile, the kernels are turned off with one
warning and the NumPy paths run: compiled code never blocks use.

The kernels a fresh process needs at once (the BVH scanner, FK) are also compiled ahead of time, at install, into the
C extension ``animkit._native`` (:func:`native_kernels`; optional: built where a C compiler is). They are ports of
the same Python, held to numba's bits by the tests, and run from the first call with no start-up to repay.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["kernel", "Kernel", "enabled", "native", "native_kernels", "pays", "ready", "signatures", "read_only",
           "warm", "Warming", "ENABLED", "ALWAYS", "WARM", "WARMING"]

_ENV_ON = os.environ.get("ANIMKIT_JIT", "1").strip() != "0"
_NUMBA_FOUND = importlib.util.find_spec("numba") is not None
_WANTED = _ENV_ON and _NUMBA_FOUND
_njit: Any = None
_loaded = False
#: held while numba is imported and while a kernel compiles (or loads) and makes its first call: threads that
#: reach a kernel at once compile it once, and never see numba half-imported or another kernel's SLP setting
_COMPILE = threading.RLock()

ENABLED = _WANTED
_fell_back = False  # numba turned itself off (cannot cache or compile here): ahead-of-time code still runs
#: Whether a kernel has run in this process: numba's compiler is then up, and a cached kernel loads in milliseconds
#: (:func:`pays` reads it; tests set it).
WARM = False
# Tests set ALWAYS so that kernels run whatever the work size (also ANIMKIT_JIT=always).
ALWAYS = os.environ.get("ANIMKIT_JIT", "").strip().lower() == "always"


def _numba_njit() -> Any:
    """numba.njit, imported once; None when the import fails or numba cannot cache here (warned once)."""
    global _njit, _loaded
    if _loaded:
        return _njit
    with _COMPILE:
        if not _loaded:
            try:
                from numba import njit as _njit
            except ImportError:  # pragma: no cover - numba is declared; a platform without its wheels runs NumPy
                _njit = None
            else:
                _plain_slice_errors()
                from animkit import jit_link

                jit_link.install()
                try:  # numba looks for a cache folder when a cached function is declared: probe it once
                    _njit(cache=True)(_probe)
                except Exception as exc:  # noqa: BLE001 - numba raises RuntimeError, OSError...; any: "cannot"
                    _fall_back(f"numba cannot cache compiled code here ({exc})")
                    _njit = None
            _loaded = True
    return _njit


def read_only(a: Any) -> Any:
    """A read-only view of ``a``: a kernel's signature is the same whether its caller's array is writable or not
    (numba types a read-only array apart, so each mix of the two compiled the kernel again)."""
    view = a.view()
    view.flags.writeable = False
    return view


def _plain_argument_types(dispatcher: Any) -> Any:
    """sig(f(c)) = f's signature for type(c), not Literal[c]: a kernel calling another with a constant argument (a
    ``0``, a ``True``) would otherwise compile a copy of the callee for that literal beside the one for its type
    (numba types a constant as its literal and compiles the callee for the types it is called with). On the test
    suite's empty cache that was 12 callees compiled twice (``tests/test_jit.py``). The callee's code is the same
    either way: its arguments are values at run time, and a branch on one is still taken at run time."""
    from numba.core.types import unliteral

    typed = dispatcher.get_call_template

    def get_call_template(args: tuple[Any, ...], kws: dict[str, Any]) -> Any:
        return typed(tuple(unliteral(a) for a in args), {k: unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


def _plain_slice_errors() -> bool:
    """Compile ``a[idx] = b``'s shape check with numba's plain message (its "generic" target's: ``ValueError("cannot
    assign slice from input of different size")``) instead of its CPU one, which formats both shapes as text at run
    time (numba ≥ 0.58, numba/numba#9076): that formatting (``str.join`` of ``str(int)``s) is compiled, and linked
    into every kernel that assigns a slice from an array, once per number of dimensions: about 6 s of CPU for a
    one-line kernel's first 1-D assignment here, 2 s with the plain one (``tests/test_jit.py``). Only the message
    of an error the kernels never raise (their shapes agree by construction) changes. Returns whether numba's
    overload was found and swapped (False on a numba without it: nothing to do)."""
    try:
        from numba.core.registry import cpu_target
        from numba.np import arrayobj
    except ImportError:  # pragma: no cover - a numba whose layout differs: keep its message
        return False
    plain = getattr(arrayobj, "ol_raise_with_shape_context_generic", None)
    verbose = getattr(arrayobj, "ol_raise_with_shape_context_cpu", None)
    if plain is None or verbose is None:
        return False
    swapped = False
    typing = cpu_target.typing_context
    typing.refresh()  # numba's overloads registered (what its first compile does anyway)
    for template in typing.resolve_value_type(arrayobj.raise_with_shape_context).templates:
        if getattr(template, "_overload_func", None) is verbose:
            template._overload_func = plain
            swapped = True
        elif getattr(template, "_overload_func", None) is plain:
            swapped = True  # swapped before (a second call)
    return swapped


def _probe() -> int:  # pragma: no cover - compiled only to find numba's cache folder
    return 0


def _fall_back(reason: str) -> None:
    """Turn numba's kernels off for this process and say so once (a warning). :data:`ENABLED` is left as it is: it
    stays the switch tests use, so ahead-of-time code (which did not fail) still follows it."""
    global _fell_back
    if ENABLED and not _fell_back:
        import warnings

        warnings.warn(f"{reason}; using the NumPy paths instead (set NUMBA_CACHE_DIR to a writable folder, or "
                      f"ANIMKIT_JIT=0 to silence this)", RuntimeWarning, stacklevel=3)
    _fell_back = True


class Kernel:
    """``fn`` compiled by numba at its first call, with the kernels it calls (``calls``) compiled first and bound
    in a private copy of ``fn``'s globals (its module keeps its own names)."""

    def __init__(self, fn: Callable[..., Any], calls: Sequence[Kernel] = (), error_model: str = "python",
                 slp: bool = False, internal: bool = False, refcounts: bool = True) -> None:
        self.fn = fn
        self.internal = internal
        self.refcounts = refcounts
        self.calls = tuple(calls)
        self.error_model = error_model
        self.slp = slp
        self._compiled: Callable[..., Any] | None = None
        self._inner: Callable[..., Any] | None = None  # the entry-less copy other kernels bind (:meth:`inner`)
        self._ready = False  # compiled and called once without error
        self.declined = 0.0  # work :func:`pays` has sent to the NumPy path (callers that give it a warm size)
        self._on_disk: bool | None = None
        #: seconds its first call took in this process: compiling (with the kernels it calls), or loading numba's cache
        self.first_call_s: float | None = None
        functools.update_wrapper(self, fn)
        self.serial = next(_SERIAL)  # the order kernels are made in
        _KERNELS.add(self)

    @property
    def key(self) -> str:
        """``module:qualname`` of its Python function: the name :func:`signatures` writes and :func:`warm` reads."""
        return f"{self.fn.__module__}:{self.fn.__qualname__}"

    def compiled(self) -> Callable[..., Any]:
        """The numba dispatcher (compiled, or loaded from numba's disk cache, at the first call)."""
        if self._compiled is not None:
            return self._compiled
        with _COMPILE:
            return self._compile()

    def inner(self) -> Callable[..., Any]:
        """The dispatcher other kernels bind when they call this one: compiled without numba's Python and C entry
        points (as ``internal=True`` kernels always are), since a caller links and optimises again all the code of
        the kernels it calls, their argument unboxing included. A kernel also called from Python compiles once for
        each use; its own cache files (a name with ``__inner``), so neither loads the other's code."""
        if self.internal:
            return self.compiled()
        if self._inner is not None:
            return self._inner
        with _COMPILE:
            if self._inner is None:
                self._inner = self._dispatcher(entry=False)
            return self._inner

    def _compile(self) -> Callable[..., Any]:
        if self._compiled is None:
            self._compiled = self._dispatcher(entry=not self.internal)
        return self._compiled

    def _dispatcher(self, entry: bool) -> Callable[..., Any]:
        njit = _numba_njit()
        if njit is None:
            raise RuntimeError(f"{self.fn.__name__}: numba is not importable; check animkit.jit.enabled() first")
        named = {k.fn.__name__: k for k in self.calls}
        for name in self.fn.__code__.co_names:  # an unnamed kernel would reach numba as a Python object
            if isinstance(self.fn.__globals__.get(name), Kernel) and name not in named:
                raise RuntimeError(f"kernel {self.fn.__name__} calls kernel {name}: list it in calls=")
        scope = dict(self.fn.__globals__)
        scope.update({name: k.inner() for name, k in named.items()})
        fn = types.FunctionType(self.fn.__code__, scope, self.fn.__name__, self.fn.__defaults__,
                                self.fn.__closure__)
        # numba names its cache files after the qualified name: the entry-less copy keeps its own
        fn.__qualname__ = self.fn.__qualname__ if entry or self.internal else f"{self.fn.__qualname__}__inner"
        fn.__module__ = self.fn.__module__
        wrappers: dict[str, bool] = {} if entry else {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
        if not (entry or self.refcounts):
            wrappers["_nrt"] = False  # kernel(refcounts=False): no reference counts in the copy kernels call
        if not entry:
            from animkit import jit_link

            jit_link.EXTERN[fn.__qualname__] = self.inner
        return _plain_argument_types(njit(cache=True, nogil=True, error_model=self.error_model, **wrappers)(fn))

    def __call__(self, *args: Any) -> Any:
        if self.internal:  # no Python entry: reached from Python only where numba fell back mid-call
            return self.fn(*args)
        if self._ready:
            return self._compiled(*args)  # type: ignore[misc]
        with _COMPILE:
            return self._first_call(args)

    def _first_call(self, args: tuple[Any, ...]) -> Any:
        if self._ready:
            return self._compiled(*args)  # type: ignore[misc]
        if WARMING is not None:  # another process is compiling it now: wait, then load it from disk
            WARMING.wait(self.key)
        dispatcher = self.compiled()  # a kernel wired wrongly fails here, loudly: that is a bug, not the platform
        start = time.perf_counter()
        try:  # the first call compiles (or loads numba's cache): a failure there must not block use
            with _slp(self.slp):
                out = dispatcher(*args)
        except Exception as exc:  # noqa: BLE001 - numba's errors have many types
            _fall_back(f"numba could not compile {self.fn.__name__} ({type(exc).__name__}: "
                       f"{str(exc).splitlines()[0] if str(exc) else ''})")
            return self.fn(*args)  # this once, as plain Python; callers see enabled() False from now on
        self._ready = True
        self.first_call_s = time.perf_counter() - start
        global WARM
        WARM = True
        return out

    @property
    def ready(self) -> bool:
        """Whether this process has compiled (or loaded) the kernel already."""
        return self._compiled is not None

    def on_disk(self) -> bool:
        """Whether numba's disk cache holds a compiled version of this kernel's current source (so running it
        costs loading, not compiling). Asks numba's cache index once; False when that cannot be read."""
        if self._on_disk is None:
            try:
                dispatcher: Any = self.compiled()
                self._on_disk = bool(dispatcher._cache._cache_file._load_index())
            except Exception:  # noqa: BLE001 - numba's cache internals: any failure means "do not count on it"
                self._on_disk = False
        return self._on_disk


_KERNELS: weakref.WeakSet[Kernel] = weakref.WeakSet()  # every kernel made in this process (signatures, warm)
_SERIAL = itertools.count()


def ready() -> set[str]:
    """The keys (``module:qualname``) of the kernels this process has compiled or loaded so far (tests/conftest.py
    names, per test, the kernels each test was the first to call)."""
    return {k.key for k in list(_KERNELS) if k._ready}


def signatures(prefix: str = "animkit.") -> list[str]:
    """``key<TAB>seconds<TAB>signature<TAB>text``, one line per signature numba compiled for each kernel this process
    has called from Python (kernels whose module starts with ``prefix``; seconds: its first call's, see
    :attr:`Kernel.first_call_s`; the signature as numba's types pickled, base64; the text for people). The lines
    :func:`warm` reads: tests/conftest.py records the suite's."""
    import base64
    import pickle

    lines = []
    for k in list(_KERNELS):
        if k.internal or not k._ready or not k.fn.__module__.startswith(prefix):
            continue
        for sig in k.compiled().signatures:  # type: ignore[attr-defined]
            packed = base64.b64encode(pickle.dumps(tuple(sig))).decode()
            lines.append(f"{k.key}\t{k.first_call_s or 0.0:.2f}\t{packed}\t{' '.join(str(sig).split())}")
    return sorted(lines)


def warm(lines: Iterable[str], part: int = 0, parts: int = 1, shared: str | os.PathLike[str] | None = None,
         log: Callable[[str, float], None] | None = None) -> tuple[int, int]:
    """Compile the kernels of ``key<TAB>seconds<TAB>signature…`` lines (:func:`signatures`'s) for their signatures
    now, onto numba's disk cache (or load them from there): processes that then call them load them in
    milliseconds. Kernels that call the same heavy kernels form one group (none compiles anything twice,
    :func:`_groups`). ``parts`` processes each calling ``warm(lines, part, parts)`` share the groups, dealt
    heaviest first to the part with the least weight so far. With ``shared`` (a folder), they instead take the
    groups one at a time, heaviest first, each claiming its next group there (:class:`Warming`), and mark each
    kernel ready there once compiled: a process that waits on that folder (:data:`WARMING`) waits only for the
    kernels it reaches. Returns (signatures ready, lines skipped): a line naming a kernel that no longer exists,
    or a signature it no longer compiles for, is skipped (that kernel compiles at its first call, as it would
    have anyway; part 0 counts the lines naming no kernel). ``log(key, seconds)``, if given, hears each kernel's
    CPU seconds (this process's) as it is done."""
    if not enabled():
        return 0, 0
    rows = _rows(lines)
    found = _kernels_named({row[0] for row in rows})
    weight = {row[0]: float(row[1]) for row in rows}
    groups = _groups(found, weight)
    if shared is None:
        load = [0.0] * parts
        dealt: list[set[str]] = [set() for _ in range(parts)]
        for g in groups:
            i = load.index(min(load))
            dealt[i] |= g
            load[i] += sum(weight.get(key, 0.0) for key in g)
        done, skipped = _compile_rows(rows, found, dealt[part], log=log)
    else:
        done = skipped = 0
        for g in groups:
            if Warming.claim(Path(shared), g):
                counts = _compile_rows(rows, found, g, Path(shared), log)
                done, skipped = done + counts[0], skipped + counts[1]
    stale = sum(1 for row in rows if row[0] not in found) if part == 0 else 0
    return done, skipped + stale


def _rows(lines: Iterable[str]) -> list[list[str]]:
    """key, weight and the pickled signature of each :func:`signatures` line (comments and blank lines left out)."""
    return [line.rstrip("\n").split("\t")[:3] for line in lines if line.strip() and not line.startswith("#")]


def _compile_rows(rows: list[list[str]], found: dict[str, Kernel], keys: set[str], ready: Path | None = None,
                  log: Callable[[str, float], None] | None = None) -> tuple[int, int]:
    """Compile the signatures of ``rows`` whose kernels are in ``keys`` (internal ones compile with their callers);
    with ``ready``, mark each kernel there (``ready.<key>``) once its lines are done, compiled or not; ``log``: as
    :func:`warm`'s."""
    import base64
    import pickle

    done = skipped = 0
    order = [row[0] for row in rows]
    weight = {row[0]: float(row[1]) for row in rows}
    for key in sorted(keys, key=lambda key: (-weight[key], order.index(key))):  # the heaviest (most reached) first
        start = time.process_time()
        for _, _, sig_text in (row for row in rows if row[0] == key and not found[key].internal):
            try:
                k = found[key]
                sig = pickle.loads(base64.b64decode(sig_text))  # noqa: S301 - the file signatures() wrote
                with _COMPILE, _slp(k.slp):
                    k.compiled().compile(sig)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - a stale line (changed types): compiled when first called
                skipped += 1
            else:
                done += 1
        if log is not None:
            log(key, time.process_time() - start)
        if ready is not None:
            (ready / f"ready.{key}").touch()
    return done, skipped


def _kernels_named(keys: set[str]) -> dict[str, Kernel]:
    """The kernels of these ``module:qualname`` keys whose modules import (missing ones left out; where a key has
    several kernels, the one made first, its module's)."""
    import importlib

    for module in sorted({key.partition(":")[0] for key in keys}):
        with contextlib.suppress(Exception):  # a module renamed or gone: its lines are stale
            importlib.import_module(module)
    named: dict[str, Kernel] = {}
    for k in sorted(_KERNELS, key=lambda k: k.serial):
        if k.key in keys:
            named.setdefault(k.key, k)
    return named


def _groups(kernels: dict[str, Kernel], weight: dict[str, float]) -> list[set[str]]:
    """The keys in groups, heaviest first: a kernel goes with the kernels it calls, directly or not, that are heavy
    (weighing at least a fifth of the heaviest) or have no weight of their own (no line: compiled only inside their
    callers, so two kernels calling the same such kernel, as FABRIK's ``step_one`` and ``solve_all`` call ``_step``,
    go together). Compiling them twice at once, in two processes, would cost more than unbalanced groups."""
    heavy = 0.2 * max(weight.values(), default=0.0)
    parent: dict[str, str] = {}  # union-find over keys

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for key, k in kernels.items():
        todo, seen = list(k.calls), set()
        while todo:
            c = todo.pop()
            if c.key not in seen:
                seen.add(c.key)
                todo.extend(c.calls)
                if c.key not in weight or weight[c.key] >= heavy:
                    parent[root(c.key)] = root(key)
    groups: dict[str, set[str]] = {}
    for key in kernels:
        groups.setdefault(root(key), set()).add(key)
    return sorted(groups.values(), key=lambda g: (-sum(weight.get(key, 0.0) for key in g), sorted(g)))


class Warming:
    """Kernels that other processes are compiling now (``warm(lines, part, processes, shared=folder)``): set as
    :data:`WARMING`, a kernel of ``lines`` waits at its first call in this process until it is marked ready in
    ``folder`` (then loads from disk in milliseconds) instead of compiling it a second time at once. A group of
    kernels that no process has claimed yet, this process claims and compiles itself (it would only wait
    otherwise). No wait once every warming process has ended (``<i>.done`` in ``folder``) or once this process has
    waited ``timeout`` seconds in all. ``waited``: seconds this process waited; ``compiled``: the signatures it
    compiled itself."""

    def __init__(self, folder: str | os.PathLike[str], lines: Iterable[str], processes: int,
                 timeout: float = 900.0) -> None:
        self.folder, self.processes, self.timeout = Path(folder), processes, timeout
        self.rows = _rows(lines)
        self.keys = {row[0] for row in self.rows}
        self.waited = 0.0
        self.compiled = 0
        self._groups: list[set[str]] | None = None

    @staticmethod
    def claim(folder: Path, group: set[str]) -> bool:
        """Whether this process is the first to claim ``group`` in ``folder`` (an exclusively created file)."""
        try:
            os.close(os.open(folder / f"claim.{min(group)}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            return False
        return True

    def ended(self) -> bool:
        """Whether every warming process has ended."""
        return all((self.folder / f"{i}.done").exists() for i in range(self.processes))

    def wait(self, key: str) -> None:
        """Return once kernel ``key`` is ready on disk (compiling its group here if no process has claimed it)."""
        if key not in self.keys or (self.folder / f"ready.{key}").exists() or self.ended():
            return
        if self._groups is None:
            found = _kernels_named(self.keys)
            self._groups = _groups(found, {row[0]: float(row[1]) for row in self.rows})
        group = next((g for g in self._groups if key in g), None)
        if group is not None and self.claim(self.folder, group):
            self.compiled += _compile_rows(self.rows, _kernels_named(group), group, self.folder)[0]
            return
        start = time.perf_counter()
        while not ((self.folder / f"ready.{key}").exists() or self.ended()
                   or self.waited + time.perf_counter() - start > self.timeout):
            time.sleep(0.05)
        self.waited += time.perf_counter() - start


#: Set (tests/conftest.py does, in pytest-xdist's workers) while other processes compile kernels: see :class:`Warming`.
WARMING: Warming | None = None


@contextlib.contextmanager
def _slp(on: bool) -> Iterator[None]:
    """LLVM's SLP vectoriser on while numba compiles (NUMBA_SLP_VECTORIZE, off by default in numba): it packs the
    independent, adjacent scalar operations of straight-line code into vector instructions, without reordering any
    floating-point operation (the same bits)."""
    if not on:
        yield
        return
    from numba.core import config

    old = getattr(config, "SLP_VECTORIZE", 0)
    setattr(config, "SLP_VECTORIZE", 1)  # noqa: B010 - numba's config module is typed without its settings
    try:
        yield
    finally:
        setattr(config, "SLP_VECTORIZE", old)  # noqa: B010


def kernel(fn: Callable[..., Any], *, calls: Sequence[Callable[..., Any]] = (), error_model: str = "python",
           slp: bool = False, internal: bool = False, refcounts: bool = True) -> Callable[..., Any] | None:
    """``fn`` as a lazily compiled numba kernel, or None when numba is off (ANIMKIT_JIT=0) or not installed.

    ``calls``: the kernels ``fn`` calls (plain functions in the list, where numba is off, are ignored).
    ``error_model``: numba's; "numpy" lets a float division by zero give inf/NaN instead of raising, which is what
    lets LLVM vectorise loops that divide (the check and its raise path block it). ``slp``: compile with LLVM's
    SLP vectoriser (see :func:`_slp`; for kernels written as groups of adjacent independent operations).
    ``internal``: a helper only other kernels call: compiled without numba's Python and C entry points (their
    argument unboxing is code that every caller would link and optimise again: about a quarter of a call tree's
    compile time); called from Python, it runs as plain Python.
    ``refcounts=False``: the copy other kernels call (:meth:`Kernel.inner`) is compiled without numba's reference
    counts (its ``_nrt=False``): no atomic increment and decrement of each array it takes out of a record, slices or
    passes on. Only for a helper that allocates nothing and returns no array (its callers own every array it
    sees); in FABRIK's step those counts were ~60 % of the time (perf: ``NRT_incref``/``NRT_decref``).
    """
    if not _WANTED:
        return None
    return Kernel(fn, [c for c in calls if isinstance(c, Kernel)], error_model, slp, internal, refcounts)


def enabled() -> bool:
    """Whether compiled kernels run now (numba importable and working here, ANIMKIT_JIT not "0", :data:`ENABLED`
    not cleared)."""
    return ENABLED and _WANTED and not _fell_back and _numba_njit() is not None


def native() -> bool:
    """Whether code compiled ahead of time (the C extensions built at install) may run: ANIMKIT_JIT is not "0"
    and :data:`ENABLED` has not been cleared (tests clear it to run the NumPy paths). Where numba is missing, or
    cannot cache or compile here, the ahead-of-time code still runs."""
    return _ENV_ON and (ENABLED or not _WANTED)


def native_kernels() -> Any:
    """The kernels compiled ahead of time at install (the C extension ``animkit._native``: the BVH scanner and
    forward kinematics), or None where it was not built (no C compiler) or :func:`native` says no."""
    global _native_module
    if not native():
        return None
    if _native_module is False:
        try:
            _native_module = importlib.import_module(f"{__package__}._native")
        except ImportError:
            _native_module = None
    return _native_module


_native_module: Any = False  # not looked for yet


def pays(fn: Callable[..., Any] | None, work: float, threshold: float, warm: float | None = None) -> bool:
    """Whether to run the kernel ``fn`` on ``work`` units: kernels are on and either ``fn`` is ready in this process
    (nothing left to pay) or ``work`` ≥ ``threshold``, the size from which the compiled path beats NumPy with
    numba's start-up and the kernel's loading (0.5–1 s a process when cached, a second or two more to compile on
    an empty cache) counted in. Each caller measures its thresholds and says so beside them.

    With ``warm`` (the work whose NumPy time repays loading one cached kernel once numba is up, a few
    milliseconds), the work sent to NumPy is also added up, ski-rental style, so a process making many small
    calls switches once it has paid NumPy's extra cost about once over: when that sum reaches ``threshold``, or,
    once another kernel has run in this process and ``fn`` is in numba's disk cache, ``warm``.
    """
    if fn is None or not (ENABLED and _WANTED) or _fell_back:
        return False
    if (isinstance(fn, Kernel) and fn.ready) or ALWAYS:
        return enabled()
    if work >= threshold:
        return enabled()
    if warm is None or not isinstance(fn, Kernel):
        return False
    fn.declined += work
    if fn.declined >= threshold:
        return enabled()
    return WARM and fn.declined >= warm and fn.on_disk() and enabled()
