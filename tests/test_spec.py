"""One typed spec per step (r2med.typed), parsed once at every edge: the same one-line error from an experiment file,
the command line and Python, before any work; every field reachable from the command line and a file; records of
schema 2 read back as specs and reused unchanged; names derived from the spec alike everywhere."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import r2med
from conftest import recorded, run_r2med, shared_collection
from r2med.steps import EvaluateStep, FuseStep, RerankStep

MEDLINE = "medline-med"

EXPERIMENT = """
out = "results"
[data]
dirs = ["{data}"]
[[retrievers]]
name = "bm25"
[[retrievers]]
name = "bm25"
k1 = 1.2
label = "bm25-k1.2"
[[rerank]]
reranker = "bge-reranker"
runs = ["bm25"]
[[fusion]]
systems = ["bm25", "bm25-k1.2"]
"""

#: The issue's table, at the three edges.  Each row: the edit of the file above, where the file names the key
#: (``exp.toml: [[retrievers]] 2: k1``), the words after the key -- the same at every edge --, the command line that
#: gives the same value (its arguments after the command, and how it names the key) or why none can, and the
#: Python call that does (and how its message names the key) or why none can.
RUN = "/no/such/run"  # a first stage that is never read: the one parse refuses the value before
THREE_EDGES = [
    (
        ("k1 = 1.2", 'k1 = "high"'),
        "exp.toml: [[retrievers]] 2: k1",
        "expected a finite number >= 0, got 'high'",
        (["evaluate", "--k1", "high"], "--k1"),
        (lambda: r2med.BM25(k1="high"), "BM25(): k1"),
    ),
    (
        ("k1 = 1.2", "k1 = nan"),
        "exp.toml: [[retrievers]] 2: k1",
        "expected a finite number >= 0, got nan",
        (["evaluate", "--k1", "nan"], "--k1"),
        (lambda: r2med.BM25(k1=math.nan), "BM25(): k1"),
    ),
    (
        ("k1 = 1.2", "k1 = inf"),
        "exp.toml: [[retrievers]] 2: k1",
        "expected a finite number >= 0, got inf",
        (["evaluate", "--k1", "inf"], "--k1"),
        (lambda: r2med.BM25(k1=math.inf), "BM25(): k1"),
    ),
    (
        ("k1 = 1.2", "k1 = true"),
        "exp.toml: [[retrievers]] 2: k1",
        "expected a finite number >= 0, got True",
        (["evaluate", "--set", "k1=true"], "--k1"),
        (lambda: r2med.make_retriever("bm25", k1=True), "make_retriever('bm25'): k1"),
    ),
    (
        ("k1 = 1.2", 'k1 = "1.2"'),
        "exp.toml: [[retrievers]] 2: k1",
        "expected a finite number >= 0, got '1.2'",
        (["evaluate", "--set", 'k1="1.2"'], "--k1"),  # a JSON string: text, as the file's quoted value
        (lambda: r2med.BM25(k1="1.2"), "BM25(): k1"),
    ),
    (
        ("k1 = 1.2", "b = 2.0"),
        "exp.toml: [[retrievers]] 2: b",
        "expected a finite number between 0 and 1, got 2.0",
        (["evaluate", "--b", "2.0"], "--b"),
        (lambda: r2med.BM25(b=2.0), "BM25(): b"),
    ),
    (
        ("k1 = 1.2", "top_k = 10.5"),
        "exp.toml: [[retrievers]] 2: top_k",
        "expected an integer >= 1, got 10.5",
        (["evaluate", "--top-k", "10.5"], "--top-k"),
        (lambda: EvaluateStep.of("bm25", top_k=10.5), "EvaluateStep.of('bm25'): top_k"),
    ),
    (
        ("k1 = 1.2", "top_k = -5"),
        "exp.toml: [[retrievers]] 2: top_k",
        "expected an integer >= 1, got -5",
        (["evaluate", "--top-k", "-5"], "--top-k"),
        (lambda: EvaluateStep.of("bm25", top_k=-5), "EvaluateStep.of('bm25'): top_k"),
    ),
    (
        ('label = "bm25-k1.2"', "label = 7"),
        "exp.toml: [[retrievers]] 2: label",
        "expected text, got 7",
        "no command line gives it: a flag's value is text, and --set sets options only, never a step's own field",
        (lambda: EvaluateStep.of("bm25", name=7), "EvaluateStep.of('bm25'): name"),
    ),
    (
        ("k1 = 1.2", 'cache = "false"'),
        "exp.toml: [[retrievers]] 2: cache",
        "expected true or false, got 'false'",
        (["evaluate", "--set", 'cache="false"'], "--no-cache"),
        (lambda: r2med.make_retriever("bm25", cache="false"), "make_retriever('bm25'): cache"),
    ),
    (
        ('dirs = ["', 'revision = 5\ndirs = ["'),
        "exp.toml: [data]: revision",
        "expected text, got 5",
        "no command line gives it: a flag's value is text, and --set sets options only, never a step's own field",
        (lambda: EvaluateStep.of("bm25", revision=5), "EvaluateStep.of('bm25'): revision"),
    ),
    (
        ("[[fusion]]", "[[fusion]]\nstrict = true"),
        "exp.toml: [[fusion]] 1",
        "unknown option 'strict'",
        "r2med fuse --strict and FuseStep.of(strict=True) are the data's, a key a [[fusion]] table leaves to [data]",
        "the same",
    ),
    (
        ("[[rerank]]", "[[rerank]]\nstrict = true"),
        "exp.toml: [[rerank]] 1",
        "unknown option 'strict'",
        "r2med rerank --strict and RerankStep.of(strict=True) are the data's, left to [data] in a file",
        "the same",
    ),
    (
        ("[[rerank]]", "[[rerank]]\nlabel = 7"),
        "exp.toml: [[rerank]] 1: label",
        "expected text, got 7",
        "no command line gives it: a flag's value is text, and --set sets options only, never a step's own field",
        (lambda: RerankStep.of(RUN, "bge-reranker", name=7), "RerankStep.of(reranker='bge-reranker'): name"),
    ),
    (
        ("[[rerank]]", "[[rerank]]\nmax_length = 7"),
        "exp.toml: [[rerank]] 1: max_length",
        "expected an integer >= 8, got 7",
        (["rerank", "--run", RUN, "--reranker", "bge-reranker", "--max-length", "7"], "--max-length"),
        (lambda: r2med.make_reranker("bge-reranker", max_length=7), "make_reranker('bge-reranker'): max_length"),
    ),
    (
        ("[[fusion]]", "[[fusion]]\nk = -1"),
        "exp.toml: [[fusion]] 1: k",
        "expected a finite number >= 0, got -1",
        (["fuse", RUN, RUN + "2", "--rrf-k", "-1"], "--rrf-k"),
        (lambda: FuseStep.of([RUN, RUN + "2"], k=-1), "FuseStep.of(): k"),
    ),
]
#: the file's rows: an edit -> the one line it gives (every row before any work)
ROWS = [(edit, f"{where}: {words}") for edit, where, words, _, _ in THREE_EDGES]


@pytest.fixture
def exp_file(tmp_path: Path) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT.format(data=shared_collection(MEDLINE)))
    return path


@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("edit,line", ROWS, ids=[r[1].split(": ", 2)[2][:40] for r in ROWS])
def test_every_row_of_the_table_is_one_line_before_any_work(exp_file, tmp_path, edit, line, dry):
    exp_file.write_text(exp_file.read_text().replace(*edit, 1))
    res = run_r2med("run", "exp.toml", *(["--dry-run"] if dry else []), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: " + line) and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "results").exists()  # nothing written: not even step 1 (b = 2.0 is in step 2)


@pytest.mark.parametrize(
    "where, words, cli, python", [r[1:] for r in THREE_EDGES], ids=[r[2][:40] for r in THREE_EDGES]
)
def test_every_row_is_the_same_words_from_the_command_line_and_python(tmp_path, where, words, cli, python):
    """The file names the key, the CLI its flag, Python the argument; the words after it are the same at each edge,
    from the one parse -- the command line's values reach it as typed (``--k1 high`` is text, ``--top-k 10.5`` a
    float), before any work.  A row no other edge can express says why."""
    from r2med.typed.parse import SpecError

    if isinstance(cli, str):  # the reason no command line gives this value
        if python == "the same":
            assert "data" in cli
            return
        assert "--set sets options only" in cli
    else:
        args, flag = cli
        out = tmp_path / "out"
        data = ["-d", str(shared_collection(MEDLINE)), "-o", str(out)] if args[0] == "evaluate" else []
        res = run_r2med(*args, *data)
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip() == f"error: {flag}: {words}", res.stderr
        assert not out.exists()
    call, named = python
    with pytest.raises(SpecError) as caught:
        call()
    assert str(caught.value) == f"{named}: {words}"


def test_the_same_line_from_the_command_line_and_python(tmp_path):
    """The CLI names the flag, Python the argument; the words after it are the file's."""
    import r2med
    from r2med.steps import EvaluateStep
    from r2med.typed.parse import SpecError

    data, out = str(shared_collection(MEDLINE)), tmp_path / "out"
    cases = [
        (["--k1", "nan"], "--k1: expected a finite number >= 0, got nan"),
        (["--b", "2"], "--b: expected a finite number between 0 and 1, got 2"),  # as typed: an integer
        (["--k1", "high"], "--k1: expected a finite number >= 0, got 'high'"),  # issue 30: not click's words
        (["--top-k", "10.5"], "--top-k: expected an integer >= 1, got 10.5"),
        (["--set", "k1=true"], "--k1: expected a finite number >= 0, got True"),
        (["--set", "k1=high"], "--k1: expected a finite number >= 0, got 'high'"),
        (["--set", "k1=nan"], "--k1: expected a finite number >= 0, got nan"),
        (["--set", "k3=1"], "unknown option '--k3'"),
        (["-r", "bge", "--k1", "1"], "unknown option '--k1'"),
    ]
    for flags, line in cases:
        res = run_r2med("evaluate", *(["-r", "bm25"] if "-r" not in flags else []), *flags, "-d", data, "-o", str(out))
        assert res.returncode == 2 and res.stderr.startswith("error: " + line), (flags, res.stderr)
    assert not out.exists()
    for call, line in [
        (lambda: r2med.BM25(k1=float("nan")), "BM25(): k1: expected a finite number >= 0, got nan"),
        (lambda: r2med.BM25(k1="high"), "BM25(): k1: expected a finite number >= 0, got 'high'"),
        (lambda: r2med.BM25(k1=math.inf), "BM25(): k1: expected a finite number >= 0, got inf"),
        (lambda: r2med.make_retriever("bm25", k1=True), "make_retriever('bm25'): k1: expected a finite number >= 0"),
        (lambda: r2med.make_retriever("bm25", cache="false"), "make_retriever('bm25'): cache: expected true or false"),
        (lambda: EvaluateStep.of("bm25", top_k=10.5), "EvaluateStep.of('bm25'): top_k: expected an integer >= 1"),
        (lambda: EvaluateStep.of("bm25", name=7), "EvaluateStep.of('bm25'): name: expected text, got 7"),
        (lambda: r2med.make_reranker("bge-reranker", label=7.5), "make_reranker('bge-reranker'): label: expected"),
    ]:
        with pytest.raises(SpecError) as caught:
            call()
        assert str(caught.value).startswith(line), str(caught.value)
        assert isinstance(caught.value, ValueError)  # a typed error code that knows no r2med catches as usual


