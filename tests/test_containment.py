"""Containment: r2med writes and deletes only under the folders the user named.

Names read from files (task, retriever) are checked before they become path parts; every
task-folder write is checked to stay under ``--out``; ``cache rm`` removes only what
``cache ls`` lists under the home; temp folders of killed writers are cleaned and listed;
concurrent writers of one task folder never fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_r2med
from r2med.data.loaders import load_folder
from r2med.errors import DataError, R2MedError
from r2med.evaluation.metrics import evaluate
from r2med.results.folders import metrics_payload
from r2med.runs.run import read_trec, write_task_results

CORPUS = {"a": "insulin glucose", "b": "asthma inhaler", "c": "fever cough", "d": "migraine"}


def r2med(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_r2med(*args, cwd=cwd, env=env)


def one_line_error(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


def make_data(root: Path, task: str = "t1") -> Path:
    data = root / "data" / task
    data.mkdir(parents=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in CORPUS.items()))
    (data / "query.jsonl").write_text(json.dumps({"id": "q1", "text": "glucose insulin"}) + "\n")
    (data / "qrels.jsonl").write_text(json.dumps({"q_id": "q1", "p_id": "a", "score": 1}) + "\n")
    return data


def make_run_folder(root: Path, name: str, data: Path, run=None) -> Path:
    coll = load_folder(data)
    run = run or {"q1": {"a": 2.0, "b": 1.0, "c": 0.5}}
    folder = root / "runs" / name / coll.name
    write_task_results(folder, run, metrics_payload(coll, name, {}, evaluate(run, coll.qrels), {}))
    return folder


def tamper(folder: Path, **fields) -> None:
    path = folder / "metrics.json"
    meta = json.loads(path.read_text())
    meta.update(fields)
    path.write_text(json.dumps(meta))


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- names read from files -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "../x", "/abs", "a\\b", "x\x00y", "line\nbreak", "tab\there"])
def test_plain_name_rejects_path_like_names(bad):
    from r2med.infra.containment import plain_name

    with pytest.raises(R2MedError):
        plain_name(bad, "task")


@pytest.mark.parametrize("good", ["Biology", "MedQA-Diag", "bm25+hyde-gpt4", "my task", "a..b", ".hidden-ok"])
def test_plain_name_accepts_ordinary_names(good):
    from r2med.infra.containment import plain_name

    assert plain_name(good, "task") == good


def test_task_folder_stays_under_out(tmp_path):
    from r2med.infra.containment import task_folder

    assert task_folder(tmp_path / "out", "Biology") == tmp_path / "out" / "Biology"
    for bad in ("../x", str(tmp_path / "victim"), ".."):
        with pytest.raises(R2MedError):
            task_folder(tmp_path / "out", bad)


def test_write_task_results_refuses_a_folder_outside_its_root(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    with pytest.raises(R2MedError, match="outside"):
        write_task_results(victim, {"q1": {"a": 1.0}}, {"task": "t1"}, root=tmp_path / "out")
    assert (victim / "keep.txt").read_text() == "precious"


@pytest.mark.parametrize("hostile", ["ABS", "../../escaped", "..", "a/b"])
def test_fuse_does_not_write_where_metrics_json_says(tmp_path, hostile):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data, {"q1": {"b": 3.0, "a": 2.0}})
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    task = str(victim) if hostile == "ABS" else hostile
    for folder in (one, two):
        tamper(folder, task=task)
    before = snapshot(tmp_path)
    # no --data-dir: the collection is found at the source recorded in metrics.json, named by its task
    res = r2med("fuse", str(one.parent), str(two.parent), "--out", str(tmp_path / "out"))
    line = one_line_error(res)
    assert "metrics.json" in line and "task" in line
    assert snapshot(tmp_path) == before  # nothing written or replaced anywhere
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped").exists()


def test_rerank_inputs_reject_a_hostile_task_and_retriever(tmp_path):
    from r2med.jobs.rerank import load_inputs

    data = make_data(tmp_path)
    folder = make_run_folder(tmp_path, "one", data)
    tamper(folder, task=str(tmp_path / "victim"))
    with pytest.raises(DataError, match=r"metrics.json: .*task"):
        load_inputs(folder.parent, data_dir=data)
    tamper(folder, task="t1", retriever="../up")
    with pytest.raises(DataError, match=r"metrics.json: .*retriever"):
        load_inputs(folder.parent, data_dir=data)


# -- --name and labels: plain names that round-trip through a TREC run's tag column ------------------


@pytest.mark.parametrize("name", ["my run", "a/b", "..", "tab\tx", ""])
def test_fuse_name_must_be_a_plain_run_name(tmp_path, name):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data)
    res = r2med("fuse", str(one.parent), str(two.parent), "--out", str(tmp_path / "out"), "--name", name)
    assert "--name" in one_line_error(res)
    assert not (tmp_path / "out").exists()


def test_written_run_reads_back_with_its_tag(tmp_path):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data)
    res = r2med("fuse", str(one.parent), str(two.parent), "--out", str(tmp_path / "out"), "--name", "rrf+x-1.0")
    assert res.returncode == 0, res.stderr
    path = tmp_path / "out" / "rrf+x-1.0" / "t1" / "run.trec"
    assert read_trec(path) and all(line.split()[5] == "rrf+x-1.0" for line in path.read_text().splitlines())


def test_evaluate_rejects_an_expansion_label_that_is_not_a_name(tmp_path):
    data = make_data(tmp_path)
    exp = data / "hyde" / "gpt 4" / "query_with_hydoc.jsonl"  # the LLM name comes from the folder
    exp.parent.mkdir(parents=True)
    exp.write_text(json.dumps({"id": "q1", "text": "glucose insulin", "hy_doc": "insulin lowers glucose"}) + "\n")
    res = r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "out"), "--expansion-file", str(exp))
    assert "gpt 4" in one_line_error(res)
    res = r2med("evaluate", "--data-dir", str(data), "--out", str(tmp_path / "out"), "--expansion", "hyde:../x")
    one_line_error(res)
    assert not (tmp_path / "out").exists()


def test_write_trec_rejects_a_tag_with_whitespace(tmp_path):
    from r2med.runs.run import write_trec

    with pytest.raises(R2MedError, match="tag"):
        write_trec({"q1": {"a": 1.0}}, tmp_path / "run.trec", tag="two words")
    assert not (tmp_path / "run.trec").exists()


# -- relative --data-dir ------------------------------------------------------------------------------


def test_relative_data_dir_is_recorded_absolute_and_fuse_works_elsewhere(tmp_path):
    data = make_data(tmp_path)
    for name in ("bm25", "bm25-standard"):
        res = r2med("evaluate", "-r", name, "--data-dir", "data/t1", "--out", "runs", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    meta = json.loads((tmp_path / "runs" / "bm25" / "t1" / "metrics.json").read_text())
    assert meta["source"] == str(data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = r2med(
        "fuse",
        str(tmp_path / "runs" / "bm25"),
        str(tmp_path / "runs" / "bm25-standard"),
        "--out",
        "fused",
        cwd=elsewhere,
    )
    assert res.returncode == 0, res.stderr
    assert (elsewhere / "fused" / "rrf-bm25+bm25-standard" / "t1" / "run.trec").exists()


def test_data_dir_dot_names_the_collection_after_the_folder(tmp_path):
    data = make_data(tmp_path)
    res = r2med("evaluate", "--data-dir", ".", "--out", str(tmp_path / "out"), cwd=data)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "bm25" / "t1" / "metrics.json").exists()
    assert sorted(p.name for p in (tmp_path / "out" / "bm25").iterdir()) == ["t1"]


# -- cache rm ----------------------------------------------------------------------------------------


def test_cache_rm_never_deletes_outside_the_home(tmp_path):
    home = tmp_path / "home"
    (home / "bm25" / "entry1").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    outside = tmp_path / "some"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "keep.txt").write_text("precious")
    env = {"R2MED_HOME": str(home)}
    before = snapshot(tmp_path)
    for args in (
        ["..", "victim"],
        [str(outside / "dir"), "--all"],
        [str(tmp_path), "--all"],
        ["../..", "--all"],
        ["bm25", "../../victim"],
        ["bm25", str(victim)],
    ):
        res = r2med("cache", "rm", *args, env=env)
        one_line_error(res)
    assert snapshot(tmp_path) == before
    assert (home / "bm25" / "entry1").is_dir()


def test_cache_rm_does_not_follow_a_symlinked_entry_or_kind(tmp_path):
    home = tmp_path / "home"
    (home / "bm25").mkdir(parents=True)
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "keep.txt").write_text("precious")
    (home / "bm25" / "link").symlink_to(victim)
    (home / "linked-kind").symlink_to(victim)
    env = {"R2MED_HOME": str(home)}
    res = r2med("cache", "rm", "bm25", "--all", env=env)
    assert res.returncode == 0, res.stderr
    res = r2med("cache", "rm", "linked-kind", "--all", env=env)
    assert res.returncode == 2
    assert (victim / "sub" / "keep.txt").read_text() == "precious"
    assert not (home / "bm25" / "link").is_symlink()  # the link itself (inside the home) is what went


def test_cache_rm_removes_listed_entries(tmp_path):
    home = tmp_path / "home"
    (home / "bm25" / "e1").mkdir(parents=True)
    (home / "bm25" / "e2").mkdir(parents=True)
    (home / "bm25" / "e2" / "x.bin").write_bytes(b"x" * 10)
    res = r2med("cache", "rm", "bm25", "e2", env={"R2MED_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (home / "bm25").iterdir()) == ["e1"]


# -- temp folders of killed writers ------------------------------------------------------------------

KILLED_WRITER = textwrap.dedent("""
    import os, sys
    from r2med.infra.home import atomic_dir
    with atomic_dir(sys.argv[1]) as tmp:
        (tmp / "half.bin").write_bytes(b"x" * 1000)
        print(tmp, flush=True)
        os.kill(os.getpid(), 9)
