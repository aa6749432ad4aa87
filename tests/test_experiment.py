"""``r2med run EXPERIMENT.toml``: equal to the same steps run command by command, reuse, resume, bad files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import minilm_path, run_r2med, shared_collection

pytest.importorskip("torch")
from test_rerank import _tiny_bert

EXPERIMENT = """
out = "results"
[data]
dirs = ["data/medline-med"]
[[retrievers]]
name = "bm25"
[[retrievers]]
name = "bm25"
k1 = 1.2
b = 0.75
label = "bm25-k1.2"
[[retrievers]]
name = "bm25-standard"
[[rerank]]
reranker = "./tinyce"
runs = ["bm25"]
top_k = 5
[[fusion]]
method = "rrf"
systems = ["bm25", "bm25-k1.2"]
[report]
measures = ["nDCG@10", "R@100"]
latex = "table.tex"
"""


@pytest.fixture
def experiment(tmp_path) -> Path:
    shutil.copytree(shared_collection("medline-med"), tmp_path / "data" / "medline-med")
    _tiny_bert(tmp_path / "tinyce", 1, seed=5)
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT)
    return path


def _files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _comparable(metrics: dict) -> dict:
    config = json.loads(json.dumps(metrics["config"]).replace(str(metrics.get("_root", "")), ""))
    for item in [config.get("first_stage"), *(config.get("inputs") or [])]:
        if isinstance(item, dict):
            item.pop("folder", None)  # where the input lay: the two roots differ
    return {"aggregate": metrics["aggregate"], "per_query": metrics["per_query"], "config": config}


def test_experiment_equals_commands_and_reuses_everything(experiment, tmp_path):
    res = run_r2med("run", str(experiment), cwd=tmp_path / "data")  # relative paths: against the file's folder
    assert res.returncode == 0, res.stderr
    got = tmp_path / "results"
    systems = sorted(p.name for p in got.iterdir() if p.is_dir())
    assert systems == ["bm25", "bm25+tinyce", "bm25-k1.2", "bm25-standard", "rrf-bm25+bm25-k1.2"]
    assert (tmp_path / "table.tex").read_text().count(r"\begin{tabular}") == 2

    ref = tmp_path / "commands"
    data = str(tmp_path / "data" / "medline-med")
    measures = ("-m", "nDCG@10", "-m", "R@100")
    for args in (
        ("evaluate", "-r", "bm25", "-d", data, "-o", str(ref), *measures),
        (
            "evaluate",
            "-r",
            "bm25",
            "--k1",
            "1.2",
            "--b",
            "0.75",
            "--name",
            "bm25-k1.2",
            "-d",
            data,
            "-o",
            str(ref),
            *measures,
        ),
        ("evaluate", "-r", "bm25-standard", "-d", data, "-o", str(ref), *measures),
        ("rerank", "--run", str(ref / "bm25"), "--reranker", str(tmp_path / "tinyce"), "--top-k", "5", *measures),
        ("fuse", str(ref / "bm25"), str(ref / "bm25-k1.2"), "--method", "rrf", *measures),
    ):
        done = run_r2med(*args)
        assert done.returncode == 0, (args, done.stderr)
    for system in systems:
        mine, theirs = got / system / "medline-med", ref / system / "medline-med"
        assert (mine / "run.trec").read_bytes() == (theirs / "run.trec").read_bytes(), system
        a = _comparable(json.loads((mine / "metrics.json").read_text()))
        b = _comparable(json.loads((theirs / "metrics.json").read_text()))
        assert a["aggregate"] == b["aggregate"] and a["per_query"] == b["per_query"], system
        assert json.dumps(a["config"]).replace(str(got), "R") == json.dumps(b["config"]).replace(str(ref), "R")

    before = _files(tmp_path)
    again = run_r2med("run", str(experiment))
    assert again.returncode == 0, again.stderr
    assert _files(tmp_path) == before  # nothing recomputed, nothing rewritten (report files included)
    assert again.stdout.count("reused") == 5


def test_a_killed_run_resumes(experiment, tmp_path, monkeypatch):
    import r2med.jobs.fuse as fuse_job

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fuse_job, "fuse_inputs", killed)  # killed while fusing
    assert run_r2med("run", str(experiment)).returncode == 130
    got = tmp_path / "results"
    assert not (got / "rrf-bm25+bm25-k1.2").exists()
    finished = {k: v for k, v in _files(got).items() if k.endswith(("run.trec", "metrics.json"))}
    assert len(finished) == 8
    monkeypatch.undo()
    calls = []
    import r2med.jobs.evaluate as evaluate_job
    import r2med.jobs.rerank as rerank_job
    from r2med.results import folders

    real = folders.finish_task

    def spy(collection, name, *args, **kwargs):
        calls.append(name)
        return real(collection, name, *args, **kwargs)

    for module in (evaluate_job, rerank_job, fuse_job):
        monkeypatch.setattr(module, "finish_task", spy)
    assert run_r2med("run", str(experiment)).returncode == 0
    assert calls == ["rrf-bm25+bm25-k1.2"]  # only the step the kill stopped
    assert {k: v for k, v in _files(got).items() if k in finished} == finished


@pytest.mark.parametrize(
    "edit,message",
    [
        (("k1 = 1.2", "k3 = 1.2"), "exp.toml: [[retrievers]] 2: unknown option 'k3'"),
        (
            ('name = "bm25-standard"', 'name = "bm25-standard"\nmodel = "x"'),
            "exp.toml: [[retrievers]] 3: unknown option 'model'",
        ),
        (("top_k = 5", 'top_k = "five"'), "exp.toml: [[rerank]] 1: top_k: expected an integer >= 1, got 'five'"),
        (('method = "rrf"', 'method = "rrf"\nnorms = "minmax"'), "exp.toml: [[fusion]] 1: unknown option 'norms'"),
        (
            ('systems = ["bm25", "bm25-k1.2"]', 'systems = ["bm25", "nope"]'),
            "exp.toml: [[fusion]] 1: 'nope' is no system of this experiment",
        ),
        (
            ('method = "rrf"', 'method = "rrf"\nweights = [1]'),  # how many systems: checked once, by check_weights
            "exp.toml: [[fusion]] 1: 1 weight(s) given for 2 run(s)",
        ),
        (('method = "rrf"', 'method = "rrfs"'), "exp.toml: [[fusion]] 1: method: unknown fusion method 'rrfs'"),
        (("measures = [", "measure = ["), "exp.toml: [report]: unknown option 'measure'"),
        (("[[fusion]]", "[[fusions]]"), "exp.toml: unknown option 'fusions'"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_key_before_any_work(experiment, tmp_path, edit, message):
    experiment.write_text(EXPERIMENT.replace(*edit))
    res = run_r2med("run", "exp.toml", cwd=tmp_path)
    assert res.returncode == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "results").exists()


def test_a_file_nested_too_deeply_is_one_line(tmp_path):
    """Arrays nested deeper than tomllib's parser goes raised RecursionError from ``tomllib.load``: a traceback."""
    (tmp_path / "exp.toml").write_text('out = "results"\nx = ' + "[" * 5000 + "]" * 5000 + "\n")
    for args in (["exp.toml"], ["exp.toml", "--dry-run"]):
        res = run_r2med("run", *args, cwd=tmp_path)
        assert res.returncode == 2 and res.stderr == "error: exp.toml: not valid TOML (nested too deeply)\n", res.stderr
    assert not (tmp_path / "results").exists()


