"""The layers of the house: every package (and top-level module) of r2med sits on one layer of the list in the
README's "Layers" section, and imports only from layers below its own -- never from its layer's other members,
never from a layer above.

The layers are read from the README (the list is the documentation and the test's input at once), the imports
from the source with ``ast``: module and function level, and those for the type checker only (an annotation that
names a type from a layer above is a dependency all the same).  A package's own modules importing one another is
not an arrow between layers (circles among them are ``test_house.py::test_no_import_circles``'s).  And the type
checker's config says ``strict`` once, for the whole package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import r2med

SRC = Path(r2med.__file__).parent
README = Path(__file__).resolve().parent.parent / "README.md"


def layers_of(readme: str) -> list[tuple[str, ...]]:
    """The README's "### Layers" list, bottom first: each item's names in backticks before the dash."""
    section = readme.split("### Layers", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\d+\. ((?:`[^`]+`(?:, )?)+) --", section, flags=re.MULTILINE)
    return [tuple(re.findall(r"`([^`]+)`", row)) for row in rows]


def unit_of(module: str) -> str:
    """The layer unit a module belongs to: its package below ``r2med`` (``retrieval``), or its own name for a
    top-level module (``measures``); ``r2med`` itself is the package's ``__init__`` (the public API)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_of(root: Path) -> list[tuple[str, int, str]]:
    """(module, line, imported module) for every import of the package's own modules from ``root``."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                stem = ".".join(base + ([node.module] if node.module else []))
                # ``from . import x`` / ``from r2med import x``: ``<package>.x`` (a module, or a name of the package)
                targets = [f"{stem}.{a.name}" if node.module is None or stem == root.name else stem for a in node.names]
            else:
                continue
            found += [(name, node.lineno, t) for t in targets if t == root.name or t.startswith(root.name + ".")]
    return found


def arrows_up(root: Path, layers: list[tuple[str, ...]]) -> list[str]:
    """Each import from a unit to one on its own layer or a higher one, as ``module:line -> module``."""
    rank = {unit: i for i, row in enumerate(layers) for unit in row}
    known = units(root)
    wrong = []
    for module, line, target in sorted(set(imports_of(root))):
        source, dest = unit_of(module), unit_of(target)
        if dest not in known:  # ``from r2med import x`` where x is no module: a name of the public API
            dest = root.name
        if source != dest and rank[dest] >= rank[source]:
            wrong.append(f"{module}:{line} -> {target}")
    return wrong


def units(root: Path) -> set[str]:
    """Every layer unit of the package: its subpackages, top-level modules, and itself (``__init__``)."""
    names = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in root.glob("*.py") if p.name != "__init__.py"}
    return names | {root.name}


def test_every_package_and_top_level_module_has_one_layer():
    layers = layers_of(README.read_text(encoding="utf-8"))
    listed = [unit for row in layers for unit in row]
    assert len(layers) >= 10 and len(listed) == len(set(listed)), layers
    assert set(listed) == units(SRC), f"not in the README's layers: {units(SRC) - set(listed)}"


def test_no_import_points_to_its_own_layer_or_above():
    layers = layers_of(README.read_text(encoding="utf-8"))
    assert len(imports_of(SRC)) > 300  # the walk saw the package's imports (function level ones included)
    wrong = arrows_up(SRC, layers)
    assert not wrong, "imports against the layers (README, Layers):\n" + "\n".join(wrong)


def test_the_layer_check_finds_an_arrow_up(tmp_path):
    """The check above can fail: a low layer importing a higher one (inside a function, or for the type checker
    only) is found, as is an import between two members of one layer; imports down the layers are not."""
    pkg = tmp_path / "pkg"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .high import thing\n")
    (pkg / "leaf.py").write_text("")
    (pkg / "peer.py").write_text("from . import leaf\n")
    (pkg / "high" / "a.py").write_text("from ..low import b\nfrom pkg.leaf import x\n")
    (pkg / "low" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high.a import T\n"
        "def f():\n    from pkg import high\n"
    )
    layers = layers_of("### Layers\n\n1. `leaf`, `peer` -- leaves\n2. `low` -- x\n3. `high` -- y\n4. `pkg` -- api\n")
    assert layers == [("leaf", "peer"), ("low",), ("high",), ("pkg",)]
    assert units(pkg) == {"leaf", "peer", "low", "high", "pkg"}
    assert arrows_up(pkg, layers) == [
        "pkg.low.b:3 -> pkg.high.a",
        "pkg.low.b:5 -> pkg.high",
        "pkg.peer:1 -> pkg.leaf",
    ]
    (pkg / "peer.py").write_text("")
    (pkg / "low" / "b.py").write_text("from ..leaf import x\n")
    assert arrows_up(pkg, layers) == []


@pytest.mark.parametrize("module", ["r2med.version", "r2med.errors"])
def test_the_leaves_import_nothing_of_r2med(module):
    """``__version__`` and the error types are leaves: every layer may name them, they name no layer."""
    assert not [t for m, _, t in imports_of(SRC) if m == module]


def test_mypy_is_strict_on_the_whole_package():
    """``mypy --strict`` on everything, stated in the config: ``strict`` at the top of ``[tool.mypy]`` over all of
    ``src/r2med``, and no module override that turns a check off (overrides only name untyped third parties)."""
    import tomllib

    config = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["strict"] is True and config["files"] == ["src/r2med"]
    for override in config.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not [m for m in modules if m == "r2med" or m.startswith("r2med.")], override
        assert set(override) <= {"module", "ignore_missing_imports"}, override
