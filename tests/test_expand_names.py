"""``r2med expand`` never lets two LLMs share an answer folder silently (issue 27 item 14): ``--model org1/qwen`` and
``--model org2/Qwen`` both name the folder ``qwen``; the second is refused before any request, the first's file
left byte for byte, and a folder differing only in case (one folder on a case-insensitive filesystem) is refused too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_r2med
from llm_server import LLMServer
from test_expansion_generate import make_collection

pytest.importorskip("openai")


def expand(data: Path, out: Path, server: LLMServer, home: Path, *extra: str):
    args = ["expand", "--method", "hyde", "--model", server.model, "--base-url", server.base_url]
    args += ["--data-dir", str(data), "--out", str(out), "--timeout", "5", *extra]
    return run_r2med(*args, env={"R2MED_HOME": str(home)})


def one_line(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_models_naming_one_folder_never_replace_each_other(tmp_path, r2med_home):
    data = make_collection(tmp_path / "Biology", n_queries=3)
    out = tmp_path / "exp"
    with LLMServer(model="org1/qwen") as first:
        assert expand(data, out, first, r2med_home).returncode == 0
    folder = out / "Biology" / "hyde" / "qwen"
    assert json.loads((folder / "llm.json").read_text()) == {"model": "org1/qwen"}
    before = snapshot(out)
    with LLMServer(model="org2/Qwen") as second:
        line = one_line(expand(data, out, second, r2med_home))
        assert second.requests == 0
    assert "holds the expansions of --model 'org1/qwen'" in line and "--llm-name" in line, line
    assert snapshot(out) == before
    with LLMServer(model="org2/Qwen") as second:  # named apart: both kept
        assert expand(data, out, second, r2med_home, "--llm-name", "org2-qwen").returncode == 0
    assert json.loads((out / "Biology" / "hyde" / "org2-qwen" / "llm.json").read_text()) == {"model": "org2/Qwen"}
    assert (folder / "query_with_hydoc.jsonl").read_bytes() == before["Biology/hyde/qwen/query_with_hydoc.jsonl"]
    with LLMServer(model="org1/qwen") as first:  # the same model again: resumed from the answer cache
        assert expand(data, out, first, r2med_home).returncode == 0
        assert first.requests == 0


def test_a_folder_differing_only_in_case_is_refused(tmp_path, r2med_home):
    data = make_collection(tmp_path / "Biology", n_queries=2)
    out = tmp_path / "exp"
    theirs = out / "Biology" / "hyde" / "QWEN"
    theirs.mkdir(parents=True)
    (theirs / "query_with_hydoc.jsonl").write_text("someone else's\n")
    with LLMServer(model="org1/qwen") as server:
        line = one_line(expand(data, out, server, r2med_home))
        assert server.requests == 0
    assert "differs from it only in case" in line, line
    assert (theirs / "query_with_hydoc.jsonl").read_text() == "someone else's\n"
    assert not (out / "Biology" / "hyde" / "qwen").exists()


def test_an_expansion_made_before_the_record_is_replaced_with_a_warning(tmp_path, r2med_home):
    data = make_collection(tmp_path / "Biology", n_queries=2)
    out = tmp_path / "exp"
    old = out / "Biology" / "hyde" / "qwen"
    old.mkdir(parents=True)
    (old / "query_with_hydoc.jsonl").write_text("from an older r2med\n")
    with LLMServer(model="org1/qwen") as server:
        proc = expand(data, out, server, r2med_home)
    assert proc.returncode == 0, proc.stderr
    assert "made before r2med recorded their model" in proc.stderr
    assert json.loads((old / "llm.json").read_text()) == {"model": "org1/qwen"}


def test_an_unreadable_record_is_refused_not_guessed(tmp_path):
    from r2med.errors import R2MedError
    from r2med.jobs.expand import check_llm_folder

    folder = tmp_path / "Biology" / "hyde" / "qwen"
    (folder / "llm.json").mkdir(parents=True)  # a folder where the record belongs
    with pytest.raises(R2MedError, match=r"llm\.json: unreadable"):
        check_llm_folder(folder, "org1/qwen")
    (folder / "llm.json").rmdir()
    (folder / "llm.json").write_text("[1]")
    with pytest.raises(R2MedError, match=r"llm\.json: unreadable"):
        check_llm_folder(folder, "org1/qwen")


def test_a_record_nested_too_deeply_is_unreadable_not_a_traceback(tmp_path):
    """``llm.json`` nested 200,000 deep raised RecursionError from ``json.loads`` (a traceback before any request);
    it is read by the one JSON reader, so it is an unreadable record (issue 27, deep JSON)."""
    from r2med.errors import R2MedError
    from r2med.jobs.expand import check_llm_folder

    folder = tmp_path / "Biology" / "hyde" / "qwen"
    folder.mkdir(parents=True)
    for deep in ("[" * 200_000 + "]" * 200_000, '{"model": ' + "[" * 500 + "]" * 500 + "}"):
        (folder / "llm.json").write_text(deep)
        with pytest.raises(R2MedError, match=r"llm\.json: unreadable"):
            check_llm_folder(folder, "org1/qwen")
