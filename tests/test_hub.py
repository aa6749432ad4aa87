"""Hub data end to end: pinned commits, the standard HF cache, offline use, errors and proxies.

Every CLI test runs ``r2med`` in a subprocess against ``HubEmulator`` (tests/hub_server.py), a
hub on 127.0.0.1 that ``huggingface_hub`` reaches through ``HF_ENDPOINT`` -- nothing of
huggingface_hub is mocked.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub_server import EXPANSION, ForwardingProxy, HubEmulator, fill_hf_cache, r2med_task_files
from r2med.errors import R2MedError

# The revisions MTEB pins for its R2MED tasks (MTEB's R2MED task metadata; an independent copy of the registry's data).
MTEB_PINS = {
    "Biology": "8b9fec2db9eda4b5742d03732213fbaee8169556",
    "Bioinformatics": "6021fce366892cbfd7837fa85a4128ea93315e18",
    "Medical-Sciences": "1b48911514c80bf9182222d99752ad75e23b4b47",
    "MedXpertQA-Exam": "b457ea43db9ae5db74c3a3e5be0a213d0f85ac3a",
    "MedQA-Diag": "78b585990279cc01a493f876c1b0cf09557fba57",
    "PMC-Treatment": "53c489a44a3664ba352c07550b72b4525a5968d5",
    "PMC-Clinical": "812829522f7eaa407ef82b96717be85788a50f7e",
    "IIYi-Clinical": "974abbc9bc281c3169180a6aa5d7586cfd2f5877",
}
PIN = MTEB_PINS["Biology"]
NEWER = "1111111111111111111111111111111111111111"  # what `main` points to on the emulator
OTHER = "2222222222222222222222222222222222222222"  # neither pinned nor main
EXTRA_DOC = {"id": "extra/doc_0.txt", "text": "Neanderthals ate plants rich in vitamin C, as teeth calculus shows."}


def with_extra_doc(files: dict[str, bytes]) -> dict[str, bytes]:
    """Another version of the task: one more corpus line (so runs on it can be told apart)."""
    out = dict(files)
    out["corpus.jsonl"] = files["corpus.jsonl"].rstrip(b"\n") + b"\n" + json.dumps(EXTRA_DOC).encode() + b"\n"
    return out


def cli(
    *args: str,
    hub: HubEmulator | None = None,
    cache: Path,
    home: Path,
    offline: bool = False,
    extra_env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    # a real process, not conftest.run_r2med: huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE and
    # HF_HUB_OFFLINE once, at import
    env = {
        k: v
        for k, v in os.environ.items()
        if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "HF_ENDPOINT")
    }
    env.update(
        HF_HUB_CACHE=str(cache),
        HF_HOME=str(cache.parent / "hf_home"),
        R2MED_HOME=str(home),
        HF_HUB_OFFLINE="1" if offline else "0",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )
    if hub is not None:
        env["HF_ENDPOINT"] = hub.url
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "r2med", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def metrics_of(out: Path, label: str = "bm25", task: str = "Biology") -> dict:
    return json.loads((out / label / task / "metrics.json").read_text())


def one_line_error(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


@pytest.fixture
def dirs(tmp_path) -> tuple[Path, Path]:
    """(HF hub cache, r2med home) for CLI runs, both empty."""
    return tmp_path / "hf" / "hub", tmp_path / "r2med_home"


# -- the registry and --revision ------------------------------------------------------------------


def test_tasks_are_pinned_to_mteb_commits():
    from r2med.data.tasks import REVISION_SOURCE, TASKS

    assert {name: spec.revision for name, spec in TASKS.items()} == MTEB_PINS
    assert "mteb" in REVISION_SOURCE.lower() and "7f11654e9aed0c6fa99784641c8880f87ad62930" in REVISION_SOURCE


def test_revision_spec_forms():
    from r2med.data.hub import parse_revision, revision_for

    assert revision_for("Biology") == PIN and revision_for("medqa-diag", None) == MTEB_PINS["MedQA-Diag"]
    assert revision_for("Biology", "main") == "main" and revision_for("PMC-Clinical", OTHER) == OTHER
    spec = f"biology=main, MedQA-Diag={OTHER}"
    assert parse_revision(spec) == (None, {"Biology": "main", "MedQA-Diag": OTHER})
    assert revision_for("Biology", spec) == "main" and revision_for("MedQA-Diag", spec) == OTHER
    assert revision_for("IIYi-Clinical", spec) == MTEB_PINS["IIYi-Clinical"]  # not named: pinned
    for bad, message in (
        ("main,v2", "one revision"),
        ("Biology=", "not TASK=REV"),
        ("Cardiology=main", "unknown task 'Cardiology'"),
    ):
        with pytest.raises(R2MedError, match=message):
            parse_revision(bad)


def test_bad_revision_spec_is_one_line_before_anything_runs(dirs, tmp_path):
    cache, home = dirs
    res = cli("evaluate", "-t", "Biology", "--revision", "Biology=", "-o", str(tmp_path / "o"), cache=cache, home=home)
    assert "not TASK=REV" in one_line_error(res)
    assert not (tmp_path / "o").exists()


# -- downloads through the emulator ---------------------------------------------------------------


@pytest.mark.slow
def test_first_run_downloads_at_the_pinned_commit_and_the_second_makes_no_request(dirs, tmp_path):
    cache, home = dirs
    files = r2med_task_files()
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)
        hub.add("R2MED/Biology", with_extra_doc(files), NEWER, refs=("main",))  # main moved on: not used by default
        res = cli("evaluate", "-r", "bm25", "-t", "Biology", "-o", str(tmp_path / "o"), hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        resolves = [p for p in hub.paths() if "/resolve/" in p]
        assert resolves and all(p.startswith(f"/datasets/R2MED/Biology/resolve/{PIN}/") for p in resolves)
        got = sorted(p.rsplit("/", 1)[1] for p in hub.paths("GET") if "/resolve/" in p)
        assert got == ["corpus.jsonl", "qrels.jsonl", "query.jsonl"]
        metrics = metrics_of(tmp_path / "o")
        assert metrics["revision"] == PIN and metrics["source"] == f"hf://datasets/R2MED/Biology@{PIN}"
        snapshot = cache / "datasets--R2MED--Biology" / "snapshots" / PIN
        assert (snapshot / "corpus.jsonl").read_bytes() == files["corpus.jsonl"]
        assert not (home / "hub").exists()  # the r2med home holds r2med's own artefacts only
        run = (tmp_path / "o" / "bm25" / "Biology" / "run.trec").read_text()
        assert EXTRA_DOC["id"] not in run  # main's corpus was not used

        # expansion files come from the same commit as the data
        before = len(hub.requests)
        res = cli(
            "evaluate",
            "-r",
            "bm25",
            "-t",
            "Biology",
            "-e",
            "hyde:qwen_7b",
            "-o",
            str(tmp_path / "o"),
            hub=hub,
            cache=cache,
            home=home,
        )
        assert res.returncode == 0, res.stderr
        new = [p for p in hub.paths()[before:] if "/resolve/" in p]
        assert new and all(p == f"/datasets/R2MED/Biology/resolve/{PIN}/{EXPANSION}" for p in new)
        assert (snapshot / EXPANSION).read_bytes() == files[EXPANSION]

        # everything is cached at a commit now: no request at all
        before = len(hub.requests)
        for extra in ((), ("-e", "hyde:qwen_7b")):
            res = cli(
                "evaluate",
                "-r",
                "bm25",
                "-t",
                "Biology",
                *extra,
                "--overwrite",
                "-o",
                str(tmp_path / "o2"),
                hub=hub,
                cache=cache,
                home=home,
            )
            assert res.returncode == 0, res.stderr
        assert hub.requests[before:] == []
        assert metrics_of(tmp_path / "o2")["revision"] == PIN

    # the hub is gone: the cache the first run filled serves offline, from the CLI
    res = cli(
        "evaluate",
        "-r",
        "bm25",
        "-t",
        "Biology",
        "-e",
        "hyde:qwen_7b",
        "-o",
        str(tmp_path / "o3"),
        cache=cache,
        home=home,
        offline=True,
    )
    assert res.returncode == 0, res.stderr
    assert metrics_of(tmp_path / "o3", "bm25+hyde-qwen-7b")["revision"] == PIN


def test_main_and_other_commits_are_honoured(dirs, tmp_path):
    cache, home = dirs
    files = r2med_task_files()
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)
        hub.add("R2MED/Biology", with_extra_doc(files), NEWER, refs=("main",))
        hub.add("R2MED/Biology", with_extra_doc(files), OTHER)
        res = cli(
            "evaluate",
            "-t",
            "Biology",
            "--revision",
            "main",
            "-o",
            str(tmp_path / "main"),
            hub=hub,
            cache=cache,
            home=home,
        )
        assert res.returncode == 0, res.stderr
        # main is resolved once (one metadata request, for query.jsonl), before any download; every file is
        # then fetched at the commit it resolved to
        assert [(m, p) for m, p in hub.requests if "/resolve/main/" in p] == [
            ("HEAD", "/datasets/R2MED/Biology/resolve/main/query.jsonl")
        ]
        got = sorted(p.rsplit("/", 1)[1] for p in hub.paths("GET") if "/resolve/" in p)
        assert got == ["corpus.jsonl", "qrels.jsonl", "query.jsonl"]
        assert all(f"/resolve/{NEWER}/" in p for p in hub.paths("GET") if "/resolve/" in p)
        metrics = metrics_of(tmp_path / "main")
        assert metrics["revision"] == NEWER and metrics["source"].endswith(f"@{NEWER}")
        assert EXTRA_DOC["id"] in (tmp_path / "main" / "bm25" / "Biology" / "run.trec").read_text()

        before = len(hub.requests)
        res = cli(
            "evaluate",
            "-t",
            "Biology",
            "--revision",
            f"Biology={OTHER}",
            "-o",
            str(tmp_path / "other"),
            hub=hub,
            cache=cache,
            home=home,
        )
        assert res.returncode == 0, res.stderr
        resolves = [p for p in hub.paths()[before:] if "/resolve/" in p]
        assert resolves and all(f"/resolve/{OTHER}/" in p for p in resolves)
        assert metrics_of(tmp_path / "other")["revision"] == OTHER
        assert metrics_of(tmp_path / "other")["dataset_fingerprint"] == metrics["dataset_fingerprint"]

    # offline, `main` is read from the cache's refs/main
    res = cli(
        "evaluate",
        "-t",
        "Biology",
        "--revision",
        "main",
        "-o",
        str(tmp_path / "offline"),
        cache=cache,
        home=home,
        offline=True,
    )
    assert res.returncode == 0, res.stderr
    assert metrics_of(tmp_path / "offline")["revision"] == NEWER


def test_hub_errors_are_one_line_with_exit_2(dirs, tmp_path):
    cache, home = dirs
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", r2med_task_files(), PIN)
        hub.add("R2MED/Bioinformatics", r2med_task_files(), MTEB_PINS["Bioinformatics"], gated=True)
        out = tmp_path / "o"
        cases = [
            (
                ("-t", "Biology", "-e", "hyde:gpt4"),  # the file is not in the repo: 404 EntryNotFound
                f"R2MED/Biology has no file 'hyde/gpt4/query_with_hydoc.jsonl' at revision {PIN} (HTTP 404)",
            ),
            (
                ("-t", "Biology", "--revision", f"Biology={OTHER}"),  # 404 RevisionNotFound
                f"R2MED/Biology has no revision '{OTHER}'",
            ),
            (
                (
                    "-t",
                    "MedQA-Diag",
                ),
                "repository R2MED/MedQA-Diag not found",
            ),  # not served: RepoNotFound
            (
                (
                    "-t",
                    "Bioinformatics",
                ),
                "access to R2MED/Bioinformatics was denied (HTTP 403)",
            ),  # gated
        ]
        for args, expected in cases:
            start = time.monotonic()
            res = cli("evaluate", *args, "-o", str(out), hub=hub, cache=cache, home=home)
            assert expected in one_line_error(res), args
            assert time.monotonic() - start < 30
        assert not out.exists() or not any(out.rglob("metrics.json"))


def test_an_http_proxy_in_between_is_honoured(dirs, tmp_path):
    cache, home = dirs
    with HubEmulator() as hub, ForwardingProxy() as proxy:
        hub.add("R2MED/Biology", r2med_task_files(), PIN)
        env = {"HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url}
        res = cli(
            "evaluate",
            "-t",
            "Biology",
            "-e",
            "hyde:qwen_7b",
            "-o",
            str(tmp_path / "o"),
            hub=hub,
            cache=cache,
            home=home,
            extra_env=env,
        )
        assert res.returncode == 0, res.stderr
        forwarded = [url for _, url in proxy.seen]
        assert forwarded == [hub.url + path for path in hub.paths()]  # every request went through the proxy
        assert f"{hub.url}/datasets/R2MED/Biology/resolve/{PIN}/corpus.jsonl" in forwarded
        assert f"{hub.url}/datasets/R2MED/Biology/resolve/{PIN}/{EXPANSION}" in forwarded
        # a dead proxy is not bypassed: one line, the hub never hears of it
        dead = {"HTTP_PROXY": f"http://127.0.0.1:{free_port()}", "HTTPS_PROXY": f"http://127.0.0.1:{free_port()}"}
        before = len(hub.requests)
        res = cli(
            "evaluate",
            "-t",
            "Biology",
            "--revision",
            "main",
            "-o",
            str(tmp_path / "dead"),
            hub=hub,
            cache=tmp_path / "empty" / "hub",
            home=home,
            extra_env=dead,
        )
        assert "hub:" in one_line_error(res) and len(hub.requests) == before


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- offline and unreachable ----------------------------------------------------------------------


def test_offline_prefilled_standard_cache_laid_out_by_hand(dirs, tmp_path):
    """As `hf download R2MED/Biology --repo-type dataset` leaves it on an offline node."""
    cache, home = dirs
    files = r2med_task_files()
    fill_hf_cache(cache, "R2MED/Biology", files, PIN)
    res = cli(
        "evaluate", "-r", "bm25", "-t", "Biology", "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True
    )
    assert res.returncode == 0, res.stderr
    metrics = metrics_of(tmp_path / "o")
    assert metrics["revision"] == PIN and len(metrics["per_query"]) >= 1
    # another task is not there: one line naming offline mode and the hf download command
    res = cli("evaluate", "-t", "PMC-Clinical", "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True)
    line = one_line_error(res)
    assert (
        "offline mode is set" in line
        and f"hf download R2MED/PMC-Clinical --repo-type dataset --revision {MTEB_PINS['PMC-Clinical']}" in line
    )


def test_in_process_loading_from_the_standard_cache(hf_cache):
    from r2med.data import load_task
    from r2med.data.hub import download_expansion

    files = r2med_task_files()
    fill_hf_cache(hf_cache, "R2MED/Biology", files, PIN, refs=())
    coll = load_task("biology")  # case-insensitive; hub; pinned commit; offline
    assert coll.name == "Biology" and coll.revision == PIN and coll.source == f"hf://datasets/R2MED/Biology@{PIN}"
    assert len(coll.corpus) == files["corpus.jsonl"].count(b"\n")
    assert download_expansion("Biology", "hyde", "qwen_7b").parts[-4:] == (
        PIN,
        "hyde",
        "qwen-7b",
        "query_with_hydoc.jsonl",
    )
    with pytest.raises(R2MedError, match="offline mode is set"):
        load_task("Biology", revision="main")  # no refs/main in this cache


def test_legacy_r2med_home_hub_gets_a_hint(r2med_home):
    from r2med.data import load_task

    fill_hf_cache(r2med_home / "hub", "R2MED/Biology", r2med_task_files(), PIN)
    with pytest.raises(R2MedError, match=f"HF_HUB_CACHE={r2med_home / 'hub'} reuses that copy"):
        load_task("Biology")


@pytest.mark.slow
def test_unreachable_hub_fails_within_seconds(dirs, tmp_path):
    cache, home = dirs
    # nothing listens: refused at once
    start = time.monotonic()
    res = cli(
        "evaluate",
        "-t",
        "Biology",
        "-o",
        str(tmp_path / "o"),
        cache=cache,
        home=home,
        extra_env={"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"},
    )
    refused = time.monotonic() - start
    assert "cannot connect to http://127.0.0.1" in one_line_error(res)
    # a server that accepts the connection and never answers: one metadata request, cut after the probe timeout
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        start = time.monotonic()
        res = cli(
            "evaluate",
            "-t",
            "Biology",
            "-o",
            str(tmp_path / "o"),
            cache=cache,
            home=home,
            extra_env={"HF_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}", "HF_HUB_ETAG_TIMEOUT": "1"},
        )
        hanging = time.monotonic() - start
    assert "no answer from" in one_line_error(res)
    # hf_hub_download alone retries for ~23 s (refused) and minutes (hanging); r2med gives up at once
    assert refused < 15 and hanging < 20, (refused, hanging)


def test_demo_falls_back_only_when_the_hub_cannot_be_reached(dirs, tmp_path):
    cache, home = dirs
    res = cli(
        "demo",
        "--out",
        str(tmp_path / "d1"),
        cache=cache,
        home=home,
        extra_env={"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"},
    )
    assert res.returncode == 0, res.stderr
    assert "cannot be reached" in res.stdout and "cannot connect to http://127.0.0.1" in res.stdout
    assert (tmp_path / "d1" / "bm25" / "demo" / "metrics.json").exists()
    with HubEmulator() as hub:
        # the hub answers, but the repo is missing: an error, not the demo
        res = cli("demo", "--out", str(tmp_path / "d2"), hub=hub, cache=cache, home=home)
        assert "repository R2MED/Biology not found" in one_line_error(res)
        assert not (tmp_path / "d2" / "bm25" / "demo").exists()
        # all 8 tasks served at their pinned commits: the real pipeline, beside the published figures
        for task, commit in MTEB_PINS.items():
            hub.add(f"R2MED/{task}", r2med_task_files(), commit)
        res = cli("demo", "--out", str(tmp_path / "d3"), hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        assert "cannot be reached" not in res.stdout and "15.13" in res.stdout  # the paper's BM25 average
        for task, commit in MTEB_PINS.items():
            assert metrics_of(tmp_path / "d3", task=task)["revision"] == commit


# -- integrity of cached files (issue 21, item 3) ----------------------------------------------------


def _lower_grades(data: bytes, count: int = 10) -> bytes:
    """The issue's edit: ten relevance grades 1 -> 0 in qrels.jsonl (the same length)."""
    lines = data.decode().splitlines(keepends=True)
    changed = 0
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["score"] >= 1 and changed < count:
            lines[i] = line.replace(f'"score": {record["score"]}', '"score": 0')
            changed += 1
    assert changed
    return "".join(lines).encode()


