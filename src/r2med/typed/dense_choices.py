"""The choices of a dense retriever's settings: pooling, similarity, weight precision.

Kept apart from :mod:`r2med.retrieval.encoders` (which imports numpy) so that the CLI can show and check them
while the command line is parsed, without loading numpy; in ``typed/``, below ``retrieval/``, because the options
types (:mod:`.options`) take them.  Each is a ``StrEnum``: a member is the plain string
(``Similarity.COSINE == "cosine"``, ``json.dumps`` writes ``"cosine"``), so recorded configs keep today's text.
"""

from __future__ import annotations

from enum import StrEnum


class Pooling(StrEnum):
    """How a model's token vectors become one text vector."""

    CLS = "cls"
    MEAN = "mean"
    LAST_TOKEN = "last-token"


class Similarity(StrEnum):
    """How query and document vectors are scored: ``cosine`` (the paper's) or the raw inner product."""

    COSINE = "cosine"
    DOT = "dot"


class Dtype(StrEnum):
    """Weight precision.

    ``fp32`` / ``fp16`` / ``bf16`` load the weights in that type; ``fp16-autocast`` keeps fp32 weights and runs the
    forward pass under CUDA fp16 autocast (BMRetriever in the paper's code; a no-op on CPU, as
    ``torch.cuda.amp.autocast`` is); ``auto`` is the checkpoint's own dtype (``from_pretrained(dtype="auto")``;
    GritLM in the paper's code).
    """

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP16_AUTOCAST = "fp16-autocast"
    AUTO = "auto"


#: Other spellings accepted for a :class:`Dtype` (torch's names).
DTYPE_ALIASES: dict[str, Dtype] = {
    "float32": Dtype.FP32,
    "float16": Dtype.FP16,
    "half": Dtype.FP16,
    "bfloat16": Dtype.BF16,
}
#: Every spelling of a dtype the command line accepts (the names, then the aliases).
DTYPE_SPELLINGS: tuple[str, ...] = (*(d.value for d in Dtype), *DTYPE_ALIASES)


def choices_of(enum: type[StrEnum]) -> str:
    """The values of ``enum`` for an error message: ``cls, mean, last-token``."""
    return ", ".join(member.value for member in enum)
