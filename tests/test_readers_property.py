"""Property tests: random bytes and random JSON fed to the metrics.json, LLM cache and expansion-file readers.

Each reader either returns a result its consumers can use, or raises :class:`R2MedError` naming
the file (``file:line`` for line-based files, the file for whole-file JSON) -- never another
exception.  (The corpus/queries/qrels/run readers have their own property tests.)
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from r2med.errors import DataError, R2MedError  # noqa: E402
from r2med.measures import HEADLINE, Family, Measure  # noqa: E402

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _write(data: bytes, name: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="r2med-prop-"))
    path = folder / name
    path.write_bytes(data)
    return path


def _dumps(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8")


# -- metrics.json ------------------------------------------------------------------------------------

MEASURES = st.sampled_from(["ndcg_cut_10", "recall_100", "map", "P_5", ""])
measure_values = st.dictionaries(MEASURES, scalars, max_size=3)
near_metrics = st.fixed_dictionaries(
    {},
    optional={
        "schema_version": scalars | st.sampled_from([0, 1, 2, 3, 4]),
        "task": scalars | st.sampled_from(["Biology", "../x", "/abs", "a/b", "", ".."]),
        "retriever": scalars | st.sampled_from(["bm25", "bm25 x", "a/b"]),
        "aggregate": measure_values | json_values,
        "per_query": st.dictionaries(st.text(max_size=4), measure_values | json_values, max_size=3) | json_values,
        "config": st.fixed_dictionaries(
            {"retriever": st.just("bm25")},
            optional={
                "k1": scalars,
                "b": scalars,
                "options": json_values | st.dictionaries(st.sampled_from(["k1", "b", "model"]), scalars, max_size=2),
            },
        )
        | st.fixed_dictionaries(
            {},
            optional={
                "retriever": scalars,
                "k1": scalars,
                "b": scalars,
                "options": json_values,
                "flavour": scalars,
                "queries": scalars,
                "top_k": scalars,
            },
        )
        | json_values,
        "timing": st.dictionaries(st.text(max_size=6), scalars, max_size=2) | json_values,
        "count_missing": scalars,
        "source": scalars,
        "dataset_fingerprint": scalars,
        "versions": json_values,
        "revision": scalars,
        "split": scalars,
        "encoding": json_values,
    },
)


def _check_metrics_file(path: Path) -> None:
    from r2med.results.folders import load_system
    from r2med.runs.record import read_record

    folder = path.parent
    try:
        data = read_record(folder).to_json()
    except DataError as exc:
        assert str(exc).startswith(f"{path}:") or str(exc).startswith(f"{path} "), str(exc)
        assert "\n" not in str(exc)
        return
    assert isinstance(data, dict)
    assert data["schema_version"] == 3  # the one reader upgrades every file it passes
    for value in data["aggregate"].values():
        assert math.isfinite(value)
    # what the readers' consumers do with a file that passed: no other exception
    system = load_system(folder.parent)
    for task in system.tasks.values():
        for measure in (HEADLINE, Measure(Family.RECALL, 100)):
            task.value(measure)
            task.scores(measure)


@SETTINGS
@given(st.binary(max_size=400))
def test_metrics_reader_random_bytes(data):
    path = _write(data, "metrics.json")
    (path.parent / "task").mkdir()
    moved = path.parent / "task" / "metrics.json"
    path.rename(moved)
    _check_metrics_file(moved)


@SETTINGS
@given(json_values | near_metrics)
@example({"aggregate": {"\n": None}})  # a measure name with a line break: the error must stay one line
def test_metrics_reader_random_json(value):
    folder = Path(tempfile.mkdtemp(prefix="r2med-prop-")) / "task"
    folder.mkdir()
    (folder / "metrics.json").write_bytes(_dumps(value))
    _check_metrics_file(folder / "metrics.json")


# -- LLM cache ---------------------------------------------------------------------------------------

near_entries = st.fixed_dictionaries(
    {},
    optional={
        "key": scalars | st.text(min_size=1, max_size=6),
        "text": scalars,
        "usage": json_values
        | st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), scalars, max_size=2),
        "finish_reason": scalars,
    },
)


def _check_cache_file(path: Path) -> None:
    from r2med.infra.llm import RequestCache

    cache = RequestCache(path)  # never raises: unusable lines are skipped (and re-requested)
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    assert len(cache) + cache.skipped_lines <= len(lines)
    for key, entry in cache._entries.items():
        assert isinstance(key, str) and isinstance(entry["text"], str)
        assert all(isinstance(v, int) and v >= 0 for v in entry["usage"].values())
        assert entry.get("finish_reason") is None or isinstance(entry["finish_reason"], str)
    cache.put("fresh-key", "fresh text", {"prompt_tokens": 1})
    cache.close()
    assert RequestCache(path).get("fresh-key")["text"] == "fresh text"


@SETTINGS
@given(st.binary(max_size=400))
def test_llm_cache_reader_random_bytes(data):
    _check_cache_file(_write(data, "cache.jsonl"))


@SETTINGS
@given(st.lists(json_values | near_entries, max_size=6))
def test_llm_cache_reader_random_json_lines(values):
    _check_cache_file(_write(b"\n".join(_dumps(v) for v in values) + b"\n", "cache.jsonl"))


# -- expansion files ---------------------------------------------------------------------------------

near_records = st.fixed_dictionaries({}, optional={"id": scalars, "text": scalars, "hy_doc": scalars | json_values})


def _check_expansion_file(path: Path) -> None:
    from r2med.expansion.precomputed import read_expansion_file

    try:
        exp = read_expansion_file(path, "hyde", "gpt4")
    except R2MedError as exc:
        message = str(exc)
        assert message.startswith(f"{path}:"), message
        rest = message[len(str(path)) + 1 :]
        # file:line for a line's fault; the whole file only when it has no records
        assert rest.split(":", 1)[0].isdigit() or "no records" in rest or "empty" in rest, message
        return
    assert exp.texts and all(isinstance(q, str) and isinstance(t, str) for q, t in exp.texts.items())


@SETTINGS
@given(st.binary(max_size=400))
def test_expansion_reader_random_bytes(data):
    _check_expansion_file(_write(data, "query_with_hydoc.jsonl"))


@SETTINGS
@given(st.lists(json_values | near_records, max_size=5))
def test_expansion_reader_random_json_lines(values):
    _check_expansion_file(_write(b"\n".join(_dumps(v) for v in values) + b"\n", "query_with_hydoc.jsonl"))


def teardown_module(module) -> None:
    import shutil

    for folder in Path(tempfile.gettempdir()).glob("r2med-prop-*"):
        shutil.rmtree(folder, ignore_errors=True)
