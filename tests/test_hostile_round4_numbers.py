"""Hardening, fourth pass (issue 40, items 5-10, 13, 14, 16-18): wrong numbers that look right, and what a step
finds before any work.

Each test is an attempt that broke before its fix (the issue names how each was shown), written as the rule it
breaks: no run holds a non-finite score from any producer or the Python API, and a fractional grade is refused
(item 5); a run is scored against its own task's judgments only (6); ``--set`` sets a step's options only (9);
the Python API parses as strictly as a file (10, 17).  The house checks list the commands and producers from the
code itself.  Counts are in docs/reliability.md ("Hardening, fourth pass: numbers, data states, checks first").
"""

from __future__ import annotations

import inspect
import json
import math
import re

import numpy as np
import pytest
import typer.main

from conftest import run_r2med
from r2med.errors import R2MedError
from test_containment import make_data, make_run_folder, snapshot


def one_line_error(res) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback; INFO lines of progress aside)."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    others = [line for line in res.stderr.splitlines() if line.strip() and not line.startswith(("error:", "INFO "))]
    assert len(errors) == 1 and not others, res.stderr
    return errors[0]


NAN, INF = float("nan"), float("inf")


# -- item 5: no run ever holds a non-finite score; a fractional grade is refused -------------------------------


@pytest.mark.parametrize("bad", [NAN, INF, -INF, np.float32("nan"), "1.0", None, True])
def test_evaluate_refuses_a_score_that_is_not_a_finite_number(bad):
    """Two NaN scores gave nDCG@10 1.0 (pytrec_eval ranks NaN anywhere); now the query and document are named."""
    import r2med

    with pytest.raises(R2MedError, match=r"run query 'q', doc 'a': score .* (not a finite number|not a number)"):
        r2med.evaluate({"q": {"a": bad, "b": 1.0}}, {"q": {"a": 1}})


def test_evaluate_takes_numpy_scores_and_integral_grades():
    import r2med

    # hand computation: the one relevant document ranked first of two: nDCG@10 = 1, R@100 = 1
    got = r2med.evaluate({"q": {"a": np.float32(2.0), "b": np.float64(1.0)}}, {"q": {"a": np.int64(2), "b": 0.0}})
    assert got["nDCG@10"] == pytest.approx(1.0) and got["R@100"] == pytest.approx(1.0)


@pytest.mark.parametrize("grade", [0.9, 1.5, -0.5, NAN, "1", True])
def test_a_fractional_or_non_numeric_grade_is_refused_not_truncated(grade):
    """``0.9`` was truncated to 0 (the run then scored 0 on a document judged relevant)."""
    import r2med

    with pytest.raises(R2MedError, match=r"judgment for query 'q', doc 'a': relevance .* (not an integer)"):
        r2med.evaluate({"q": {"a": 1.0}}, {"q": {"a": grade}})


@pytest.mark.parametrize("bad", [NAN, INF])
def test_write_trec_refuses_a_non_finite_score_and_writes_nothing(tmp_path, bad):
    import r2med

    path = tmp_path / "run.trec"
    with pytest.raises(R2MedError, match=r"score .* is not a finite number"):
        r2med.write_trec({"q": {"a": 1.0, "b": bad}}, path)
    assert not path.exists()


@pytest.mark.parametrize("norm", ["minmax", "zscore", "none"])
def test_fuse_refuses_a_nan_input_rather_than_spread_it_over_the_query(norm):
    """One NaN made every fused score of its query NaN under minmax and zscore."""
    import r2med

    with pytest.raises(R2MedError, match=r"run 1 query 'q', doc 'a': score nan is not a finite number"):
        r2med.fuse([{"q": {"a": NAN, "b": 1.0, "c": 2.0}}, {"q": {"b": 1.0}}], "combsum", norm=norm)


@pytest.mark.parametrize("method", ["combsum", "combmnz"])
def test_fuse_weights_that_overflow_are_refused_naming_them(method):
    import r2med

    run = {"q": {"a": 1.0, "b": 2.0}}
    with pytest.raises(R2MedError, match=r"fusion weights 1e\+308, 1e\+308: .* overflows to inf"):
        r2med.fuse([run, run], method, weights=[1e308, 1e308])
    # the same ratio at a sane scale ranks the same: b first (hand computation, minmax: b=1, a=0)
    assert r2med.fuse([run, run], method, weights=[1.0, 1.0])["q"] == pytest.approx(
        {"a": 0.0, "b": 2.0 * (1 + (method == "combmnz"))}
    )


