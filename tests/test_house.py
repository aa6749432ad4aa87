"""The shape of the package: one direction of imports, the public API, one rule per decision.

Each test pins a decision that lives in one place: no import circles; ``r2med.fuse`` /
``make_reranker`` / ``rerank`` at the top level; friendly measure names per query; a frozen
``Collection``; one task resolver; registry records asked instead of names; one top-k rule (ties by
corpus position, also at the cut); one retry rule (``Retry-After`` honoured) for every HTTP client.
"""

from __future__ import annotations

import ast
import dataclasses
import graphlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import r2med
from r2med.errors import R2MedError
from test_data import make_r2med
from test_dense_fixtures import bert_dir  # noqa: F401

SRC = Path(r2med.__file__).parent


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports (module and function level; not under ``TYPE_CHECKING``)."""
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_checking_only = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for node in ast.walk(block)
        }
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in type_checking_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                stem = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
            for target in targets:
                # a module importing its own package (``from . import app``) is not a circle
                if target in modules and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def test_no_import_circles():
    """No module imports one that imports it back, directly or around a longer circle (graphlib finds one)."""
    graph = _import_graph(SRC)
    assert len(graph) > 50 and "r2med.jobs.evaluate" in graph["r2med.cli.core"] | {"r2med.jobs.evaluate"}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        pytest.fail(f"import circle: {' -> '.join(err.args[1])}")


def test_the_circle_check_finds_a_circle(tmp_path):
    """The check above can fail: two modules importing each other (one of them inside a function) are found."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    assert _import_graph(pkg) == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(_import_graph(pkg)).prepare()
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    graphlib.TopologicalSorter(_import_graph(pkg)).prepare()  # an import for the type checker only is no circle


def test_py_typed_ships_with_the_package():
    """Type checkers read r2med's annotations: ``py.typed`` is in the package and in its package data."""
    import tomllib

    pyproject = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert (SRC / "py.typed").is_file() and "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["r2med"]


def test_tests_call_the_cli_one_way():
    """Tests run ``r2med`` through ``conftest.run_r2med`` (in process); a test file that starts ``python -m
    r2med`` says why (a real process: settings read at import, a kill, a whole process's memory)."""
    tests = Path(__file__).parent
    for path in sorted(set(tests.glob("*.py")) - {Path(__file__)}):
        text = path.read_text(encoding="utf-8")
        assert "CliRunner(" not in text, f"{path.name}: use conftest.run_r2med, not typer's CliRunner"
        if '"-m", "r2med"' in text or "'-m', 'r2med'" in text:
            assert "real process" in text or "fresh process" in text, f"{path.name}: say why a subprocess"


def test_public_api_fuse_make_reranker_and_rerank():
    run_a = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
    run_b = {"q1": {"d3": 9.0, "d2": 8.0}}
    fused = r2med.fuse([run_a, run_b], "rrf", k=60)
    assert fused["q1"]["d2"] == pytest.approx(1 / 62 + 1 / 62) and fused["q1"]["d1"] == pytest.approx(1 / 61)

    class Length:
        name = "length"

        def rerank(self, queries, candidates, corpus):
            return {q: {d: float(len(corpus[d])) for d, _ in docs} for q, docs in candidates.items()}

        def config(self):
            return {"reranker": self.name}

    corpus = {"d1": "a", "d2": "ccc", "d3": "bb"}
    out = r2med.rerank(run_a, {"q1": "query"}, corpus, Length(), top_k=2, keep_tail=True)
    order = sorted(out["q1"], key=out["q1"].get, reverse=True)
    assert order == ["d2", "d1", "d3"]  # the top 2 reordered by length, the tail below them
    assert callable(r2med.make_reranker) and r2med.make_reranker("listwise", model="m", base_url="http://x/v1")
    assert r2med.reranking.make_reranker is r2med.make_reranker  # the package stays a package


