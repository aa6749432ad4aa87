"""Issue 39 item 1: an import is matched to its task by content, and released runs are read in their released forms.

* Two BRIGHT runs given in the wrong order (``pony biology --tasks bright:biology,bright:pony``): BRIGHT's query ids
  are 0..N in every task, so the only sign used to be a warning and both tasks written at 0.00.  Now it is one line
  naming the task the file fits (the one whose judged documents it retrieves), and nothing is written.
* A file whose name says its task (``biology.trec``) sent to R2MED's Biology: the line names ``bright:biology``.
* A gzipped run (as ReasonRank releases them) reads as the plain file does.
* FlagEmbedding's search-results JSON (BGE-Reasoner, ReasonEmbed, Retro*): ``search_results`` beside text facts,
  query ids ``<split>-<id>`` (FlagOpen/FlagEmbedding ``FlagEmbedding/abc/evaluation/evaluator.py``
  ``save_search_results``; ``FlagEmbedding/evaluation/bright/data_loader.py`` prefixes ids with the split).

References: the emulated BRIGHT hub (tests/bright_hub.py: BRIGHT's real examples rows), pytrec_eval by hand under
BRIGHT's rules (test_bright_runs.brights_scores), and the plain file's own import for the gzip and JSON forms.
"""

from __future__ import annotations

import gzip
import json

import pytest

from bright_hub import BRIGHT_PIN, BRIGHT_REPO, bright_files, have_shared_bright
from hub_server import HubEmulator, r2med_task_files
from test_bright_runs import brights_scores, examples_of, released_run, write_trec
from test_hub import PIN, cli, one_line_error

pytestmark = [pytest.mark.shared]
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    if not have_shared_bright():
        pytest.skip("../shared/data/bright is not available")
    return bright_files(("biology", "pony"), queries=4, distractors=30)


def _runs(files, tmp_path):
    from bright_hub import hub_path, read_parquet

    out = {}
    for task in ("biology", "pony"):
        rows = examples_of(files, task)
        corpus = [d["id"] for d in read_parquet(files[hub_path("documents", task)])]
        run = released_run(rows, corpus)
        write_trec(run, tmp_path / f"{task}.trec")
        out[task] = (run, rows)
    return out


def test_files_in_the_wrong_order_are_one_line_naming_the_task_they_fit(files, tmp_path):
    runs = _runs(files, tmp_path)
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    pony, biology = tmp_path / "pony.trec", tmp_path / "biology.trec"
    # both tasks' query ids are 0..3: by ids alone the swap is invisible
    assert set(runs["pony"][0]) <= {r["id"] for r in runs["biology"][1]}
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
        args = ("--name", "mine", "-o", str(out))
        swapped = cli(
            "import", str(pony), str(biology), "--tasks", "bright:biology,bright:pony", *args,
            hub=hub, cache=cache, home=home,
        )  # fmt: skip
        line = one_line_error(swapped)
        assert f"{pony}: fits bright:pony better than bright:biology" in line
        assert "pass the files in the order --tasks lists the tasks" in line
        assert not (out / "mine").exists()
        # in the right order: written, each scored as BRIGHT's rules score it
        right = cli(
            "import", str(biology), str(pony), "--tasks", "bright:biology,bright:pony", *args,
            hub=hub, cache=cache, home=home,
        )  # fmt: skip
        assert right.returncode == 0, right.stderr
        for task in ("biology", "pony"):
            stored = json.loads((out / "mine" / f"bright-{task}" / "metrics.json").read_text())
            run, rows = runs[task]
            assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(brights_scores(run, rows), abs=1e-12)
        # without --tasks over both: the content decides (ids alone tie), in either order
        auto = cli(
            "import", str(pony), str(biology), "--tasks", "bright:biology,bright:pony", "--name", "auto",
            "-o", str(out), hub=hub, cache=cache, home=home,
        )  # fmt: skip
        assert auto.returncode == 2  # --tasks lists them: order is the user's word, and it is wrong
        # one task named, one file that is the other's
        single = cli("import", str(pony), "-t", "bright:biology", *args, hub=hub, cache=cache, home=home)
        line = one_line_error(single)
        assert "fits bright:pony better than bright:biology" in line and "name its task (--tasks bright:pony)" in line


