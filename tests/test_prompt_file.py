"""``r2med expand --prompt-file``: the sent prompt is the filled template (checked at the fake OpenAI server),
the prompt's text and sha256 are recorded beside the expansions and in the results' configuration; a bad
template is one line naming the file, before any request."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import run_r2med
from llm_server import LLMServer
from r2med.data import load_folder
from r2med.expansion.generate import lamer_passages
from test_expansion_generate import make_collection

pytest.importorskip("openai")


def expand(data: Path, out: Path, url: str, home: Path, *extra: str):
    return run_r2med(
        "expand",
        "--method",
        "hyde",
        "--model",
        "test-model",
        "--base-url",
        url,
        "--data-dir",
        str(data),
        "--out",
        str(out),
        "--timeout",
        "5",
        *extra,
        env={"R2MED_HOME": str(home)},
    )


def test_prompt_file_is_sent_filled_and_recorded(tmp_path, r2med_home):
    data = make_collection(tmp_path / "mycoll", n_queries=4)  # not a task's name: no paper prompt needed
    template = "Write a passage that answers: {query}\nUse these:{passages}\nLiteral {{braces}} stay."
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(template, encoding="utf-8")
    coll = load_folder(data)
    passages = lamer_passages(coll)
    with LLMServer() as server:
        proc = expand(data, tmp_path / "exp", server.base_url, r2med_home, "--prompt-file", str(prompt))
        assert proc.returncode == 0, proc.stderr
        expected = {
            f"Write a passage that answers: {q}\nUse these:{passages[qid]}\nLiteral {{braces}} stay."
            for qid, q in coll.queries.items()
        }
        assert set(server.prompts) == expected and len(server.prompts) == 4
    folder = tmp_path / "exp" / "mycoll" / "hyde" / "test-model"
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()
    record = json.loads((folder / "prompt.json").read_text())
    assert record == {"file": str(prompt.resolve()), "sha256": digest, "text": template}
    rows = [json.loads(line) for line in (folder / "query_with_hydoc.jsonl").read_text().splitlines()]
    assert all(row["prompt_sha256"] == digest for row in rows)
    # the results' configuration names the prompt
    done = run_r2med(
        "evaluate",
        "-r",
        "bm25",
        "-d",
        str(data),
        "--expansion",
        "hyde:test-model",
        "--expansion-dir",
        str(tmp_path / "exp"),
        "-o",
        str(tmp_path / "runs"),
        env={"R2MED_HOME": str(r2med_home)},
    )
    assert done.returncode == 0, done.stderr
    [metrics] = (tmp_path / "runs").glob("*/mycoll/metrics.json")
    assert json.loads(metrics.read_text())["config"]["expansion"]["prompt_sha256"] == digest


def test_without_prompt_file_the_papers_prompt_is_sent(tmp_path, r2med_home):
    from test_expansion_generate import expected_prompt

    data = make_collection(tmp_path / "Biology", n_queries=3)
    with LLMServer() as server:
        assert expand(data, tmp_path / "exp", server.base_url, r2med_home).returncode == 0
        coll = load_folder(data)
        assert set(server.prompts) == {expected_prompt("hyde", "Biology", q) for q in coll.queries.values()}
    assert not (tmp_path / "exp" / "Biology" / "hyde" / "test-model" / "prompt.json").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("Answer {question}", "unknown placeholder {question}"),
        ("Answer the question.", "has no {query} placeholder"),
        ("Answer {query} {", "not a prompt template"),
        # issue 27 items 11, 12: format specs and conversions are refused before any request (a 3 GB pad, a
        # ValueError on str, a nested field, repr quoting)
        ("Answer {query:>3000000000}", "placeholder {query:>3000000000} has a format spec"),
        ("Answer {query:>20000000}", "placeholder {query:>20000000} has a format spec"),
        ("Answer {query:d}", "placeholder {query:d} has a format spec"),
        ("Answer {query:{query}}", "placeholder {query:{query}} has a format spec"),
        ("Answer {query!r}", "placeholder {query!r} has a conversion"),
        ("Answer {query} from {passages!s:^9}", "placeholder {passages!s:^9} has a conversion"),
        ("Answer {query.__class__}", "unknown placeholder {query.__class__}"),
        ("Answer {query[0]}", "unknown placeholder {query[0]}"),
        ("Answer {}", "unknown placeholder {}"),
        ("Answer {query\x00}", "unknown placeholder {query\\x00}"),  # shown escaped
        ("{query} " * 101, "101 placeholders; a prompt file may hold at most 100"),  # 101 copies of every query
    ],
)
def test_bad_templates_are_one_line_naming_the_file_before_any_request(tmp_path, r2med_home, text, message):
    data = make_collection(tmp_path / "mycoll", n_queries=2)
    prompt = tmp_path / "bad_prompt.txt"
    prompt.write_text(text, encoding="utf-8")
    with LLMServer() as server:
        proc = expand(data, tmp_path / "exp", server.base_url, r2med_home, "--prompt-file", str(prompt))
        assert server.requests == 0
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "bad_prompt.txt" in proc.stderr and "Traceback" not in proc.stderr
    assert len([x for x in proc.stderr.splitlines() if x.strip()]) == 1, proc.stderr
    assert not (tmp_path / "exp").exists()
