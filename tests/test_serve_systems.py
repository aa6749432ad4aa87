"""``r2med serve`` of a fused and of a reranked system, recomputed per query.

References: the run files ``r2med fuse`` and ``r2med rerank`` write for the same systems (their jobs, in this
process), read back here by hand (``qid Q0 doc rank score tag``) and ordered as a served reply orders documents
(score, then corpus position): a reply holds the first ``k`` of those runs' documents with their stored scores.
BRIGHT's ``excluded_ids`` are read from the emulated hub's examples rows (tests/bright_hub.py), never from r2med.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_first_hour import write_clinic

pytest.importorskip("torch")
pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from serve_process import ServeProcess  # noqa: E402
from test_dense_fixtures import tiny_bert  # noqa: E402
from test_rerank import _tiny_bert as tiny_cross_encoder  # noqa: E402

pytestmark = pytest.mark.slow(seconds=15)


def read_run_file(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, doc, score = re.fullmatch(r"(\S+) Q0 (.+) \S+ (\S+) \S+", line).group(1, 2, 3)  # ids may hold spaces
        run.setdefault(qid, {})[doc] = float(score)
    return run


def best_first(docs: dict[str, float], corpus: list[str], k: int) -> list[tuple[str, float]]:
    return sorted(docs.items(), key=lambda item: (-item[1], corpus.index(item[0])))[:k]


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    """A ten-document collection, a tiny dense model and a tiny cross-encoder; ``evaluate``'s runs of bm25 and the
    dense model written under runs/."""
    from r2med.data import check_hub, resolve
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    root = tmp_path_factory.mktemp("systems")
    data = write_clinic(root / "data" / "clinic")
    model = tiny_bert(root / "models" / "tiny-bert")
    ce = tiny_cross_encoder(root / "models" / "tiny-ce", 1, seed=3)
    [ref] = check_hub(resolve("clinic", str(data)))
    collection = ref.load()
    steps = [EvaluateStep.of("bm25", cache=False), EvaluateStep.of("dense", model=model, pooling="mean", cache=False)]
    for step, name in zip(steps, ("bm25", "dense-tiny-bert")):
        run_task(collection, step, root / "runs" / name)
    return root, ref, collection, steps, str(ce)


def served_top(service, text: str, k: int, query_id: str | None = None):
    from r2med.serve.index import Search

    [hits] = service.index.search([Search(text, k, query_id)])
    return list(zip(hits.ids, hits.scores))


def served_batch(service, queries: dict[str, str], k: int, named: bool = True):
    """Every query searched in one batch, in the task's order: as ``evaluate`` encodes them (a dense member's query
    embedding varies with its batch's padding at float32's last digits, which CombSUM's scores show)."""
    from r2med.serve.index import Search

    hits = service.index.search([Search(text, k, qid if named else None) for qid, text in queries.items()])
    return {qid: list(zip(h.ids, h.scores)) for qid, h in zip(queries, hits)}


FUSIONS = [
    {"method": "rrf"},
    {"method": "combsum", "norm": "minmax"},
    {"method": "combmnz", "norm": "zscore", "weights": [1.0, 0.5]},
    {"method": "rrf", "k": 10, "top_k": 6},
]


