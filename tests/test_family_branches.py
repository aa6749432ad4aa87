"""No new code outside a family's own modules branches on a family by name (issue 35): the places left are listed
here per file, and the count may only go down.

The places are read from the source's syntax trees by ``benchmarks/house_counts.py`` (a comparison or prefix test
against a family's name, its task prefix or a name bound to one; family modules: ``families/`` and those named after
a family).  A place removed must be removed here too (the list stays exact); a new one fails: ask the family instead
(its ``Benchmark`` record, its ``PublishedTable``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: file -> how many places there branch on a family by name (2026-12-02; 43 before the families became plug-ins)
LEFT = {
    "src/r2med/cli/models.py": 1,
    "src/r2med/data/loaders.py": 2,  # R2MED's folder layout
    "src/r2med/retrieval/encoders/base.py": 1,  # the tool's own name (a token added by r2med), not a family
    "src/r2med/retrieval/presets.py": 1,
}


def _house_counts():
    spec = importlib.util.spec_from_file_location("house_counts", ROOT / "benchmarks" / "house_counts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("house_counts", module)
    spec.loader.exec_module(module)
    return module


def test_no_new_family_branches_outside_the_family_modules():
    places = _house_counts().measure().branches
    found = Counter(place.split(":", 1)[0] for place in places)
    grown = {f: n for f, n in found.items() if n > LEFT.get(f, 0)}
    assert not grown, "new family branches (ask the family): " + "; ".join(
        p for p in places if p.split(":", 1)[0] in grown
    )
    assert dict(found) == LEFT, f"fewer family branches than listed: lower LEFT to {dict(found)}"


def test_the_counter_sees_a_family_branch(tmp_path):
    """The counter's rule on a module written here: a comparison with a family's name, a task prefix test and a
    name test count; a comparison of a retriever family (``dense``) does not."""
    import ast

    counts = _house_counts()
    source = (
        "def f(key, task, meta):\n"
        "    a = key.family == 'bright'\n"
        "    b = task.startswith('bright:')\n"
        "    c = is_bright(task)\n"
        "    d = meta.family == 'dense'\n"
        "    e = family != R2MED\n"
    )
    found = list(counts.family_branches(ast.parse(source), "m.py"))
    assert sorted(int(p.split(":")[1]) for p in found) == [2, 3, 4, 6]