def test_bm25_nan_no_longer_scores():
    """``BM25(k1=nan)`` used to be accepted and score every doc 0 (issue 30): now the same error as the CLI's."""
    from r2med.retrieval.bm25 import BM25
    from r2med.typed.parse import SpecError

    with pytest.raises(SpecError):
        BM25(k1=float("nan")).index({"d1": "a b", "d2": "b c"})
    assert BM25(k1=1).k1 == 1.0 and isinstance(BM25(k1=1).k1, float)  # an int is a number


# -- the house: every field has a flag and a key, every flag a field -------------------------------------------

#: commands that write results from one step spec -> (the step type, the options types of what it runs)
STEP_COMMANDS = ("evaluate", "rerank", "fuse", "import", "expand", "export")
#: how a command runs or shows, not what it computes: flags that are no field of any spec
NOT_FIELDS = {"--ray", "--ray-address", "--set", "--wide", "--help"}
#: every other command: it reads results or shows facts, and builds no step
OTHER_COMMANDS = {
    "tasks",
    "demo",
    "score",
    "report",
    "compare",
    "leaderboard",
    "models",
    "reproduce",
    "run",
    "cache",
    "encode",
    "plot",
    "html",
    "show",
    "serve",  # its index is an EvaluateStep (parsed by evaluate_step); its other flags are the server's
}