def _zero_tail(data: bytes) -> bytes:
    """A truncated download padded to the right length: the last quarter zeroed."""
    keep = len(data) * 3 // 4
    return data[:keep] + bytes(len(data) - keep)


def test_emulator_names_files_by_their_git_blob_sha1(tmp_path):
    """The ETag the emulator sends (and huggingface_hub names blobs by) is git's own blob id."""
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    files = r2med_task_files()
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)
        status, headers, _ = hub._answer("HEAD", f"/datasets/R2MED/Biology/resolve/{PIN}/qrels.jsonl")
    (tmp_path / "q").write_bytes(files["qrels.jsonl"])
    git = subprocess.run(["git", "hash-object", str(tmp_path / "q")], capture_output=True, text=True, check=True)
    assert status == 200 and headers["ETag"] == f'"{git.stdout.strip()}"'


@pytest.mark.parametrize("damage", [_lower_grades, _zero_tail])
def test_a_damaged_cached_file_is_refused_offline_in_one_line(hf_cache, damage):
    from r2med.data import load_task
    from r2med.data.hub_integrity import VERIFIED_FILE

    files = r2med_task_files()
    snap = fill_hf_cache(hf_cache, "R2MED/Biology", files, PIN)
    sound = load_task("Biology")
    qrels = snap / "qrels.jsonl"
    qrels.write_bytes(damage(files["qrels.jsonl"]))  # through the link: the blob itself changes
    assert qrels.stat().st_size == len(files["qrels.jsonl"])
    with pytest.raises(R2MedError) as caught:
        load_task("Biology")
    message = str(caught.value)
    assert message.startswith(f"{qrels}: damaged in the Hugging Face cache") and "\n" not in message
    assert "--force-download" in message
    qrels.write_bytes(files["qrels.jsonl"])  # repaired: loads as before
    assert load_task("Biology").qrels == sound.qrels
    assert (Path(os.environ["R2MED_HOME"]) / VERIFIED_FILE).is_file()


