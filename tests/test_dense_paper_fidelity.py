"""Dense presets against the R2MED paper's code, and the scoring / precision / EOS choices that follow.

The table below was read from the R2MED repository (github.com/R2MED/R2MED) at commit 45cbac5:
``src/eval_bench.py`` (the retriever set-up and ``retrieval_by_dense``; the file the later
``eval_retrieval.py`` grew from), ``src/utils.py`` (the encoder classes) and
``src/instrcution.py`` (the instruction tables).  Each value cites file:line there.  Instructions
are checked for the Biology task (``Stack-Biology`` in the paper's code).
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from conftest import recorded
from r2med.errors import R2MedError
from r2med.retrieval import make_retriever
from r2med.retrieval.dense import DenseRetriever, exact_top_k
from r2med.retrieval.encoders import EncoderSettings, RemoteCodeEncoder
from r2med.retrieval.presets import DENSE_PRESETS, get_preset
from test_dense_fixtures import bert_dir, llama_dir  # noqa: F401

E5_BIO = "Instruct: Given a Biology post, retrieve relevant passages that help answer the post\nQuery: "
COS = "eval_bench.py:150 score_function='cos_sim' (168; the call at 312 keeps the default)"

#: preset -> (value, where it was read).  eos: an EOS token id appended by r2med before the model.
PAPER = {
    "contriever": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:47 AutoModel.from_pretrained(path), no dtype"),
        "eos": (False, "utils.py:129-146 Base mode"),
        "max_length": (512, "utils.py:42 default"),
        "pooling": ("mean", "eval_bench.py:217"),
        "normalize": (False, "eval_bench.py:218"),
        "query_instruction": ("", "eval_bench.py:216 none passed"),
        "doc_instruction": ("", "eval_bench.py:216"),
    },
    "medcpt": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:297-299 no dtype"),
        "eos": (False, "utils.py:365-404"),
        "max_length": (512, "eval_bench.py:255"),
        "pooling": ("cls", "utils.py:380, 402"),
        "normalize": (False, "utils.py:380, 402 (raw CLS)"),
        "query_instruction": ("", "eval_bench.py:253 none passed"),
        "doc_instruction": ("", "eval_bench.py:253"),
    },
    "inst-l": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:211 SentenceTransformer(path)"),
        "eos": (False, "utils.py:273-282"),
        "max_length": (None, "utils.py:214 override commented out"),
        "normalize": (True, "utils.py:280"),
        "query_instruction": (
            "Represent the Biology post for retrieving relevant paragraphs: ",
            "instrcution.py:15 inst_q, 59; eval_bench.py:303",
        ),
        "doc_instruction": (
            "Represent the Biology paragraph for retrieval: ",
            "instrcution.py:25 inst_d, 72; eval_bench.py:305",
        ),
    },
    "inst-xl": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:211"),
        "eos": (False, "utils.py:273-282"),
        "max_length": (None, "utils.py:214"),
        "normalize": (True, "utils.py:280"),
        "query_instruction": (
            "Represent the Biology post for retrieving relevant paragraphs: ",
            "instrcution.py:15, 60",
        ),
        "doc_instruction": ("Represent the Biology paragraph for retrieval: ", "instrcution.py:25, 73"),
    },
    "bmr-410m": {
        "similarity": ("cosine", COS),
        "dtype": ("fp16-autocast", "utils.py:47 fp32 weights, 161 cuda autocast"),
        "eos": (True, "utils.py:155 max_length - 1, 162 + eos_token_id"),
        "max_length": (512, "eval_bench.py:236"),
        "pooling": ("last-token", "eval_bench.py:240 last-bmr"),
        "normalize": (False, "utils.py:148-167 BMR branch never normalises"),
        "query_instruction": (E5_BIO.removeprefix("Instruct: "), "instrcution.py:44 bmr_q, 63"),
        "doc_instruction": ("Represent this passage\npassage: ", "instrcution.py:74; eval_bench.py:242"),
    },
    "bmr-2b": {
        "similarity": ("cosine", COS),
        "dtype": ("fp16-autocast", "utils.py:161"),
        "eos": (True, "utils.py:155, 162"),
        "max_length": (1024, "eval_bench.py:236"),
        "pooling": ("last-token", "eval_bench.py:240"),
        "normalize": (False, "utils.py:148-167"),
        "query_instruction": (E5_BIO.removeprefix("Instruct: "), "instrcution.py:44, 64"),
        "doc_instruction": ("Represent this passage\npassage: ", "instrcution.py:75"),
    },
    "bmr-7b": {
        "similarity": ("cosine", COS),
        "dtype": ("fp16-autocast", "utils.py:422 fp32 weights, 528 autocast"),
        "eos": (True, "utils.py:522, 529"),
        "max_length": (2048, "eval_bench.py:249"),
        "pooling": ("last-token", "eval_bench.py:248"),
        "normalize": (False, "utils.py:515-534"),
        "query_instruction": (E5_BIO.removeprefix("Instruct: "), "instrcution.py:44, 65"),
        "doc_instruction": ("Represent this passage\npassage: ", "instrcution.py:76"),
    },
    "bge": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:47"),
        "eos": (False, "utils.py:129-146"),
        "max_length": (512, "eval_bench.py:234"),
        "pooling": ("cls", "eval_bench.py:233"),
        "normalize": (True, "utils.py:38 default, 143-144"),
        "query_instruction": (
            "Represent this sentence for searching relevant passages: ",
            "instrcution.py:61; eval_bench.py:232",
        ),
        "doc_instruction": ("", "eval_bench.py:231-234 none passed"),
    },
    "e5": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:422 device_map='auto', no dtype"),
        "eos": (False, "utils.py:496-507 Base mode, no EOS"),
        "max_length": (2048, "eval_bench.py:228"),
        "pooling": ("last-token", "eval_bench.py:227 'last'"),
        "normalize": (True, "utils.py:413, 510-511"),
        "query_instruction": (E5_BIO, "instrcution.py:35 e5_q, 62"),
        "doc_instruction": ("", "eval_bench.py:225"),
    },
    "sfr": {
        "similarity": ("cosine", COS),
        "dtype": ("fp32", "utils.py:422"),
        "eos": (False, "utils.py:496-507"),
        "max_length": (2048, "eval_bench.py:228"),
        "pooling": ("last-token", "eval_bench.py:227"),
        "normalize": (True, "utils.py:413"),
        "query_instruction": (E5_BIO, "instrcution.py:67 sfr = e5_q"),
        "doc_instruction": ("", "eval_bench.py:225"),
    },
    "grit": {
        "similarity": ("cosine", COS),
        "dtype": ("auto", "utils.py:578 torch_dtype='auto'"),
        "eos": (False, "utils.py:632 gritlm's encode"),
        "max_length": (2048, "utils.py:574 doc_max_length"),
        "query_max_length": (512, "utils.py:573"),
        "normalize": (False, "utils.py:632 output used as is"),
        "query_instruction": (
            "<|user|>\nGiven a Biology post, retrieve relevant passages that help answer the post\n<|embed|>\n",
            "instrcution.py:47 grit, 66",
        ),
        "doc_instruction": ("<|embed|>\n", "instrcution.py:77; eval_bench.py:260"),
    },
    "nv": {
        "similarity": ("cosine", COS),
        "dtype": ("fp16", "utils.py:649 torch_dtype=torch.float16"),
        "eos": (False, "utils.py:704 the model's own encode() appends EOS"),
        "max_length": (4096, "eval_bench.py:267"),
        "normalize": (True, "utils.py:641, 705-706"),
        "query_instruction": (E5_BIO, "instrcution.py:56 nv = e5_q, 68"),
        "doc_instruction": ("", "instrcution.py:78; eval_bench.py:265"),
    },
    "openai": {"similarity": ("cosine", COS)},
    "voyage": {"similarity": ("cosine", COS)},
}


def test_the_table_covers_every_preset():
    assert set(PAPER) == set(DENSE_PRESETS)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_preset_matches_the_papers_code(name):
    preset = get_preset(name)
    s = preset.settings("Biology")
    got = {
        "similarity": preset.similarity,
        "dtype": s.dtype if preset.dtype else None,
        "eos": s.append_eos,
        "max_length": s.max_length,
        "query_max_length": s.query_max_length,
        "pooling": s.pooling,
        "normalize": s.normalize,
        "query_instruction": s.query_instruction,
        "doc_instruction": s.doc_instruction,
    }
    for key, (want, source) in PAPER[name].items():
        assert got[key] == want, f"{name}.{key}: r2med {got[key]!r}, paper {want!r} ({source})"
    described = preset.describe()
    assert described["similarity"] == "cosine" and "dtype" in described
    # the retriever a user gets scores as the paper does
    options = {"trust_remote_code": True} if name == "nv" else {}
    if name not in ("openai", "voyage"):
        assert make_retriever(name, task="Biology", **options).similarity == "cosine"


# -- cosine vs dot -------------------------------------------------------------------------------


class FixedEncoder:
    """An Encoder that returns hand-made vectors (no model)."""

    def __init__(self, docs: dict[str, list[float]], queries: dict[str, list[float]]):
        self.docs, self.queries = docs, queries
        self.settings = EncoderSettings(model="fixed")
        self.texts_encoded = 0

    def encode_corpus(self, texts, batch_size=None):
        self.texts_encoded += len(texts)
        return np.array([self.docs[t] for t in texts], dtype=np.float32)

    def encode_queries(self, queries, batch_size=None):
        self.texts_encoded += len(queries)
        return np.array([self.queries[q] for q in queries], dtype=np.float32)

    def config(self):
        return {"model": "fixed", "docs": self.docs, "queries": self.queries}


# a long vector pointing away from the query beats a short one pointing at it under dot, not under cosine
DOCS = {"long": [10.0, 0.0], "aligned": [0.3, 0.4], "opposite": [-1.0, 0.2]}
QUERIES = {"q": [0.6, 0.8]}


@pytest.mark.parametrize("faiss", [None, "Flat"])
def test_cosine_and_dot_rank_hand_made_vectors_differently(faiss):
    corpus = {d: d for d in DOCS}
    runs = {}
    for similarity in ("cosine", "dot"):
        r = DenseRetriever(
            EncoderSettings(model="fixed"),
            encoder=FixedEncoder(DOCS, QUERIES),
            cache=False,
            similarity=similarity,
            faiss=faiss,
        )
        runs[similarity] = r.index(corpus).search({"q1": "q"}, k=3)["q1"]
        assert r.config()["similarity"] == similarity
    # by hand: dot = 6.0, 0.5, -0.44; cosine = 0.6, 1.0, (-0.6 + 0.16) / sqrt(1.04)
    assert list(runs["dot"]) == ["long", "aligned", "opposite"]
    np.testing.assert_allclose(list(runs["dot"].values()), [6.0, 0.5, -0.44], atol=1e-6)
    assert list(runs["cosine"]) == ["aligned", "long", "opposite"]
    np.testing.assert_allclose(list(runs["cosine"].values()), [1.0, 0.6, -0.44 / np.sqrt(1.04)], atol=1e-6)


def test_exact_top_k_normalize_docs_equals_cosine_brute_force():
    rng = np.random.default_rng(3)
    d = (rng.normal(size=(200, 8)) * rng.uniform(0.1, 10, size=(200, 1))).astype(np.float32)
    q = rng.normal(size=(5, 8)).astype(np.float32)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    want = qn @ (d / np.linalg.norm(d, axis=1, keepdims=True)).T
    scores, idx = exact_top_k(qn, d, 10, chunk=37, normalize_docs=True, device="cpu")
    for row in range(5):
        order = np.argsort(-want[row], kind="stable")[:10]
        assert idx[row].tolist() == order.tolist()
        np.testing.assert_allclose(scores[row], want[row, order], atol=1e-6)


def test_similarity_option_for_dense_models(bert_dir):
    from conftest import minilm_path

    assert make_retriever("dense", model=bert_dir, pooling="mean").similarity == "cosine"  # the paper's default
    assert make_retriever("dense", model=minilm_path()).similarity == "cosine"  # its similarity_fn_name default
    assert make_retriever("dense", model=bert_dir, similarity="dot").similarity == "dot"
    assert make_retriever("bge", similarity="dot").similarity == "dot"
    with pytest.raises(R2MedError, match="unknown similarity"):
        make_retriever("dense", model=bert_dir, similarity="euclid")


def test_sentence_transformers_dot_models_keep_their_similarity(tmp_path):
    import shutil

    from conftest import minilm_path

    folder = tmp_path / "dot-model"
    shutil.copytree(minilm_path(), folder)
    cfg = json.loads((folder / "config_sentence_transformers.json").read_text())
    (folder / "config_sentence_transformers.json").write_text(json.dumps({**cfg, "similarity_fn_name": "dot"}))
    assert make_retriever("dense", model=str(folder)).similarity == "dot"
    assert make_retriever("dense", model=str(folder), similarity="cosine").similarity == "cosine"


# -- NV-Embed-v2: one EOS ------------------------------------------------------------------------

NV_STANDIN = textwrap.dedent('''
    import torch
    from transformers import AutoTokenizer, BertModel


    class NVStandIn(BertModel):
        """Like NV-Embed-v2's encode(): appends the EOS text itself (always_add_eos), records what it tokenized."""

        seen = []

        def encode(self, prompts, instruction="", max_length=4096, **kwargs):
            tok = AutoTokenizer.from_pretrained(self.name_or_path)
            texts = [instruction + p + tok.eos_token for p in prompts]
            feats = tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                        add_special_tokens=False)
            for ids, mask in zip(feats["input_ids"].tolist(), feats["attention_mask"].tolist()):
                NVStandIn.seen.append([i for i, m in zip(ids, mask) if m])
            h = self(**feats).last_hidden_state
            m = feats["attention_mask"].unsqueeze(-1).float()
            return (h * m).sum(1) / m.sum(1)