def test_fuse_command_with_overflowing_weights_is_one_line_and_writes_nothing(tmp_path):
    """``fuse --weights 1e308,1e308`` wrote ``inf`` into run.trec, which r2med's own readers then refused."""
    data = make_data(tmp_path)
    one, two = (make_run_folder(tmp_path, n, data).parent for n in ("one", "two"))
    before = snapshot(tmp_path)
    res = run_r2med(
        "fuse", str(one), str(two), "-d", str(data.parent), "--method", "combsum", "--weights", "1e308,1e308"
    )
    assert "overflows to inf" in one_line_error(res)
    assert snapshot(tmp_path) == before


def test_every_run_producer_passes_the_one_score_rule():
    """House check, from the code: every public function that hands out or writes a run reaches
    ``check_run_scores`` (written runs through ``write_trec``, scored ones through ``evaluate``, fused ones through
    ``fuse``) -- a NaN given to each is refused."""
    import r2med
    from r2med.evaluation.metrics import check_run_scores

    bad = {"q": {"a": NAN}}
    calls = {
        "evaluate": lambda: r2med.evaluate(bad, {"q": {"a": 1}}),
        "fuse": lambda: r2med.fuse([bad]),
        "write_trec": lambda: r2med.write_trec(bad, "/nonexistent-dir/never-written.trec"),
        "import_run": lambda: r2med.import_run(bad, None, "x"),
        "rerank": lambda: r2med.rerank(bad, {"q": "text"}, {"a": "doc"}, "bge-reranker"),
    }
    takers = []  # every public function whose first parameter is a run (or runs) in memory: listed from the package
    for name in r2med.__all__:
        value = getattr(r2med, name)
        if inspect.isfunction(value):
            first = next(iter(inspect.signature(value).parameters.values()), None)
            if first is not None and first.name in ("run", "runs") and "Mapping" in str(first.annotation):
                takers.append(name)
    assert sorted(takers) == sorted(calls), takers
    for call in calls.values():
        with pytest.raises(R2MedError, match="not a finite number"):
            call()
    assert check_run_scores({"q": {"a": np.float16(1.5)}}) == {"q": {"a": 1.5}}


# -- item 9: --set sets a step's options only -------------------------------------------------------------


def _commands_with_set() -> dict[str, typer.models.CommandInfo]:
    from r2med.cli import app

    group = typer.main.get_group(app)
    found = {}
    for name, command in group.commands.items():
        if any("--set" in getattr(p, "opts", ()) for p in command.params):
            found[name] = command
    return found


def test_the_commands_that_take_set_are_listed_from_the_app():
    assert set(_commands_with_set()) >= {"evaluate", "rerank"}


@pytest.mark.parametrize(
    "pair,flag",
    [
        ('output={"out": "ELSEWHERE"}', "--out"),
        ("out=ELSEWHERE", "--out"),
        ("qrels=judged.txt", "--qrels"),
        ("revision=../../x", "--revision"),
        ('data={"revision": "main"}', "--revision"),
        ("tasks=Biology", "--tasks"),
        ("name=other", "--name"),
        ("count_missing=true", "--count-missing"),
    ],
)
def test_set_refuses_what_is_not_an_option_naming_the_flag(tmp_path, pair, flag):
    """``--set 'output={"out":"DIR"}'`` wrote to DIR while --out was checked; ``--set qrels=FILE`` and ``--set
    revision=`` were ignored and the run graded.  Every command taking --set (listed from the app) refuses them."""
    data = make_data(tmp_path)
    folder = make_run_folder(tmp_path, "one", data).parent
    base = {
        "evaluate": ["evaluate", "-r", "bm25", "-d", str(data.parent), "-o", str(tmp_path / "out")],
        "rerank": ["rerank", "--run", str(folder), "--reranker", "listwise", "--model", "m", "-o", str(tmp_path / "o")],
        "serve": ["serve", "-r", "bm25", "-d", str(data.parent), "--trace", str(tmp_path / "trace.jsonl")],
    }
    before = snapshot(tmp_path)
    pair = pair.replace("ELSEWHERE", str(tmp_path / "ELSEWHERE"))  # where a leaked output would land
    for command in _commands_with_set():
        line = one_line_error(run_r2med(*base[command], "--set", pair, cwd=tmp_path))
        key = pair.partition("=")[0]
        assert line.startswith(f"error: --set {key}: --set sets the ") and flag in line, line
        if key == "revision":
            assert "model_revision" in line
    assert snapshot(tmp_path) == before and not (tmp_path / "ELSEWHERE").exists()


