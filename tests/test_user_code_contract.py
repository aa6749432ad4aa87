"""Your encoder and scorer held to their contract (issue 27 items 5, 8, 10, 11) and an interrupted encoding that
keeps its finished work (issue 31).

* Vectors are real finite numbers, one row per text, at least 1 wide, one width for every batch and for queries
  and documents; scores are real finite numbers, one per document.  Anything else, and any exception the user's
  code raises (``SystemExit(0)`` included), is one line naming the spec, exit code 2, nothing written; ``-v``
  shows the traceback.
* An encoder edited in place (same declared name and revision) makes new vectors: the embedding cache is keyed
  by the code's sha256, and the record names the code that made the vectors (checked against numpy brute force
  with the edited code).
* An encoding interrupted part-way keeps its finished 256-row chunks (says how many) and the resumed run encodes
  only the rest, giving the same bytes as an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from conftest import run_r2med
from r2med.errors import R2MedError
from r2med.infra.user_code import UserCodeError, check_scores, check_vectors
from test_custom_models import ENCODER, brute_force_ndcg, collection

HEADER = textwrap.dedent("""
    import hashlib
    import sys
    import numpy as np

    def vec(text, width=4):
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).standard_normal(width)

    class Base:
        name = "contract"
        revision = "1"
        def encode(self, texts, role):
            return np.stack([vec(t) for t in texts])

    class Plain:
        name = "plain"
        def score(self, query, docs):
            return [float(len(d)) for d in docs]
