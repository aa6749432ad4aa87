"""``r2med import`` / ``r2med.import_run``: a run made elsewhere becomes a system folder as ``evaluate`` writes
one; its measures equal pytrec_eval's on the same file, and report/compare/fuse take it."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import pytrec_eval

import r2med
from conftest import run_r2med
from r2med.data import load_folder


def r2med_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    return run_r2med(*args, env={"R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1"})


def collection(folder: Path, prefix: str, n_queries: int = 3) -> Path:
    """A collection whose query ids start with ``prefix`` (so the qid rule can tell two apart)."""
    folder.mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for i in range(6):
            fh.write(json.dumps({"id": f"d{i}", "text": f"doc {i} text"}) + "\n")
    with open(folder / "query.jsonl", "w") as fh:
        for q in range(n_queries):
            fh.write(json.dumps({"id": f"{prefix}{q}", "text": f"query {q}"}) + "\n")
    with open(folder / "qrels.jsonl", "w") as fh:
        for q in range(n_queries):
            fh.write(json.dumps({"q_id": f"{prefix}{q}", "p_id": f"d{q}", "score": 1}) + "\n")
            fh.write(json.dumps({"q_id": f"{prefix}{q}", "p_id": f"d{q + 2}", "score": 2}) + "\n")
    return folder


def run_file(path: Path, prefix: str, n_queries: int = 3, tag: str = "mytool") -> Path:
    lines = []
    for q in range(n_queries):
        for rank, d in enumerate([(q * 5 + j) % 6 for j in range(6)], start=1):
            lines.append(f"{prefix}{q} Q0 d{d} {rank} {10 - rank * 1.25} {tag}\n")
    path.write_text("".join(lines))
    return path


def pytrec_reference(qrels_folder: Path, run_path: Path) -> dict[str, float]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (qrels_folder / "qrels.jsonl").read_text().splitlines():
        row = json.loads(line)
        qrels.setdefault(row["q_id"], {})[row["p_id"]] = row["score"]
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text().splitlines():
        qid, _, did, _, score, _ = line.split()
        run.setdefault(qid, {})[did] = float(score)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    return {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in ("ndcg_cut_10", "recall_100")}


def test_import_writes_a_system_folder_scored_as_pytrec_eval(tmp_path, r2med_home):
    data = collection(tmp_path / "data" / "colA", "a")
    trec = run_file(tmp_path / "mine.trec", "a")
    out = tmp_path / "out"
    proc = r2med_cli(
        "import",
        str(trec),
        "-d",
        str(data),
        "--name",
        "mysys",
        "--note",
        "made by hand",
        "-o",
        str(out),
        home=r2med_home,
    )
    assert proc.returncode == 0, proc.stderr
    folder = out / "mysys" / "colA"
    assert {p.name for p in folder.iterdir()} == {"run.trec", "metrics.json", "r2med_results.json"}
    stored = json.loads((folder / "metrics.json").read_text())
    expected = pytrec_reference(data, trec)
    for measure, value in expected.items():
        assert stored["aggregate"][measure] == pytest.approx(value, abs=1e-12)
    config = stored["config"]
    assert config["retriever"] == "imported"
    assert config["imported"] == {
        "file": str(trec.resolve()),
        "sha256": hashlib.sha256(trec.read_bytes()).hexdigest(),
        "tags": ["mytool"],
        "note": "made by hand",
    }
    assert stored["dataset_fingerprint"] == load_folder(data).fingerprint
    # report and compare take it as any system
    report = r2med_cli("report", str(out), "--format", "json", home=r2med_home)
    assert report.returncode == 0, report.stderr
    assert "mysys" in report.stdout
    # a second import of the same file reuses the folder
    before = (folder / "metrics.json").stat().st_mtime_ns
    again = r2med_cli(
        "import",
        str(trec),
        "-d",
        str(data),
        "--name",
        "mysys",
        "-o",
        str(out),
        "--note",
        "made by hand",
        home=r2med_home,
    )
    assert again.returncode == 0 and (folder / "metrics.json").stat().st_mtime_ns == before


def test_fuse_takes_two_imported_systems(tmp_path, r2med_home):
    data = collection(tmp_path / "colA", "a")
    out = tmp_path / "out"
    for name, tag in (("one", "t1"), ("two", "t2")):
        trec = run_file(tmp_path / f"{name}.trec", "a", tag=tag)
        assert (
            r2med_cli("import", str(trec), "-d", str(data), "--name", name, "-o", str(out), home=r2med_home).returncode
            == 0
        )
    fused = r2med_cli("fuse", str(out / "one"), str(out / "two"), "-d", str(data), home=r2med_home)
    assert fused.returncode == 0, fused.stderr
    assert (out / "rrf-one+two" / "colA" / "run.trec").is_file()


def test_several_files_go_to_the_task_their_query_ids_name(tmp_path, r2med_home):
    root = tmp_path / "data"
    collection(root / "colA", "a")
    collection(root / "colB", "b")
    runs = [run_file(tmp_path / "b.trec", "b"), run_file(tmp_path / "a.trec", "a")]
    out = tmp_path / "out"
    proc = r2med_cli("import", *map(str, runs), "-d", str(root), "--name", "mine", "-o", str(out), home=r2med_home)
    assert proc.returncode == 0, proc.stderr
    for task, trec in (("colB", runs[0]), ("colA", runs[1])):
        stored = json.loads((out / "mine" / task / "metrics.json").read_text())
        assert stored["config"]["imported"]["file"] == str(trec.resolve())
        assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(pytrec_reference(root / task, trec)["ndcg_cut_10"])
    # -t names the tasks in order: the files are taken as given, not matched by their query ids
    given = r2med_cli(
        "import", *map(str, runs), "-d", str(root), "-t", "colB,colA", "--name", "x", "-o", str(out), home=r2med_home
    )
    assert given.returncode == 0, given.stderr
    assert json.loads((out / "x" / "colB" / "metrics.json").read_text())["config"]["imported"]["file"] == str(
        runs[0].resolve()
    )
    # crossed (b.trec as colA): it shares no query with colA and fits colB -- one line naming colB, nothing written
    # (before: a system of 0 queries and 0.00, exit 0)
    crossed = r2med_cli(
        "import", *map(str, runs), "-d", str(root), "-t", "colA,colB", "--name", "y", "-o", str(out), home=r2med_home
    )
    assert crossed.returncode == 2 and not (out / "y").exists()
    assert crossed.stderr.count("\n") == 1 and "fits colB better than colA" in crossed.stderr
    assert "pass the files in the order --tasks lists the tasks" in crossed.stderr
    assert str(runs[0].resolve()) in crossed.stderr
    # one file for one task it shares nothing with, and no better task named: nothing to score, as before
    alone = r2med_cli("import", str(runs[0]), "-d", str(root / "colA"), "--name", "z", "-o", str(out), home=r2med_home)
    assert alone.returncode == 2 and "have none in common: nothing to score" in alone.stderr


@pytest.mark.parametrize(
    "case, message",
    [
        ("bad_line", "bad.trec:2: expected 6 fields"),
        ("count", "2 run file(s) for 1 task(s)"),
        ("no_match", "none of its 3 query ids is a query of"),
        ("twice", "as are those of"),
        ("name", "--name"),
    ],
)
def test_bad_imports_are_one_line_and_write_nothing(tmp_path, r2med_home, case, message):
    root = tmp_path / "data"
    collection(root / "colA", "a")
    collection(root / "colB", "b")
    good = run_file(tmp_path / "a.trec", "a")
    args: list[str] = []
    if case == "bad_line":
        bad = tmp_path / "bad.trec"
        bad.write_text("a0 Q0 d1 1 3.0 t\na0 Q0 d2 2 1.0\n")
        args = [str(bad), "-d", str(root / "colA"), "--name", "x"]
    elif case == "count":
        args = [str(good), str(good), "-d", str(root), "-t", "colA", "--name", "x"]
    elif case == "no_match":
        args = [str(run_file(tmp_path / "z.trec", "z")), "-d", str(root), "--name", "x"]
    elif case == "twice":
        args = [str(good), str(run_file(tmp_path / "a2.trec", "a")), "-d", str(root), "--name", "x"]
    elif case == "name":
        args = [str(good), "-d", str(root / "colA"), "--name", "a/b"]
    proc = r2med_cli("import", *args, "-o", str(tmp_path / "out"), home=r2med_home)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1, proc.stderr
    assert not (tmp_path / "out").exists()


def test_import_run_from_python_takes_a_dict(tmp_path):
    data = collection(tmp_path / "colA", "a")
    trec = run_file(tmp_path / "a.trec", "a")
    run = {}
    for line in trec.read_text().splitlines():
        qid, _, did, _, score, _ = line.split()
        run.setdefault(qid, {})[did] = float(score)
    result = r2med.import_run(run, load_folder(data), name="py", out=tmp_path / "out", note="from a notebook")
    assert result.metrics.aggregate["ndcg_cut_10"] == pytest.approx(pytrec_reference(data, trec)["ndcg_cut_10"])
    stored = json.loads((tmp_path / "out" / "py" / "colA" / "metrics.json").read_text())
    assert stored["config"]["imported"]["file"] is None and stored["config"]["imported"]["note"] == "from a notebook"
    with pytest.raises(r2med.errors.R2MedError, match="not a finite number"):
        r2med.import_run({"a0": {"d1": float("nan")}}, load_folder(data), name="py2")
