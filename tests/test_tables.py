"""Terminal tables fit 80 columns (stdout not a terminal), --wide keeps every column at full width, and
--format json is the same flag wherever a command has JSON output (--json stays as a hidden alias)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conftest import hub_data, run_r2med
from r2med.data.tasks import TASK_NAMES
from r2med.runs.run import write_task_results

LONG = ["bm25", "dense-all-MiniLM-L6-v2", "rrf-bm25+dense-all-MiniLM-L6-v2", "bm25+bge-reranker-v2-m3"]


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@pytest.fixture(scope="module")
def eight_tasks(tmp_path_factory) -> Path:
    """Four systems with long names over R2MED's 8 tasks (bm25 matched to its published row)."""
    root = tmp_path_factory.mktemp("tables") / "runs"
    rng = random.Random(7)
    paper = {"retriever": "bm25", "flavour": "paper", "k1": 0.9, "b": 0.4, "options": {}}
    for name in LONG:
        for task in TASK_NAMES:
            per_query = {f"q{i}": {"ndcg_cut_10": rng.random() * 0.5} for i in range(12)}
            aggregate = {"ndcg_cut_10": sum(v["ndcg_cut_10"] for v in per_query.values()) / 12}
            write_task_results(
                root / name / task,
                {"q1": {"d1": 1.0}},
                {
                    "task": task,
                    "retriever": name,
                    "config": paper if name == "bm25" else {},
                    **hub_data(task),
                    "aggregate": aggregate,
                    "per_query": per_query,
                },
            )
    return root


@pytest.mark.parametrize(
    "args",
    [
        ("tasks",),
        ("report", "{runs}"),
        ("report", "{runs}", "--baseline", "bm25", "--permutations", "200"),
        ("compare", "{runs}/bm25", "{runs}/rrf-bm25+dense-all-MiniLM-L6-v2", "--permutations", "200"),
        ("cache", "ls"),
    ],
)
def test_tables_fit_80_columns_and_wide_keeps_them_whole(eight_tasks, args):
    args = [a.format(runs=eight_tasks) for a in args]
    res = run_r2med(*args)
    assert res.returncode == 0, res.stderr
    assert widest(res.stdout) <= 80, res.stdout
    wide = run_r2med(*args, "--wide")
    assert wide.returncode == 0, wide.stderr
    if args[0] in ("report", "compare"):
        assert widest(wide.stdout) > 80  # the full layout: every task name, every test column
        for word in (
            ["published bm25", "delta (tol ±0.5)"] if args[0] == "report" else ["p t-test", "p t Holm", "W/T/L"]
        ):
            assert word in wide.stdout and word not in res.stdout
    if args[0] == "report":  # the narrow one (here: tasks as rows) keeps every figure
        figures = json.loads(run_r2med(*args, "--format", "json").stdout)
        for system in figures["systems"]:
            for cell in system["cells"].values():
                assert f"{cell['value']:.2f}" in res.stdout


def test_tasks_table_at_80_columns_has_one_line_per_task():
    res = run_r2med("tasks")
    rows = [line for line in res.stdout.splitlines() if any(name in line for name in TASK_NAMES)]
    assert len([r for r in rows if "│" in r]) == 8, res.stdout  # no column wraps over several lines


def test_format_json_everywhere_and_the_json_alias(tmp_path, eight_tasks):
    from r2med.data.tasks import TASKS

    for args in (("tasks",), ("cache", "ls")):
        as_format = run_r2med(*args, "--format", "json")
        alias = run_r2med(*args, "--json")
        assert as_format.returncode == alias.returncode == 0
        assert json.loads(as_format.stdout) == json.loads(alias.stdout)
    listed = json.loads(run_r2med("tasks", "-f", "json").stdout)
    assert [t["name"] for t in listed if t["family"] == "r2med"] == list(TASKS)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    scored = json.loads(run_r2med("score", str(qrels), str(run), "--format", "json").stdout)
    assert scored == json.loads(run_r2med("score", str(qrels), str(run), "--json").stdout)
    assert scored["aggregate"]["recip_rank"] == 1.0 and scored["queries"] == 1
    bad = run_r2med("tasks", "--format", "xml")
    assert bad.returncode == 2 and "choose from: table, json" in bad.stderr
    assert "--json" not in run_r2med("tasks", "--help").stdout  # hidden: scripts keep working, help shows one flag