def _spec_types(command: str) -> list[type]:
    from r2med import steps
    from r2med.reranking.base import all_rerankers
    from r2med.retrieval.registry import all_retrievers
    from r2med.typed import options

    if command == "evaluate":
        return [steps.EvaluateStep, steps.Data, steps.Output, *{m.options for m in all_retrievers().values()}]
    if command == "rerank":
        return [steps.RerankStep, steps.Data, steps.Output, *{m.options for m in all_rerankers().values()}]
    if command == "fuse":
        return [steps.FuseStep, steps.Data, steps.Output, options.FusionOptions]
    if command == "expand":
        return [steps.ExpandStep, steps.Data, options.ExpandLlmOptions]
    own = {"import": steps.ImportStep, "export": steps.ExportStep}[command]
    return [own, steps.Data, *([steps.Output] if command == "import" else [])]


def _command_flags(command: str) -> dict[str, str]:
    """flag -> parameter name of one command, read from the typer app itself."""
    import typer.main

    from r2med.cli import app

    group = typer.main.get_command(app)
    found = {}
    for param in group.commands[command].params:
        flags = [o for o in param.opts if o.startswith("--")]
        if flags and param.param_type_name == "option":
            found[max(flags, key=len)] = str(param.name)
    return found


def test_every_command_is_a_step_command_or_builds_no_step():
    import typer.main

    from r2med.cli import app

    commands = set(typer.main.get_command(app).commands)
    unknown = commands - set(STEP_COMMANDS) - OTHER_COMMANDS
    assert not unknown, f"new command(s) {unknown}: a step command (add it to STEP_COMMANDS) or not"