def test_dry_run_prints_the_plan_in_dependency_order(experiment, tmp_path):
    experiment.write_text(
        EXPERIMENT.replace(
            "[[rerank]]", f'[[retrievers]]\nname = "dense"\nmodel = "{minilm_path()}"\nbatch_size = 8\n\n[[rerank]]'
        )
    )
    res = run_r2med("run", str(experiment), "--dry-run", "--wide")
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    kinds = [line.split("│")[2].strip() for line in lines]
    assert kinds == ["evaluate"] * 4 + ["rerank", "fuse"]  # rerank/fuse after what they read
    assert "dense-" in res.stdout and "batch_size=8" in res.stdout
    assert not (tmp_path / "results").exists()


def test_a_dense_step_equals_the_command(tmp_path):
    """``dense`` with the offline MiniLM and its options passed through, on a 2-doc collection."""
    model = minilm_path()
    data = shared_collection("r2med-biology-demo")
    (tmp_path / "exp.toml").write_text(f'''out = "results"
[data]
dirs = ["{data}"]
[[retrievers]]
name = "dense"
model = "{model}"
max_length = 64
batch_size = 2
''')
    res = run_r2med("run", str(tmp_path / "exp.toml"))
    assert res.returncode == 0, res.stderr
    [system] = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert system.name.startswith("dense-")
    done = run_r2med(
        "evaluate",
        "-r",
        "dense",
        "--model",
        model,
        "--max-length",
        "64",
        "--batch-size",
        "2",
        "--no-cache",
        "-d",
        str(data),
        "-o",
        str(tmp_path / "commands"),
    )
    assert done.returncode == 0, done.stderr
    mine, theirs = system / data.name, tmp_path / "commands" / system.name / data.name
    assert (mine / "run.trec").read_bytes() == (theirs / "run.trec").read_bytes()
    a, b = (json.loads((f / "metrics.json").read_text()) for f in (mine, theirs))
    assert a["aggregate"] == b["aggregate"] and a["per_query"] == b["per_query"]
    for config in (a["config"], b["config"]):  # the command ran without the embedding cache (computed afresh)
        config["options"].pop("cache")
    assert a["config"] == b["config"]