def test_set_still_sets_an_option(tmp_path):
    data = make_data(tmp_path)
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(data.parent), "-o", str(tmp_path / "out"), "--set", "k1=1.2")
    assert res.returncode == 0, res.stderr
    record = json.loads((tmp_path / "out" / "bm25" / "t1" / "metrics.json").read_text())
    assert math.isclose(record["config"]["options"]["k1"], 1.2)


class _NanReranker:
    """A reranker whose model gives NaN for one document (as an fp16 overflow does)."""

    name = "nan-model"

    def rerank(self, queries, candidates, corpus):
        return {q: {d: (NAN if d == "b" else 1.0) for d, _ in docs} for q, docs in candidates.items()}


def test_a_reranker_giving_nan_is_refused_naming_it():
    import r2med

    with pytest.raises(R2MedError, match=r"reranker 'nan-model': query 'q', doc 'b': score nan is not a finite number"):
        r2med.rerank({"q": {"a": 2.0, "b": 1.0}}, {"q": "text"}, {"a": "x", "b": "y"}, _NanReranker())


# -- items 10, 17: the Python API refuses misuse in r2med's one-line errors ---------------------------------------


class _EchoReranker:
    name = "echo"

    def rerank(self, queries, candidates, corpus):
        return {q: {d: s for d, s in docs} for q, docs in candidates.items()}


def _api_calls(tmp_path) -> dict[str, dict[str, object]]:
    """Valid arguments for every public function and class of ``r2med`` (keyword by keyword)."""
    import r2med

    data = make_data(tmp_path)
    folder = make_run_folder(tmp_path, "one", data)
    run = {"q1": {"a": 2.0, "b": 1.0}}
    return {
        "evaluate": {"run": run, "qrels": {"q1": {"a": 1}}},
        "fuse": {"runs": [run, run]},
        "write_trec": {"run": run, "path": tmp_path / "w.trec"},
        "read_trec": {"path": folder / "run.trec"},
        "read_qrels": {"path": data / "qrels.jsonl"},
        "load_folder": {"root": data},
        "load_task": {"task": "t1", "source": data.parent},
        "import_run": {"run": run, "collection": r2med.load_folder(data), "name": "x"},
        "rerank": {
            "run": run,
            "queries": {"q1": "glucose"},
            "corpus": {"a": "x", "b": "y"},
            "reranker": _EchoReranker(),
        },
        "show_query": {"runs": folder.parent, "query": "q1"},
        "make_retriever": {"name": "bm25"},
        "make_reranker": {"name": "listwise", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
        "BM25": {"k1": 0.9},
    }


def test_every_public_function_refuses_a_wrong_type_in_one_line(tmp_path):
    """Each public function and class (listed from ``r2med.__all__``; types aside) given, argument by argument, a
    value of no kind it takes: an r2med error (one line at the edge), never a raw AttributeError or TypeError."""
    import r2med

    calls = _api_calls(tmp_path)
    callables = {n for n in r2med.__all__ if callable(getattr(r2med, n)) and n not in ("Collection", "Metrics", "Run")}
    assert callables == set(calls), callables ^ set(calls)
    for name, kwargs in calls.items():
        function = getattr(r2med, name)
        function(**kwargs)  # the valid call works
        for key in kwargs:
            for hostile in (object(), 5) if key != "k1" else (object(), "high"):
                if name == "make_reranker" and key == "name":
                    continue  # any object is a scorer there (checked when it scores)
                try:
                    function(**{**kwargs, key: hostile})
                except R2MedError:
                    continue
                except Exception as exc:
                    pytest.fail(f"{name}({key}={hostile!r}): {type(exc).__name__}: {exc}")
                else:
                    pytest.fail(f"{name}({key}={hostile!r}) was accepted")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"tasks": []}, "tasks: [] names no task"),
        ({"tasks": ""}, "tasks: '' names no task"),
        ({"tasks": 5}, "tasks: expected task names"),
        ({"long_documents": "no"}, "long_documents: expected true or false, got 'no'"),
        ({"dirs": ["a\x00b"]}, "dirs: expected a path, got 'a\\x00b', which holds a NUL"),
        ({"revision": 5}, "revision: expected text, got 5"),
        ({"steps": None}, "steps: expected a list of steps"),
        ({"steps": ["bm25"]}, "steps[0]: expected EvaluateStep"),
    ],
)
def test_make_experiment_parses_as_strictly_as_the_file(tmp_path, kwargs, message):
    """``long_documents="no"`` ran the long-document setting, ``tasks=[]`` succeeded until ``write_reports``."""
    from r2med.jobs.experiment import make_experiment
    from r2med.steps import EvaluateStep

    args = {"out": tmp_path / "out", "steps": [EvaluateStep.of("bm25")], **kwargs}
    with pytest.raises(R2MedError, match=re.escape(message)):
        make_experiment(**args)
    assert not (tmp_path / "out").exists()