@pytest.mark.parametrize("command", STEP_COMMANDS)
def test_every_flag_of_a_step_command_maps_to_a_field(command):
    from r2med.typed.parse import field_names, flag_of

    fields = {flag_of(t, f) for t in _spec_types(command) for f in field_names(t)}
    for flag in _command_flags(command):
        assert flag in fields or flag in NOT_FIELDS, f"r2med {command} {flag}: no field of its step spec"


@pytest.mark.parametrize("command", ["evaluate", "rerank", "fuse"])
def test_every_option_field_has_a_flag_and_a_file_key(command, tmp_path):
    """Each field of each options type is set on the command line (its own flag, or ``--set name=``) and in a
    file (its table takes the key: the value reaches the field's own check, never "unknown option")."""
    from r2med.jobs.experiment import ExperimentError, Reader
    from r2med.typed.parse import Spec, field_names, flag_of

    flags = _command_flags(command)
    kind = {"evaluate": "evaluate", "rerank": "rerank", "fuse": "fuse"}[command]
    reader = Reader("exp.toml", tmp_path)
    for spec in _spec_types(command)[3:]:
        assert issubclass(spec, Spec)
        for name in field_names(spec):
            flag = flag_of(spec, name)
            assert flag in flags or (flag == "--set" and "--set" in flags), f"{spec.__name__}.{name}: no flag"
            try:
                reader.values({name: object()}, kind, "[[x]] 1", field_names(spec))
            except ExperimentError as exc:  # pragma: no cover - the failure message
                pytest.fail(f"{spec.__name__}.{name}: a file cannot set it ({exc})")


# -- the record: schema 3 is the spec; schema 2 read back, reported and reused unchanged -----------------------

V2 = Path(__file__).parent / "data" / "metrics_v2"