def test_verified_files_are_not_hashed_again_until_they_change(hf_cache, monkeypatch):
    from r2med.data import hub_integrity, load_task

    snap = fill_hf_cache(hf_cache, "R2MED/Biology", r2med_task_files(), PIN)
    monkeypatch.setattr(hub_integrity, "RACY_NS", 0)  # blobs just written count as settled (racy rule: below)
    hashed: list[str] = []
    real = hub_integrity.content_hash
    monkeypatch.setattr(
        hub_integrity, "content_hash", lambda path, algorithm: hashed.append(Path(path).name) or real(path, algorithm)
    )
    load_task("Biology")
    assert len(hashed) == 3  # the three task files, once each
    load_task("Biology")
    assert len(hashed) == 3
    blob = (snap / "query.jsonl").resolve()
    os.utime(blob, ns=(blob.stat().st_atime_ns, blob.stat().st_mtime_ns + 1_000_000_000))
    load_task("Biology")
    assert hashed[3:] == [blob.name]


def test_a_cache_without_links_is_used_as_it_is(hf_cache):
    """Without blobs there is no hash to check against: the files are read (the docs say so)."""
    from r2med.data import load_task

    fill_hf_cache(hf_cache, "R2MED/Biology", r2med_task_files(), PIN, links=False)
    assert load_task("Biology").revision == PIN