''')


@pytest.fixture
def nv_dir(llama_dir, bert_dir, tmp_path):
    import shutil

    folder = tmp_path / "nv_standin"
    shutil.copytree(bert_dir, folder)
    shutil.copy2(f"{llama_dir}/tokenizer_config.json", folder / "tokenizer_config.json")  # has an EOS token
    (folder / "modeling_nv.py").write_text(NV_STANDIN)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_nv.NVStandIn"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


def test_nv_preset_sends_exactly_one_eos_to_the_model(nv_dir):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(nv_dir).eos_token_id
    assert eos is not None
    settings = get_preset("nv").settings("Biology", model=nv_dir, dtype="fp32", trust_remote_code=True)
    enc = RemoteCodeEncoder(settings, device="cpu", batch_size=2)
    texts = ["insulin resistance in muscle", "heart failure"]
    enc.encode_corpus(texts)
    enc.encode_queries(["what lowers glucose"])
    seen = type(enc._model).seen
    assert len(seen) == 3
    for ids in seen:
        assert ids[-1] == eos and ids.count(eos) == 1, ids  # the model's own EOS only
    # the Python API can still ask for an extra one (append_eos), e.g. for another remote-code model
    type(enc._model).seen.clear()
    extra = RemoteCodeEncoder(settings.with_(append_eos=True), device="cpu", batch_size=2)
    extra.encode_corpus(texts[:1])
    assert type(extra._model).seen[-1].count(eos) == 2


# -- precision ----------------------------------------------------------------------------------


def test_dtype_setting_is_validated_and_recorded(bert_dir):
    assert EncoderSettings(model="m").dtype == "fp32"  # the loading libraries' default
    assert EncoderSettings(model="m", dtype="bfloat16").dtype == "bf16"
    with pytest.raises(R2MedError, match="unknown dtype"):
        EncoderSettings(model="m", dtype="fp8")
    r = make_retriever("bge", dtype="bf16")
    assert r.config()["encoder"]["dtype"] == "bf16" and get_preset("bge").dtype == "fp32"
    # bf16 weights on CPU encode (and differ from fp32 only in the last digits)
    texts = ["insulin resistance", "heart failure therapy"]
    fp32 = DenseRetriever(EncoderSettings(model=bert_dir, pooling="mean"), device="cpu").encoder
    bf16 = DenseRetriever(EncoderSettings(model=bert_dir, pooling="mean", dtype="bf16"), device="cpu").encoder
    a, b = fp32.encode_corpus(texts), bf16.encode_corpus(texts)
    assert not np.array_equal(a, b) and np.allclose(a, b, atol=0.1)
    assert bf16._load(bert_dir)[1].dtype.is_floating_point and str(bf16._load(bert_dir)[1].dtype) == "torch.bfloat16"


def test_cross_encoder_rerankers_default_to_fp32_as_the_paper():
    from r2med.reranking import make_reranker

    for name in ("bge-reranker", "monobert"):
        reranker = make_reranker(name)
        assert reranker.dtype_option == "fp32" and reranker.config()["dtype"] == "fp32"


# -- reports: a non-paper similarity matches nothing, a non-paper dtype widens the tolerance -----


def test_similarity_and_dtype_in_published_matching(tmp_path):
    from conftest import hub_data
    from r2med.protocol import published_ndcg10
    from r2med.report import build_leaderboard, leaderboard
    from r2med.results.folders import find_systems as load_systems
    from r2med.results.grading import grade, match_published, nonpaper_precision
    from r2med.results.published import PublishedKey
    from r2med.runs.run import write_task_results

    paper = {"retriever": "bge", "options": {}, "similarity": "cosine", "encoder": {"dtype": "fp32"}}
    assert match_published([recorded(paper)]) == PublishedKey("bge")
    assert match_published([recorded({**paper, "similarity": "dot"})]) is None
    assert match_published([recorded({**paper, "options": {"similarity": "dot"}})]) is None
    assert match_published([recorded({**paper, "options": {"similarity": "cosine"}})]) == PublishedKey("bge")
    # another precision class than the published one (half for full) is not the published spec: not graded
    bf16 = {**paper, "options": {"dtype": "bf16"}, "encoder": {"dtype": "bf16"}}
    assert match_published([recorded(bf16)]) is None
    assert "dtype bf16, published fp32" in grade(recorded(bf16)).reason
    # the same class (bf16 for the paper's fp16) stays graded, with a note and a wider band
    nv = {"retriever": "nv", "options": {}, "similarity": "cosine", "encoder": {"dtype": "fp16"}}
    nv_bf16 = {**nv, "options": {"dtype": "bf16"}, "encoder": {"dtype": "bf16"}}
    assert match_published([recorded(nv)]) == match_published([recorded(nv_bf16)]) == PublishedKey("nv")
    assert nonpaper_precision(recorded(nv_bf16)) == "bf16 (paper: fp16)" and nonpaper_precision(recorded(nv)) is None
    assert nonpaper_precision(recorded(bf16)) == "bf16 (paper: fp32)" and nonpaper_precision(recorded(paper)) is None
    assert nonpaper_precision(recorded({"retriever": "nv", "encoder": {"dtype": "fp16"}})) is None
    assert nonpaper_precision(recorded({"reranker": {"reranker": "monobert", "dtype": "fp16"}})) == "fp16 (paper: fp32)"

    pub = published_ndcg10("nv")["Biology"] / 100
    for name, config in (("nv", nv), ("bf16/nv", nv_bf16)):
        payload = {
            "task": "Biology",
            "retriever": "nv",
            "config": config,
            "aggregate": {"ndcg_cut_10": pub},
            "per_query": {"q1": {"ndcg_cut_10": pub}},
            **hub_data("Biology"),
        }
        write_task_results(tmp_path / name / "Biology", {"q1": {"d1": 1.0}}, payload)
    board = build_leaderboard(load_systems([tmp_path / "nv", tmp_path / "bf16" / "nv"]))
    rows = {r.system: r for r in board.rows}
    assert len(rows) == 2
    widened, plain = rows["bf16/nv"], next(r for n, r in rows.items() if n != "bf16/nv")
    assert plain.tolerance == 1.0 and plain.precision_note == ""
    assert widened.published == PublishedKey("nv") and widened.tolerance == 2.0  # shown, with a wider band
    assert widened.precision_note == "bf16 (paper: fp16)"
    text = leaderboard.to_markdown(board)
    assert "tol ±2, bf16 (paper: fp16)" in text and "another precision" in text


def test_torch_search_path_normalises_docs_like_numpy():
    """The GPU search code (torch), run on the CPU here: same cosine top-k as the numpy path."""
    pytest.importorskip("torch")

    rng = np.random.default_rng(4)
    d = (rng.normal(size=(150, 6)) * rng.uniform(0.1, 10, size=(150, 1))).astype(np.float32)
    q = rng.normal(size=(4, 6)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s_np, i_np = exact_top_k(q, d, 7, chunk=40, normalize_docs=True, device="cpu")
    s_t, i_t = exact_top_k(q, d, 7, chunk=40, normalize_docs=True, device="cpu", torch_products=True)
    assert i_t.tolist() == i_np.tolist()
    np.testing.assert_allclose(s_t, s_np, atol=1e-6)


def test_evaluate_summary_decides_paper_configuration_with_similarity_and_dtype():
    """The summary `r2med evaluate` prints: published figures only for the paper's similarity; a precision of
    the paper's class keeps them, with a note, another class drops them (decided from the stored configuration)."""
    from r2med.evaluation.metrics import Metrics
    from r2med.report.summary import precision_note
    from r2med.results.folders import TaskResult, summary
    from r2med.results.published import PublishedKey

    def result(retriever, similarity=None, dtype=None):
        config = {
            "retriever": retriever,
            "options": {k: v for k, v in (("similarity", similarity), ("dtype", dtype)) if v is not None},
            "similarity": similarity or "cosine",
            "encoder": {"dtype": dtype or get_preset(retriever).dtype},
        }
        return [
            TaskResult("Biology", Metrics({}, {"ndcg_cut_10": 0.1}, ("ndcg_cut_10",)), None, config=recorded(config))
        ]

    def note(retriever, dtype=None):
        return precision_note(summary(retriever, result(retriever, dtype=dtype)))

    assert summary("bge", result("bge")).published == PublishedKey("bge")
    assert summary("bge", result("bge", "cosine")).published == PublishedKey("bge")
    assert summary("bge", result("bge", "dot")).published is None
    assert note("bge") is None and note("bge", "fp32") is None
    assert note("nv", "fp16") is None and note("bmr-7b") is None
    assert "bf16" in note("nv", "bf16") and "fp16" in note("nv", "bf16")
    half = summary("bge", result("bge", dtype="bf16"))  # half precision where the paper ran fp32: not graded
    assert half.published is None and "dtype bf16, published fp32" in half.reason
    api = [
        TaskResult(
            "Biology",
            Metrics({}, {"ndcg_cut_10": 0.1}, ("ndcg_cut_10",)),
            None,
            config=recorded({"retriever": "openai", "encoder": {"dtype": "bf16"}}),
        )
    ]
    assert precision_note(summary("openai", api)) is None  # API embedders have no precision to compare