""")


def _killed_write(target: Path) -> Path:
    res = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], capture_output=True, text=True, timeout=60)
    assert res.returncode == -9, res.stderr
    tmp = Path(res.stdout.strip())
    assert tmp.is_dir() and tmp.parent == target.parent
    return tmp


def test_temp_of_a_killed_writer_is_listed_and_cleaned_on_the_next_write(r2med_home):
    from r2med.infra.home import atomic_dir

    target = r2med_home / "bm25" / "key1"
    left = _killed_write(target)
    res = r2med("cache", "ls", "--json", env={"R2MED_HOME": str(r2med_home)})
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == [left.name] and "interrupted" in rows[0]["detail"]
    other = r2med_home / "bm25" / "key2"  # another key's writer leaves key1's temp alone...
    with atomic_dir(other) as tmp:
        (tmp / "f").write_text("ok")
    assert left.exists()
    with atomic_dir(target) as tmp:  # ... the next write of the same key removes it
        (tmp / "f").write_text("ok")
    assert not left.exists() and (target / "f").read_text() == "ok"
    assert sorted(p.name for p in target.parent.iterdir()) == ["key1", "key2"]


def test_cache_rm_partial_removes_leftover_temps(r2med_home):
    left = _killed_write(r2med_home / "bm25" / "key1")
    res = r2med("cache", "rm", "bm25", "--partial", env={"R2MED_HOME": str(r2med_home)})
    assert res.returncode == 0, res.stderr
    assert not left.exists()


def test_a_live_writers_temp_is_not_removed(tmp_path):
    """A temp folder of a process that is still running (here: this one) is left alone."""
    from r2med.infra.home import atomic_dir

    target = tmp_path / "task"
    with atomic_dir(target) as mine:
        (mine / "f").write_text("a")
        with atomic_dir(tmp_path / "other") as tmp:
            (tmp / "f").write_text("b")
        from r2med.infra.home import clean_stale_temps

        clean_stale_temps(target)
        assert mine.exists()
    assert (target / "f").read_text() == "a"


# -- two processes writing the same task folder ------------------------------------------------------

STRESS_WRITER = textwrap.dedent("""
    import sys
    from r2med.runs.run import write_task_results
    folder, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    print("ready", flush=True)
    sys.stdin.readline()  # both writers start together: the test says go once both have imported r2med
    failures = 0
    for i in range(n):
        try:
            payload = {"task": "t1", "aggregate": {"ndcg_cut_10": 0.5}, "writer": tag, "i": i}
            write_task_results(folder, {"q1": {"a": float(i), "b": 0.5}}, payload, tag=tag)
        except Exception as exc:
            failures += 1
            print(type(exc).__name__, exc, file=sys.stderr)
    print(failures)