def test_a_damaged_download_is_fetched_again_where_the_hub_answers(dirs, tmp_path):
    """The issue's case: after a download, ten grades 1 -> 0 in the cached qrels.jsonl gave another score,
    recorded as the pinned commit.  Online it is downloaded again (same score as before), offline refused."""
    cache, home = dirs
    files = r2med_task_files()
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)
        first = cli(
            "evaluate", "-r", "bm25", "-t", "Biology", "-o", str(tmp_path / "a"), hub=hub, cache=cache, home=home
        )
        assert first.returncode == 0, first.stderr
        qrels = next(cache.glob("datasets--R2MED--Biology/snapshots/*/qrels.jsonl"))
        qrels.write_bytes(_lower_grades(files["qrels.jsonl"]))
        offline = cli(
            "evaluate", "-r", "bm25", "-t", "Biology", "-o", str(tmp_path / "b"), cache=cache, home=home, offline=True
        )
        assert f"{qrels}: damaged in the Hugging Face cache" in one_line_error(offline)
        assert not (tmp_path / "b" / "bm25" / "Biology").exists()
        gets = len(hub.paths("GET"))
        again = cli(
            "evaluate", "-r", "bm25", "-t", "Biology", "-o", str(tmp_path / "c"), hub=hub, cache=cache, home=home
        )
        assert again.returncode == 0, again.stderr
        assert "downloading it again" in again.stderr
        assert hub.paths("GET")[gets:] == [f"/datasets/R2MED/Biology/resolve/{PIN}/qrels.jsonl"]
    assert qrels.read_bytes() == files["qrels.jsonl"]
    assert metrics_of(tmp_path / "c")["aggregate"] == metrics_of(tmp_path / "a")["aggregate"]


