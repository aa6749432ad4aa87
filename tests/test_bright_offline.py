"""BRIGHT offline (issue 39 item 8): a reasoning set from a file (``-e reason:gpt4 --expansion-file FILE``, as
``hyde:mine --expansion-file`` is taken), and the offline hint that names what to download -- the one configuration's
files, never the whole dataset -- and never a ``--data-dir`` (no local folder is a BRIGHT task).

References: the emulated hub's files laid into a Hugging Face cache (tests/bright_hub.py), the run made from the hub's
own copy of the same reasoning set (the file given by hand must give the same ranking), the files the cache lacks.
"""

from __future__ import annotations

import json
import shlex

import pytest

from bright_hub import BRIGHT_PIN, BRIGHT_REPO, bright_files, fill_bright_cache, have_shared_bright, hub_path
from test_hub import cli, one_line_error

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(("pony", "leetcode"), queries=4, distractors=30, reasoning=("gpt4_reason",))


def test_a_reasoning_set_from_a_file_offline_ranks_as_the_hubs(files, tmp_path):
    reasoning = hub_path("gpt4_reason", "pony")
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    fill_bright_cache(cache, files)  # every file, the reasoning set included: the reference run
    args = ("evaluate", "-r", "bm25", "-t", "bright:pony", "-e", "reason:gpt4")
    ref = cli(*args, "-o", str(out / "hub"), cache=cache, home=home, offline=True)
    assert ref.returncode == 0, ref.stderr

    lean = tmp_path / "lean" / "hub"
    fill_bright_cache(lean, {k: v for k, v in files.items() if not k.startswith("gpt4_reason/")})
    mine = tmp_path / "pony-gpt4.parquet"
    mine.write_bytes(files[reasoning])
    res = cli(*args, "--expansion-file", str(mine), "-o", str(out / "file"), cache=lean, home=home, offline=True)
    assert res.returncode == 0, res.stderr  # before: refused ("read from its hub")
    folder = "bm25+reason-gpt4/bright-pony"
    assert (out / "file" / folder / "run.trec").read_text() == (out / "hub" / folder / "run.trec").read_text()
    recorded = json.loads((out / "file" / folder / "metrics.json").read_text())["config"]["expansion"]
    assert recorded == {"method": "reason", "llm": "gpt4", "rule": "replace", "file": str(mine)}

    # a file of another task's set is refused in one line naming it
    other = tmp_path / "leetcode-gpt4.parquet"
    other.write_bytes(files[hub_path("gpt4_reason", "leetcode")])
    res = cli(*args, "--expansion-file", str(other), "-o", str(out / "bad"), cache=lean, home=home, offline=True)
    line = one_line_error(res)
    assert str(other) in line and "is it another task's reasoning file?" in line  # the ids are 0..3 in both
    # a folder is still an R2MED layout's option
    res = cli(*args, "--expansion-dir", str(tmp_path), "-o", str(out / "bad"), cache=lean, home=home, offline=True)
    assert "--expansion-file" in one_line_error(res)


def _fill_command(line: str) -> list[str]:
    start = line.index("fill the cache first (") + len("fill the cache first (")
    return shlex.split(line[start : line.index(") where the hub can be reached", start)])


def _included(words: list[str]) -> list[str]:
    return [words[i + 1] for i, w in enumerate(words) if w == "--include"]


def test_the_offline_hint_names_the_missing_configuration_and_no_data_dir(files, tmp_path):
    cache, home = tmp_path / "hf" / "hub", tmp_path / "home"
    fill_bright_cache(cache, {k: v for k, v in files.items() if not k.startswith("gpt4_reason/")})
    args = ("evaluate", "-r", "bm25", "-e", "reason:gpt4", "-o", str(tmp_path / "o"))
    line = one_line_error(cli(*args, "-t", "bright:pony", cache=cache, home=home, offline=True))
    words = _fill_command(line)
    assert words[:5] == ["hf", "download", BRIGHT_REPO, "--repo-type", "dataset"] and BRIGHT_PIN in words
    assert _included(words) == [hub_path("gpt4_reason", "pony")]  # what is missing; before: the whole dataset
    assert "--data-dir" not in line  # a local folder is never a BRIGHT task
    # two tasks: the missing files of both in the one command
    line = one_line_error(cli(*args, "-t", "bright:pony,bright:leetcode", cache=cache, home=home, offline=True))
    assert sorted(_included(_fill_command(line))) == sorted(hub_path("gpt4_reason", t) for t in ("pony", "leetcode"))
    assert "--data-dir" not in line


def test_many_missing_files_are_one_include_per_configuration():
    from r2med.data.hub import DOWNLOAD_FILES_NAMED, fill_command

    tasks = [f"t{i}" for i in range(DOWNLOAD_FILES_NAMED + 1)]
    files = [f"gpt4_reason/{t}-00000-of-00001.parquet" for t in tasks] + ["examples/t0-00000-of-00001.parquet"]
    words = shlex.split(fill_command(BRIGHT_REPO, BRIGHT_PIN, "dataset", files))
    assert _included(words) == ["gpt4_reason/*", "examples/*"]
    # one R2MED task's repository is that task: downloaded whole, and a local folder can stand for it
    words = shlex.split(fill_command("R2MED/Biology", "abc", "dataset", ["query.jsonl"]))
    assert _included(words) == [] and words[2] == "R2MED/Biology"
