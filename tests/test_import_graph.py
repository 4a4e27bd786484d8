"""The import graph of traces/, cachesim/ and placement/: layers and no cycles.

Every module is parsed (``ast``), and every import in it is an edge: top-level ones,
ones inside functions (a deferred import runs as surely as a top-level one, only later,
so it cannot hide a cycle) and ones under ``if TYPE_CHECKING:`` (type-only: never run).

- no cycle among placement's modules over the imports that run (top-level and
  deferred); a package's lazy re-exports (PEP 562 ``__getattr__`` of an ``__init__``:
  ``placement`` loads ``placement.api`` on first use) are left out, and so are the
  type-only imports;
- no library module imports the command line (``placement.commands``, ``placement.cli``),
  type-only imports included;
- data flows traces -> cachesim -> placement: cachesim never imports placement, traces
  never imports cachesim or placement, type-only imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("traces", "cachesim", "placement")
CLI = ("placement.commands", "placement.cli")


def _name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")  # fmt: skip


def _imports(tree: ast.Module, is_pkg: bool) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """(node, kind) for every import: kind 'top', 'deferred' (inside a function), 'typing'
    (under ``if TYPE_CHECKING:``) or 'lazy' (inside a package ``__init__``'s ``__getattr__``, PEP 562)."""
    out = []

    def visit(node: ast.AST, kind: str, parent: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, kind))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind != "typing":
            lazy = is_pkg and parent is tree and getattr(node, "name", "") == "__getattr__"
            kind = "lazy" if lazy else "deferred"
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            visit(node.test, kind, node)
            for b in node.body:
                visit(b, "typing", node)
            for b in node.orelse:
                visit(b, kind, node)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, kind, node)

    for node in tree.body:
        visit(node, "top", tree)
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[tuple[str, str]]]:
    """Module -> {(imported module, kind)} over PACKAGES' modules (imports of other packages left out).

    ``from X import Y`` is an edge to ``X.Y`` when that is a module, else to ``X``."""
    files = {_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[tuple[str, str]]] = {}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        edges = set()
        for node, kind in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), is_pkg):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in files else src for a in node.names]
            edges |= {(t, kind) for t in targets if t.split(".")[0] in PACKAGES}
        graph[mod] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _in(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_sees_every_kind_of_import(graph):
    # a top-level, a deferred, a type-only and a lazy import the code is known to hold
    assert ("placement.occupancy", "top") in graph["placement.placements"]
    assert ("placement.catalog", "deferred") in graph["placement.gpu"]
    assert ("placement.staging", "typing") in graph["placement.placements"]
    assert ("placement.api", "lazy") in graph["placement"]
    assert ("traces.staging", "top") in graph["placement.staging"]  # `from traces import staging as ts`
    assert ("placement", "top") in graph["placement.batch.results"]  # `from .. import __version__`
    assert len(graph) > 100


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_placement_modules(graph):
    runtime = {m: {t for t, k in e if k in ("top", "deferred") and _in(t, "placement")}
               for m, e in graph.items() if _in(m, "placement")}  # fmt: skip
    assert cycles(runtime) == []


def test_no_library_module_imports_the_command_line(graph):
    bad = sorted((m, t, k) for m, e in graph.items() if _in(m, "placement") and not any(_in(m, c) for c in CLI)
                 for t, k in e if any(_in(t, c) for c in CLI))  # fmt: skip
    assert bad == []


@pytest.mark.parametrize("package, forbidden", [("cachesim", ("placement",)), ("traces", ("cachesim", "placement"))])
def test_lower_layers_never_import_higher_ones(graph, package, forbidden):
    bad = sorted((m, t, k) for m, e in graph.items() if _in(m, package) for t, k in e
                 if any(_in(t, f) for f in forbidden))  # fmt: skip
    assert bad == []