def test_make_experiment_checks_import_files_and_nul_paths_as_run_does(tmp_path):
    from r2med.jobs.experiment import make_experiment
    from r2med.steps import EvaluateStep, ImportStep, flat
    from r2med.typed.parse import Origin

    missing = flat({"runs": (tmp_path / "nope.trec",), "name": "x"}, ImportStep, Origin.python("test"))
    with pytest.raises(R2MedError, match=r"\[\[imports\]\] 1: runs: .*nope.trec: no such file"):
        make_experiment(tmp_path / "out", [EvaluateStep.of("bm25"), missing])
    with pytest.raises(R2MedError, match=r"out: expected a path, got .* which holds a NUL"):
        make_experiment(str(tmp_path / "o\x00ut"), [EvaluateStep.of("bm25")])


def test_a_numpy_integer_is_the_integer_it_is():
    """``top_k=np.int64(10)`` was refused as "expected an integer >= 1, got 10"."""
    from r2med.steps import EvaluateStep

    assert EvaluateStep.of("bm25", top_k=np.int64(10)).top_k == 10
    assert EvaluateStep.of("bm25", k1=np.float32(1.5)).options.k1 == 1.5


@pytest.mark.parametrize("tasks", [",", " , ", ""])
def test_a_tasks_list_naming_nothing_is_refused(tmp_path, tasks):
    """``evaluate -t ","`` printed an empty table with exit 0."""
    data = make_data(tmp_path)
    line = one_line_error(
        run_r2med("evaluate", "-r", "bm25", "-d", str(data.parent), "-t", tasks, "-o", str(tmp_path / "o"))
    )
    assert "names no task" in line
    assert not (tmp_path / "o").exists()


# -- item 6: a run is scored against its own task's judgments only ------------------------------------------------


@pytest.fixture
def pony_and_leetcode(hf_cache):
    pytest.importorskip("pyarrow")
    from bright_hub import bright_files, fill_bright_cache, have_shared_bright

    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    fill_bright_cache(hf_cache, bright_files(("pony", "leetcode"), queries=4, distractors=30, reasoning=()))


