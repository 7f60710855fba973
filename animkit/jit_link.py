"""A compiled kernel calls the big kernels it uses by their symbol instead of linking a copy of them.

numba links into each function it compiles a copy of every function that one calls (the whole call tree, as LLVM
IR), then optimises the result and emits its machine code again: a kernel of the LM strategy four levels above the
LM step optimised and emitted that step at every level (``_lm_packed``'s compile: 37 of its 50 s of CPU in linking,
optimising and emitting; ``docs/testing.md``). ``install()`` changes that for the kernels listed in
:data:`EXTERN` (``animkit.jit``'s entry-less copies of kernels that other kernels call, when big enough:
:data:`MIN_INSTRUCTIONS`): a caller links only their declarations, so its call is a call to the symbol that the
callee's own compiled library has already defined in numba's JIT engine. Nothing is inlined across that boundary,
which is why only kernels whose body dwarfs a call are listed.

A caller loaded from numba's disk cache refers to its callees' symbols, so before its object code is loaded, the
callees' cached versions are loaded (:func:`_define`); if a symbol is still missing (the callee's source changed
since, so its cached code was dropped), the caller's cache entry counts as a miss and it is compiled again, never
loaded with a symbol the engine cannot resolve (LLVM would end the process).

Only numba's internals as of 0.68 (checked on 0.68.1) are touched; where they differ, ``install`` does nothing and
every call links a copy, as numba does by default.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable
from typing import Any

__all__ = ["EXTERN", "install", "StaleLink"]

#: qualified name of a kernel that may be linked by its symbol -> a function returning the dispatcher that defines it
EXTERN: dict[str, Callable[[], Any]] = {}
#: a listed kernel is linked by its symbol when its own optimised code has at least this many LLVM instructions
#: (smaller ones are copied, so they inline: at 150, FABRIK's per-joint helpers became calls and its solve took
#: about a quarter longer against LM's; docs/testing.md);
#: ``ANIMKIT_JIT_LINK=copy`` copies every one, as numba does by default (for an A/B of the two)
MIN_INSTRUCTIONS = math.inf if os.environ.get("ANIMKIT_JIT_LINK", "").strip().lower() == "copy" else 1000

_installed: bool | None = None


class StaleLink(Exception):
    """A cached kernel calls a symbol that no loaded or cached callee defines (the callee changed since)."""


def token(qualname: str) -> str:
    """The part of numba's mangled symbol that names the function ``qualname`` (``_ZN…<len><name>B…``)."""
    name = qualname.rsplit(".", 1)[-1]
    return f"{len(name)}{name}B"


def _tokens() -> list[str]:
    return [token(q) for q in EXTERN]


