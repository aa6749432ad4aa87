"""No code outside a family's own modules names a family (issue 35): grading, published figures, reproduce, the
board, the CLI and the exports ask the family (its ``Benchmark`` record, its ``PublishedTable``).

Read from the source's syntax trees by ``benchmarks/house_counts.py`` (family modules: ``families/`` and those named
after a family).  Two rules:

* no family branch: no comparison or prefix test against a family's name, its task prefix or a name bound to one,
  and no name test (``is_bright``);
* no family literal: no string that is a family's name or task prefix (``"bright"``, ``"bright:..."``), and no name
  bound to a family (``BRIGHT``, ``R2MED_...``), except the few places listed in :data:`NOT_A_FAMILY`, each a use of
  the same word for something else, with the reason.  ``"r2med"`` as a string is the tool's own name (its logger,
  its program name, its cache folders) and is not counted as a literal; a comparison with it is (the first rule).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, the text of the node) -> why that use of a family's word is not a family
NOT_A_FAMILY = {
    ("src/r2med/data/benchmarks.py", "'bright'"): "the registry's map of its built-in family modules (BUILT_IN)",
    ("src/r2med/reranking/base.py", "'bright'"): "the reranker registry's module list: reranking/bright.py",
    ("src/r2med/retrieval/analyzer.py", "'bright'"): "the name of the pip extra that installs pyarrow",
    ("src/r2med/runs/run.py", "R2MED_RESULTS_FILE"): "the results file's name, not a family",
}


def _house_counts():
    spec = importlib.util.spec_from_file_location("house_counts", ROOT / "benchmarks" / "house_counts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("house_counts", module)
    spec.loader.exec_module(module)
    return module


def _family_literals(counts, tree: ast.AST, where: str) -> list[tuple[str, str, int]]:
    found = []
    for node in ast.walk(tree):
        tool = isinstance(node, ast.Constant) and str(node.value).strip().lower().partition(":")[0] == "r2med"
        text = isinstance(node, ast.Constant) and counts._family_text(node) and not tool
        named = isinstance(node, ast.Name | ast.Attribute) and counts._family_name(node)
        if text or named:
            found.append((where, ast.unparse(node), node.lineno))
    return found


def test_no_family_branch_outside_the_family_modules():
    places = _house_counts().measure().branches
    assert places == [], "family branches (ask the family): " + "; ".join(places)


def test_no_family_literal_outside_the_family_modules():
    counts = _house_counts()
    found = []
    for path in sorted(counts.PACKAGE.rglob("*.py")):
        if not counts.is_family_module(path):
            where = path.relative_to(ROOT).as_posix()
            found += _family_literals(counts, ast.parse(path.read_text()), where)
    named = [f"{w}:{line}: {text}" for w, text, line in found if (w, text) not in NOT_A_FAMILY]
    assert named == [], "a family named outside its modules (ask the family): " + "; ".join(named)
    used = {(w, text) for w, text, _ in found}
    assert set(NOT_A_FAMILY) <= used, f"listed but gone (drop them): {set(NOT_A_FAMILY) - used}"


def test_the_counter_sees_a_family_branch_and_a_family_literal():
    """The rules on a module written here: a comparison with a family's name, a task prefix test and a name test
    count as branches, a comparison of a retriever family (``dense``) does not; a family's name, its task prefix and
    a name bound to a family count as literals, the tool's own name does not."""
    counts = _house_counts()
    source = (
        "def f(key, task, meta):\n"
        "    a = key.family == 'bright'\n"
        "    b = task.startswith('bright:')\n"
        "    c = is_bright(task)\n"
        "    d = meta.family == 'dense'\n"
        "    e = family != R2MED\n"
        "    log = getLogger('r2med')\n"
        "    g = BRIGHT_TASKS\n"
    )
    tree = ast.parse(source)
    found = list(counts.family_branches(tree, "m.py"))
    assert sorted(int(p.split(":")[1]) for p in found) == [2, 3, 4, 6]
    literals = _family_literals(counts, tree, "m.py")
    assert sorted(line for _, _, line in literals) == [2, 3, 6, 8]