# -- every file a command needs, found at its revision before any download (issue 29) -------------------------

SEARCH_O1 = "search-o1/qwen3-32b/query_with_hydoc.jsonl"  # a card config (r2med_hub_configs.json) of later papers


def with_search_o1(files: dict[str, bytes]) -> dict[str, bytes]:
    """The task with the search-o1 qwen3_32b expansion file too (a commit made after the config was added)."""
    return {**files, SEARCH_O1: files[EXPANSION]}


def downloads(hub: HubEmulator) -> list[str]:
    return [p for p in hub.paths("GET") if "/resolve/" in p]


def test_a_file_the_pin_lacks_but_the_head_has_is_refused_before_any_download(dirs, tmp_path):
    """The issue's case: the corpus and judgments were downloaded, then the expansion was a 404 with no word on
    what to do.  Now nothing is downloaded, and the line names the head's commit and the option that uses it."""
    cache, home = dirs
    files = r2med_task_files()
    out = tmp_path / "o"
    args = ("evaluate", "-r", "bm25", "-t", "Biology", "-e", "search-o1:qwen3-32b", "-o", str(out))
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)  # the pinned commit: no search-o1 files
        hub.add("R2MED/Biology", with_search_o1(files), NEWER, refs=("main",))
        line = one_line_error(cli(*args, hub=hub, cache=cache, home=home))
        assert line.startswith(
            f"error: hub: R2MED/Biology has no file '{SEARCH_O1}' at revision {PIN} (HTTP 404), the commit r2med "
            f"pins for Biology (MTEB's); the repository's head (main, commit {NEWER}) has all 4 files: "
            "--revision Biology=main loads Biology from that commit"
        ), line
        assert f"results made so record commit {NEWER}" in line and "published query and document counts" in line
        assert line.endswith("; nothing was downloaded"), line
        assert downloads(hub) == [] and hub.body_bytes == 0  # measured: 0 bytes before the refusal
        assert not any(p.is_file() for p in cache.rglob("*")) and not list(out.rglob("metrics.json"))

        # the way forward the line gives: every file from the head's commit, recorded so
        res = cli(*args, "--revision", "Biology=main", hub=hub, cache=cache, home=home)
        assert res.returncode == 0, res.stderr
        metrics = metrics_of(out, "bm25+search-o1-qwen3-32b")
        assert metrics["revision"] == NEWER and metrics["source"] == f"hf://datasets/R2MED/Biology@{NEWER}"
        got = downloads(hub)
        assert sorted(p.split(f"/resolve/{NEWER}/", 1)[1] for p in got) == sorted([*files][:3] + [SEARCH_O1])


def test_a_file_missing_everywhere_is_refused_before_any_download(dirs, tmp_path):
    cache, home = dirs
    files = r2med_task_files()
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)
        hub.add("R2MED/Biology", with_extra_doc(files), NEWER, refs=("main",))
        for revision in ((), ("--revision", "main")):
            res = cli(
                "evaluate", "-t", "Biology", "-e", "search-o1:qwen3-32b", *revision, "-o", str(tmp_path / "o"),
                hub=hub, cache=cache, home=home,
            )  # fmt: skip
            line = one_line_error(res)
            at = (
                f"revision {PIN} (HTTP 404), the commit r2med pins"
                if not revision
                else f"revision main (commit {NEWER})"
            )
            assert f"R2MED/Biology has no file '{SEARCH_O1}' at {at}" in line, line
            assert (f"; nor has the repository's head (main, commit {NEWER})" in line) == (not revision), line
            assert "--revision" not in line
            assert "generate the expansions with `r2med expand`, or pass --expansion-file" in line
        assert downloads(hub) == [] and hub.body_bytes == 0


def test_every_task_is_checked_before_the_first_is_downloaded(dirs, tmp_path):
    """Biology has every file at its pin; the expansion lacks at Bioinformatics' pin (its head has it): nothing
    of Biology is downloaded either, and the option given moves Bioinformatics only."""
    cache, home = dirs
    files = r2med_task_files()
    other = MTEB_PINS["Bioinformatics"]
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", with_search_o1(files), PIN)
        hub.add("R2MED/Bioinformatics", files, other)
        hub.add("R2MED/Bioinformatics", with_search_o1(files), NEWER, refs=("main",))
        res = cli(
            "evaluate", "-t", "Biology,Bioinformatics", "-e", "search-o1:qwen3-32b", "-o", str(tmp_path / "o"),
            hub=hub, cache=cache, home=home,
        )  # fmt: skip
        line = one_line_error(res)
        assert f"R2MED/Bioinformatics has no file '{SEARCH_O1}' at revision {other}" in line, line
        assert "--revision Bioinformatics=main loads Bioinformatics from that commit" in line
        assert downloads(hub) == [] and hub.body_bytes == 0
        # two tasks lacking it: one line, one option for both
        hub.add("R2MED/Biology", files, PIN)
        hub.add("R2MED/Biology", with_search_o1(files), NEWER, refs=("main",))
        res = cli(
            "evaluate", "-t", "Biology,Bioinformatics", "-e", "search-o1:qwen3-32b", "--revision",
            f"Bioinformatics={other}", "-o", str(tmp_path / "o"), hub=hub, cache=cache, home=home,
        )  # fmt: skip
        line = one_line_error(res)
        assert line.startswith(f"error: hub: R2MED/Biology has no file '{SEARCH_O1}' at revision {PIN}"), line
        assert "; Bioinformatics lacks files at its revision too" in line
        assert "--revision Biology=main,Bioinformatics=main loads Biology, Bioinformatics from those commits" in line
        assert f"the commit each came from (Biology {NEWER[:12]}, Bioinformatics {NEWER[:12]})" in line
        assert downloads(hub) == [] and hub.body_bytes == 0


