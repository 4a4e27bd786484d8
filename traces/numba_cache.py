"""Whether numba's on-disk cache holds a module's kernels for this machine, or their first
call will compile them (tens of seconds on two cores: `placement import accelsim` took
32.8 s wall the first time after an install without the cache, 1.3 s afterwards).

A ``numba.njit(cache=True)`` function keeps one index file per function (``NAME-LINE.pyXY.nbi``,
in the module's ``__pycache__``, ``NUMBA_CACHE_DIR`` or the user's cache folder, wherever numba's
own locator puts it), valid for one numba version and one content of the source file, whose
entries are keyed on the signature, the CPU (``codegen.magic_tuple()``: triple, CPU name and
features) and the function's bytecode. :func:`cold_modules` asks each function's own cache for
its index (numba's ``_load_index``, which returns nothing for a missing, stale or
other-version index) and looks for an entry of this CPU and bytecode: no file is written and
nothing is compiled; the modules are imported (the command that asks imports them anyway).

A module is cold when none of its cached functions has such an entry (a fresh install
without the wheel's cache, another CPU than the wheel was built on, an edited source): that
is the case worth a word. A module of which some functions are cached and others not (a
command that uses kernels no earlier one did) reads as warm: those compile silently, as
they always did. The check relies on numba internals (``Dispatcher._cache``); anything
unexpected makes a module read as warm, never fail the command.

And what keeps that cache honest: numba checks only a kernel's own file, so each module of cached kernels
that imports the project's modules carries a digest of their sources (:func:`deps_digest`, written by
``python -m traces.numba_cache --write``; see the comment above :data:`PACKAGES`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import logging
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)


def _usable(dispatcher) -> bool | None:
    """Whether ``dispatcher``'s cache has an entry for this CPU and its bytecode; None when it
    is not a cached function (no opinion)."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None:  # cache=False: numba's NullCache
        return None
    overloads = cache_file._load_index()
    if not overloads:
        return False
    magic = dispatcher.targetctx.codegen().magic_tuple()
    code = hashlib.sha256(dispatcher.py_func.__code__.co_code).hexdigest()
    return any(len(key) == 3 and key[1] == magic and key[2][0] == code for key in overloads)


def cold_modules(names: Iterable[str]) -> list[str]:
    """The modules among ``names`` (dotted names) whose cached kernels have no usable entry in
    numba's cache: their first call compiles them. Empty when numba is not there or jitting is
    off (``NUMBA_DISABLE_JIT``)."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # pragma: no cover - numba is a dependency
        return []
    cold = []
    for name in names:
        try:
            mod = importlib.import_module(name)
            verdicts = [_usable(v) for v in vars(mod).values()
                        if isinstance(v, Dispatcher) and getattr(v.py_func, "__module__", None) == name]  # fmt: skip
        except Exception as exc:  # numba internals changed: no opinion
            log.debug("numba cache of %s not inspected: %r", name, exc)
            continue
        verdicts = [v for v in verdicts if v is not None]
        if verdicts and not any(verdicts):
            cold.append(name)
    log.debug("numba cache cold for %s", cold or "none of the modules")
    return cold


@contextmanager
def on_first_compile(packages: Iterable[str], say: Callable[[], None]) -> Iterator[None]:
    """Within the block, call ``say`` once, when numba starts compiling a kernel of a module of
    ``packages`` (dotted names: a package and the modules under it); not at all when none is
    compiled (all loaded from the cache) or the block ends first (an input error found before
    any kernel runs).

    numba fires its ``"numba:compile"`` event only on a cache miss, just before it compiles
    (``Dispatcher.compile``, after ``_cache.load_overload`` found nothing), with the dispatcher in
    the event's data; a kernel compiled as another's callee is inside that one's event. Without
    numba's event module (internals changed) nothing is said, and the block runs as before."""
    prefixes = tuple(packages)
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - numba is a dependency
        yield
        return

    class _Watch(event.Listener):
        said = False

        def on_start(self, ev) -> None:
            dispatcher = (ev.data or {}).get("dispatcher")
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
            if not self.said and any(module == p or module.startswith(p + ".") for p in prefixes):
                self.said = True
                say()

        def on_end(self, ev) -> None:
            pass

    watch = _Watch()
    event.register("numba:compile", watch)
    try:
        yield
    finally:
        event.unregister("numba:compile", watch)


# numba's cache knows one file per kernel: "changes in symbols defined in another file are not detected" and
# "global variables are treated as constants" (numba's developer notes, "Notes on Caching", its limitations;
# numba's pull requests 8396 and 9563, which would follow other files, were not merged). A kernel that calls
# a kernel of another module, or reads a constant of ``traces.codes``, keeps its compiled code when only that
# other file changes (a `git pull` of an editable install, a developer's edit): a stale constant gives wrong
# numbers silently, a helper whose arguments changed can crash the process. So every module of cached kernels
# that imports the project's modules carries, in its own source, a digest of their code (DIGEST_NAME): when
# one of them changes, so does the digest line, so does the module's file, and numba compiles it anew.
# tests/test_numba_cache.py checks the digests; ``python -m traces.numba_cache --write`` writes them.

PACKAGES = ("traces", "cachesim", "placement")
"""The project's packages: the imports a digest follows."""
DIGEST_NAME = "NUMBA_DEPS"
"""The module-level name of a kernel module's digest of its imports' sources."""
DIGEST_COMMENT = "  # its imports' sources, for numba's cache (traces.numba_cache)"
_DIGEST_LINE = re.compile(rf"^{DIGEST_NAME} = .*\n?", re.MULTILINE)