def test_a_real_v2_record_reads_back_as_the_step_that_made_it():
    """The files in tests/data/metrics_v2 were written by r2med at commit 516245b (schema 2)."""
    from r2med.runs.record import read_record
    from r2med.steps import EvaluateStep, evaluate_from_record

    folder = V2 / "bm25_medline-med.json"
    raw = json.loads(folder.read_text())
    assert raw["schema_version"] == 2 and "step" not in raw["config"]
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(p.name for p in V2.glob("*.json")):
            task = Path(tmp) / name / "medline-med"
            task.mkdir(parents=True)
            shutil.copy(V2 / name, task / "metrics.json")
            record = read_record(task)
            assert record.read_version == 2
            assert record.config is not None
            assert (
                record.config.step
                == {"bm25": "evaluate", "bm25+": "rerank", "rrf-bm": "fuse"}[
                    next(k for k in ("bm25+", "rrf-bm", "bm25") if name.startswith(k))
                ]
            )
            if name.startswith("bm25_"):
                assert evaluate_from_record(record.config) == EvaluateStep.of("bm25", top_k=100)
            if name.startswith("bm25+"):  # the first stage of a rerank read back too
                assert evaluate_from_record(record.config.first_stage.config) == EvaluateStep.of("bm25", top_k=100)


def test_the_v2_config_is_what_this_r2med_records_for_the_same_command(tmp_path):
    """The real v2 file's config (by hand: with ``step`` first) equals this r2med's for the same command but for the
    analyzer's version (2 since its character table was measured from Lucene: such a folder is recomputed once, with
    the same figures on this ASCII collection) and k1 and b, recorded once since issue 35 (in ``options``, which the
    v2 file holds them in too), the run's facts and the spec alike."""
    res = run_r2med("evaluate", "-r", "bm25", "-d", str(shared_collection(MEDLINE)), "-o", str(tmp_path))
    assert res.returncode == 0, res.stderr
    mine = json.loads((tmp_path / "bm25" / MEDLINE / "metrics.json").read_text())
    theirs = json.loads((V2 / "bm25_medline-med.json").read_text())
    assert mine["schema_version"] == 3
    expected = {"step": "evaluate", **theirs["config"]}
    expected["analyzer"] = {**expected["analyzer"], "version": 2}
    assert (expected.pop("k1"), expected.pop("b")) == (expected["options"]["k1"], expected["options"]["b"])
    assert mine["config"] == expected
    assert (mine["aggregate"], mine["per_query"]) == (theirs["aggregate"], theirs["per_query"])


SCORER = """
class Overlap:
    def score(self, query, docs):
        words = set(query.lower().split())
        return [len(words & set(d.lower().split())) for d in docs]
"""


def _as_v2(root: Path) -> None:
    """Rewrite every metrics.json below ``root`` as r2med wrote it at schema 2 (docs: no ``step``, no reranker
    ``options``; the first stage and inputs likewise)."""

    def v2(config: dict) -> dict:
        config = {k: v for k, v in config.items() if k != "step"}
        if "reranker" in config:
            config.pop("options", None)
        if isinstance(config.get("first_stage"), dict):
            config["first_stage"] = {**config["first_stage"], "config": v2(config["first_stage"]["config"])}
        if isinstance(config.get("inputs"), list):
            config["inputs"] = [{**i, "config": v2(i["config"])} for i in config["inputs"]]
        return config

    for path in root.rglob("metrics.json"):
        data = json.loads(path.read_text())
        data = {**data, "schema_version": 2, "config": v2(data["config"])}
        path.write_text(json.dumps(data, indent=1) + "\n")