def test_per_query_measures_take_friendly_names():
    metrics = r2med.evaluate({"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 1}}, ["nDCG@10", "MRR"])
    values = metrics.per_query["q"]
    assert values["nDCG@10"] == values["ndcg_cut_10"] == pytest.approx(1 / np.log2(3))
    assert values["MRR"] == values["recip_rank"] == 0.5
    assert "R@100" not in values and values.get("P@5") is None
    assert json.loads(json.dumps(metrics.per_query)) == {"q": {"ndcg_cut_10": values["ndcg_cut_10"], "recip_rank": 0.5}}


def test_collection_is_frozen(tmp_path):
    coll = r2med.load_folder(make_r2med(tmp_path / "c"))
    fingerprint = coll.fingerprint
    with pytest.raises(dataclasses.FrozenInstanceError):
        coll.corpus = {}
    smaller = coll.replace(corpus={"d1": coll.corpus["d1"]})
    assert smaller.fingerprint != fingerprint and coll.fingerprint == fingerprint


def test_one_resolver_for_task_names_and_folders(tmp_path):
    from r2med.data import RecordedSource, locate, resolve
    from r2med.errors import R2MedError

    one = make_r2med(tmp_path / "one")
    many = tmp_path / "many"
    make_r2med(many / "Biology")
    make_r2med(many / "medqa-diag")
    make_r2med(many / "my-collection")
    [ref] = resolve("all", one)  # one collection folder: its name is the task
    assert (ref.name, ref.source) == ("one", str(one)) and ref.load().name == "one"
    assert resolve("One", one) == [ref]
    with pytest.raises(R2MedError, match="is one collection"):  # --tasks that does not name it is not ignored
        resolve("Biology", one)
    refs = resolve("Biology,medqa-diag", many)  # a folder of collection folders: names checked, R2MED's canonical
    assert [r.name for r in refs] == ["Biology", "MedQA-Diag"] and refs[0].source == str(many / "Biology")
    assert [r.name for r in resolve("all", many)] == ["Biology", "MedQA-Diag", "my-collection"]
    assert [r.source for r in resolve("MY-COLLECTION", many)] == [str(many / "my-collection")]
    with pytest.raises(R2MedError, match="it holds: Biology, medqa-diag, my-collection"):
        resolve("PMC-Clinical", many)
    assert [r.source for r in resolve("Biology", None, "main")] == ["hub"]
    # results filed under a task: --data-dir, the demo, the recorded source, the hub at the recorded commit
    assert locate("Biology", many).source == str(many / "Biology")
    assert locate("other", one) is None and locate("other", one, alone=True).source == str(one)
    assert locate("demo").source == "demo"
    assert locate("x", recorded=RecordedSource(source=str(one))).source == str(one)
    hub = locate("biology", recorded=RecordedSource(source="/gone", revision="abc"))
    assert (hub.name, hub.source, hub.revision) == ("Biology", "hub", "abc")
    assert locate("x", recorded=RecordedSource(source="/gone")) is None


def test_registry_records_answer_what_names_used_to():
    from r2med.jobs.ray import default_resources
    from r2med.jobs.reproduce import paper_options
    from r2med.retrieval.registry import retriever_meta

    nv, openai, bm25 = retriever_meta("nv"), retriever_meta("openai"), retriever_meta("bm25")
    assert nv.needs_gpu == "7B" and nv.local_model and nv.paper_dtype == "fp16" and nv.api_key_env is None
    assert openai.api_key_env == "OPENAI_API_KEY" and not openai.local_model and openai.extra is None
    assert bm25.family == "lexical" and not bm25.local_model
    assert [retriever_meta(n).default_tolerance for n in ("bm25", "bge", "voyage", "qwen3-emb-8b")] == [
        0.5,
        1.0,
        2.0,
        1.5,
    ]
    from r2med.results.published import PublishedKey, tolerance_of

    # a published configuration's tolerance: its reranker's class when it names one, else its retriever's
    assert [
        tolerance_of(PublishedKey(*k))
        for k in (
            ("Qwen3-Embedding-8B",),
            ("nv", "rerank:bge-reranker"),
            ("e5", "rerank:ReasonRank(32B)"),
            ("gte-Qwen2-7B-instruct",),
        )
    ] == [1.5, 1.0, 2.0, None]
    assert default_resources("openai", 4) == {"num_cpus": 1.0}  # an API needs no GPU
    assert paper_options("bm25") == {"k1": 0.9, "b": 0.4} and paper_options("bge") == {}
    assert retriever_meta("grit").extra[0] == ("torch", "transformers", "gritlm")
    with pytest.raises(R2MedError, match="unknown option 'pooling'; it takes: cache, k1, b, analyzer"):
        bm25.parse_options({"pooling": "cls", "k1": None})
    assert bm25.parse_options({"b": 0.75}).record() == {"cache": True, "k1": 0.9, "b": 0.75, "analyzer": "english"}


def test_dense_top_k_keeps_the_earlier_of_tied_docs_at_the_cut():
    """Few distinct scores, so the cut falls inside tied groups: the result is a stable sort's, whatever the chunks."""
    from r2med.retrieval.dense import exact_top_k

    rng = np.random.default_rng(0)
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    for _ in range(60):
        n = int(rng.integers(5, 300))
        values = rng.integers(0, 3, size=n).astype(np.float32)
        docs = np.stack([values, np.zeros(n, dtype=np.float32)], axis=1)
        k = int(rng.integers(1, n))
        for chunk in (7, 64, 1000):
            _scores, idx = exact_top_k(query, docs, k, chunk=chunk, device="cpu")
            assert idx[0].tolist() == np.argsort(-values, kind="stable")[:k].tolist()


class _Busy(BaseHTTPRequestHandler):
    """Answers 429 with ``Retry-After: 0.3`` once, then embeddings."""

    hits: ClassVar[list[float]] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Busy.hits.append(time.monotonic())
        if len(_Busy.hits) == 1:
            raw, status, headers = b"{}", 429, {"Retry-After": "0.3"}
        else:
            raw = json.dumps({"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(len(body["input"]))]})
            raw, status, headers = raw.encode(), 200, {}
        self.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(raw))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)


def test_every_http_client_honours_retry_after():
    """The server's Retry-After is waited for, also beyond the backoff cap (the embedding APIs cut it to the
    cap before the retry loop was shared); the LLM client waits no longer than asked (it used to wait the
    full backoff when the server asked for less)."""
    from r2med.infra.retry import RetryPolicy

    policy = RetryPolicy(max_retries=3, backoff_base=5.0, backoff_max=0.01)
    assert policy.delay(0, retry_after=0.3) == 0.3 and policy.delay(0, retry_after=0.0) == 0.0
    assert policy.delay(4) <= 0.01
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _Busy.hits = []
        r = r2med.make_retriever(
            "openai", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k", backoff_max=0.01
        )
        r.index({"d1": "text"})
        assert len(_Busy.hits) == 2 and _Busy.hits[1] - _Busy.hits[0] >= 0.29
    finally:
        server.shutdown()
        server.server_close()


def test_a_preset_is_a_data_record(bert_dir, monkeypatch):
    """A dense preset registered from a record alone: its retriever runs, and every fact about it is asked
    of its record (GPU, packages, precision, tolerance), with no code naming it."""
    pytest.importorskip("torch")
    from r2med.jobs.ray import default_resources
    from r2med.retrieval import presets
    from r2med.retrieval.dense import register_preset
    from r2med.retrieval.registry import RETRIEVERS, retriever_meta

    record = presets.Preset(
        name="tiny-later",
        hub_id=bert_dir,
        query_instructions="query: ",
        doc_instructions="",
        fields={
            "loader": "transformers",
            "pooling": "mean",
            "normalize": True,
            "dtype": "fp32",
            "max_length": 64,
            "batch_size": 4,
            "needs_gpu": "8B",
            "packages": (("torch", "transformers", "flash_attn"), "pip install flash-attn"),
        },
    )
    monkeypatch.setattr(presets, "_ADDED", dict(presets._ADDED))
    monkeypatch.setattr(RETRIEVERS, "records", dict(RETRIEVERS.records))
    register_preset(record)
    meta = retriever_meta("tiny-later")
    assert (meta.needs_gpu, meta.paper_dtype, meta.default_tolerance, meta.hub_id) == ("8B", "fp32", 1.0, bert_dir)
    assert meta.extra == (("torch", "transformers", "flash_attn"), "pip install flash-attn")
    assert default_resources("tiny-later", 1) == {"num_cpus": 1.0, "num_gpus": 1.0}
    run = (
        r2med.make_retriever("tiny-later", device="cpu", cache=False)
        .index({"d1": "insulin", "d2": "heart"})
        .search({"q": "insulin"}, k=2)
    )
    assert set(run["q"]) == {"d1", "d2"}
    with pytest.raises(ValueError):
        register_preset(
            presets.Preset(name="bge", hub_id="x", fields={}, query_instructions=None, doc_instructions=None)
        )


# -- every command that writes, against a link below its output (issue 27, item 1) ---------------------------------
#
# The commands are listed from the typer app itself, so a new command is covered: it writes (a case below, run
# against a link where it would write) or it writes nothing under a folder the user names (WRITES_NOTHING, with why).

#: Commands that write no file under a folder the user names: they print, or read.
WRITES_NOTHING = {
    "tasks": "prints the task table",
    "score": "prints the measures of a run file",
    "models": "prints the model table",
    "show": "prints one query of the systems",
    "cache ls": "lists the home",
}

_SCORER = (
    "class Overlap:\n    name = 'overlap'\n\n    def score(self, query, docs):\n        return [1.0 for _ in docs]\n"
)
_ENCODER = (
    "import numpy as np\n\nclass Enc:\n    name = 'enc'\n    revision = '1'\n\n"
    "    def encode(self, texts, role):\n        return np.ones((len(texts), 4), dtype=np.float32)\n"
)


@dataclasses.dataclass(frozen=True)
class LinkCase:
    """One command run where a folder (or file) it writes is a link to the user's own files elsewhere.

    ``build(tmp, victim, stack)`` lays out the inputs and the link, and returns (arguments, the link); ``expect``:
    ``refuse`` (one line, exit 2), ``replace`` (the link at the very place a file is written whole is replaced, exit
    0) or ``unlink`` (``cache rm`` removes the link entry itself).  The target is byte-for-byte untouched in all."""

    command: str
    build: object
    expect: str = "refuse"


def _runs(tmp: Path, *systems: str, task: str = "t1") -> tuple[Path, Path]:
    """A results root with ``systems`` evaluated on a small collection named ``task``: (root, data)."""
    from conftest import run_r2med
    from test_containment import make_data

    data = make_data(tmp, task)
    for system in systems:
        res = run_r2med("-q", "evaluate", "-r", system, "-d", str(data), "-o", str(tmp / "runs"))
        assert res.returncode == 0, res.stderr
    return tmp / "runs", data


def _linked(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


def _evaluate(tmp, victim, stack):
    from test_containment import make_data

    return ["evaluate", "-r", "bm25", "-d", make_data(tmp), "-o", tmp / "out"], _linked(tmp / "out" / "bm25", victim)


def _evaluate_ray(tmp, victim, stack):
    pytest.importorskip("ray")
    args, link = _evaluate(tmp, victim, stack)
    return [*args, "--ray"], link  # refused before Ray starts


def _demo(tmp, victim, stack):
    return ["demo", "-o", tmp / "out"], _linked(tmp / "out" / "bm25", victim)


def _import(tmp, victim, stack):
    from test_containment import make_data

    run = tmp / "mine.trec"
    run.write_text("q1 Q0 a 1 2.0 mine\nq1 Q0 b 2 1.0 mine\n")
    args = ["import", run, "-d", make_data(tmp), "--name", "imp", "-o", tmp / "out"]
    return args, _linked(tmp / "out" / "imp", victim)


def _serve(tmp, victim, stack):
    from test_containment import make_data

    link = _linked(tmp / "traces" / "agent.jsonl", victim.parent / "mine.md")
    return ["serve", "-d", make_data(tmp), "-t", "t1", "--port", "0", "--trace", link], link


def _rerank(tmp, victim, stack):
    runs, _ = _runs(tmp, "bm25")
    (tmp / "overlap.py").write_text(_SCORER)
    scorer = f"{tmp / 'overlap.py'}:Overlap"
    args = ["rerank", "--run", runs / "bm25", "--reranker", "custom", "--scorer", scorer, "--name", "rr", "-o", runs]
    return args, _linked(runs / "rr", victim)


def _fuse(tmp, victim, stack):
    runs, _ = _runs(tmp, "bm25", "bm25-standard")
    return ["fuse", runs / "bm25", runs / "bm25-standard", "--name", "fused"], _linked(runs / "fused", victim)


def _experiment(tmp: Path, extra: str = "") -> Path:
    from test_containment import make_data

    make_data(tmp)
    (tmp / "mine.trec").write_text("q1 Q0 a 1 2.0 mine\n")
    path = tmp / "exp.toml"
    path.write_text(
        'out = "out"\n[data]\ndirs = ["data/t1"]\n[[retrievers]]\nname = "bm25"\n'
        '[[imports]]\nname = "imp"\nruns = ["mine.trec"]\n' + extra
    )
    return path


def _run_system(tmp, victim, stack):
    return ["run", _experiment(tmp)], _linked(tmp / "out" / "bm25", victim)


def _run_import(tmp, victim, stack):
    return ["run", _experiment(tmp)], _linked(tmp / "out" / "imp", victim)


def _run_report(tmp, victim, stack):
    return ["run", _experiment(tmp)], _linked(tmp / "out" / "report.md", victim.parent / "mine.md")


def _expand(tmp, victim, stack):
    from llm_server import LLMServer
    from test_containment import make_data

    server = stack.enter_context(LLMServer())
    stack.callback(lambda: pytest.fail(f"{server.requests} request(s) sent") if server.requests else None)
    url = server.base_url
    args = ["expand", "--method", "hyde", "--model", "test-model", "--base-url", url, "--api-key", "k"]
    args += ["-d", make_data(tmp), "--prompt-task", "Biology", "-o", tmp / "exp"]
    return args, _linked(tmp / "exp" / "t1", victim)


def _encode(tmp, victim, stack):
    from test_containment import make_data

    (tmp / "enc.py").write_text(_ENCODER)
    args = ["encode", "-r", "custom", "--encoder", f"{tmp / 'enc.py'}:Enc", "-d", make_data(tmp)]
    return args, _linked(Path(os.environ["R2MED_HOME"]) / "embeddings", victim)


def _export(tmp, victim, stack):
    pytest.importorskip("mteb")
    runs, _ = _runs(tmp, "bm25", task="Biology")
    args = ["export", runs / "bm25", "-o", tmp / "m", "--force", "--model", "me/m", "--model-revision", "v1"]
    return args, _linked(tmp / "m" / "results" / "me__m" / "v1", victim)


def _report(fmt: str, option: str = "-o"):
    def build(tmp, victim, stack):
        runs, _ = _runs(tmp, "bm25")
        args = ["report", runs, option, tmp / "out" / "r"] + (["--format", fmt] if option == "-o" else [])
        return args, _linked(tmp / "out" / "r", victim.parent / "mine.md")

    return build


def _compare(tmp, victim, stack):
    runs, _ = _runs(tmp, "bm25", "bm25-standard")
    args = ["compare", runs / "bm25", runs / "bm25-standard", "--format", "markdown", "-o", tmp / "out" / "c.md"]
    return args, _linked(tmp / "out" / "c.md", victim.parent / "mine.md")


def _plot(tmp, victim, stack):
    pytest.importorskip("matplotlib")
    runs, _ = _runs(tmp, "bm25")
    return ["plot", runs, "-o", tmp / "out" / "f.svg"], _linked(tmp / "out" / "f.svg", victim.parent / "mine.md")


def _reproduce(tmp, victim, stack):
    from test_containment import make_data

    data = make_data(tmp, "Biology").parent
    args = ["reproduce", "-r", "bm25", "--settings", "base", "-t", "Biology", "-d", data, "-o", tmp / "out"]
    return args, _linked(tmp / "out" / "bm25", victim)


def _cache_rm_kind(tmp, victim, stack):
    return ["cache", "rm", "bm25", "--all"], _linked(Path(os.environ["R2MED_HOME"]) / "bm25", victim)


def _cache_rm_entry(tmp, victim, stack):
    return ["cache", "rm", "bm25", "--all"], _linked(Path(os.environ["R2MED_HOME"]) / "bm25" / "abc", victim)


LINK_CASES = {
    "evaluate": LinkCase("evaluate", _evaluate),
    "evaluate --ray": LinkCase("evaluate", _evaluate_ray),
    "demo": LinkCase("demo", _demo),
    "import": LinkCase("import", _import),
    "rerank": LinkCase("rerank", _rerank),
    "fuse": LinkCase("fuse", _fuse),
    "run: a system folder": LinkCase("run", _run_system),
    "run: an imported system": LinkCase("run", _run_import),
    "run: report.md": LinkCase("run", _run_report, "replace"),
    "expand": LinkCase("expand", _expand),
    "serve --trace": LinkCase("serve", _serve),
    "encode": LinkCase("encode", _encode),
    "export": LinkCase("export", _export),
    "report -o markdown": LinkCase("report", _report("markdown"), "replace"),
    "report -o latex": LinkCase("report", _report("latex"), "replace"),
    "report --html": LinkCase("report", _report("", "--html"), "replace"),
    "compare -o": LinkCase("compare", _compare, "replace"),
    "plot -o": LinkCase("plot", _plot, "replace"),
    "reproduce": LinkCase("reproduce", _reproduce),
    "cache rm: a kind folder": LinkCase("cache rm", _cache_rm_kind),
    "cache rm: an entry": LinkCase("cache rm", _cache_rm_entry, "unlink"),
}


def _leaf_commands() -> set[str]:
    import typer.main

    from r2med.cli import app

    found: set[str] = set()

    def walk(path: list[str], command: object) -> None:
        subs = getattr(command, "commands", None)
        if not subs:
            found.add(" ".join(path))
        for name, sub in (subs or {}).items():
            walk([*path, name], sub)

    walk([], typer.main.get_command(app))
    return found


def test_every_command_writes_or_is_classified_as_writing_nothing():
    commands = _leaf_commands()
    writing = {case.command for case in LINK_CASES.values()}
    assert not writing & set(WRITES_NOTHING)
    unclassified = commands - writing - set(WRITES_NOTHING)
    assert not unclassified, f"new command(s) {unclassified}: give each a LinkCase, or say why it writes nothing"
    assert writing | set(WRITES_NOTHING) <= commands


@pytest.mark.parametrize("case", list(LINK_CASES))
def test_every_writing_command_writes_nothing_through_a_link(case, tmp_path):
    """The command runs with a link to the user's own folder (``elsewhere/victim``, holding ``t1/mine.txt``) or file
    (``elsewhere/mine.md``) where it would write: it refuses in one line naming the link, exit 2, or (the documented
    rule, for a file written whole, and ``cache rm``'s link entry) replaces or removes the link itself; the target is
    untouched.  Before, ``import`` and an experiment's imports deleted ``mine.txt`` and wrote r2med's files there."""
    import contextlib

    from conftest import run_r2med
    from test_containment import snapshot

    victim = tmp_path / "elsewhere" / "victim"
    (victim / "t1").mkdir(parents=True)
    (victim / "t1" / "mine.txt").write_text("precious")
    (tmp_path / "elsewhere" / "mine.md").write_text("my own notes")
    spec = LINK_CASES[case]
    with contextlib.ExitStack() as stack:
        args, link = spec.build(tmp_path, victim, stack)  # type: ignore[operator]
        before = snapshot(tmp_path / "elsewhere")
        res = run_r2med("-q", *map(str, args), cwd=tmp_path)
    assert "Traceback" not in res.stderr, res.stderr
    if spec.expect == "refuse":
        errors = [line for line in res.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
        assert res.returncode == 2 and len(errors) == 1, (res.returncode, res.stdout, res.stderr)
        assert f"{link} is a link" in errors[0] or f"{link.name} is a link" in errors[0], errors[0]
        assert link.is_symlink()
    elif spec.expect == "replace":
        assert res.returncode == 0, res.stderr
        assert not link.is_symlink() and link.is_file()
    else:
        assert res.returncode == 0, res.stderr
        assert not link.is_symlink() and not link.exists()
    assert snapshot(tmp_path / "elsewhere") == before
