"""An expansion's name (``r2med/expansion_name.py``): its text form round-trips through the one parse, the layers
below the expansion package pass the value (the collections' files, the hub's expansion commits), and no module but
the name's own joins or splits ``METHOD:LLM`` (an AST check of the whole package, shown to fail on a planted join
and split)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import r2med
from r2med.data import find_expansion_files, hub
from r2med.data.hub import task_revision
from r2med.errors import R2MedError
from r2med.expansion.spec import ExpansionSpec
from r2med.expansion_name import EXPECTED, ExpansionName

SRC = Path(r2med.__file__).parent
OWNER = SRC / "expansion_name.py"


# -- the value -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "method", "llm"),
    [
        ("hyde:gpt4", "hyde", "gpt4"),
        ("hyde:qwen-7b", "hyde", "qwen-7b"),
        ("query2doc:qwen_7b", "query2doc", "qwen_7b"),  # as written: the spelling is the spec's business
        ("reason:Gemini-1.0", "reason", "Gemini-1.0"),
        ("search-r1:a:b", "search-r1", "a:b"),  # the first colon separates
    ],
)
def test_the_text_form_round_trips_through_the_one_parse(text, method, llm):
    name = ExpansionName.parse(text)
    assert (name.method, name.llm) == (method, llm) and name == ExpansionName(method, llm)
    assert name.text == text and str(name) == text
    assert ExpansionName.parse(ExpansionName(method, llm).text) == ExpansionName(method, llm)
    first, second = name  # a pair: unpacked where both parts are wanted
    assert (first, second) == (method, llm)


@pytest.mark.parametrize("text", ["hyde", "hyde:", ":gpt4", " :gpt4", "hyde: ", ""])
def test_a_malformed_name_is_the_one_message(text):
    with pytest.raises(ValueError) as caught:
        ExpansionName.parse(text)
    assert str(caught.value).startswith(EXPECTED + ", got ")


def test_the_spec_converts_to_the_name_in_one_place():
    spec = ExpansionSpec.of("HyDE:qwen_7b")  # canonical spelling: hyde, qwen-7b
    assert spec.name == ExpansionName("hyde", "qwen-7b")
    assert spec.text == "hyde:qwen-7b" == spec.name.text
    assert ExpansionSpec.of(spec.name.text) == spec


def test_a_folder_of_expansion_files_is_keyed_by_the_name_as_spelled_on_disk(tmp_path):
    for method, llm in (("hyde", "qwen-7b"), ("query2doc", "gpt4")):
        (tmp_path / method / llm).mkdir(parents=True)
        (tmp_path / method / llm / "query_with_hydoc.jsonl").write_text("")
    (tmp_path / "hyde" / "other.jsonl").write_text("")  # no expansion file
    found = find_expansion_files(tmp_path)
    assert found == {
        ExpansionName("hyde", "qwen-7b"): tmp_path / "hyde" / "qwen-7b" / "query_with_hydoc.jsonl",
        ExpansionName("query2doc", "gpt4"): tmp_path / "query2doc" / "gpt4" / "query_with_hydoc.jsonl",
    }
    assert sorted(n.text for n in found) == ["hyde:qwen-7b", "query2doc:gpt4"]


def test_the_hub_finds_an_expansion_commit_by_its_name_under_its_text_key(monkeypatch):
    """The commits file keeps its text keys (``hyde:qwen-7b``, folder spelling); a name in either LLM spelling
    finds its entry, and two expansions held by different commits are named by their text."""
    one, two = "1" * 40, "2" * 40
    data = hub.expansion_commits()
    entries = {
        "hyde:qwen-7b": {"commits": {"Biology": one}, "status": "known", "source": "a test"},
        "query2doc:qwen-7b": {"commits": {"Biology": two}, "status": "known", "source": "a test"},
    }
    monkeypatch.setattr(hub, "expansion_commits", lambda: {**data, "expansions": {**data["expansions"], **entries}})
    assert hub.expansion_commit("Biology", ExpansionName("hyde", "qwen_7b")) == one
    assert hub.expansion_commit("Biology", ExpansionName("hyde", "qwen-7b")) == one
    assert hub.expansion_commit("Biology", ExpansionName("hyde", "gpt4")) is None
    revision, why = task_revision("Biology", None, [ExpansionName("hyde", "qwen-7b")])
    assert revision == one and why == "the commit recorded as holding hyde:qwen-7b for Biology"
    with pytest.raises(R2MedError, match=r"the expansions hyde:qwen-7b, query2doc:qwen-7b are held by"):
        task_revision("Biology", None, [ExpansionName("hyde", "qwen-7b"), ExpansionName("query2doc", "qwen-7b")])


# -- no module but the name's own joins or splits the text ---------------------------------------------------

#: every split on ``:`` in the package that is not an expansion name: how many in the module, and what they split
OTHER_SPLITS = {
    "data/benchmarks.py": (1, "an entry point's module:attribute"),
    "data/bright.py": (1, "a BRIGHT task name's bright:task:long"),
    "infra/user_code.py": (3, "a user's module:attribute (or file.py:attribute)"),
    "jobs/experiment.py": (1, "an experiment file's module:attribute"),
    "jobs/imports.py": (1, "a task name's family prefix"),
    "retrieval/embedding_cache.py": (2, "a hash's algorithm:hex"),
}

_PARTS = re.compile(r"\bmethod\b|\bREASON\b|\b_REASONING\b|\bexpansion\b|^m$")


def _is_colon(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == ":"


def name_texts(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place ``source`` splits text on ``:`` (``partition``, ``split`` and their right-hand
    twins, ``":".join``) or joins a method and an LLM in an f-string (``{method}:{llm}``, ``{REASON}:{c}``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in ("partition", "rpartition", "split", "rsplit") and node.args and _is_colon(node.args[0]):
                found.append((node.lineno, f"{attr}(':')"))
            if attr == "join" and _is_colon(node.func.value):
                found.append((node.lineno, "':'.join"))
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for before, colon, after in zip(parts, parts[1:], parts[2:]):
                if not (isinstance(before, ast.FormattedValue) and isinstance(after, ast.FormattedValue)):
                    continue
                if not (isinstance(colon, ast.Constant) and colon.value == ":"):
                    continue
                left, right = ast.unparse(before.value), ast.unparse(after.value)
                if _PARTS.search(left) or "llm" in right.lower():
                    found.append((node.lineno, f"f'{{{left}}}:{{{right}}}'"))
    return found


def test_no_module_but_the_names_own_joins_or_splits_an_expansion_name():
    places: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path == OWNER:
            continue
        found = name_texts(path.read_text(encoding="utf-8"))
        if found:
            places[path.relative_to(SRC).as_posix()] = found
    assert name_texts(OWNER.read_text(encoding="utf-8"))  # the check sees the owner's own split and join...
    stray = {p: f for p, f in places.items() if p not in OTHER_SPLITS or len(f) != OTHER_SPLITS[p][0]}
    assert not stray, f"METHOD:LLM split or joined outside expansion_name.py (use ExpansionName): {stray}"
    # ...and every other split it allows is still there, and a split, not a join of names
    assert set(places) == set(OTHER_SPLITS), set(OTHER_SPLITS) ^ set(places)
    assert all(what.endswith("(':')") for found in places.values() for _, what in found), places


def test_the_check_finds_a_join_and_a_split():
    planted = (
        "key = f'{method}:{llm}'\n"
        "other = f'{m}:{x.llm}'\n"
        "reason = f'{REASON}:{c}'\n"
        "method, _, llm = text.partition(':')\n"
        "parts = text.rsplit(':', 1)\n"
        "joined = ':'.join((a, b))\n"
        "host = f'{host}:{port}'\n"  # no expansion name: not found
        "where = f'{path}:{line}'\n"
    )
    assert [line for line, _ in name_texts(planted)] == [1, 2, 3, 4, 5, 6]