""")


@pytest.mark.slow
def test_concurrent_write_task_results_never_fail(tmp_path):
    folder = tmp_path / "out" / "t1"
    n = 1500
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STRESS_WRITER, str(folder), str(n), tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("A", "B")
    ]
    for proc in procs:  # each says ready once it has imported r2med (pytest-timeout bounds a writer that hangs)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n", proc.communicate(timeout=60)[1]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [p.communicate(timeout=600) for p in procs]
    failures = [int(out.strip().splitlines()[-1]) for out, _ in outs]
    assert failures == [0, 0], [err[-2000:] for _, err in outs]
    # the folder holds one writer's complete, consistent result; no temp or old folders are left
    meta = json.loads((folder / "metrics.json").read_text())
    assert meta["writer"] in ("A", "B")
    assert {line.split()[5] for line in (folder / "run.trec").read_text().splitlines()} == {meta["writer"]}
    assert sorted(p.name for p in folder.parent.iterdir()) == ["t1"]


def test_temps_of_an_earlier_version_are_listed_and_removed_by_partial(r2med_home):
    old_tmp = r2med_home / "bm25" / ".key1.ab_cd123.tmp"  # tempfile.mkdtemp's name, without a writer id
    old_swap = r2med_home / "bm25" / ".key1.old.4242"
    for folder in (old_tmp, old_swap):
        (folder / "x").mkdir(parents=True)
    (r2med_home / "bm25" / ".hidden-other").mkdir()
    env = {"R2MED_HOME": str(r2med_home)}
    rows = json.loads(r2med("cache", "ls", "--json", env=env).stdout)
    assert sorted(r["name"] for r in rows) == [old_tmp.name, old_swap.name]
    assert all(r["state"] == "partial" for r in rows)
    res = r2med("cache", "rm", "bm25", "--partial", env=env)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (r2med_home / "bm25").iterdir()) == [".hidden-other"]


def test_cache_ls_counts_temps_left_inside_an_entry(r2med_home):
    _killed_write(r2med_home / "embeddings" / "key9" / "chunks" / "chunk_00001")
    rows = json.loads(r2med("cache", "ls", "--json", env={"R2MED_HOME": str(r2med_home)}).stdout)
    assert [r["name"] for r in rows] == ["key9"]
    assert rows[0]["detail"].endswith("1 temp file(s) left by an interrupted write")


# -- links below the named folders (issue 21, item 1) ------------------------------------------------


def _victim(tmp_path: Path, task: str = "t1") -> Path:
    """A folder outside every named one, shaped like a system folder holding a task folder of the user's."""
    victim = tmp_path / "elsewhere" / "victim"
    (victim / task).mkdir(parents=True)
    (victim / task / "mine.txt").write_text("precious")
    return victim