@pytest.mark.shared
def test_a_run_of_another_bright_task_is_refused_naming_the_task_it_fits(pony_and_leetcode, tmp_path):
    """BRIGHT's tasks share query ids 0..N: ``score bright:leetcode OUT/bm25`` (holding only pony) scored pony's
    run at 0.0000 with exit 0.  A folder's recorded task must be the task; a bare file that retrieves none of the
    task's judged documents names the task it fits."""
    out = tmp_path / "out"
    res = run_r2med("evaluate", "-r", "bm25", "-t", "bright:pony", "-o", str(out))
    assert res.returncode == 0, res.stderr
    [folder] = [p for p in (out / "bm25").iterdir() if p.is_dir()]
    line = one_line_error(run_r2med("score", "bright:leetcode", str(out / "bm25")))
    assert "holds a run of bright:pony, not of bright:leetcode" in line, line
    line = one_line_error(run_r2med("score", "bright:leetcode", str(folder / "run.trec")))
    assert "not a run of bright:leetcode" in line and "it fits bright:pony" in line, line
    line = one_line_error(
        run_r2med(
            "import", str(folder / "run.trec"), "-t", "bright:leetcode", "--name", "x", "-o", str(tmp_path / "imp")
        )
    )
    assert "it fits bright:pony" in line and not (tmp_path / "imp" / "x").exists()
    # its own task scores it, by folder and by file, the same figures
    by_folder = run_r2med("score", "bright:pony", str(out / "bm25"))
    by_file = run_r2med("score", "bright:pony", str(folder / "run.trec"))
    assert by_folder.returncode == by_file.returncode == 0 and by_folder.stdout == by_file.stdout
    # a root whose systems all hold pony: ambiguous, not "none is named"
    res = run_r2med(
        "evaluate", "-r", "bm25", "-t", "bright:pony", "-o", str(out), "--name", "bm25-again", "--k1", "1.2"
    )
    assert res.returncode == 0, res.stderr
    line = one_line_error(run_r2med("score", "bright:pony", str(out)))
    assert "ambiguous: 2 task folders hold bright:pony" in line, line


# -- item 16: the command expand suggests finds what expand wrote -------------------------------------------------


@pytest.mark.shared
def test_the_evaluate_that_expand_suggests_finds_the_expansions(pony_and_leetcode, tmp_path):
    """After ``expand -t bright:pony`` the suggested ``evaluate --expansion-dir`` could not find the expansions
    (written under ``bright-pony/``, looked for under ``bright:pony/``), and named no task (so R2MED's 8)."""
    import shlex

    pytest.importorskip("openai")
    from llm_server import LLMServer

    exp = tmp_path / "exp"
    with LLMServer(model="test-model") as server:
        args = ["expand", "--method", "hyde", "--model", server.model, "--base-url", server.base_url]
        res = run_r2med(*args, "-t", "bright:pony", "--prompt-task", "Biology", "--out", str(exp), "--timeout", "5")
    assert res.returncode == 0, res.stderr
    suggested = next(line for line in res.stdout.splitlines() if "r2med evaluate" in line)
    command = shlex.split(suggested[suggested.index("r2med evaluate") :])[1:]
    assert "--tasks" in command and "bright:pony" in command
    out = tmp_path / "out"
    res = run_r2med(*command, "-r", "bm25", "-o", str(out))
    assert res.returncode == 0, res.stderr
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    record = json.loads(next(folder.glob("*/metrics.json")).read_text())
    assert record["task"] == "bright:pony" and record["config"]["expansion"]["method"] == "hyde"


# -- item 14: what a step would find only after the steps before it ran, found by --dry-run --------------------------


@pytest.mark.parametrize(
    "tail,message",
    [
        ('[[imports]]\nname = "imp"\nruns = ["run.trec"]\ntasks = ["t1"]\nqrels = "nosuch.txt"\n', "no such file"),
        ('[[imports]]\nname = "imp"\nruns = ["run.trec"]\ntasks = ["t1"]\nqrels = "."\n', "is a folder, not a file"),
        ('[[retrievers]]\nname = "bm25"\nlabel = "two"\nqrels = "judged.txt"\n', "holds the judgments of one task"),
        ('[[fusion]]\nsystems = ["bm25"]\n', "fusion needs at least two systems, got bm25"),
        ('[report]\nmarkdown = "res/bm25"\n', "is the system folder 'bm25' of out"),
    ],
    ids=["import-qrels-missing", "qrels-dot", "one-task-qrels-two-tasks", "fusion-of-one", "report-on-a-system"],
)
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_an_experiment_is_refused_before_any_step_runs(tmp_path, tail, message, dry):
    """Each passed ``--dry-run`` and was found only after the steps before it ran (BM25 over both tasks)."""
    make_data(tmp_path, "t1"), make_data(tmp_path, "t2")
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 2.0 x\n")
    (tmp_path / "judged.txt").write_text("q1 0 a 1\n")
    exp = tmp_path / "exp.toml"
    exp.write_text(f'out = "res"\n[data]\ndirs = ["data"]\n[[retrievers]]\nname = "bm25"\n{tail}')
    line = one_line_error(run_r2med("run", str(exp), *(["--dry-run"] if dry else [])))
    assert message in line, line
    assert not (tmp_path / "res").exists()