def _module_path(root: Path, name: str) -> Path | None:
    """The source file of dotted module ``name`` under ``root``, None when it is not a file there."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(root: Path, name: str) -> set[str]:
    """The project modules (of PACKAGES, files under ``root``) that module ``name`` imports directly: a name
    imported from a package that is a module of its own counts as that module, not as the package."""
    path = _module_path(root, name)
    if path is None:
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(up + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] not in PACKAGES:
                continue
            subs = {f"{module}.{a.name}" for a in node.names if _module_path(root, f"{module}.{a.name}")}
            found |= subs
            if len(subs) < len(node.names):  # names defined in the module itself
                found.add(module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
    return {m for m in found if m != name and _module_path(root, m)}


def dependencies(root: Path, name: str) -> list[str]:
    """Every project module ``name`` imports, directly or through another, sorted; not ``name`` itself."""
    seen: set[str] = set()
    todo = sorted(project_imports(root, name))
    while todo:
        module = todo.pop()
        if module not in seen and module != name:
            seen.add(module)
            todo.extend(project_imports(root, module))
    return sorted(seen)


def _code(path: Path) -> str:
    """A module's source without its digest line and without blank lines: the digest line is left out because
    modules that import each other would otherwise chase each other's digests, the blank lines because writing
    a digest adds one. (Not the syntax tree: ``ast.dump`` differs between Python versions.)"""
    lines = _DIGEST_LINE.sub("", path.read_text(encoding="utf-8")).splitlines()
    return "\n".join(line for line in lines if line.strip())


def deps_digest(root: Path, name: str) -> str:
    """SHA-256 (first 16 hex digits) of the sources (:func:`_code`) of :func:`dependencies` of ``name``."""
    h = hashlib.sha256()
    for module in dependencies(root, name):
        code = _code(_module_path(root, module))
        h.update(f"{module}\n{len(code)}\n{code}".encode())
    return h.hexdigest()[:16]


def _cached_kernels(tree: ast.Module) -> bool:
    """Whether a module defines a function under a numba decorator that caches (``cache=True``, or keywords
    passed on as ``**LEAF``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and _callee(dec.func) in NUMBA_DECORATORS):
                    continue
                if any((k.arg == "cache" and isinstance(k.value, ast.Constant) and k.value.value is True)
                       or k.arg is None for k in dec.keywords):  # fmt: skip
                    return True
    return False


NUMBA_DECORATORS = ("jit", "njit", "vectorize", "guvectorize", "cfunc")
"""The numba decorators whose ``cache=True`` writes an on-disk cache."""


def _callee(func: ast.expr) -> str:
    """The last name of a decorator's callee (``numba.njit`` and ``nb.njit``: "njit")."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def kernel_modules(root: Path) -> list[str]:
    """The modules under ``root``'s PACKAGES that define cached numba kernels and import project modules."""
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name = _module_name(root, path)
            # a module that imports a project module has dependencies (the direct ones suffice to tell)
            if _cached_kernels(ast.parse(path.read_text(encoding="utf-8"), str(path))) and project_imports(root, name):
                out.append(name)
    return out


def written_digest(root: Path, name: str) -> str | None:
    """The digest module ``name``'s source carries (its DIGEST_NAME line), None where it has none."""
    m = re.search(rf'^{DIGEST_NAME} = "([0-9a-f]*)"', _module_path(root, name).read_text(encoding="utf-8"), re.M)
    return m.group(1) if m else None


def stale_digests(root: Path) -> list[str]:
    """The kernel modules whose written digest is missing or not their dependencies' (:func:`deps_digest`)."""
    return [name for name in kernel_modules(root) if written_digest(root, name) != deps_digest(root, name)]


def write_digests(root: Path) -> list[str]:
    """Writes the digest line of every stale kernel module (after its last top-level import where it has none);
    returns the modules written."""
    written = []
    for name in stale_digests(root):
        path = _module_path(root, name)
        text = path.read_text(encoding="utf-8")
        line = f'{DIGEST_NAME} = "{deps_digest(root, name)}"{DIGEST_COMMENT}\n'
        if _DIGEST_LINE.search(text):
            text = _DIGEST_LINE.sub(line, text, count=1)
        else:
            tree = ast.parse(text, str(path))
            last = max(n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
            lines = text.splitlines(keepends=True)
            text = "".join(lines[:last]) + "\n" + line + "".join(lines[last:])
        path.write_text(text, encoding="utf-8")
        written.append(name)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m traces.numba_cache [--write] [ROOT]``: lists the kernel modules whose digest is stale (exit
    1 where any is), or writes them."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m traces.numba_cache", description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="write the stale digests")
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not any((root / package).is_dir() for package in PACKAGES):
        print(f"{root}: no {', '.join(PACKAGES)} folder: not the project's root", file=sys.stderr)
        return 2
    try:
        if args.write:
            for name in write_digests(root):
                print(f"wrote {DIGEST_NAME} of {name}")
            return 0
        stale = stale_digests(root)
    except SyntaxError as exc:  # a module being edited: say where, as the CLI does
        print(f"{exc.filename} line {exc.lineno}: {exc.msg}", file=sys.stderr)
        return 2
    for name in stale:
        print(f"{name}: {DIGEST_NAME} is stale; run python -m traces.numba_cache --write")
    return 1 if stale else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