@pytest.mark.parametrize("options", FUSIONS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_fused_replies_equal_fuses_run(clinic, options, tmp_path):
    from r2med.jobs.fuse import fuse_folders
    from r2med.jobs.serve import load
    from r2med.steps import FuseStep

    root, ref, collection, steps, _ = clinic
    done = fuse_folders(
        FuseStep.of([root / "runs" / "bm25", root / "runs" / "dense-tiny-bert"], out=tmp_path, **options)
    )
    fused = read_run_file(done.folder / "clinic" / "run.trec")
    service = load(steps, ref, fusion=FuseStep.of((), **options))
    corpus = list(collection.corpus)
    depth = service.limits.max_topk
    assert depth == options.get("top_k", 100)  # the fused run's depth: --top-k, else the protocol's
    for k in (1, 3, depth):
        got = served_batch(service, collection.queries, k)
        assert got == {qid: best_first(fused[qid], corpus, k) for qid in collection.queries}, k
    served = service.served
    assert served["system"] == done.name and served["fusion"]["fusion"] == options["method"]
    assert [m["system"] for m in served["members"]] == ["bm25", "dense-tiny-bert"]
    assert served["fusion"]["weights"] == options.get("weights")


@pytest.mark.parametrize("top_k_only", [False, True], ids=["tail", "top-k-only"])
def test_reranked_replies_equal_reranks_run(clinic, top_k_only, tmp_path):
    from r2med.jobs.rerank import rerank_folder
    from r2med.jobs.serve import load
    from r2med.steps import RerankStep

    root, ref, collection, steps, ce = clinic
    given = {"top_k": 4, **({"keep_tail": False} if top_k_only else {})}
    [done] = rerank_folder(RerankStep.of(root / "runs" / "bm25", ce, out=tmp_path, **given))
    reranked = read_run_file(done.folder / "clinic" / "run.trec")
    service = load(steps[0], ref, rerank=RerankStep.of((), ce, **given))
    corpus = list(collection.corpus)
    assert service.limits.max_topk == (4 if top_k_only else 100)  # the protocol's depth, the tail kept
    for qid, text in collection.queries.items():
        for k in (2, service.limits.max_topk):
            assert served_top(service, text, k) == best_first(reranked[qid], corpus, k), (qid, k)
    assert service.served["system"] == done.name
    assert service.served["rerank"]["top_k"] == 4 and service.served["rerank"]["keep_tail"] is not top_k_only


def test_fused_then_reranked_over_http_and_traced(clinic, tmp_path):
    """The command line: two retrievers fused, the fused list reranked; replies equal ``rerank`` over ``fuse``'s
    folder; the startup line, /health and the trace's start record say what is served."""
    from r2med.jobs.fuse import fuse_folders
    from r2med.jobs.rerank import rerank_folder
    from r2med.steps import FuseStep, RerankStep

    root, _, collection, _, ce = clinic
    fused = fuse_folders(FuseStep.of([root / "runs" / "bm25", root / "runs" / "dense-tiny-bert"], out=tmp_path))
    [done] = rerank_folder(RerankStep.of(fused.folder, ce, top_k=4, out=tmp_path))
    reference = read_run_file(done.folder / "clinic" / "run.trec")
    trace = tmp_path / "trace.jsonl"
    model = root / "models" / "tiny-bert"
    args = ["-d", root / "data" / "clinic", "-t", "clinic", "-r", "bm25", "-r", "dense", "--model", model]
    args += ["--pooling", "mean", "--no-cache", "--fuse", "rrf", "--reranker", ce, "--rerank-top-k", "4"]
    with ServeProcess(*args, "--trace", trace) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        assert f"with {done.name} (rrf fusion of bm25, dense-tiny-bert, reranked top 4)" in server.stderr
        corpus = list(collection.corpus)
        for qid, text in collection.queries.items():
            hits = client.post("/retrieve", json={"queries": [text], "topk": 5, "return_scores": True}).json()
            got = [(h["document"]["id"], h["score"]) for h in hits["result"][0]]
            assert got == best_first(reference[qid], corpus, 5), qid
        served = client.get("/health").json()["served"]
    assert served["fusion"]["fusion"] == "rrf" and served["rerank"]["top_k"] == 4
    start = json.loads(trace.read_text().splitlines()[0])
    assert start["event"] == "start" and start["served"]["rerank"] == served["rerank"]
    assert start["served"]["fusion"] == served["fusion"]


@pytest.mark.parametrize(
    "args, line",
    [
        (["-r", "bm25", "-r", "dense", "--model", "m"], "2 retrievers and no fusion: give --fuse"),
        (["--fuse", "rrf"], "--fuse fuses two or more retrievers (-r A -r B); one is given"),
        (["--rrf-k", "5"], "--weights, --rrf-k and --norm set the fusion: give --fuse too"),
        (["--rerank-top-k", "5"], "--rerank-top-k, --top-k-only and --rerank-set set the reranker"),
        (["-r", "bm25", "-r", "bm25", "--fuse", "rrf"], "each retriever once"),
        (
            ["-r", "bm25", "-r", "dense", "--model", "m", "--fuse", "rrf", "--encoder", "a:B"],
            "unknown option '--encoder'",
        ),
        (["-r", "bm25", "-r", "dense", "--model", "m", "--fuse", "rrf", "--weights", "1"], "1 weight(s) given for 2"),
    ],
)
def test_refused_systems_in_one_line(clinic, args, line):
    from conftest import run_r2med

    root = clinic[0]
    res = run_r2med("serve", "-d", str(root / "data" / "clinic"), "-t", "clinic", "--no-cache", "--port", "0", *args)
    assert res.returncode != 0 and line in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_brights_exclusions_applied_in_a_fused_system(clinic, hf_cache, tmp_path):
    from bright_hub import bright_files, fill_bright_cache, have_shared_bright, hub_path, read_parquet
    from r2med.data import check_hub, resolve
    from r2med.jobs.evaluate import run_task
    from r2med.jobs.fuse import fuse_folders
    from r2med.jobs.serve import load
    from r2med.steps import EvaluateStep, FuseStep

    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    pytest.importorskip("pyarrow")
    files = bright_files(("leetcode",), queries=4, distractors=30)
    rows = read_parquet(files[hub_path("examples", "leetcode")])
    fill_bright_cache(hf_cache, files)
    model = str(clinic[0] / "models" / "tiny-bert")
    [ref] = check_hub(resolve("bright:leetcode"))
    collection = ref.load()
    steps = [EvaluateStep.of("bm25", cache=False), EvaluateStep.of("dense", model=model, pooling="mean", cache=False)]
    for step, name in zip(steps, ("bm25", "dense-tiny-bert")):
        run_task(collection, step, tmp_path / "runs" / name)
    done = fuse_folders(FuseStep.of([tmp_path / "runs" / "bm25", tmp_path / "runs" / "dense-tiny-bert"]))
    [path] = done.folder.glob("*/run.trec")
    fused = read_run_file(path)
    service = load(steps, ref, fusion=FuseStep.of((), method="rrf"))
    corpus = list(collection.corpus)
    named = 0
    for row in rows:
        banned = set(row["excluded_ids"]) - {"N/A"}
        named += bool(banned)
        got = served_top(service, row["query"], 50, row["id"])
        assert not banned & {d for d, _ in got}
        assert got == best_first(fused[row["id"]], corpus, 50)
        free = served_top(service, row["query"], len(corpus))  # not named: not applied (the emulator's banned
        if banned:  # documents repeat the query's words, so they come back)
            assert banned & {d for d, _ in free}
    assert named >= 2
