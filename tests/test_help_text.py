"""Help and messages shown literally (issue 31): every command's help at 80 columns, rendered from the typer app
itself (so a new command is covered), shows every option name and every help text whole, as written (no rich markup
eaten, no "…"), within 80 columns; messages holding ``[x]`` and ``:x:`` print as given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from conftest import run_r2med
from r2med.cli import app

WIDTH = 80


def _commands() -> list[tuple[list[str], object]]:
    """(path, command) for every command and group of ``r2med``, from the app itself."""
    found: list[tuple[list[str], object]] = []

    def walk(path: list[str], command: object) -> None:
        found.append((path, command))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not getattr(sub, "hidden", False):
                walk([*path, name], sub)

    walk([], typer.main.get_command(app))
    return found


COMMANDS = _commands()


def _help(path: list[str]) -> str:
    result = run_r2med(*path, "--help", env={"COLUMNS": str(WIDTH)})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


def _chars(text: str) -> str:
    """The text without its white space: what stays the same when it is wrapped (a word longer than a line, such
    as ``(Biology=main,MedQA-Diag=<commit>)``, is broken across two)."""
    return "".join(text.split())


def test_every_command_is_covered():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"report", "plot", "show", "run", "evaluate", "cache ls"} <= names and len(names) > 15


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "r2med")
def test_help_at_80_columns_is_whole_and_literal(path):
    command = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    out = _help(path)
    assert "…" not in out
    too_long = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_long, too_long
    flat = _chars(out)
    for param in getattr(command, "params", []):
        if getattr(param, "hidden", False):
            continue
        for opt in [*param.opts, *getattr(param, "secondary_opts", [])]:
            if opt.startswith("-"):
                assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", out), (path, opt)
        help_text = getattr(param, "help", None)
        if help_text:
            assert _chars(help_text) in flat, (path, param.name)  # whole, as written: nothing eaten or cut
    doc = getattr(command, "help", None)
    if doc:
        assert _chars(doc.split("\n\n")[0]) in flat
    for name, sub in getattr(command, "commands", {}).items():  # a group lists each command's first sentence whole
        if not getattr(sub, "hidden", False):
            assert _chars(sub.get_short_help_str(limit=10_000)) in flat, name


def test_run_help_shows_the_experiment_files_tables():
    res = run_r2med("run", "--help", env={"COLUMNS": "80"})
    assert res.returncode == 0
    assert "[data], [[retrievers]], [[rerank]], [[fusion]], [report]" in _flat(res.stdout)


def test_help_names_extras_and_keeps_compare_text_to_compare():
    plot = _flat(_help(["plot"]))
    assert "pip install 'r2med[plot]'" in plot and "pip install 'r2med[plot]'" in _flat(_help([]))
    for command in (
        ["report"],
        ["plot"],
        ["export", "mteb"] if ("export", "mteb") in {tuple(p) for p, _ in COMMANDS} else ["export"],
    ):
        assert "baseline" not in _flat(_help(command)).replace("--baseline", "").replace("Mark cells", ""), command
    assert "the first system is the baseline" in _flat(_help(["compare"]))


def test_messages_with_markup_and_emoji_codes_print_as_given(tmp_path):
    missing = tmp_path / "runs[x]:dog:"
    res = run_r2med("report", str(missing))
    assert res.returncode == 2 and f"{missing}: no such run folder" in res.stderr and "🐶" not in res.stderr
    demo = ("-d", str(Path(__file__).parents[1] / "src" / "r2med" / "demo_data"))
    res = run_r2med("evaluate", "-r", "custom", "--encoder", "nothere.py:X", *demo, "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "--encoder nothere.py:X: no such file nothere.py" in res.stderr
    (tmp_path / "bad.py").write_text("class Cat:\n    pass\n")
    res = run_r2med(
        "evaluate", "-r", "custom", "--encoder", f"{tmp_path / 'bad.py'}:Dog", *demo, "--out", str(tmp_path / "o")
    )
    assert res.returncode == 2 and "bad.py:Dog" in res.stderr and "🐶" not in res.stderr
    # a system's name, in a table and in a note
    from test_report_sets import write_system

    out = tmp_path / "named"
    write_system(out, ":dog:[red]x", {"T1": {"q1": 0.5}, "T2": {"q1": 0.5}})
    write_system(out, "[b]y", {"T1": {"q1": 0.5}})
    res = run_r2med("report", str(out), "--wide")
    assert res.returncode == 0, res.stderr
    assert ":dog:[red]x" in res.stdout and "[b]y" in res.stdout and "🐶" not in res.stdout
    assert "note: [b]y: no nDCG@10 for T2" in res.stderr


def test_show_is_listed(tmp_path: Path):
    assert "show" in _help([])