""")

BAD_ENCODERS = {
    # class name: (body of encode, what the one line says)
    "Strings": ("return [['a', 'b'] for t in texts]", "encode() returned a str ('a'), not a real number"),
    "NumericStrings": ("return [['1.5', '2'] for t in texts]", "encode() returned a str ('1.5'), not a real number"),
    "Ragged": ("return [[1.0] * (1 + i % 2) for i, t in enumerate(texts)]", "rows of different lengths (ragged)"),
    "Generator": ("return (vec(t) for t in texts)", "encode() returned a generator; encode() must return an array"),
    "WidthZero": ("return np.zeros((len(texts), 0))", "encode() returned vectors of width 0"),
    "StringArray": ("return np.array([['a', 'b'] for t in texts])", "encode() returned strings, not real numbers"),
    "Complex": ("return np.ones((len(texts), 4), dtype=complex)", "encode() returned complex numbers"),
    "Bools": ("return np.ones((len(texts), 4), dtype=bool)", "encode() returned bools"),
    "BoolInList": ("return [[1.0, True] for t in texts]", "encode() returned a bool (True), not a real number"),
    "NoneInList": ("return [[1.0, None] for t in texts]", "encode() returned a NoneType (None), not a real number"),
    "Dict": ("return {t: vec(t) for t in texts}", "encode() returned a dict"),
    "Nothing": ("return None", "encode() returned a NoneType"),
    "OneRowShort": ("return np.stack([vec(t) for t in texts])[:-1]", "vectors for"),
    "Flat": ("return np.ones(len(texts))", "encode() returned an array of shape"),
    "NaN": ("return np.full((len(texts), 4), np.nan)", "values that are not finite numbers"),
    "BeyondFloat32": ("return np.full((len(texts), 4), 1e39)", "beyond float32's range"),
    "HugeInt": ("return [[10**400] * 4 for t in texts]", "a number beyond float range"),
    "WidthChanges": (
        "self.calls = getattr(self, 'calls', 0) + 1\n        return np.stack([vec(t, 4 + self.calls) for t in texts])",
        "vectors of width 6 after vectors of width 5",
    ),
    "QueryWidth": (
        "return np.stack([vec(t, 4 if role == 'doc' else 8) for t in texts])",
        "vectors of width 8 after vectors of width 4",
    ),
    "Raises": ("raise ValueError('my model broke\\nacross two lines')", "encode() raised ValueError: my model broke"),
    "Exits0": ("raise SystemExit(0)", "encode() called sys.exit(0) (SystemExit)"),
    "Exits3": ("sys.exit(3)", "encode() called sys.exit(3) (SystemExit)"),
    "BaseExc": ("raise GeneratorExit('odd')", "encode() raised GeneratorExit: odd"),
}


@pytest.fixture
def contract_file(tmp_path) -> Path:
    body = HEADER
    for cls, (code, _) in BAD_ENCODERS.items():
        body += f"\nclass {cls}(Base):\n    def encode(self, texts, role):\n        {code}\n"
    for cls, (code, _) in BAD_SCORERS.items():
        body += f"\nclass {cls}(Plain):\n    def score(self, query, docs):\n        {code}\n"
    body += "\nclass TensorScores(Plain):\n    def score(self, query, docs):\n"
    body += "        import torch\n        return torch.tensor([float(len(d)) for d in docs])\n"
    path = tmp_path / "contract.py"
    path.write_text(body)
    return path


def r2med(*args: str, home: Path):
    return run_r2med(*args, env={"R2MED_HOME": str(home), "HF_HUB_OFFLINE": "1"})


def one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize("cls", sorted(BAD_ENCODERS))
def test_an_encoder_breaking_its_contract_is_one_line_naming_the_spec(tmp_path, r2med_home, contract_file, cls):
    data = collection(tmp_path / "mini")
    spec = f"{contract_file}:{cls}"
    args = ("evaluate", "-r", "custom", "--encoder", spec, "-d", str(data), "-o", str(tmp_path / "out"))
    line = one_line(r2med(*args, "--batch-size", "8", "-q", home=r2med_home))
    assert f"encoder {spec}" in line and BAD_ENCODERS[cls][1] in line, line
    assert not (tmp_path / "out").exists()


def test_with_verbose_the_traceback_of_the_users_error_is_shown(tmp_path, r2med_home, contract_file):
    data = collection(tmp_path / "mini")
    spec = f"{contract_file}:Raises"
    args = ("-v", "evaluate", "-r", "custom", "--encoder", spec, "-d", str(data), "-o", str(tmp_path / "o"))
    proc = r2med(*args, home=r2med_home)
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "ValueError: my model broke" in proc.stderr
    assert f'File "{contract_file}", line' in proc.stderr  # the user's own file and line, from the bytes that ran


BAD_SCORERS = {
    "TextScores": ("return '7' * len(docs)", "score() returned a str"),  # its characters were read as scores
    "DictScores": ("return {str(i): 1.0 for i in range(len(docs))}", "score() returned a dict"),  # its keys were
    "BoolScores": ("return [True] * len(docs)", "score() returned a bool (True), not a real number"),
    "ComplexScores": ("return [1j] * len(docs)", "score() returned a complex (1j), not a real number"),
    "HugeScore": ("return [10**400] + [1.0] * (len(docs) - 1)", "score() returned an integer of 1329 bits"),
    "HugerScore": ("return [10**5000] + [1.0] * (len(docs) - 1)", "score() returned an integer of 16610 bits"),
    "NaNScore": ("return [float('nan')] * len(docs)", "score() returned nan, not a finite number"),
    "GeneratorScores": ("return (1.0 for d in docs)", "score() returned a generator"),
    "ColumnScores": ("return np.ones((len(docs), 1))", "score() returned an array of shape"),
    "ShortScores": ("return [1.0] * (len(docs) - 1)", "scores for"),
    "NoneScores": ("return None", "score() returned a NoneType"),
    "ExitScorer": ("raise SystemExit(0)", "score() called sys.exit(0)"),
    "RaisingScorer": ("raise RuntimeError('out of memory')", "score() raised RuntimeError: out of memory"),
}


@pytest.fixture
def first_stage(tmp_path, r2med_home) -> Path:
    data = collection(tmp_path / "mini")
    out = tmp_path / "out"
    assert r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(out), home=r2med_home).returncode == 0
    return out


@pytest.mark.parametrize("cls", sorted(BAD_SCORERS))
def test_a_scorer_breaking_its_contract_is_one_line_naming_the_spec(first_stage, r2med_home, contract_file, cls):
    spec = f"{contract_file}:{cls}"
    before = sorted(p.name for p in first_stage.iterdir())
    args = ("rerank", "--run", str(first_stage / "bm25"), "--reranker", "custom", "--scorer", spec, "-k", "10", "-q")
    line = one_line(r2med(*args, home=r2med_home))
    assert f"scorer {spec} (query 'q0')" in line and BAD_SCORERS[cls][1] in line, line
    assert sorted(p.name for p in first_stage.iterdir()) == before  # nothing written


def test_a_tensor_of_scores_is_taken_as_its_numbers(first_stage, r2med_home, contract_file):
    proc = r2med("rerank", "--run", str(first_stage / "bm25"), "--reranker", "custom", "--scorer",
                 f"{contract_file}:TensorScores", "-k", "10", home=r2med_home)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_what_the_contract_accepts_is_taken_exactly():
    """Real numbers in the forms encoders and scorers return them: the values come through unchanged."""
    torch = pytest.importorskip("torch")
    rows = [[1, 2.5], [np.float32(3), np.int64(-4)]]
    for given in (rows, tuple(rows), np.array(rows, dtype=np.float64), torch.tensor(rows, dtype=torch.bfloat16)):
        got = check_vectors(given, 2, "encoder x")
        assert got.dtype == np.float32 and got.tolist() == [[1.0, 2.5], [3.0, -4.0]]
    assert check_scores([1, np.float32(0.5), 2.0], 3, "scorer x") == [1.0, 0.5, 2.0]
    assert check_scores(np.array([3, 4]), 2, "scorer x") == [3.0, 4.0]
    assert check_scores(torch.tensor([0.25, 1.0]), 2, "scorer x") == [0.25, 1.0]
    with pytest.raises(UserCodeError, match=r"a Tensor .* not a real number \(return plain numbers"):
        check_scores([torch.tensor(1.0)], 1, "scorer x")
    with pytest.raises(UserCodeError, match="a complex tensor"):
        check_vectors(torch.ones(2, 2, dtype=torch.complex64), 2, "encoder x")
    with pytest.raises(UserCodeError, match="a tensor that cannot be read on the CPU"):
        check_scores(torch.empty(2, device="meta"), 2, "scorer x")
    assert isinstance(UserCodeError("x"), R2MedError)


# -- item 5: an encoder edited in place ----------------------------------------------------------------


def test_an_encoder_edited_in_place_makes_new_vectors_and_the_record_names_them(tmp_path, r2med_home):
    """Same declared name and revision, other code: the second run encodes again (in the same process, where the
    old module would still be importable) and its measures are numpy brute force with the edited code."""
    data = collection(tmp_path / "mini")
    path = tmp_path / "my_models.py"
    path.write_text(ENCODER)
    spec = f"{path}:RandomEncoder"
    args = ("evaluate", "-r", "custom", "--encoder", spec, "-d", str(data))
    first = r2med(*args, "-o", str(tmp_path / "a"), home=r2med_home)
    assert first.returncode == 0, first.stderr
    edited = ENCODER.replace("hexdigest()[:8]", "hexdigest()[:7]")  # same size: stale bytecode could not tell
    assert edited != ENCODER and len(edited) == len(ENCODER)
    path.write_text(edited)
    second = r2med(*args, "-o", str(tmp_path / "b"), home=r2med_home)
    assert second.returncode == 0, second.stderr
    assert "40 docs indexed (40 encoded)" in second.stderr, second.stderr
    stored = json.loads((tmp_path / "b" / "custom-RandomEncoder" / "mini" / "metrics.json").read_text())
    described = stored["config"]["encoder"]["extra"]["custom"]
    assert described["module_sha256"] == hashlib.sha256(edited.encode()).hexdigest()
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("edited_reference", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    want = brute_force_ndcg(data, module)
    old = json.loads((tmp_path / "a" / "custom-RandomEncoder" / "mini" / "metrics.json").read_text())
    assert old["aggregate"]["ndcg_cut_10"] != pytest.approx(want, abs=1e-6)  # the edit changes the figure
    assert stored["aggregate"]["ndcg_cut_10"] == pytest.approx(want, abs=1e-6)
    assert not list(path.parent.glob("__pycache__"))  # nothing written beside the user's file


def test_an_encoder_without_a_source_file_is_not_cached(r2med_home, caplog):
    import r2med as api

    notebook = types.ModuleType("notebook_cell")  # a class typed into a notebook: no file to hash
    sys.modules["notebook_cell"] = notebook
    try:
        exec(
            "import numpy as np\nclass Typed:\n    name = 'typed'\n    revision = '1'\n"
            "    def encode(self, texts, role):\n        return np.ones((len(texts), 3)) * len(texts[0])\n",
            notebook.__dict__,
        )
        retriever = api.make_retriever(notebook.Typed())
        retriever.index({"d1": "a", "d2": "bb"})
    finally:
        del sys.modules["notebook_cell"]
    assert retriever.cache_entry is None
    assert "no source file to hash" in caplog.text


# -- issue 31: finished chunks are kept, and the resumed run is the same bytes ------------------------------

RESUMABLE = textwrap.dedent("""
    import hashlib
    import numpy as np

    FAIL_AT = None  # set by the test: raise once this many docs were encoded
    ENCODED = []

    class PaddingSensitive:
        \"\"\"Vectors that depend on the batch they are encoded in (as padding does): the same bytes only when the
        chunks and batches are the same.\"\"\"
        name = "padding-sensitive"
        revision = "1"

        def encode(self, texts, role):
            if FAIL_AT is not None and len(ENCODED) + len(texts) > FAIL_AT:
                raise RuntimeError("interrupted")
            ENCODED.extend(texts)
            longest = max(len(t) for t in texts)
            rows = []
            for t in texts:
                seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
                rows.append(np.random.default_rng(seed).standard_normal(8) + longest / 7.0)
            return np.stack(rows)