# -- item 13: judgments and reasoning sets held to the examples' rules ----------------------------------------------


@pytest.mark.shared
def test_a_qrels_file_judging_an_excluded_document_relevant_is_refused(pony_and_leetcode, tmp_path):
    """The examples reader refuses a gold id that is also excluded; a ``--qrels`` file doing so passed silently
    (the document is removed from every run before scoring: no run could ever find it)."""
    from bright_hub import shared_rows

    rows = shared_rows("leetcode")[:4]
    row = next(r for r in rows if [e for e in r["excluded_ids"] if e != "N/A"])
    excluded = next(e for e in row["excluded_ids"] if e != "N/A")
    judged = tmp_path / "judged.txt"
    judged.write_text(f"{row['id']} 0 {excluded} 1\n")
    run = tmp_path / "run.trec"
    run.write_text(f"{row['id']} Q0 {row['gold_ids'][0]} 1 1.0 x\n")
    line = one_line_error(run_r2med("score", "bright:leetcode", str(run), "--qrels", str(judged)))
    assert "is judged relevant, but the protocol of bright:leetcode excludes it" in line, line
    judged.write_text(f"{row['id']} 0 {excluded} 0\n{row['id']} 0 {row['gold_ids'][0]} 1\n")  # judged 0: allowed
    assert run_r2med("score", "bright:leetcode", str(run), "--qrels", str(judged)).returncode == 0


def test_a_reasoning_set_repeating_a_query_is_counted_or_refused_with_strict(tmp_path, caplog):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from r2med.data.bright import Examples, read_reasoning
    from r2med.data.exclusions import Exclusions
    from r2med.errors import DataError
    from r2med.expansion.precomputed import expansion_builder

    rows = [
        {"id": "0", "query": "first", "excluded_ids": ["N/A"]},
        {"id": "1", "query": "one", "excluded_ids": ["N/A"]},
        {"id": "0", "query": "second", "excluded_ids": ["N/A"]},
    ]
    path = tmp_path / "reason.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    ex = Examples({"0": "q0", "1": "q1"}, {"0": {"d": 1}, "1": {"d": 1}}, Exclusions.of({}), 0)
    with pytest.raises(DataError, match=r"row 3: query id '0' repeats row 1 \(--strict\)"):
        read_reasoning(path, ex, strict=True)
    caplog.set_level("WARNING")
    assert read_reasoning(path, ex) == {"0": "second", "1": "one"}
    assert "1 query id(s) repeated (e.g. '0'): the last row of each is kept" in caplog.text
    assert expansion_builder("reason:gpt4", strict=True).strict  # --strict reaches the reasoning reader


# -- item 18: small fixes, each its own rule ----------------------------------------------------------------------


def test_a_depth_a_record_cannot_hold_is_refused_before_any_work(tmp_path):
    """``--top-k 10**41`` wrote a ``metrics.json`` every reader refuses (more than 30 digits)."""
    data = make_data(tmp_path)
    line = one_line_error(
        run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(tmp_path / "o"), "--top-k", str(10**41))
    )
    assert f"--top-k: {10**41} has 42 digits; a count r2med records holds at most 30" in line
    assert not (tmp_path / "o").exists()
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(tmp_path / "o"), "--top-k", str(10**29))
    assert res.returncode == 0, res.stderr  # the largest a record holds: runs, and reads back
    assert run_r2med("report", str(tmp_path / "o")).returncode == 0