def test_offline_with_a_cache_that_holds_the_head_only(dirs, tmp_path):
    """`hf download R2MED/Biology --repo-type dataset` (no --revision) fills the cache at main: offline, the
    pinned commit is not there, and the line says the cache holds main and how to use it."""
    cache, home = dirs
    fill_hf_cache(cache, "R2MED/Biology", with_search_o1(r2med_task_files()), NEWER, refs=("main",))
    for extra in ((), ("-e", "search-o1:qwen3-32b")):
        res = cli("evaluate", "-t", "Biology", *extra, "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True)
        line = one_line_error(res)
        count = 4 if extra else 3
        assert line.startswith(
            f"error: hub: offline mode is set (HF_HUB_OFFLINE), and R2MED/Biology 'query.jsonl', 'corpus.jsonl', "
            f"'qrels.jsonl'{f', {SEARCH_O1!r}' if extra else ''} @ {PIN}, the commit r2med pins for Biology (MTEB's), "
            f"are not in the Hugging Face cache ({cache}); the cache holds all {count} files at main (commit {NEWER}): "
            "--revision Biology=main loads Biology from that cached commit"
        ), line
        assert f"results made so record commit {NEWER}" in line
        assert f"; or fill the cache first (hf download R2MED/Biology --repo-type dataset --revision {PIN})" in line
        res = cli(
            "evaluate", "-t", "Biology", *extra, "--revision", "Biology=main", "-o", str(tmp_path / "o"),
            cache=cache, home=home, offline=True,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        label = "bm25+search-o1-qwen3-32b" if extra else "bm25"
        assert metrics_of(tmp_path / "o", label)["revision"] == NEWER
    # the head does not hold the expansion either: no --revision to offer, the fill command instead
    res = cli(
        "evaluate", "-t", "Biology", "-e", "hyde:gpt4", "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True
    )
    line = one_line_error(res)
    assert "--revision Biology=main" not in line and "fill the cache first (hf download R2MED/Biology" in line


def test_an_expansion_recorded_at_a_commit_loads_its_task_there_without_options(hf_cache, monkeypatch, tmp_path):
    """The mechanism for an expansion whose commit is known (none is today: the data file says why): the task
    loads at that commit, data and expansion alike, and the results record it."""
    from conftest import run_r2med
    from r2med import protocol
    from r2med.data import check_hub, hub, resolve
    from r2med.expansion.precomputed import ExpansionQueries

    holding = "3333333333333333333333333333333333333333"
    files = r2med_task_files()
    fill_hf_cache(hf_cache, "R2MED/Biology", files, PIN, refs=())
    fill_hf_cache(hf_cache, "R2MED/Biology", with_search_o1(files), holding, refs=())
    data = protocol.expansion_commits()
    entry = {"commits": {"Biology": holding}, "status": "known", "source": "a test"}
    patched = {**data, "expansions": {**data["expansions"], "search-o1:qwen3-32b": entry}}
    monkeypatch.setattr(hub, "expansion_commits", lambda: patched)  # where the hub module reads it
    reader = ExpansionQueries("search-o1", "qwen3-32b")
    [ref] = check_hub(resolve("Biology"), [reader])
    assert ref.revision == holding
    [plain] = check_hub(resolve("Biology"))  # without that expansion: the pinned commit
    assert plain.revision == PIN
    with pytest.raises(R2MedError, match=f"{SEARCH_O1}' @ {PIN} is not in the Hugging Face cache") as caught:
        check_hub(resolve("Biology", revision=f"Biology={PIN}"), [reader])  # --revision wins
    assert "r2med pins" not in str(caught.value) and "recorded as holding" not in str(caught.value)
    res = run_r2med("evaluate", "-t", "Biology", "-e", "search-o1:qwen3-32b", "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    assert metrics_of(tmp_path / "o", "bm25+search-o1-qwen3-32b")["revision"] == holding


def test_the_expansion_commit_record_is_checked_and_holds_only_sourced_commits(monkeypatch):
    from r2med import protocol
    from r2med.protocol import hub_configs

    data = protocol.expansion_commits()
    card = {f"{m}:{s.replace('_', '-')}" for m, splits in hub_configs()["configs"].items() for s in splits}
    assert set(data["expansions"]) == card - {"corpus:corpus", "query:query", "qrels:qrels"}
    # what could be established from the card, R2MED's repository and MTEB: no commit (see its _findings)
    assert all(e["commits"] == {} and e["status"] == "unknown" for e in data["expansions"].values())
    for bad in (
        {"hyde:gpt4": {"commits": {"Biology": "8b9fec2"}, "source": "x"}},  # not a full commit
        {"hyde:gpt4": {"commits": {"Cardiology": PIN}, "source": "x"}},  # not a task
        {"hyde:gpt5": {"commits": {}}},  # not a card config
        {"hyde:gpt4": {"commits": {"Biology": PIN}}},  # no source
    ):
        text = json.dumps({**data, "expansions": bad})
        monkeypatch.setattr(protocol, "_read", lambda name, text=text: text)
        protocol.expansion_commits.cache_clear()
        with pytest.raises(ValueError, match="malformed"):
            protocol.expansion_commits()
    protocol.expansion_commits.cache_clear()


# -- the verified-blob memo trusts nothing touch can set, nor itself (issue 27, items 6 and 11) ----------------


def _count_hashes(monkeypatch) -> list[str]:
    from r2med.data import hub_integrity

    hashed: list[str] = []
    real = hub_integrity.content_hash
    monkeypatch.setattr(
        hub_integrity, "content_hash", lambda path, algorithm: hashed.append(Path(path).name) or real(path, algorithm)
    )
    return hashed


def _edit_in_place(blob: Path, data: bytes) -> None:
    """The blob's bytes changed through the same inode, its times put back (``touch -r`` of a copy)."""
    info = blob.stat()
    blob.chmod(0o644)
    with open(blob, "r+b") as handle:
        handle.write(data)
    os.utime(blob, ns=(info.st_atime_ns, info.st_mtime_ns))


def _replace_with_copy(blob: Path, data: bytes) -> None:
    """Another file put in the blob's place (a new inode), its times those of the original."""
    info = blob.stat()
    fresh = blob.with_name(blob.name + ".new")
    fresh.write_bytes(data)
    os.utime(fresh, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(fresh, blob)


@pytest.mark.parametrize("edit", [_edit_in_place, _replace_with_copy])
def test_a_blob_changed_with_its_dates_restored_is_hashed_again(hf_cache, monkeypatch, edit):
    """The issue's case: grades edited in a cached qrels.jsonl, its mtime restored, gave another score recorded as
    the pinned commit (64.06 for 64.71).  Size and mtime match; the change time (or the inode) does not."""
    from r2med.data import hub_integrity, load_task

    monkeypatch.setattr(hub_integrity, "RACY_NS", 0)  # only what the blob's stat says protects it here
    files = r2med_task_files()
    snap = fill_hf_cache(hf_cache, "R2MED/Biology", files, PIN)
    sound = load_task("Biology")
    blob = (snap / "qrels.jsonl").resolve()
    before = blob.stat()
    time.sleep(0.05)  # past the filesystem's timestamp tick (the racy rule covers less: its own test)
    edit(blob, _lower_grades(files["qrels.jsonl"]))
    after = blob.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(R2MedError, match="damaged in the Hugging Face cache"):
        load_task("Biology")
    edit(blob, files["qrels.jsonl"])
    assert load_task("Biology").qrels == sound.qrels


def _forged_memo(home: Path, blob: Path) -> None:
    """A memo vouching for ``blob`` as it is now, in both layouts r2med has written (path -> size, mtime before;
    format 2 now, with every stat field and a seal copied from a real entry or made up)."""
    path = home / "hub-verified.json"
    try:
        real = json.loads(path.read_text())
    except (OSError, ValueError):
        real = {}
    info = blob.stat()
    stats = {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "hash": blob.name}
    sealed = next(iter(real.get("blobs", {}).values()), {"mac": "0" * 64})
    forged = {
        **stats,
        "ctime_ns": info.st_ctime_ns,
        "ino": info.st_ino,
        "dev": info.st_dev,
        "checked_ns": info.st_ctime_ns + 10**10,
        "mac": sealed["mac"],
    }
    path.write_text(json.dumps({str(blob): stats, "format": 2, "blobs": {**real.get("blobs", {}), str(blob): forged}}))


def test_an_edited_memo_vouches_for_no_blob_it_did_not_hash(hf_cache, r2med_home, monkeypatch):
    from r2med.data import hub_integrity, load_task

    monkeypatch.setattr(hub_integrity, "RACY_NS", 0)
    files = r2med_task_files()
    snap = fill_hf_cache(hf_cache, "R2MED/Biology", files, PIN)
    load_task("Biology")  # a real memo, sealed
    blob = (snap / "qrels.jsonl").resolve()
    _edit_in_place(blob, _lower_grades(files["qrels.jsonl"]))
    _forged_memo(r2med_home, blob)  # the memo edited to match the edited blob
    with pytest.raises(R2MedError, match="damaged in the Hugging Face cache"):
        load_task("Biology")
    # a blob damaged before r2med ever saw it, and a memo written by hand for it
    other = tmp_cache = hf_cache.parent / "other"
    snap2 = fill_hf_cache(tmp_cache, "R2MED/Biology", files, PIN)
    damaged = (snap2 / "qrels.jsonl").resolve()
    _edit_in_place(damaged, _lower_grades(files["qrels.jsonl"]))
    _forged_memo(r2med_home, damaged)
    monkeypatch.setattr(__import__("huggingface_hub").constants, "HF_HUB_CACHE", str(other))
    with pytest.raises(R2MedError, match="damaged in the Hugging Face cache"):
        load_task("Biology")


def test_the_memo_saves_hashing_only_once_a_blob_is_settled(hf_cache, r2med_home, monkeypatch):
    """As git's racily-clean entries: a blob changed within RACY_NS of its check is checked again next time, so an
    edit within one timestamp tick of the download cannot hide; once settled, it is not hashed again."""
    from r2med.data import hub_integrity, load_task

    snap = fill_hf_cache(hf_cache, "R2MED/Biology", r2med_task_files(), PIN)
    ctime = max((snap / f).resolve().stat().st_ctime_ns for f in ("query.jsonl", "corpus.jsonl", "qrels.jsonl"))
    hashed = _count_hashes(monkeypatch)
    clock = [ctime + hub_integrity.RACY_NS // 2]  # checked soon after the download
    monkeypatch.setattr(hub_integrity, "_now_ns", lambda: clock[0])
    load_task("Biology")
    load_task("Biology")
    assert len(hashed) == 6  # racy: checked again
    clock[0] = ctime + 2 * hub_integrity.RACY_NS
    load_task("Biology")
    assert len(hashed) == 9  # checked once more, now settled
    load_task("Biology")
    assert len(hashed) == 9
    (r2med_home / hub_integrity.KEY_FILE).unlink()  # no key: nothing in the memo is trusted
    load_task("Biology")
    assert len(hashed) == 12 and len((r2med_home / hub_integrity.KEY_FILE).read_bytes()) == 32
    assert (r2med_home / hub_integrity.KEY_FILE).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "damage",
    [
        "[" * 200_000 + "]" * 200_000,  # the issue's: RecursionError on every hub load
        '{"format": 2, "blobs": ' * 50_000 + "{}" + "}" * 50_000,
        "{not json",
        '{"format": 2, "blobs": [1, 2]}',
        "\xff\xfe",
    ],
    ids=["nested-200000", "nested-objects", "malformed", "wrong-shape", "not-utf8"],
)
def test_a_damaged_memo_is_discarded_with_a_warning_and_rebuilt(hf_cache, r2med_home, caplog, damage):
    from r2med.data import load_task
    from r2med.data.hub_integrity import MEMO_FORMAT, VERIFIED_FILE

    fill_hf_cache(hf_cache, "R2MED/Biology", r2med_task_files(), PIN)
    memo = r2med_home / VERIFIED_FILE
    memo.write_bytes(damage.encode("utf-8", "surrogateescape") if damage != "\xff\xfe" else b"\xff\xfe")
    with caplog.at_level("WARNING"):
        assert load_task("Biology").revision == PIN
    assert any(f"{memo} is damaged" in r.getMessage() and "discarded" in r.getMessage() for r in caplog.records)
    rebuilt = json.loads(memo.read_text())
    assert rebuilt["format"] == MEMO_FORMAT and len(rebuilt["blobs"]) == 3


def test_a_deeply_nested_memo_is_no_traceback_from_the_cli(dirs, tmp_path):
    cache, home = dirs
    fill_hf_cache(cache, "R2MED/Biology", r2med_task_files(), PIN)
    home.mkdir(parents=True)
    (home / "hub-verified.json").write_text("[" * 200_000 + "]" * 200_000)
    res = cli("evaluate", "-t", "Biology", "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "hub-verified.json is damaged (nested too deeply); discarded" in res.stderr


def test_a_memo_or_key_that_is_no_regular_file_never_hangs(dirs, tmp_path):
    """A memo linked to /dev/zero (endless bytes) and a key that is a FIFO (a read blocks): each is set aside,
    the files are hashed, the command finishes (a hang would hit the subprocess timeout)."""
    cache, home = dirs
    fill_hf_cache(cache, "R2MED/Biology", r2med_task_files(), PIN)
    home.mkdir(parents=True)
    (home / "hub-verified.json").symlink_to("/dev/zero")
    os.mkfifo(home / "hub-verified.key")
    res = cli("evaluate", "-t", "Biology", "-o", str(tmp_path / "o"), cache=cache, home=home, offline=True, timeout=60)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "hub-verified.json is damaged" in res.stderr
    assert (home / "hub-verified.json").is_file() and not (home / "hub-verified.json").is_symlink()
    assert Path("/dev/zero").exists()  # the link was removed, not its target


def test_reproduce_checks_every_targets_files_before_the_first_download(dirs, tmp_path):
    """``reproduce`` keeps the rule too: every runnable target's hub files are resolved before anything is
    downloaded; a target whose expansion the pin lacks is an ``error`` with the one line (where the file is and
    the option that reads it) and sends no GET, while the targets whose files are there run."""
    cache, home = dirs
    files = r2med_task_files()
    gpt4 = "hyde/gpt4/query_with_hydoc.jsonl"
    with HubEmulator() as hub:
        hub.add("R2MED/Biology", files, PIN)  # hyde/qwen-7b only
        hub.add("R2MED/Biology", {**files, gpt4: files[EXPANSION]}, NEWER, refs=("main",))
        res = cli(
            "reproduce", "-r", "bm25", "--settings", "gar", "-t", "Biology", "-f", "json", "-o", str(tmp_path / "o"),
            hub=hub, cache=cache, home=home, timeout=300,
        )  # fmt: skip
        assert res.returncode in (0, 1), res.stderr  # 1: a figure outside its tolerance (a demo collection)
        rows = {r["config"]: r for r in json.loads(res.stdout)}
        ran = {c: r for c, r in rows.items() if r["status"] in ("pass", "fail")}
        assert list(ran) == ["bm25+hyde-qwen-7b"], rows
        at_head = rows["bm25+hyde-gpt4"]
        assert at_head["status"] == "error"
        assert f"no file '{gpt4}' at revision {PIN}" in at_head["detail"], at_head
        assert "--revision Biology=main" in at_head["detail"], at_head
        nowhere = rows["bm25+lamer-gpt4"]
        assert nowhere["status"] == "error" and "nor has the repository's head" in nowhere["detail"], nowhere
        errors = [r for r in rows.values() if r["status"] == "error"]
        assert len(errors) == len(rows) - 1  # every other expansion of the gar setting is missing here
        requests = hub.requests
        first_get = next(i for i, (m, p) in enumerate(requests) if m == "GET" and "/resolve/" in p)
        missing_asked = [i for i, (m, p) in enumerate(requests) if m == "HEAD" and gpt4 in p]
        assert missing_asked and max(missing_asked) < first_get  # found missing before the first download
        got = sorted(p.split(f"/resolve/{PIN}/", 1)[1] for p in downloads(hub))
        assert got == sorted([*files][:3] + [EXPANSION]), got  # only what the one runnable target reads
