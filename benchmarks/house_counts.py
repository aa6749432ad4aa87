"""House counts of r2med's source, measured from its syntax trees (issue 35): where the code stands on the rules of
its Architecture section.

    python benchmarks/house_counts.py            # the table (the README's Architecture section quotes it)
    python benchmarks/house_counts.py --list     # every counted place, file:line, under its count

What it counts, over ``src/r2med`` (standard library only; nothing is imported from r2med):

* **family branches outside the family modules** -- a comparison (``==``, ``!=``, ``in``, ``not in``) or a
  ``startswith``/``endswith`` call one of whose sides is a family's name (``"bright"``, ``"r2med"``), a family's task
  prefix (``"bright:..."``) or a name bound to one (``BRIGHT``, ``R2MED``, ``BRIGHT_FAMILY``...), and each call of
  a name test (``is_bright``).  Family modules are those named
  after a family (``*bright*.py``) and those under a ``families/`` package;
* **``Any`` per kLOC** -- every ``Any`` name (``Any``, ``typing.Any``) per 1,000 non-blank lines;
* **in-function imports outside ``cli/`` and the heavy extras** -- ``import`` statements inside a function body, in
  modules outside ``cli/``, of anything but the optional heavy extras (torch, transformers, sentence-transformers,
  faiss, ray, openai, pyarrow, matplotlib, mteb, pyserini, peft);
* **import circles, type-only imports included** -- groups of modules that import each other through module-level
  imports (those under ``if TYPE_CHECKING:`` included; in-function imports are not: they are lazy by design);
* **imported packages not declared** -- top-level imports of third-party packages that no requirement of
  ``pyproject.toml`` (dependencies and every extra) names, mapped to their distributions through the installed
  metadata (``importlib.metadata.packages_distributions``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "r2med"
FAMILIES = ("r2med", "bright")
HEAVY = frozenset(
    "torch transformers sentence_transformers faiss ray openai pyarrow matplotlib mteb pyserini peft".split()
)


@dataclass
class Counts:
    branches: list[str] = field(default_factory=list)
    any_names: int = 0
    lines: int = 0
    inner_imports: list[str] = field(default_factory=list)
    circles: list[list[str]] = field(default_factory=list)
    undeclared: dict[str, list[str]] = field(default_factory=dict)

    @property
    def any_per_kloc(self) -> float:
        return 1000 * self.any_names / max(self.lines, 1)


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_family_module(path: Path) -> bool:
    rel = path.relative_to(PACKAGE)
    return "families" in rel.parts[:-1] or any(f in path.stem for f in FAMILIES if f != "r2med")


def _family_text(node: ast.AST) -> bool:
    """A string constant that is a family's name or a family's task prefix."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    text = node.value.strip().lower()
    return text in FAMILIES or any(text.startswith(f"{f}:") for f in FAMILIES)


def _family_name(node: ast.AST) -> bool:
    """A name bound to a family (``BRIGHT``, ``R2MED``, ``facts.FAMILY``, ``BRIGHT_FAMILY``)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if name is None or not name.isupper():
        return False
    return name == "FAMILY" or any(name.split("_")[0] == f.upper() for f in FAMILIES)


def family_branches(tree: ast.AST, where: str) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            elements = [e for s in sides if isinstance(s, ast.Tuple | ast.List | ast.Set) for e in s.elts]
            if any(_family_text(s) or _family_name(s) for s in [*sides, *elements]):
                yield f"{where}:{node.lineno}: {ast.unparse(node)[:100]}"
        elif isinstance(node, ast.Call):
            func = node.func
            prefix = isinstance(func, ast.Attribute) and func.attr in ("startswith", "endswith", "removeprefix")
            if prefix and any(_family_text(a) or _family_name(a) for a in node.args):
                yield f"{where}:{node.lineno}: {ast.unparse(node)[:100]}"
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if re.fullmatch("is_(" + "|".join(FAMILIES) + ")", name):
                yield f"{where}:{node.lineno}: {ast.unparse(node)[:100]}"


def any_names(tree: ast.AST) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any")
    )


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _top(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    return [] if node.level else [(node.module or "").split(".")[0]]


def inner_imports(tree: ast.AST, where: str) -> Iterator[str]:
    seen: set[int] = set()
    for fn in _functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in seen:
                seen.add(id(node))
                if not (set(_top(node)) & HEAVY):
                    yield f"{where}:{node.lineno}: {ast.unparse(node)[:100]}"


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The r2med modules an import names (``from . import names`` -> ``r2med.data.names``)."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
    else:
        target = node.module or ""
    if not target.startswith("r2med"):
        return []
    return [target, *(f"{target}.{a.name}" for a in node.names)]


def module_imports(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Module-level imports (inside ``if``/``try`` blocks too, ``if TYPE_CHECKING:`` included), not in functions."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("r2med"))
        elif isinstance(node, ast.ImportFrom):
            yield from _resolve(module, is_package, node)
        elif isinstance(node, ast.If | ast.Try):
            stack += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            stack += [s for h in getattr(node, "handlers", []) for s in h.body]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def declared() -> set[str]:
    """Every distribution ``pyproject.toml`` requires (dependencies and every extra), normalised."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    reqs = [*project.get("dependencies", []), *(r for rs in extras for r in rs)]
    return {_norm(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in reqs}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def measure() -> Counts:
    counts = Counts()
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    third_party: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        where = str(path.relative_to(ROOT))
        module = module_name(path)
        counts.lines += sum(1 for line in text.splitlines() if line.strip())
        counts.any_names += any_names(tree)
        if not is_family_module(path):
            counts.branches += family_branches(tree, where)
        if "cli" not in path.relative_to(PACKAGE).parts[:-1]:
            counts.inner_imports += inner_imports(tree, where)
        graph[module] = {m for m in module_imports(tree, module, path.stem == "__init__") if m in modules} - {module}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for top in _top(node):
                    if top and top != "r2med" and top not in sys.stdlib_module_names:
                        third_party.setdefault(top, []).append(f"{where}:{node.lineno}")
    counts.circles = circles(graph)
    dists = packages_distributions()
    wanted = declared()
    for top, places in sorted(third_party.items()):
        names = {_norm(d) for d in dists.get(top, [top])}
        if not names & wanted:
            counts.undeclared[f"{top} ({', '.join(sorted(names))})"] = places
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="every counted place, file:line")
    args = parser.parse_args()
    c = measure()
    rows = [
        ("family branches outside the family modules", str(len(c.branches))),
        ("Any per kLOC", f"{c.any_per_kloc:.1f} ({c.any_names} in {c.lines:,} non-blank lines)"),
        ("in-function imports outside cli/ and the heavy extras", str(len(c.inner_imports))),
        ("import circles, type-only imports included", str(len(c.circles))),
        ("imported packages not declared in pyproject.toml", ", ".join(c.undeclared) or "0"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.list:
        for title, items in (
            ("family branches", c.branches),
            ("in-function imports", c.inner_imports),
            ("import circles", [" <-> ".join(g) for g in c.circles]),
            ("undeclared packages", [f"{k}: {', '.join(v[:3])}" for k, v in c.undeclared.items()]),
        ):
            print(f"\n## {title} ({len(items)})")
            for item in items:
                print(f"  {item}")


if __name__ == "__main__":
    main()