def test_a_file_named_for_a_bright_task_sent_to_r2med_names_that_task(files, tmp_path):
    """``biology.trec`` (BRIGHT's biology run) imported as R2MED's Biology: the name says biology, the content says
    BRIGHT's, so the line points at ``bright:biology``."""
    _runs(files, tmp_path)
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
        hub.add("R2MED/Biology", r2med_task_files(), PIN)
        res = cli(
            "import", str(tmp_path / "biology.trec"), "-t", "Biology", "--name", "m", "-o", str(out),
            hub=hub, cache=cache, home=home,
        )  # fmt: skip
        line = one_line_error(res)
        assert "fits bright:biology better than Biology" in line and "--tasks bright:biology" in line
        assert not (out / "m").exists()


def test_gzip_and_search_results_json_read_as_the_plain_file(files, tmp_path):
    runs = _runs(files, tmp_path)
    run, rows = runs["biology"]
    plain = tmp_path / "biology.trec"
    gz = tmp_path / "released.txt.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    results = {
        "eval_name": "bright_short",
        "model_name": "bge-reasoner-embed",
        "reranker_name": "NoReranker",
        "split": "examples",
        "dataset_name": "biology",
        "search_results": {f"examples-{q}": docs for q, docs in run.items()},
    }
    flag = tmp_path / "examples.json"
    flag.write_text(json.dumps(results, indent=4))
    cache, home, out = tmp_path / "hf" / "hub", tmp_path / "home", tmp_path / "out"
    with HubEmulator() as hub:
        hub.add(BRIGHT_REPO, files, BRIGHT_PIN, refs=("main",))
        stored = {}
        for name, path in (("plain", plain), ("gz", gz), ("flag", flag)):
            res = cli("import", str(path), "-t", "bright:biology", "--name", name, "-o", str(out),
                      hub=hub, cache=cache, home=home)  # fmt: skip
            assert res.returncode == 0, res.stderr
            stored[name] = json.loads((out / name / "bright-biology" / "metrics.json").read_text())
        for name in ("gz", "flag"):
            assert stored[name]["aggregate"] == stored["plain"]["aggregate"], name
            assert stored[name]["per_query"] == stored["plain"]["per_query"], name
        assert stored["plain"]["aggregate"]["ndcg_cut_10"] == pytest.approx(brights_scores(run, rows), abs=1e-12)
        facts = stored["flag"]["config"]["imported"]["stated"]
        assert facts["model_name"] == "bge-reasoner-embed" and facts["dataset_name"] == "biology"
        # a gzip file cut short is one line naming the file
        cut = tmp_path / "cut.txt.gz"
        cut.write_bytes(gz.read_bytes()[:-8])
        bad = cli("import", str(cut), "-t", "bright:biology", "--name", "cut", "-o", str(out),
                  hub=hub, cache=cache, home=home)  # fmt: skip
        assert f"{cut}" in one_line_error(bad) and "gzip" in one_line_error(bad)


def test_the_search_results_reader_keeps_the_score_file_rules(tmp_path):
    """Inside ``search_results`` every score-file rule holds with its line; facts beside it are text; a plain score
    file with a query named ``search_results`` stays a plain score file; ids keep a prefix that is not the split."""
    from r2med.errors import DataError
    from r2med.runs.run import read_run, read_score_file

    def write(name, data):
        path = tmp_path / name
        path.write_text(json.dumps(data, indent=1))
        return path

    facts = {"eval_name": "bright_short", "split": "examples", "dataset_name": "pony"}
    bad_score = write("bad.json", {**facts, "search_results": {"examples-0": {"d1": 1.0, "d2": "high"}}})
    with pytest.raises(DataError, match=r"bad\.json:\d+: score of doc 'd2' \(query 'examples-0'\) is a str"):
        read_run(bad_score)
    bad_fact = write("fact.json", {**facts, "model_name": {"x": 1}, "search_results": {"examples-0": {"d1": 1.0}}})
    with pytest.raises(DataError, match="'model_name' beside 'search_results' is a dict"):
        read_run(bad_fact)
    plain = write("plain.json", {"search_results": {"d1": 1.0}, "q2": {"d2": 2.0}})
    assert read_score_file(plain) == ({"search_results": {"d1": 1.0}, "q2": {"d2": 2.0}}, {})
    other = write("other.json", {**facts, "search_results": {"examples-0": {"d1": 1.0}, "gpt4_reason-1": {"d2": 1.0}}})
    assert set(read_run(other)) == {"examples-0", "gpt4_reason-1"}  # not every id has the split's prefix: kept
    gz = tmp_path / "run.json.gz"
    gz.write_bytes(gzip.compress(other.read_bytes()))
    assert read_score_file(gz) == read_score_file(other)
