"""A measure is a :class:`r2med.measures.Measure` in every signature and field outside the command line (issue 30).

Text is parsed once at the edges (the CLI's options, the experiment file and step specs, the JSON/record readers)
and only :class:`~r2med.measures.Measure` values travel inward.  This walks every function signature and every
class-body field annotation (dataclasses, pydantic specs, protocols) of ``src/r2med`` outside ``cli/`` with
:mod:`ast` and refuses a parameter or field naming a measure (:data:`NAMES`) whose annotation holds ``str``.  The
public Python API takes ``Measure | str`` and parses at once: :data:`PUBLIC_EDGES` lists exactly those.

(``by`` in :mod:`r2med.evaluation.facets` and :mod:`r2med.jobs.report` names a query metadata key, not a measure;
the score maps keep pytrec_eval names as their keys: data, not signatures; so does a ``TypedDict``, which is the
shape of a JSON file's or page's data -- ``mteb_results.json``'s rows, the HTML page's script data -- read or written
as text.)
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "r2med"
#: parameter and field names that name a measure (or several)
NAMES = frozenset({"measure", "measures", "headline", "metric", "main_measure", "sort_measure"})
#: the public API that takes a measure typed by a user: ``Measure | str``, parsed at once (module, qualified name)
PUBLIC_EDGES = frozenset(
    {
        ("evaluation/metrics.py", "evaluate"),
        ("evaluation/metrics.py", "Metrics.__getitem__"),
        ("evaluation/metrics.py", "Measures.__missing__"),
        ("evaluation/metrics.py", "Measures.get"),
        ("evaluation/metrics.py", "Measures._key"),
        ("evaluation/ties.py", "evaluate_with_ties"),
        ("jobs/imports.py", "import_run"),
        ("jobs/show.py", "show_query"),
    }
)


def _names_str(annotation: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "str" for n in ast.walk(annotation)) or any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "str" in n.value for n in ast.walk(annotation)
    )


def _names_measure(annotation: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id in ("Measure", "MeasureField") for n in ast.walk(annotation))


def annotations(tree: ast.Module) -> list[tuple[str, str, int, ast.expr]]:
    """(qualified name of the function or class, parameter or field name, line, annotation) of every measure-named
    parameter and class-body field in ``tree``."""
    out: list[tuple[str, str, int, ast.expr]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                a = child.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                    if arg is not None and arg.annotation is not None and arg.arg in NAMES:
                        out.append((name, arg.arg, arg.lineno, arg.annotation))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                name = prefix + child.name
                if any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in child.bases):
                    continue  # the shape of JSON data: files and JSON keep the measures' text
                for item in child.body:
                    named = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    if named and item.target.id in NAMES:
                        out.append((name, item.target.id, item.lineno, item.annotation))
                visit(child, name + ".")

    visit(tree, "")
    return out


def offenders(root: Path, edges: frozenset[tuple[str, str]] = PUBLIC_EDGES) -> list[str]:
    """Each measure-named parameter or field under ``root`` (``cli/`` left out) annotated with ``str``, but for the
    public edges, which must take a ``Measure`` too: ``file:line: function(name: annotation)``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("cli/"):
            continue
        for qualname, name, line, annotation in annotations(ast.parse(path.read_text(encoding="utf-8"))):
            if not _names_str(annotation):
                continue
            if (rel, qualname) in edges and _names_measure(annotation):
                continue
            found.append(f"{rel}:{line}: {qualname}({name}: {ast.unparse(annotation)})")
    return found


def test_no_signature_or_field_outside_the_cli_takes_a_measure_as_text():
    assert offenders(SRC) == []


def test_the_public_edges_exist_and_take_a_measure_or_its_spelling():
    """Each listed edge is still there and takes ``Measure | str`` (the list cannot hide a renamed function)."""
    seen = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for qualname, _, _, annotation in annotations(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, qualname) in PUBLIC_EDGES:
                assert _names_measure(annotation) and _names_str(annotation), (rel, qualname)
                seen.add((rel, qualname))
    assert seen == PUBLIC_EDGES


def test_the_walk_finds_a_measure_taken_as_text(tmp_path):
    """The check can fail: a parameter, a keyword-only parameter, a method's, a field and a sequence of names,
    each typed as text, are found; the same as Measures, the CLI, and another name are not."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "options.py").write_text("def option(measure: str) -> None: ...\n")
    (tmp_path / "mod.py").write_text(
        "from collections.abc import Sequence\n"
        "from dataclasses import dataclass\n"
        "def table(rows, measure: str = 'ndcg_cut_10'): ...\n"
        "def tables(rows, *, measures: Sequence[str] | None = None): ...\n"
        "def fine(rows, measure: Measure, measures: 'tuple[Measure, ...]' = (), by: str = 'scenario'): ...\n"
        "@dataclass\n"
        "class Board:\n"
        "    measure: str\n"
        "    headline: 'Measure'\n"
        "    def value(self, measure: Measure | str) -> float: ...\n"
    )
    assert offenders(tmp_path, frozenset()) == [
        "mod.py:3: table(measure: str)",
        "mod.py:4: tables(measures: Sequence[str] | None)",
        "mod.py:8: Board(measure: str)",
        "mod.py:10: Board.value(measure: Measure | str)",
    ]
    assert offenders(tmp_path, frozenset({("mod.py", "Board.value")})) == [
        "mod.py:3: table(measure: str)",
        "mod.py:4: tables(measures: Sequence[str] | None)",
        "mod.py:8: Board(measure: str)",
    ]