def test_folders_of_schema_2_are_reused_unchanged(tmp_path):
    data, out = str(shared_collection(MEDLINE)), tmp_path / "out"
    (tmp_path / "scorer.py").write_text(SCORER)
    commands = [
        ("evaluate", "-r", "bm25", "-d", data, "-o", str(out)),
        ("evaluate", "-r", "bm25", "--k1", "1.2", "--name", "k12", "-d", data, "-o", str(out)),
        ("rerank", "--run", str(out / "bm25"), "--reranker", "custom", "--scorer", f"{tmp_path}/scorer.py:Overlap"),
        ("fuse", str(out / "bm25"), str(out / "k12")),
    ]
    for args in commands:
        assert run_r2med(*args).returncode == 0
    _as_v2(out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert all(json.loads(p.read_text())["schema_version"] == 2 for p in before if p.name == "metrics.json")
    for args in commands:
        res = run_r2med(*args)
        assert res.returncode == 0 and "reused" in res.stdout, (args, res.stdout, res.stderr)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing recomputed or rewritten
    report = run_r2med("report", str(out), "-f", "json")
    assert report.returncode == 0 and "k12" in report.stdout


def test_a_v2_record_of_no_options_is_reused_by_the_defaults(tmp_path):
    """``r2med demo`` (and Python's run_task) recorded no options before schema 3: they were the defaults."""
    from r2med.data import load_folder
    from r2med.jobs.evaluate import run_task
    from r2med.steps import EvaluateStep

    coll = load_folder(shared_collection(MEDLINE))
    first = run_task(coll, EvaluateStep.of("bm25", top_k=10), tmp_path / "bm25")
    path = tmp_path / "bm25" / MEDLINE / "metrics.json"
    data = json.loads(path.read_text())
    data["config"] = {k: v for k, v in data["config"].items() if k != "step"} | {"options": {}}
    path.write_text(json.dumps({**data, "schema_version": 2}))
    again = run_task(coll, EvaluateStep.of("bm25", top_k=10), tmp_path / "bm25")
    assert again.reused and again.run == first.run
    other = run_task(coll, EvaluateStep.of("bm25", k1=1.0, top_k=10), tmp_path / "bm25")
    assert not other.reused  # another k1 is another spec


# -- names derived from the spec, the same everywhere; never colliding silently ------------------------------


def test_a_custom_scorer_is_named_alike_from_a_file_and_the_command_line(tmp_path):
    (tmp_path / "scorer.py").write_text(SCORER)
    data = shared_collection(MEDLINE)
    (tmp_path / "exp.toml").write_text(
        f'out = "results"\n[data]\ndirs = ["{data}"]\n[[retrievers]]\nname = "bm25"\n'
        '[[rerank]]\nreranker = "custom"\nscorer = "scorer.py:Overlap"\nruns = ["bm25"]\n'
    )
    res = run_r2med("run", str(tmp_path / "exp.toml"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "results" / "bm25+custom-Overlap" / MEDLINE / "run.trec").is_file()
    cli = run_r2med("rerank", "--run", str(tmp_path / "results" / "bm25"), "--reranker", "custom", "--scorer",
                    f"{tmp_path}/scorer.py:Overlap")  # fmt: skip
    assert cli.returncode == 0 and "reused" in cli.stdout, cli.stderr  # the same folder, the same spec


def test_unnamed_scorers_get_their_own_names_and_never_replace_each_other(tmp_path):
    """Two unnamed scorers used to be both ``custom-Loaded`` (issue 27 item 10): now each is named from its spec,
    and a folder holding another scorer's results under the same name is refused, not replaced."""
    from r2med.infra.user_code import as_loaded, short_name
    from r2med.reranking.custom import CustomReranker

    (tmp_path / "a.py").write_text(SCORER)
    (tmp_path / "b.py").write_text(SCORER.replace("Overlap", "Other"))
    (tmp_path / "c.py").write_text(SCORER)  # another module, the same OBJ name
    names = {CustomReranker(as_loaded(f"{tmp_path}/{m}.py:{o}", "scorer", "--scorer")).name for m, o in
             (("a", "Overlap"), ("b", "Other"))}  # fmt: skip
    assert names == {"custom-Overlap", "custom-Other"}
    assert short_name(as_loaded(f"{tmp_path}/a.py:Overlap", "scorer", "--scorer")) == "Overlap"
    out = tmp_path / "out"
    assert run_r2med("evaluate", "-r", "bm25", "-d", str(shared_collection(MEDLINE)), "-o", str(out)).returncode == 0
    first = run_r2med(
        "rerank", "--run", str(out / "bm25"), "--reranker", "custom", "--scorer", f"{tmp_path}/a.py:Overlap"
    )
    assert first.returncode == 0, first.stderr
    kept = (out / "bm25+custom-Overlap" / MEDLINE / "run.trec").read_bytes()
    clash = run_r2med(
        "rerank", "--run", str(out / "bm25"), "--reranker", "custom", "--scorer", f"{tmp_path}/c.py:Overlap"
    )
    assert clash.returncode == 2 and "another model under the same name" in clash.stderr, clash.stderr
    assert (out / "bm25+custom-Overlap" / MEDLINE / "run.trec").read_bytes() == kept
    named = run_r2med("rerank", "--run", str(out / "bm25"), "--reranker", "custom", "--scorer",
                      f"{tmp_path}/c.py:Overlap", "--name", "c-overlap")  # fmt: skip
    assert named.returncode == 0 and (out / "c-overlap").is_dir()


# -- paths read against the file's folder; report destinations that would destroy something ------------------

DECOY = """
import numpy as np
class Enc:
    name = "{name}"
    revision = "1"
    def encode(self, texts, role):
        return np.array([[{value}, 1.0] for _ in texts])
"""


def test_an_encoder_module_is_read_against_the_file_folder_not_the_current_one(tmp_path):
    """``encoder = "./encs.py:Enc"`` used to import the current folder's encs.py (issue 27 item 9)."""
    exp_dir, cwd = tmp_path / "exp", tmp_path / "elsewhere"
    exp_dir.mkdir()
    cwd.mkdir()
    (exp_dir / "encs.py").write_text(DECOY.format(name="right", value="1.0"))
    (cwd / "encs.py").write_text("raise SystemExit('the decoy in the current folder was imported')\n")
    (exp_dir / "exp.toml").write_text(
        f'out = "results"\n[data]\ndirs = ["{shared_collection("r2med-biology-demo")}"]\n'
        '[[retrievers]]\nname = "custom"\nencoder = "./encs.py:Enc"\ncache = false\n'
    )
    res = run_r2med("run", str(exp_dir / "exp.toml"), cwd=cwd)
    assert res.returncode == 0, res.stderr
    [config] = [json.loads(p.read_text())["config"] for p in (exp_dir / "results").rglob("metrics.json")]
    assert config["options"]["encoder"] == f"{exp_dir / 'encs.py'}:Enc"
    assert config["encoder"]["extra"]["custom"]["module_file"] == str((exp_dir / "encs.py").resolve())


@pytest.mark.parametrize(
    "key,target",
    [("latex", "exp.toml"), ("markdown", "results/bm25/medline-med/metrics.json"), ("html", "results/bm25/x.html")],
)
def test_a_report_may_not_replace_the_experiment_file_or_a_result(exp_file, tmp_path, key, target):
    """``latex = "self.toml"`` replaced the file by a tabular (issue 27 item 2): refused before any work."""
    exp_file.write_text(exp_file.read_text() + f'\n[report]\n{key} = "{target}"\n')
    before = exp_file.read_bytes()
    res = run_r2med("run", str(exp_file))
    assert res.returncode == 2 and f"exp.toml: [report]: {key}: " in res.stderr, res.stderr
    assert exp_file.read_bytes() == before and not (tmp_path / "results").exists()


# -- an experiment from Python runs as the file does ---------------------------------------------------------


def test_an_experiment_built_in_python_equals_the_file(exp_file, tmp_path):
    from r2med.jobs.experiment import load_experiment, make_experiment, run_experiment
    from r2med.steps import EvaluateStep, FuseStep

    data = shared_collection(MEDLINE)
    text = exp_file.read_text().split("[[rerank]]")[0] + '[[fusion]]\nsystems = ["bm25", "bm25-k1.2"]\n'
    exp_file.write_text(text)
    from_file = load_experiment(exp_file)
    in_python = make_experiment(
        tmp_path / "py",
        [
            EvaluateStep.of("bm25"),
            EvaluateStep.of("bm25", k1=1.2, name="bm25-k1.2"),
            FuseStep.of(["bm25", "bm25-k1.2"]),
        ],
        dirs=[data],
    )
    assert [s.label for s in in_python.steps] == [s.label for s in from_file.steps]
    assert [s.spec for s in in_python.steps] == [s.spec for s in from_file.steps]  # the same specs
    run_experiment(from_file)
    run_experiment(in_python)
    for label in from_file.systems:
        mine, theirs = (root / label / MEDLINE / "run.trec" for root in (tmp_path / "py", tmp_path / "results"))
        assert mine.read_bytes() == theirs.read_bytes(), label


def test_an_experiment_with_an_encoder_object_and_imports(tmp_path):
    """PyTerrier users pass objects: a custom encoder object in an EvaluateStep; ``[[imports]]`` brings a run made
    elsewhere in, as ``r2med import`` does; a fusion of the two lists both in the report."""
    import numpy as np

    from r2med.jobs.experiment import make_experiment, run_experiment, write_reports
    from r2med.steps import EvaluateStep, FuseStep, ImportStep

    class Hashing:
        name, revision = "hashing", "1"

        def encode(self, texts, role):
            return np.array([[len(t) % 7 + 1.0, len(t.split()) + 1.0] for t in texts])

    data = shared_collection(MEDLINE)
    bm25 = tmp_path / "bm25.trec"
    assert run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(tmp_path / "elsewhere")).returncode == 0
    bm25.write_bytes((tmp_path / "elsewhere" / "bm25" / MEDLINE / "run.trec").read_bytes())
    exp = make_experiment(
        tmp_path / "results",
        [
            EvaluateStep.of("custom", encoder=Hashing(), cache=False),
            ImportStep(runs=(bm25,), name="theirs"),
            FuseStep.of(["custom-hashing", "theirs"]),
        ],
        dirs=[data],
    )
    assert exp.systems == ["custom-hashing", "theirs", "rrf-custom-hashing+theirs"]
    run_experiment(exp)
    from r2med.runs.run import read_trec

    assert read_trec(tmp_path / "results" / "theirs" / MEDLINE / "run.trec") == read_trec(bm25)  # as imported
    _, boards = write_reports(exp)
    assert {row.system for row in boards[0].rows} >= set(exp.systems)


def test_per_retriever_tasks_and_a_rerank_limited_to_the_experiment_tasks(tmp_path):
    from r2med.jobs.experiment import load_experiment, plan_rows

    dirs = f'"{shared_collection(MEDLINE)}", "{shared_collection("r2med-biology-demo")}"'
    (tmp_path / "exp.toml").write_text(
        f'out = "results"\n[data]\ndirs = [{dirs}]\n'
        '[[retrievers]]\nname = "bm25"\n[[retrievers]]\nname = "bm25-standard"\ntasks = ["r2med-biology-demo"]\n'
    )
    exp = load_experiment(tmp_path / "exp.toml")
    rows = {row[3]: row[4] for row in plan_rows(exp)}
    assert rows == {"bm25": "medline-med, r2med-biology-demo", "bm25-standard": "r2med-biology-demo"}
    bad = tmp_path / "bad.toml"
    bad.write_text((tmp_path / "exp.toml").read_text().replace('tasks = ["r2med-biology-demo"]', 'tasks = ["nope"]'))
    res = run_r2med("run", str(bad))
    assert res.returncode == 2 and "bad.toml: [[retrievers]] 2: tasks: 'nope' is none of the experiment" in res.stderr


def test_a_models_commit_is_model_revision_and_a_flat_revision_stays_the_datas(tmp_path):
    """An encoder's or cross-encoder's own commit was an option named ``revision``, the name of the data's commit
    too: given flat (``--set revision=``, ``revision = ...`` in a ``[[retrievers]]`` table) it was read as the
    data's, so the model's could not be set there.  It is ``model_revision`` now, from the command line, a file and
    Python alike, and the model takes and records it by that name; a record written with the old name reads back as
    it."""
    from r2med.jobs.experiment import load_experiment
    from r2med.steps import evaluate_from_record, evaluate_step
    from r2med.typed.parse import Origin

    flat = {"retriever": "dense", "model": "org/m", "model_revision": "abc", "revision": "def"}
    step = evaluate_step(flat, Origin.cli())
    assert (step.options.model_revision, step.data.revision) == ("abc", "def")
    exp = tmp_path / "exp.toml"
    exp.write_text('out = "o"\n[[retrievers]]\nname = "dense"\nmodel = "org/m"\nmodel_revision = "abc"\n')
    [loaded] = [s.spec for s in load_experiment(exp).steps]
    assert (loaded.options.model_revision, loaded.data.revision) == ("abc", None)
    assert (
        r2med.make_retriever("dense", model="org/m", model_revision="abc", similarity="cosine").settings.model_revision
        == "abc"
    )
    assert r2med.make_reranker("bge-reranker", model_revision="abc").model_revision == "abc"
    assert r2med.make_reranker("qwen3-reranker", model="org/q", model_revision="abc").model_revision == "abc"
    old = {"step": "evaluate", "retriever": "dense", "options": {"model": "org/m", "revision": "abc"}, "k": 100}
    read = evaluate_from_record(recorded(old))
    assert read is not None and read.options.model_revision == "abc" and read.data.revision is None