""")


def test_an_interrupted_encoding_keeps_its_finished_chunks_and_resumes_to_the_same_bytes(tmp_path, monkeypatch, caplog):
    from r2med.infra.user_code import load_spec
    from r2med.retrieval.custom import custom_retriever

    path = tmp_path / "resumable.py"
    path.write_text(RESUMABLE)
    rng = np.random.default_rng(1)
    words = "cell gene protein kidney liver insulin receptor virus".split()
    corpus = {f"d{i}": " ".join(rng.choice(words, size=int(rng.integers(1, 20)))) for i in range(1000)}
    loaded = load_spec(f"{path}:PaddingSensitive", "encoder", "--encoder")
    module = sys.modules[type(loaded.obj).__module__]

    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "uninterrupted"))
    whole = custom_retriever(loaded, batch_size=16).index(corpus)
    assert whole.cache_entry.chunk_size == 256  # a CPU encoder's chunk: minutes of work, not 4,096 docs
    reference = np.asarray(whole.embeddings).tobytes()

    monkeypatch.setenv("R2MED_HOME", str(tmp_path / "interrupted"))
    module.ENCODED.clear()
    module.FAIL_AT = 600
    with pytest.raises(UserCodeError, match="encode\\(\\) raised RuntimeError: interrupted"):
        custom_retriever(loaded, batch_size=16).index(corpus)
    assert "512 of 1000 documents are kept in finished chunks of 256" in caplog.text
    module.FAIL_AT = None
    module.ENCODED.clear()
    resumed = custom_retriever(loaded, batch_size=16).index(corpus)
    assert resumed.cache_entry.reused_docs == 512 and len(module.ENCODED) == 1000 - 512
    assert np.asarray(resumed.embeddings).tobytes() == reference


def test_a_width_change_between_chunks_of_one_entry_is_an_error(tmp_path):
    from r2med.retrieval.embedding_cache import EmbeddingCache

    cache = EmbeddingCache({"model": "m"}, "fp", 20, chunk_size=10, root=tmp_path)
    widths = iter([4, 5])
    with pytest.raises(R2MedError, match=r"width 5 for documents 10\.\.19 but width 4 for the earlier ones"):
        cache.get_or_encode([str(i) for i in range(20)], lambda chunk: np.ones((len(chunk), next(widths)), np.float32))


@pytest.mark.parametrize(
    "source, obj, message",
    [
        ("import sys\nsys.exit(0)\n", "Enc", "importing {path} called sys.exit(0) (SystemExit)"),
        ("raise KeyError('boom')\n", "Enc", "importing {path} raised KeyError: 'boom'"),
        ("def broken(:\n", "Enc", "importing {path} raised SyntaxError"),
        ("class Enc:\n    def __init__(self):\n        raise SystemExit(0)\n"
         "    def encode(self, t, r):\n        pass\n", "Enc", "called with no arguments called sys.exit(0)"),
        ("class Enc:\n    @property\n    def name(self):\n        raise SystemExit(0)\n"
         "    def encode(self, t, r):\n        pass\n", "Enc", "reading .name called sys.exit(0)"),
    ],
)  # fmt: skip
def test_user_code_exiting_or_raising_while_loading_is_one_line(tmp_path, r2med_home, source, obj, message):
    data = collection(tmp_path / "mini")
    path = tmp_path / "enc.py"
    path.write_text(source)
    args = ("evaluate", "-r", "custom", "--encoder", f"{path}:{obj}", "-d", str(data), "-o", str(tmp_path / "out"))
    line = one_line(r2med(*args, "-q", home=r2med_home))
    assert f"encoder {path}:{obj}" in line and message.format(path=path) in line, line
    assert not (tmp_path / "out").exists()
