"""The emulated BRIGHT hub (tests/bright_hub.py): real rows through pyarrow, served by the hub emulator, cached.

References: the shared examples rows themselves (the fixture must carry them unchanged), BRIGHT's own exclusion
code rebuilt from retrievers.py ``get_scores`` (which fails unless every excluded id is a document), huggingface_hub
downloading from tests/hub_server.py over HTTP (``HF_ENDPOINT``) and reading a pre-filled standard cache offline,
and r2med's protocol data for the hub layout (written out independently in the fixture).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bright_hub import (
    BRIGHT_PIN,
    BRIGHT_REPO,
    DOCUMENT_COLUMNS,
    EXAMPLE_COLUMNS,
    LONG_TASKS,
    REASONING_CONFIGS,
    bright_files,
    fill_bright_cache,
    have_shared_bright,
    hub_path,
    read_parquet,
    shared_rows,
)
from hub_server import HubEmulator

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")

# a StackExchange task with long documents, one with exclusions on every query, one whose "no exclusion" is []
SOME = ("biology", "leetcode", "theoremqa_theorems")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(SOME, queries=4, distractors=12)


def brights_get_scores(query_ids, doc_ids, scores, excluded_ids):
    """BRIGHT's retrievers.py:111-127, rebuilt: excluded ids popped (KeyError when one is not a document), top 1000."""
    out = {}
    for query_id, doc_scores in zip(query_ids, scores):
        cur = {str(did): s for did, s in zip(doc_ids, doc_scores)}
        for did in set(excluded_ids[str(query_id)]):
            if did != "N/A":
                cur.pop(did)
        out[str(query_id)] = dict(sorted(cur.items(), key=lambda x: x[1], reverse=True)[:1000])
    return out


def test_examples_round_trip_unchanged(files):
    for task in SOME:
        rows = read_parquet(files[hub_path("examples", task)])
        assert rows == [{c: r[c] for c in EXAMPLE_COLUMNS} for r in shared_rows(task)[:4]], task
        assert list(rows[0]) == list(EXAMPLE_COLUMNS)


def test_documents_hold_every_judged_and_excluded_id(files):
    for task in SOME:
        rows = read_parquet(files[hub_path("examples", task)])
        docs = read_parquet(files[hub_path("documents", task)])
        assert all(list(d) == list(DOCUMENT_COLUMNS) and d["content"] for d in docs)
        ids = [d["id"] for d in docs]
        assert len(ids) == len(set(ids))
        needed = {g for r in rows for g in r["gold_ids"]} | {e for r in rows for e in r["excluded_ids"] if e != "N/A"}
        assert needed <= set(ids), task
        assert any(" " in i for i in ids), "some document ids hold spaces, as BRIGHT's do"
        if task in LONG_TASKS:
            long_ids = {d["id"] for d in read_parquet(files[hub_path("long_documents", task)])}
            assert {g for r in rows for g in r["gold_ids_long"]} <= long_ids
        else:
            assert hub_path("long_documents", task) not in files


def test_brights_exclusion_code_runs_on_the_fixture(files):
    """BRIGHT's get_scores pops every excluded id: it must find each one among the documents."""
    for task in SOME:
        rows = read_parquet(files[hub_path("examples", task)])
        doc_ids = [d["id"] for d in read_parquet(files[hub_path("documents", task)])]
        rng = random.Random(0)
        scores = [[rng.random() for _ in doc_ids] for _ in rows]
        excluded = {r["id"]: r["excluded_ids"] for r in rows}
        run = brights_get_scores([r["id"] for r in rows], doc_ids, scores, excluded)
        for r in rows:
            assert not set(run[r["id"]]) & set(r["excluded_ids"])
            assert len(run[r["id"]]) == min(1000, len(doc_ids) - len({e for e in r["excluded_ids"] if e != "N/A"}))


def test_reasoning_sets_replace_only_the_query(files):
    for config in REASONING_CONFIGS:
        rows = read_parquet(files[hub_path(config, "biology")])
        originals = shared_rows("biology")[:4]
        assert [r["id"] for r in rows] == [o["id"] for o in originals]
        for r, o in zip(rows, originals):
            assert r["query"] != o["query"]
            assert {k: v for k, v in r.items() if k != "query"} == {k: o[k] for k in EXAMPLE_COLUMNS if k != "query"}


def test_deterministic(files):
    again = bright_files(SOME, queries=4, distractors=12)
    assert again == files
    assert bright_files(("biology",), queries=4, distractors=12, seed=1) != {
        k: v for k, v in files.items() if "/biology-" in k
    }


def test_layout_equals_r2meds_protocol_data(files):
    """The fixture writes the hub's paths on its own; r2med's protocol data must name the same files."""
    from r2med.protocol import bright

    h = bright.hub()
    assert h.repo_id == BRIGHT_REPO and h.revision == BRIGHT_PIN
    assert h.example_columns == EXAMPLE_COLUMNS and h.document_columns == DOCUMENT_COLUMNS
    expected = set()
    for task in SOME:
        expected |= {h.path("examples", task), h.path("documents", task)}
        expected |= {h.path(r.config, task) for r in h.reasoning_sets}
        if bright.task(task).has_long_documents:
            expected.add(h.path("long_documents", task))
    assert expected == set(files)


def test_the_hub_emulator_serves_it(files, tmp_path):
    """huggingface_hub, in its own process (it reads HF_ENDPOINT at import), downloads a file at the pinned commit."""
    target = hub_path("documents", "leetcode")
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
        env = {k: v for k, v in os.environ.items() if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
        env.update(
            HF_ENDPOINT=hub.url,
            HF_HUB_OFFLINE="0",
            HF_HUB_CACHE=str(tmp_path / "hub"),
            HF_HOME=str(tmp_path / "hf_home"),
            HF_HUB_DISABLE_PROGRESS_BARS="1",
        )
        code = (
            "import sys; from huggingface_hub import hf_hub_download; "
            f"print(hf_hub_download({BRIGHT_REPO!r}, {target!r}, repo_type='dataset', revision={BRIGHT_PIN!r}))"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0, res.stderr
        path = Path(res.stdout.strip().splitlines()[-1])
        assert path.read_bytes() == files[target]
        assert f"/datasets/{BRIGHT_REPO}/resolve/{BRIGHT_PIN}/{target}" in hub.paths("GET")
    assert f"datasets--xlangai--BRIGHT/snapshots/{BRIGHT_PIN}/" in path.as_posix()
    assert read_parquet(path.read_bytes())[0].keys() == {"id", "content"}


def test_a_prefilled_cache_serves_it_offline(files, hf_cache):
    """A standard Hugging Face cache laid out at the pinned commit: hf_hub_download finds it offline, by commit
    and through the ``main`` ref."""
    from huggingface_hub import hf_hub_download

    fill_bright_cache(hf_cache, files)
    target = hub_path("examples", "theoremqa_theorems")
    for revision in (BRIGHT_PIN, "main"):
        path = hf_hub_download(BRIGHT_REPO, target, repo_type="dataset", revision=revision)
        assert Path(path).read_bytes() == files[target]
    rows = read_parquet(files[target])
    assert all(r["excluded_ids"] == [] for r in rows)  # theoremqa_theorems' "no exclusion" is an empty list