def install() -> bool:
    """Link :data:`EXTERN`'s kernels into their callers as declarations (see the module's docstring). Returns
    whether numba's hooks were found and replaced (idempotent)."""
    global _installed
    if _installed is not None:
        return _installed
    _installed = False
    try:
        import llvmlite.binding as ll
        from numba.core import caching, codegen
        from numba.core.compiler_lock import require_global_compiler_lock
    except ImportError:  # pragma: no cover - numba missing: nothing is compiled
        return False
    library = codegen.CPUCodeLibrary
    needed = ("_linking_libraries", "_get_module_for_linking", "_optimize_final_module", "_finalize_final_module",
              "_raise_if_finalized", "enable_object_caching", "_set_compiled_object")
    if not all(hasattr(library, n) or n.startswith("_linking") for n in needed) or not hasattr(
            caching.CompileResultCacheImpl, "rebuild") or not hasattr(codegen.JITCodeLibrary, "_unserialize"):
        return False  # pragma: no cover - another numba layout: keep its linking

    def for_linking(lib: Any) -> Any:
        """The module ``lib`` contributes to a caller: its own code, or only its declarations if listed."""
        if lib.name.rsplit(".", 1)[-1] not in {q.rsplit(".", 1)[-1] for q in EXTERN}:
            return lib._get_module_for_linking()
        if not hasattr(lib, "_animkit_declarations"):
            lib._animkit_declarations = _declarations(ll, lib._get_module_for_linking())
        decls = lib._animkit_declarations
        return decls if decls is not None else lib._get_module_for_linking()

    def finalize(self: Any) -> None:  # numba 0.68's CPUCodeLibrary.finalize, the linking step through for_linking
        require_global_compiler_lock()
        self._codegen._check_llvm_bugs()
        self._raise_if_finalized()
        seen: set[Any] = set()
        for lib in self._linking_libraries:
            if lib not in seen:
                self._reload_init.update(lib._reload_init)
                seen.add(lib)
                self._final_module.link_in(for_linking(lib), preserve=True)
        self._optimize_final_module()
        self._final_module.verify()
        self._finalize_final_module()

    try:  # numba's classmethod, found where it is defined (CPUCodeLibrary in 0.68), the function it wraps
        base_unserialize = inspect.getattr_static(codegen.JITCodeLibrary, "_unserialize").__func__
    except AttributeError:  # pragma: no cover - another numba layout: keep its linking (nothing replaced yet)
        return False

    def unserialize(cls: Any, codegen_: Any, state: Any) -> Any:
        name, kind, data = state
        if kind == "object" and EXTERN:
            shared = ll.parse_bitcode(data[1])
            _define(codegen_._engine, [f.name for f in shared.functions if f.is_declaration])
        return base_unserialize(cls, codegen_, state)

    base_rebuild = caching.CompileResultCacheImpl.rebuild

    def rebuild(self: Any, target_context: Any, payload: Any) -> Any:
        try:
            return base_rebuild(self, target_context, payload)
        except StaleLink:
            return None  # a cache miss: numba compiles the kernel again (and saves it over the stale entry)

    setattr(library, "finalize", finalize)  # noqa: B010 - replacing numba's methods is the point
    setattr(codegen.JITCodeLibrary, "_unserialize", classmethod(unserialize))  # noqa: B010
    setattr(caching.CompileResultCacheImpl, "rebuild", rebuild)  # noqa: B010
    _installed = True
    return True


def _declarations(ll: Any, module: Any) -> Any:
    """A module declaring the functions ``module`` defines whose names carry one of :data:`EXTERN`'s tokens (its
    exported kernels); None when it defines none, when they are smaller than :data:`MIN_INSTRUCTIONS`, or when a
    declaration does not parse (then it links as a copy)."""
    lines = []
    tokens = _tokens()
    own = [fn for fn in module.functions if not fn.is_declaration and any(t in fn.name for t in tokens)]
    if sum(sum(1 for _ in block.instructions) for fn in own for block in fn.blocks) < MIN_INSTRUCTIONS:
        return None
    for fn in own:
        ret, _, args = str(fn.global_value_type).partition(" (")
        lines.append(f'declare {ret} @"{fn.name}"({args}')
    if not lines:
        return None
    try:
        decls = ll.parse_assembly("\n".join(lines))
    except RuntimeError:  # pragma: no cover - a type this text form cannot spell: link the copy
        return None
    decls.triple, decls.data_layout = module.triple, module.data_layout
    return decls


def _define(engine: Any, declared: list[str]) -> None:
    """Make every :data:`EXTERN` symbol in ``declared`` defined in numba's JIT ``engine`` by loading the cached
    versions of the kernels that define them; raise :class:`StaleLink` for one still missing."""
    tokens = _tokens()
    missing = [n for n in declared if any(t in n for t in tokens) and not engine.is_symbol_defined(n)]
    if not missing:
        return
    for qualname, dispatcher_of in list(EXTERN.items()):
        if any(token(qualname) in n for n in missing):
            _load_cached(dispatcher_of())
    still = [n for n in missing if not engine.is_symbol_defined(n)]
    if still:
        raise StaleLink(f"no kernel defines {still[0]}")


def _load_cached(dispatcher: Any) -> None:
    """Load every signature numba's disk cache holds for ``dispatcher`` (``compile`` finds it there; only an entry
    whose file cannot be read is compiled again, under new symbols, which leaves the caller a cache miss)."""
    cache = getattr(dispatcher, "_cache", None)
    if cache is None:
        return
    try:
        index = cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - an unreadable index: nothing cached
        return
    magic = dispatcher.targetctx.codegen().magic_tuple()
    for key in index:
        sig, key_magic = key[0], key[1]
        if key_magic == magic and sig not in dispatcher.overloads:
            dispatcher.compile(sig)  # in the cache: loads it