def test_help_spells_measures_as_tables_do():
    for command in ("report", "compare"):
        text = " ".join(run_r2med(command, "--help").stdout.split())
        assert "nDCG@10" in text and "ndcg_cut_10" not in text
    from r2med.measures import from_trec

    assert [from_trec(m).label for m in ("ndcg_cut_10", "recall_100", "recip_rank", "map_cut_10", "P_5")] == [
        "nDCG@10",
        "R@100",
        "MRR",
        "MAP@10",
        "P@5",
    ]


def test_leaderboard_layouts_chosen_by_width(eight_tasks):
    """Full when it fits; else compact (R2MED's short task names, said in the legend); else tasks as rows."""
    from rich.console import Console

    from r2med.report import build_leaderboard, leaderboard
    from r2med.results.folders import find_systems

    def shown(board, width):
        console = Console(width=width, record=True)
        console.print(leaderboard.to_rich(board, width))
        return console.export_text()

    systems = find_systems([eight_tasks / "dense-all-MiniLM-L6-v2", eight_tasks / "bm25+bge-reranker-v2-m3"])
    for system, short in zip(systems, ("dense", "rerank")):
        system.name = short
    two = build_leaderboard(systems)
    full, compact, vertical = shown(two, 1000), shown(two, 80), shown(two, 60)
    assert "Medical-Sciences" in full.splitlines()[2] and widest(full) > 80
    assert compact.splitlines()[1].split() == [
        "system",
        "Bio",
        "Bioinf",
        "MedSci",
        "MedXQA",
        "MedQA",
        "PMC-T",
        "PMC-C",
        "IIYi",
        "Average",
    ]
    assert "MedSci = Medical-Sciences" in " ".join(compact.split()) and widest(compact) <= 80
    rows = [
        line.split()[0]
        for line in vertical.splitlines()
        if line.split() and line.split()[0] in {*TASK_NAMES, "Average"}
    ]
    assert rows == [*TASK_NAMES, "Average"] and widest(vertical) <= 60
    for row in two.rows:  # every layout shows every figure
        for cell in row.cells.values():
            assert all(f"{cell.value:.2f}" in text for text in (full, compact, vertical))


def test_expand_and_encode_tables_fit_80_columns_and_never_cut_a_path(tmp_path):
    """The written file's path is the last column when the table fits; else a line under it, whole."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import minilm_path
    from llm_server import LLMServer
    from test_expansion_generate import make_collection

    data = make_collection(tmp_path / "Biology", n_queries=3, n_docs=8)
    out = tmp_path / ("a-results-folder-with-a-name-long-enough-to-push-the-path-past-80-columns" * 2)
    with LLMServer() as server:
        args = (
            "expand",
            "--method",
            "hyde",
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--data-dir",
            str(data),
            "--out",
            str(out),
            "--name",
            "my-llm",
        )
        res = run_r2med(*args)
        wide = run_r2med(*args, "--wide")
    written = out / "Biology" / "hyde" / "my-llm" / "query_with_hydoc.jsonl"  # --name names the LLM's folder
    assert res.returncode == wide.returncode == 0, res.stderr
    assert written.exists()
    table = [line for line in res.stdout.splitlines() if "│" in line or "┃" in line]
    assert widest("\n".join(table)) <= 80 and "tokens in/out" in res.stdout
    assert f"file Biology: {written}" in res.stdout.splitlines()  # the whole path, on a line of its own
    assert str(written) in next(line for line in wide.stdout.splitlines() if "│ Biology" in line)

    model = minilm_path()
    args = ("encode", "-r", "dense", "--model", model, "--data-dir", str(data))
    res, wide = run_r2med(*args), run_r2med(*args, "--wide")
    assert res.returncode == wide.returncode == 0, res.stderr
    location = next(line for line in wide.stdout.splitlines() if "│ Biology" in line).split("│")[-2].strip()
    assert Path(location).is_dir()
    table = [line for line in res.stdout.splitlines() if "│" in line or "┃" in line]
    assert widest("\n".join(table)) <= 80
    assert len(location) > 20  # too long for the table at 80 columns: the line under it names it whole
    assert "where" not in res.stdout and f"embeddings Biology: {location}" in res.stdout.splitlines()