def test_a_query_id_longer_than_a_record_holds_is_refused_when_read(tmp_path):
    """A 1,001-character query id failed only when ``metrics.json`` was written, after the whole run."""
    data = make_data(tmp_path)
    long_id = "q" * 1001
    (data / "query.jsonl").write_text(json.dumps({"id": long_id, "text": "glucose insulin"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": long_id, "p_id": "a", "score": 1}) + "\n")
    line = one_line_error(run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(tmp_path / "o")))
    assert "is 1,001 characters long; a query id holds at most 1,000" in line and "query.jsonl" in line, line
    assert not (tmp_path / "o").exists()
    run = tmp_path / "run.trec"
    run.write_text(f"{long_id} Q0 a 1 1.0 x\n")
    with pytest.raises(R2MedError, match="1,001 characters long"):
        import r2med

        r2med.read_trec(run)


def test_score_refuses_a_split_on_a_hub_task_as_evaluate_does(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 1.0 x\n")
    line = one_line_error(run_r2med("score", "bright:pony", str(run), "--split", "dev"))
    assert "--split dev: the hub tasks (R2MED's and BRIGHT's) have one split (test)" in line


# -- item 7: one column, one data state -----------------------------------------------------------------------------


def _two_states(tmp_path):
    data = make_data(tmp_path)
    judged = tmp_path / "judged.txt"
    judged.write_text("q1 0 b 1\n")
    out = tmp_path / "out"
    for extra in ([], ["--qrels", str(judged), "--name", "bm25-judged"]):
        res = run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(out), *extra)
        assert res.returncode == 0, res.stderr
    return data, out


def test_show_marks_a_system_scored_on_its_own_judgments(tmp_path):
    """``show`` printed a ``--qrels`` run's value beside the collection's judgments without the § mark."""
    data, out = _two_states(tmp_path)
    res = run_r2med("show", str(out), "--query", "q1", "-d", str(data))
    assert res.returncode == 0, res.stderr
    assert "bm25-judged §" in res.stdout and "judged with" in res.stdout + res.stderr, res.stdout


def test_plot_refuses_a_qrels_run_beside_a_normal_one_as_compare_does(tmp_path):
    pytest.importorskip("matplotlib")
    _, out = _two_states(tmp_path)
    compare = one_line_error(run_r2med("compare", str(out / "bm25"), str(out / "bm25-judged")))
    line = one_line_error(run_r2med("plot", str(out), "-o", str(tmp_path / "fig.png")))
    assert "were made on different data" in compare and "were made on different data" in line, line
    assert not (tmp_path / "fig.png").exists()


def test_latex_never_bolds_a_figure_of_another_judgments_file(tmp_path):
    """A ``--qrels`` (§) figure was bolded as the column's best in LaTeX, beside figures on the task's own."""
    data = make_data(tmp_path)
    judged = tmp_path / "judged.txt"
    judged.write_text("q1 0 a 1\n")  # the same judgment as the collection's: both runs score 100.00
    out = tmp_path / "out"
    for extra in ([], ["--qrels", str(judged), "--name", "judged"]):
        assert run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(out), *extra).returncode == 0
    latex = run_r2med("report", str(out), "--format", "latex").stdout
    [own] = [line for line in latex.splitlines() if line.startswith("bm25 &")]
    [other] = [line for line in latex.splitlines() if line.startswith("judged &")]
    assert r"\textbf{100.00" in own and r"\textbf" not in other and "§" in other, latex


def test_a_model_revision_on_a_local_folder_is_refused_not_recorded(tmp_path):
    """``model_revision`` on a local folder was recorded as if it had chosen the folder's files."""
    import r2med

    data = make_data(tmp_path)
    model = tmp_path / "my-model"
    model.mkdir()
    args = ["evaluate", "-r", "dense", "--model", str(model), "-d", str(data), "-o", str(tmp_path / "o")]
    line = one_line_error(run_r2med(*args, "--set", "model_revision=main"))
    assert "model_revision 'main':" in line and "is a local folder" in line, line
    assert not (tmp_path / "o").exists()
    with pytest.raises(R2MedError, match="is a local folder"):
        r2med.make_reranker(str(model), model_revision="main")


def test_a_local_folder_named_like_a_hub_only_task_is_refused(tmp_path):
    """Item 7's third part: a local folder named ``bright:pony`` landed in the hub task's report column unmarked.
    A local collection may not take the name of a task read from its hub only (BRIGHT's); R2MED's task names stay
    a local copy's (its counts decide whether a figure grades it), and any other name is the folder's own."""
    from r2med import load_folder

    data = make_data(tmp_path, task="bright:pony")
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(data.parent), "-o", str(tmp_path / "out"))
    line = one_line_error(res)
    assert res.returncode == 2 and "'bright:pony'" in line and "rename the folder" in line, line
    assert not (tmp_path / "out").exists()
    with pytest.raises(R2MedError, match="read from its hub only"):
        load_folder(data)
    assert load_folder(make_data(tmp_path / "other", task="pony")).name == "pony"  # not a task name: its own
    assert load_folder(make_data(tmp_path / "r2", task="Biology")).name == "Biology"  # R2MED: a local copy
