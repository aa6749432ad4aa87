"""R2MED's and BRIGHT's outputs stay byte for byte what they were before the families became plug-ins (issue 35).

One fixed study -- BM25 on R2MED's Biology (the emulated hub's files: tests/hub_server.py), with and without the hub's
HyDE expansion; on BRIGHT's biology and pony, biology's long-document setting and a reasoning query set (the emulated
BRIGHT hub: tests/bright_hub.py); on the shared ``medline-med`` folder -- then ``report`` in every format and its HTML.
Every file's sha256 is compared with ``tests/data/family_outputs.json``, recorded from the code as it was before the
change (the file says at which commit and how).  Only what changes from machine to machine or run to run is taken
out first: ``metrics.json``'s ``timing`` and ``versions``, the shared folder's and the Hugging Face cache's absolute
paths, the HTML's "made at ... by r2med <version>" line.

Re-record only for a change that is meant to change the outputs, and say so in the commit:
``R2MED_RECORD_FAMILY_OUTPUTS=1 pytest tests/test_family_outputs.py`` (the test then writes the fixture and skips).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from bright_hub import bright_files, fill_bright_cache, have_shared_bright
from conftest import SHARED_DATA, run_r2med, shared_collection
from hub_server import fill_hf_cache, r2med_task_files
from r2med.runs.record import read_record

pytestmark = [pytest.mark.shared, pytest.mark.slow(seconds=30)]
pytest.importorskip("pyarrow")

FIXTURE = Path(__file__).parent / "data" / "family_outputs.json"

#: (system folder it writes, the evaluate arguments)
RUNS = (
    ("-r", "bm25", "--tasks", "Biology,bright:biology,bright:pony"),
    ("-r", "bm25", "--tasks", "bright:biology:long"),
    ("-r", "bm25", "-e", "reason:gpt4", "--tasks", "bright:biology,bright:pony"),
    ("-r", "bm25", "-e", "hyde:qwen-7b", "--tasks", "Biology"),
    ("-r", "bm25", "--data-dir", "{shared}/medline-med"),
)
#: (output file name, the report arguments after the results root)
REPORTS = tuple((f"report.{f}", ("--format", f)) for f in ("table", "markdown", "csv", "latex", "json")) + (
    ("report.r2med-published.markdown", ("--format", "markdown", "--tasks", "Biology", "--with-published", "bm25")),
    ("report.long.markdown", ("--format", "markdown", "--tasks", "bright:biology:long")),
)


def _normalised(path: Path, text: bytes, hf_cache: Path) -> bytes:
    if path.name == "metrics.json":
        record = json.loads(text)
        record.pop("timing", None)
        record.pop("versions", None)
        flat = json.dumps(record, sort_keys=True)
        return flat.replace(str(SHARED_DATA), "<shared>").replace(str(hf_cache), "<hf-cache>").encode()
    if path.suffix == ".html":
        return re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d UTC( by r2med [^<\"]+)?", b"<made>", text)
    return text


def outputs(tmp_path: Path, hf_cache: Path) -> dict[str, str]:
    """The study's files (relative path -> sha256 of the normalised bytes)."""
    from r2med.data.tasks import get_task

    shared_collection("medline-med")
    fill_hf_cache(hf_cache, "R2MED/Biology", r2med_task_files(), get_task("Biology").revision)
    fill_bright_cache(hf_cache, bright_files(("biology", "pony"), queries=6, distractors=25))
    out = tmp_path / "out"
    for args in RUNS:
        res = run_r2med("evaluate", *(a.replace("{shared}", str(SHARED_DATA)) for a in args), "-o", str(out))
        assert res.returncode == 0, res.stderr
    reports = tmp_path / "reports"
    reports.mkdir()
    for name, args in REPORTS:
        res = run_r2med("report", str(out), *args, "--wide", "-o", str(reports / name))
        assert res.returncode == 0, res.stderr
    res = run_r2med("report", str(out), "--html", str(reports / "report.html"), "-o", str(reports / "html.table"))
    assert res.returncode == 0, res.stderr
    found = {}
    for root in (out, reports):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = f"{root.name}/{path.relative_to(root).as_posix()}"
            found[rel] = hashlib.sha256(_normalised(path, path.read_bytes(), hf_cache)).hexdigest()
    return found


def test_r2med_and_bright_outputs_are_byte_identical_to_the_recorded_ones(tmp_path, hf_cache):
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    found = outputs(tmp_path, hf_cache)
    if os.environ.get("R2MED_RECORD_FAMILY_OUTPUTS"):
        recorded = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
        recorded["sha256"] = found
        FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"recorded {len(found)} files into {FIXTURE}")
    expected = json.loads(FIXTURE.read_text())["sha256"]
    assert sorted(found) == sorted(expected)
    changed = [name for name in expected if found[name] != expected[name]]
    assert not changed, f"outputs changed: {changed}"
    # every metrics.json the study wrote reads into the typed record, each typed field the file's own value
    written_records = sorted((tmp_path / "out").rglob("metrics.json"))
    assert len(written_records) == sum(1 for name in expected if name.endswith("/metrics.json")) >= 8
    for path in written_records:
        record, written = read_record(path.parent), json.loads(path.read_text())
        config = record.config
        assert config is not None and config.as_json() == written["config"]
        assert (config.step, config.retriever, config.k) == ("evaluate", "bm25", written["config"]["k"])
        assert config.fact("flavour") == written["config"]["flavour"]  # BM25's own fact, by name
        assert config.options is not None and config.options["k1"] == written["config"]["options"]["k1"]  # once
        expansion = written["config"]["expansion"]
        typed = None if config.expansion is None else (config.expansion.method, config.expansion.llm)
        assert typed == (None if expansion is None else (expansion["method"], expansion["llm"])), path
        assert record.protocol is not None and record.protocol.family == written["protocol"]["family"]
        assert record.protocol.depth == written["protocol"]["depth"]
        assert record.data is not None and record.data.queries == written["data"]["queries"]