def test_a_linked_system_folder_under_out_is_refused_not_followed(tmp_path):
    """The issue's case: `ln -s /elsewhere/victim runs/bm25; r2med evaluate -r bm25 -d ... --out runs` deleted
    victim/<task>/mine.txt and wrote r2med's files there."""
    data = make_data(tmp_path)
    victim = _victim(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bm25").symlink_to(victim)
    before = snapshot(tmp_path / "elsewhere")
    res = r2med("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    line = one_line_error(res)
    assert f"{tmp_path / 'runs' / 'bm25'} is a link" in line and "remove the link" in line
    assert snapshot(tmp_path / "elsewhere") == before and sorted(os.listdir(victim)) == ["t1"]


def test_fuse_into_a_linked_system_folder_is_refused(tmp_path):
    data = make_data(tmp_path)
    one = make_run_folder(tmp_path, "one", data)
    two = make_run_folder(tmp_path, "two", data, {"q1": {"b": 3.0, "a": 2.0}})
    victim = _victim(tmp_path)
    (tmp_path / "runs" / "fused").symlink_to(victim)
    before = snapshot(tmp_path / "elsewhere")
    res = r2med("fuse", str(one.parent), str(two.parent), "--name", "fused", "-d", str(data.parent))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]  # after the INFO lines
    assert len(errors) == 1 and "fused is a link" in errors[0], res.stderr
    assert snapshot(tmp_path / "elsewhere") == before


def test_a_linked_task_folder_is_replaced_by_the_real_one_its_target_untouched(tmp_path):
    """A link at the very place a task folder is written: the link itself is replaced (the atomic rename)."""
    data = make_data(tmp_path)
    victim = _victim(tmp_path)
    (tmp_path / "runs" / "bm25").mkdir(parents=True)
    (tmp_path / "runs" / "bm25" / "t1").symlink_to(victim / "t1")
    before = snapshot(tmp_path / "elsewhere")
    res = r2med("evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr
    folder = tmp_path / "runs" / "bm25" / "t1"
    assert not folder.is_symlink() and (folder / "metrics.json").is_file()
    assert snapshot(tmp_path / "elsewhere") == before


def test_a_linked_kind_folder_in_the_home_is_refused(tmp_path):
    """`home/bm25 -> elsewhere` had BM25 indexes written outside the home (where `cache ls` cannot see them)."""
    data = make_data(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "bm25").symlink_to(elsewhere)
    res = r2med(
        "evaluate", "-r", "bm25", "-d", str(data), "--out", str(tmp_path / "runs"), env={"R2MED_HOME": str(home)}
    )
    assert f"{home / 'bm25'} is a link" in one_line_error(res)
    assert os.listdir(elsewhere) == []


def test_a_linked_embedding_entry_or_chunk_folder_is_refused(r2med_home, tmp_path):
    import numpy as np

    from r2med.retrieval.embedding_cache import EmbeddingCache

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = EmbeddingCache({"model": "m"}, "fp", 4, chunk_size=2)
    cache.path.symlink_to(elsewhere)
    with pytest.raises(R2MedError, match="is a link"):
        cache.start()
    cache.path.unlink()
    cache.start()
    cache.chunk_dir.symlink_to(elsewhere)
    with pytest.raises(R2MedError, match="is a link"):
        cache.write_chunk(0, np.ones((2, 3), dtype=np.float32))
    assert os.listdir(elsewhere) == []


def test_a_linked_llm_answer_cache_is_refused(r2med_home, tmp_path):
    from r2med.infra.home import cache_dir
    from r2med.infra.llm import RequestCache

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    link = cache_dir("llm") / "model-abc.jsonl"
    link.symlink_to(outside)
    with pytest.raises(R2MedError, match="is a link"):
        RequestCache(link)
    assert outside.read_text() == ""


def test_links_are_refused_at_any_depth_below_the_root_but_the_root_may_be_one(tmp_path):
    from r2med.infra.containment import ensure_within, linked_part, refuse_links

    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    root = tmp_path / "root-link"
    root.symlink_to(real)  # the folder the user named may itself be a link
    assert ensure_within(root, root / "a" / "b" / "c") == root / "a" / "b" / "c"
    (real / "a" / "deep").symlink_to(tmp_path)
    assert linked_part(root, root / "a" / "deep" / "x" / "y") == root / "a" / "deep"
    with pytest.raises(R2MedError, match="deep is a link"):
        ensure_within(root, root / "a" / "deep" / "x")
    assert linked_part(root, root / "a" / "deep") is None  # the last part: replaced by its writer
    with pytest.raises(R2MedError, match="is a link"):
        refuse_links(root, root / "a" / "deep", include_last=True)


def test_a_linked_shard_folder_in_a_shard_store_is_refused(tmp_path):
    """r2med.scale's shard store (encode --ray --dest): a link below the folder named is refused, its target
    untouched; the named folder itself may be a link."""
    import numpy as np

    from r2med.errors import R2MedError
    from r2med.scale.store import ShardStore

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "mine.npy").write_bytes(b"keep")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "shards").symlink_to(victim)
    store = ShardStore(str(dest))
    with pytest.raises(R2MedError, match="is a link"):
        store.write_shard(0, np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(R2MedError, match="is a link"):
        store.remove_stale_temps()
    assert sorted(p.name for p in victim.iterdir()) == ["mine.npy"]
    named = tmp_path / "named"
    named.symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real").mkdir()
    ShardStore(str(named)).write_shard(0, np.ones((1, 2), dtype=np.float32))
    assert np.array_equal(ShardStore(str(named)).read_shard(0), np.ones((1, 2), dtype=np.float32))


def test_the_one_writer_refuses_a_linked_system_folder_whatever_root_it_is_given(tmp_path):
    """Issue 27, item 1: containment is the writer's, not each command's.  ``import`` passed ``out/<name>`` as the
    root, so the system folder was the "named" folder, allowed to be a link.  Now the one writer of task folders,
    ``finish_task`` / ``reuse`` and ``run_task`` given the system folder as a path, all refuse a linked one; the
    target keeps its files."""
    from r2med.evaluation.metrics import evaluate
    from r2med.jobs.evaluate import run_task
    from r2med.results.folders import finish_task, reuse
    from r2med.spec.steps import EvaluateStep

    data = make_data(tmp_path)
    coll = load_folder(data)
    victim = _victim(tmp_path)
    system = tmp_path / "out" / "imp"
    system.parent.mkdir()
    system.symlink_to(victim)
    before = snapshot(tmp_path / "elsewhere")
    run = {"q1": {"a": 2.0, "b": 1.0}}
    payload = metrics_payload(coll, "imp", {}, evaluate(run, coll.qrels), {})
    attempts = [
        lambda: write_task_results(system / "t1", run, payload, root=system),  # the system folder as the root
        lambda: write_task_results(system / "t1", run, payload),
        lambda: finish_task(coll, "imp", run, {}, system, ["ndcg_cut_10"], False, {}),
        lambda: reuse(system, {}, coll, ["ndcg_cut_10"], False, overwrite=True),
        lambda: run_task(coll, EvaluateStep.of("bm25", cache=False), system),
    ]
    for attempt in attempts:
        with pytest.raises(R2MedError, match=f"{system} is a link"):
            attempt()
    assert snapshot(tmp_path / "elsewhere") == before and sorted(os.listdir(victim / "t1")) == ["mine.txt"]
