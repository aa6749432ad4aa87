"""Your own encoder (``evaluate -r custom --encoder``) and scorer (``rerank --reranker custom --scorer``), from
a .py file, a dotted module, an object in Python, or a package's entry point; checked against numpy brute
force + pytrec_eval and a hand-sorted reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from conftest import run_r2med

ENCODER = textwrap.dedent("""
    import hashlib
    import numpy as np

    CALLS = []

    def _vector(text):
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).standard_normal(16).astype(np.float32)

    class RandomEncoder:
        name = "random-16"
        revision = "1"

        def encode(self, texts, role):
            CALLS.append((role, len(texts)))
            log = __import__("os").environ.get("ENCODER_LOG")
            if log:
                with open(log, "a") as fh:
                    fh.write(f"{role} {len(texts)}\\n")
            return np.stack([_vector(role[0] + ":" + t) for t in texts])

    class Anonymous(RandomEncoder):
        name = None

    def make():
        return RandomEncoder()

    class Overlap:
        name = "overlap"

        def score(self, query, docs):
            q = set(query.lower().split())
            return [len(q & set(d.lower().split())) + 1.0 / (1 + len(d)) for d in docs]

    NOT_AN_ENCODER = 3
""")


def r2med(*args: str, home: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_r2med(*args, env={"R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1", **(env or {})})


def collection(folder: Path) -> Path:
    folder.mkdir()
    words = "insulin heart kidney liver lung brain blood bone skin nerve gene cell".split()
    rng = np.random.default_rng(0)
    with open(folder / "corpus.jsonl", "w") as fh:
        for i in range(40):
            fh.write(json.dumps({"id": f"d{i}", "text": " ".join(rng.choice(words, size=3 + i % 7))}) + "\n")
    with open(folder / "query.jsonl", "w") as fh, open(folder / "qrels.jsonl", "w") as qr:
        for q in range(8):
            fh.write(json.dumps({"id": f"q{q}", "text": " ".join(rng.choice(words, size=2))}) + "\n")
            for d in rng.choice(40, size=4, replace=False):
                qr.write(json.dumps({"q_id": f"q{q}", "p_id": f"d{d}", "score": 1}) + "\n")
    return folder


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def brute_force_ndcg(data: Path, encoder_module) -> float:
    enc = encoder_module.RandomEncoder()
    docs = read_jsonl(data / "corpus.jsonl")
    queries = read_jsonl(data / "query.jsonl")
    d = enc.encode([x["text"] for x in docs], "doc")
    q = enc.encode([x["text"] for x in queries], "query")
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ d.T
    run = {}
    for i, query in enumerate(queries):
        top = np.argsort(-scores[i])[:100]
        run[query["id"]] = {docs[j]["id"]: float(scores[i, j]) for j in top}
    qrels: dict = {}
    for row in read_jsonl(data / "qrels.jsonl"):
        qrels.setdefault(row["q_id"], {})[row["p_id"]] = row["score"]
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)


@pytest.fixture
def encoder_file(tmp_path) -> Path:
    path = tmp_path / "my_models.py"
    path.write_text(ENCODER)
    return path


def _module(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("my_models_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_custom_encoder_equals_numpy_brute_force_and_caches_by_declared_name(tmp_path, r2med_home, encoder_file):
    data = collection(tmp_path / "mini")
    log = tmp_path / "calls.log"
    proc = r2med(
        "evaluate",
        "-r",
        "custom",
        "--encoder",
        f"{encoder_file}:RandomEncoder",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        home=r2med_home,
        env={"ENCODER_LOG": str(log)},
    )
    assert proc.returncode == 0, proc.stderr
    stored = json.loads((tmp_path / "out" / "custom-RandomEncoder" / "mini" / "metrics.json").read_text())
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(brute_force_ndcg(data, _module(encoder_file)), abs=1e-6)
    config = stored["config"]
    assert config["retriever"] == "custom"
    described = config["encoder"]["extra"]["custom"]
    assert described["name"] == "random-16" and described["revision"] == "1"
    assert described["module_file"] == str(encoder_file.resolve())
    import hashlib

    assert described["module_sha256"] == hashlib.sha256(encoder_file.read_bytes()).hexdigest()
    # length-sorted batches: more than one batch for 40 docs at batch size 8, in descending length
    docs_batches = [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("doc")]
    assert sum(docs_batches) == 40
    # a second run into another folder: the embedding cache (keyed by name + revision) encodes nothing
    log.unlink()
    again = r2med(
        "evaluate",
        "-r",
        "custom",
        "--encoder",
        f"{encoder_file}:make",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out2"),
        home=r2med_home,
        env={"ENCODER_LOG": str(log)},
    )
    assert again.returncode == 0, again.stderr
    assert not log.exists()
    assert (
        json.loads((tmp_path / "out2" / "custom-make" / "mini" / "metrics.json").read_text())["aggregate"]
        == stored["aggregate"]
    )


def test_an_encoder_without_a_name_is_not_cached(tmp_path, r2med_home, encoder_file):
    data = collection(tmp_path / "mini")
    for out in ("a", "b"):
        log = tmp_path / f"{out}.log"
        proc = r2med(
            "evaluate",
            "-r",
            "custom",
            "--encoder",
            f"{encoder_file}:Anonymous",
            "-d",
            str(data),
            "-o",
            str(tmp_path / out),
            home=r2med_home,
            env={"ENCODER_LOG": str(log)},
        )
        assert proc.returncode == 0, proc.stderr
        assert "declares no name" in proc.stderr
        assert sum(int(x.split()[1]) for x in log.read_text().splitlines() if x.startswith("doc")) == 40


def test_dotted_module_and_python_objects(tmp_path, r2med_home, encoder_file, monkeypatch):
    import r2med as api

    data = collection(tmp_path / "mini")
    monkeypatch.syspath_prepend(str(encoder_file.parent))
    proc = r2med(
        "evaluate",
        "-r",
        "custom",
        "--encoder",
        "my_models:RandomEncoder",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        "--no-cache",
        home=r2med_home,
    )
    assert proc.returncode == 0, proc.stderr
    reference = brute_force_ndcg(data, _module(encoder_file))
    stored = json.loads((tmp_path / "out" / "custom-RandomEncoder" / "mini" / "metrics.json").read_text())
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(reference, abs=1e-6)
    collection_ = api.load_folder(data)
    retriever = api.make_retriever(_module(encoder_file).RandomEncoder(), cache=False)
    run = retriever.index(collection_.corpus).search(collection_.queries, k=100)
    assert api.evaluate(run, collection_.qrels).aggregate["ndcg_cut_10"] == pytest.approx(reference, abs=1e-6)
    scorer = api.make_reranker(_module(encoder_file).Overlap)
    assert scorer.rerank({"q": "heart"}, {"q": [("a", 1.0), ("b", 0.5)]}, {"a": "lung", "b": "heart"})["q"]["b"] > 1


def test_custom_scorer_reranks_as_its_scores_sort(tmp_path, r2med_home, encoder_file):
    data = collection(tmp_path / "mini")
    out = tmp_path / "out"
    assert r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(out), home=r2med_home).returncode == 0
    proc = r2med(
        "rerank",
        "--run",
        str(out / "bm25"),
        "--reranker",
        "custom",
        "--scorer",
        f"{encoder_file}:Overlap",
        "-k",
        "10",
        home=r2med_home,
    )
    assert proc.returncode == 0, proc.stderr
    folder = out / "bm25+custom-Overlap" / "mini"  # named from the spec (its OBJ), as an encoder is
    stored = json.loads((folder / "metrics.json").read_text())
    assert stored["config"]["reranker"]["scorer"]["spec"] == f"{encoder_file}:Overlap"
    first = {}
    for line in (out / "bm25" / "mini" / "run.trec").read_text().splitlines():
        qid, _, did, _rank, _, _ = line.split()
        first.setdefault(qid, []).append(did)
    texts = {row["id"]: row["text"] for row in read_jsonl(data / "corpus.jsonl")}
    queries = {row["id"]: row["text"] for row in read_jsonl(data / "query.jsonl")}
    scorer = _module(encoder_file).Overlap()
    got: dict[str, list[tuple[str, float]]] = {}
    for line in (folder / "run.trec").read_text().splitlines():
        qid, _, did, _, score, _ = line.split()
        got.setdefault(qid, []).append((did, float(score)))
    for qid, docs in first.items():
        head = [d for d, _ in got[qid][:10]]  # the top 10 (first-stage ties in corpus order, as the paper)
        assert set(head) <= set(docs)
        scores = scorer.score(queries[qid], [texts[d] for d in head])
        assert {d: pytest.approx(s, rel=1e-8) for d, s in zip(head, scores)} == dict(got[qid][:10])
        assert [s for _, s in got[qid][:10]] == sorted((s for _, s in got[qid][:10]), reverse=True)
        assert {d for d, _ in got[qid][10:]} == set(docs) - set(head)  # the first-stage tail follows


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "expected MODULE:OBJ"),
        ("no_such_module_xyz:Enc", "no module 'no_such_module_xyz'"),
        ("{file}:Missing", "has no 'Missing'"),
        ("{file}:NOT_AN_ENCODER", "has no encode() method"),
        ("{file}:Overlap", "has no encode() method"),
        ("/no/such/file.py:Enc", "no such file"),
    ],
)
def test_bad_encoder_specs_are_one_line(tmp_path, r2med_home, encoder_file, spec, message):
    data = collection(tmp_path / "mini")
    proc = r2med(
        "evaluate",
        "-r",
        "custom",
        "--encoder",
        spec.format(file=encoder_file),
        "-d",
        str(data),
        "-o",
        str(tmp_path / "out"),
        home=r2med_home,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len([x for x in proc.stderr.splitlines() if x.strip()]) == 1, proc.stderr
    assert not (tmp_path / "out").exists()


def test_entry_points_register_presets(tmp_path, encoder_file):
    """A package's entry points (a *.dist-info on sys.path) are listed by `r2med models` and run."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "my_models.py").write_text(ENCODER)
    info = site / "my_models-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-models\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[r2med.retrievers]\nrandom16 = my_models:RandomEncoder\n\n[r2med.rerankers]\noverlap = my_models:Overlap\n"
    )
    data = collection(tmp_path / "mini")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([src, str(site)]),
        "R2MED_HOME": str(tmp_path / "home"),
        "HF_HUB_OFFLINE": "1",
    }
    # real processes, not conftest.run_r2med: the package is found on PYTHONPATH at start-up as an installed one
    # is, and its module and entry points do not stay behind in this process for other tests
    models = subprocess.run(
        [sys.executable, "-m", "r2med", "models", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert models.returncode == 0, models.stderr
    rows = json.loads(models.stdout)
    assert rows["random16"]["kind"] == "retriever" and "my_models:RandomEncoder" in rows["random16"]["description"]
    assert rows["overlap"]["kind"] == "reranker"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "r2med", "evaluate", "-r", "random16", "-d", str(data), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    stored = json.loads((out / "random16" / "mini" / "metrics.json").read_text())
    assert stored["config"]["retriever"] == "custom"
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(brute_force_ndcg(data, _module(encoder_file)), abs=1e-6)
    reranked = subprocess.run(
        [sys.executable, "-m", "r2med", "rerank", "--run", str(out / "random16"), "--reranker", "overlap"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reranked.returncode == 0, reranked.stderr
    assert (out / "random16+overlap" / "mini" / "metrics.json").is_file()


@pytest.mark.slow(seconds=20)
def test_a_custom_encoder_runs_on_ray_as_in_process(tmp_path, r2med_home, encoder_file):
    """``evaluate --ray`` imports the typed spec in the Ray worker: the same ranking and measures as in process."""
    data = collection(tmp_path / "mini")
    args = ("evaluate", "-r", "custom", "--encoder", f"{encoder_file}:RandomEncoder", "-d", str(data))
    local = r2med(*args, "-o", str(tmp_path / "local"), home=r2med_home)
    assert local.returncode == 0, local.stderr
    ray = pytest.importorskip("ray")
    started = ray.is_initialized()
    try:
        remote = r2med(*args, "--ray", "-o", str(tmp_path / "ray"), home=r2med_home)
    finally:
        if not started and ray.is_initialized():
            ray.shutdown()  # the CLI ran in this process: leave no cluster behind for other tests here
    assert remote.returncode == 0, remote.stderr

    def ranking(root: Path) -> list[tuple[str, str, str]]:
        lines = (root / "custom-RandomEncoder" / "mini" / "run.trec").read_text().splitlines()
        return [(p[0], p[2], p[3]) for p in (line.split() for line in lines)]

    assert ranking(tmp_path / "ray") == ranking(tmp_path / "local")
    got, want = (
        json.loads((root / "custom-RandomEncoder" / "mini" / "metrics.json").read_text())
        for root in (tmp_path / "ray", tmp_path / "local")
    )
    assert got["aggregate"] == pytest.approx(want["aggregate"], abs=1e-9)
    assert (
        got["config"]["encoder"]["extra"]["custom"]["module_sha256"]
        == want["config"]["encoder"]["extra"]["custom"]["module_sha256"]
    )


def test_encode_fills_the_cache_a_custom_evaluate_then_reads(tmp_path, r2med_home, encoder_file):
    """``r2med encode -r custom --encoder`` embeds the corpus once; evaluate then encodes no document."""
    data = collection(tmp_path / "mini")
    spec = f"{encoder_file}:RandomEncoder"
    done = r2med("encode", "-r", "custom", "--encoder", spec, "-d", str(data), home=r2med_home)
    assert done.returncode == 0, done.stderr
    run = r2med(
        "evaluate", "-r", "custom", "--encoder", spec, "-d", str(data), "-o", str(tmp_path / "o"), home=r2med_home
    )
    assert run.returncode == 0, run.stderr
    assert "40 docs indexed (0 encoded)" in run.stderr, run.stderr
    refused = r2med("encode", "-r", "custom", "--encoder", spec, "-d", str(data), "--ray", home=r2med_home)
    assert refused.returncode == 2 and "without --ray" in refused.stderr
