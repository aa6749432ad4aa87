"""Options shared by the commands, and the validation of numeric options.

* The options several commands take (``--tasks``, ``--data-dir``, ``--revision``, ``--measure``...)
  are defined once, as ``Annotated`` types (``tasks: Tasks = "all"``).
* Each option with a fixed set of values (``--similarity``, ``--pooling``, ``--dtype``, ``--method``...) is an
  :class:`EnumChoice` of the enum that owns the values: ``--help`` shows them, and a value outside them is refused
  while the command line is parsed, naming the option and listing the choices (exit code 2).
* A numeric option that sets a field of a step spec (``--k1``, ``--top-k``, ``--max-length``...) reads its text
  with :func:`as_given` (``typer.Option(None, "--k1", parser=as_given)``): a number as that number, any other text
  as text, so the value reaches the one parse as typed and is refused there in the spec's own words, as the same
  value in a file or in Python is (``--k1: expected a finite number >= 0, got 'high'``).
* Every other numeric option names its range with one of the callbacks below
  (``typer.Option(100, "--permutations", callback=at_least(100))``), so a non-finite value (``nan``, ``inf``,
  ``1e999``) or one out of range is refused while the command line is parsed, before any data is
  loaded: a one-line error naming the option, exit code 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import click
import typer

from ..errors import R2MedError
from ..infra.home import parse_json
from ..report.format import REPORT_FORMAT_ALIASES, ListingFormat, ReportFormat, ScoreFormat
from ..runs.fusion_choices import FusionMethod, Normalisation
from ..typed.dense_choices import DTYPE_ALIASES, Dtype, Similarity
from ..typed.dense_choices import Pooling as PoolingName
from ..typed.expansion_choices import ExpansionMethod, method_spelling
from ..typed.lexical_choices import ANALYZER_ALIASES, AnalyzerName

if TYPE_CHECKING:
    from ..infra.json_types import JsonValue
    from ..typed.parse import Spec

#: a typer callback: the context, the option, its value -> the value the command receives
Callback = Callable[[click.Context, click.Parameter, object], object]
NumberT = TypeVar("NumberT")


class EnumChoice:
    """A choice of a ``StrEnum``'s values that gives the member (a plain ``str`` subclass).

    Used as ``typer.Option(..., metavar=choice.choices_metavar, callback=choice.callback)`` (this typer takes no
    click type): ``--help`` shows ``[cosine|dot]``, and a value outside the choices is refused while the command line
    is parsed, in one line naming the option and listing the choices (exit code 2):
    ``--similarity: unknown similarity 'x'; choose from: cosine, dot``.
    ``normalize`` is applied to the given text first (case, spelling); a value in ``aliases`` (other spellings the
    owner of the enum accepts) passes through as given, so that the code behind reads and records it as before.
    """

    def __init__(
        self,
        enum: type[StrEnum],
        what: str,
        aliases: Mapping[str, object] | None = None,
        normalize: Callable[[str], str] | None = None,
    ) -> None:
        self.enum = enum
        self.what = what
        self.aliases = dict(aliases or {})
        self.normalize = normalize

    def convert(self, value: str, option: str = "") -> str:
        """The member ``value`` names (an alias as given), else a one-line :class:`R2MedError` listing the choices."""
        if isinstance(value, self.enum):
            return value
        text = self.normalize(value) if self.normalize else value
        if text in self.aliases:
            return value
        for member in self.enum:
            if member.value == text:
                return member
        listed = ", ".join(member.value for member in self.enum)
        prefix = f"{option}: " if option else ""
        raise R2MedError(f"{prefix}unknown {self.what} {value!r}; choose from: {listed}")

    @property
    def choices_metavar(self) -> str:
        """The choices as ``--help`` shows them: ``[cosine|dot]``."""
        return "[" + "|".join(member.value for member in self.enum) + "]"

    def callback(self, ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        """A typer callback checking the option's value (``None``, an unset option, passes)."""
        if value is None or ctx.resilient_parsing:
            return value
        return self.convert(value, _option_name(param))


def describe(
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
) -> str:
    """The accepted range in words, as the one parse says it (:func:`r2med.typed.parse.range_words`):
    ``a finite number between 0 and 1``, ``an integer >= 1``."""
    from ..typed.parse import range_words

    return ("an integer" if integer else "a finite number") + range_words(lo, hi, lo_open, hi_open)


def check_number(
    value: NumberT,
    what: str,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> NumberT:
    """``value`` if it is finite and within the range, else a one-line :class:`R2MedError` naming ``what``, in the
    words of the one parse (``--k1: expected a finite number >= 0, got nan``)."""
    integer = isinstance(value, int) and not isinstance(value, bool)
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (lo is None or (value > lo if lo_open else value >= lo))
        and (hi is None or (value < hi if hi_open else value <= hi))
    )
    if not ok:
        raise R2MedError(f"{what}: expected {describe(lo, hi, lo_open, hi_open, integer)}, got {value!r}")
    return value


def _option_name(param: click.Parameter) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(getattr(param, "opts", []))
    return max(opts, key=len) if opts else str(param.name)


def number(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False) -> Callback:
    """A typer callback accepting a finite value in the range (``None``, an unset option, passes)."""

    def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
        if value is None or ctx.resilient_parsing:
            return value
        return check_number(value, _option_name(param), lo, hi, lo_open, hi_open)

    return callback


def as_given(text: str) -> int | float | str:
    """A command-line value as written, for the one parse to check (:mod:`r2med.typed.parse`): an integer literal as
    the integer (``10``), any other number as the float (``10.5``, ``1e3``, ``nan``, ``inf``), other text as the
    text (``high``) -- as a file's ``top_k = 10.5`` or ``k1 = "high"`` reaches it."""
    if not isinstance(text, str):  # a default, or a value given in Python
        return text
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            continue
    return text


AT_LEAST_1 = number(lo=1)
"""Counts: top-k, batch size, concurrency, turns..."""
AT_LEAST_0 = number(lo=0)
"""Non-negative: BM25 k1, RRF k, retries, seeds, tolerances."""
POSITIVE = number(lo=0, lo_open=True)
"""Strictly positive: timeouts, CPUs per actor."""
UNIT = number(lo=0, hi=1)
"""A share in [0, 1]: BM25 b."""
OPEN_UNIT = number(lo=0, hi=1, lo_open=True, hi_open=True)
"""A probability strictly between 0 and 1: significance level."""
TOP_P = number(lo=0, hi=1, lo_open=True)
"""Nucleus sampling mass in (0, 1]."""
TEMPERATURE = number(lo=0, hi=2)
"""Sampling temperature in [0, 2] (the OpenAI API's range)."""


def at_least(lo: float) -> Callback:
    return number(lo=lo)


def parse_set(values: list[str] | None) -> dict[str, JsonValue]:
    """``--set key=value`` pairs; values are read as JSON when they parse (numbers, true/false, quoted text, lists),
    else as :func:`as_given` reads a flag's (``nan`` a number, ``high`` text), and checked by the one parse as a
    file's values are (``--set k1=NaN``: ``--k1: expected a finite number >= 0, got nan``)."""
    options: dict[str, JsonValue] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise R2MedError(f"--set expects key=value, got {item!r}")
        try:  # the one JSON reader: malformed, or nested too deeply to walk, is read as a flag's text is
            parsed = parse_json(value)
        except ValueError:
            parsed = as_given(value)
        options[key.strip().replace("-", "_")] = parsed
    return options


def with_set(values: Mapping[str, object], pairs: list[str] | None, step: type[Spec], runs: str) -> dict[str, object]:
    """``values`` (a command's options, None where not given) with the ``--set key=value`` pairs added.

    ``--set`` sets the options of what the step runs (``runs``: "retriever", "reranker") and nothing else: a key of
    the step itself, its data or its output (:func:`r2med.steps.step_flags`: ``qrels``, ``revision``, ``output``,
    ``out``) is a one-line error naming the flag that sets it -- it would otherwise reach the step unchecked by
    the command (``output.out`` written where ``--out`` was not checked) or be ignored.  A key that its own flag
    also set is a one-line error (one value per option)."""
    from ..steps import step_flags

    flags = step_flags(step)
    merged = dict(values)
    for key, value in parse_set(pairs).items():
        flag = flags.get(key)
        if flag is not None:
            model = "; a model's own commit is --set model_revision=<commit>" if key == "revision" else ""
            raise R2MedError(f"--set {key}: --set sets the {runs}'s options only; {key} is set by {flag}{model}")
        if merged.get(key) is not None:
            raise R2MedError(f"--set {key}: also given by its own flag; give it once")
        merged[key] = value
    return merged


#: the retriever's own options a command that runs one (``evaluate``, ``serve``) takes by flags of their own, each
#: parameter named as the option it sets, in the order they reach the parse (``--no-cache`` is ``cache``: below)
RETRIEVER_OPTION_FLAGS = (
    "k1",
    "b",
    "analyzer",
    "model",
    "batch_size",
    "device",
    "max_length",
    "pooling",
    "similarity",
    "dtype",
    "trust_remote_code",
    "medcpt_published",
    "encoder",
)


def retriever_options(ctx: typer.Context) -> dict[str, object]:
    """The retriever's own options as the command's flags give them (None: not set, its options type's default):
    ``cache`` (``--no-cache``: false), then each of :data:`RETRIEVER_OPTION_FLAGS` the command takes, an on/off
    flag left off being not set.  The one list of those values ``evaluate`` and ``serve`` share, read from the
    values the command line parsed (``ctx.params``: typer passes them to the command as they are)."""
    params = ctx.params
    values: dict[str, object] = {"cache": False if params.get("no_cache") else None}
    for name in RETRIEVER_OPTION_FLAGS:
        if name in params:
            value = params[name]
            values[name] = None if value is False else value
    return values


def parse_weights(text: str | None) -> list[float] | None:
    """``--weights 1,0.5`` -> [1.0, 0.5] (each finite and non-negative, one above 0)."""
    if not text:
        return None
    try:
        weights = [check_number(float(w), "--weights", lo=0) for w in text.split(",")]
    except ValueError:
        raise R2MedError(f"--weights must be comma-separated numbers, got {text!r}") from None
    if not any(weights):
        raise R2MedError("--weights: at least one weight must be above 0")
    return weights


def comma_list(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


# -- options several commands take ---------------------------------------------------------------

REVISION_HELP = (
    "Hub data revision: default each task's pinned commit (`r2med tasks`); 'main', one commit, "
    "or TASK=REV pairs (Biology=main,MedQA-Diag=<commit>)."
)

Tasks = Annotated[
    str,
    typer.Option(
        "--tasks",
        "-t",
        help="Comma-separated task names: R2MED's (all or r2med: its 8) and BRIGHT's bright:<task> (bright: its 12).",
    ),
]
LongDocuments = Annotated[
    bool,
    typer.Option(
        "--long-documents",
        help="BRIGHT's long-document setting: long_documents, judged by gold_ids_long (results: bright:<task>:long).",
    ),
]
QrelsFile = Annotated[
    Path | None,
    typer.Option(
        "--qrels",
        help="Judge with this qrels file instead of the task's own (one task; recorded by hash, never graded).",
    ),
]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", "-d", help="Local data: one collection folder, or a folder of task folders."),
]


def _split_callback(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from ..data.loaders import check_split

    return value if ctx.resilient_parsing else check_split(value)


Split = Annotated[
    str,
    typer.Option(
        "--split",
        callback=_split_callback,
        metavar="test|dev|train",
        help="BEIR folders: the judgments qrels/<split>.tsv and their queries (recorded in the results).",
    ),
]
RecordedDataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", "-d", help="Local data (default: the source recorded in the run folders, else the hub)."
    ),
]
Revision = Annotated[str | None, typer.Option("--revision", help=REVISION_HELP)]
Measure = Annotated[str, typer.Option("--measure", "-m", help="The measure: nDCG@10, R@100, MRR, MAP@10, P@10...")]
RUNS_HELP = "Results: a results root (--out: every system in it), system folders (OUT/<system>) or task folders."
Runs = Annotated[list[Path], typer.Argument(help=RUNS_HELP)]
CompareRuns = Annotated[
    list[Path], typer.Argument(help=RUNS_HELP.removesuffix(".") + "; the first system is the baseline.")
]
Measures = Annotated[
    list[str] | None,
    typer.Option(
        "--measure",
        "-m",
        help="Table columns (repeatable; default nDCG@10): nDCG@10, R@100, MRR, MAP@10, P@10... "
        "metrics.json always stores the default set plus these.",
    ),
]
Out = Annotated[Path, typer.Option("--out", "-o", help="Results root: OUT/<system>/<task>/ is written.")]
InputsOut = Annotated[
    Path | None,
    typer.Option(
        "--out", "-o", help="Results root: OUT/<system>/<task>/ is written (default: the root the first input is in)."
    ),
]
LISTING_FORMAT_CHOICE = EnumChoice(ListingFormat, "format", normalize=str.lower)
"""``--format`` of the listings: table or json, in any case (``tasks``, ``cache``)."""
LISTING_FORMAT_EXACT = EnumChoice(ListingFormat, "format")
"""``--format`` of ``models`` and ``reproduce``: table or json, as written."""
SCORE_FORMAT_CHOICE = EnumChoice(ScoreFormat, "format", normalize=str.lower)
"""``--format`` of ``score``: trec or json, in any case."""


class TieRuleName(StrEnum):
    """``--ties``: how equal scores are ordered when a run is scored (:data:`r2med.evaluation.ties.TIE_RULES`)."""

    TREC_EVAL = "trec_eval"
    LISTED = "listed"


TIES_CHOICE = EnumChoice(TieRuleName, "tie rule", normalize=str.lower)
TieRuleOption = Annotated[
    str,
    typer.Option(
        "--ties",
        metavar=TIES_CHOICE.choices_metavar,
        callback=TIES_CHOICE.callback,
        help="How equal scores are ordered: trec_eval's rule (by document id; the default, as every published "
        "figure r2med grades) or listed (the run's own order, as BRIGHT's and RaDeR's code cut their lists; "
        "recorded, never graded against figures made by trec_eval's rule).",
    ),
]
REPORT_FORMAT_CHOICE = EnumChoice(ReportFormat, "format", aliases=REPORT_FORMAT_ALIASES, normalize=str.lower)
FormatJson = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        metavar=LISTING_FORMAT_CHOICE.choices_metavar,
        callback=LISTING_FORMAT_CHOICE.callback,
        help="table or json.",
    ),
]
JsonAlias = Annotated[bool, typer.Option("--json", hidden=True, help="Same as --format json.")]
Wide = Annotated[
    bool,
    typer.Option("--wide", help="Every column at full width (default: fit the terminal, 80 columns when not on one)."),
]
CountMissing = Annotated[
    bool, typer.Option("--count-missing", help="Average over all judged queries (0 if unanswered).")
]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Recompute tasks whose results already exist.")]
NoCache = Annotated[
    bool, typer.Option("--no-cache", help="Do not read or write r2med's caches (indexes, embeddings, LLM answers).")
]
ResultName = Annotated[
    str | None,
    typer.Option("--name", help="Result folder name and run tag, no spaces or slashes (default: from the inputs)."),
]
Model = Annotated[str | None, typer.Option("--model", help="Dense: embedding model (hub id or local folder).")]
BatchSize = Annotated[
    int | None,
    typer.Option("--batch-size", callback=AT_LEAST_1, help="Texts (or pairs) per batch (of the longest)."),
]
Device = Annotated[
    str | None, typer.Option("--device", help="auto (default: the GPU if present), cpu, cuda, cuda:1...")
]
MaxLength = Annotated[int | None, typer.Option("--max-length", callback=at_least(2), help="Max tokens per text.")]
#: a step command's ``--batch-size`` / ``--max-length``: the value reaches the spec as given (:func:`as_given`)
StepBatchSize = Annotated[
    int | None, typer.Option("--batch-size", parser=as_given, help="Texts (or pairs) per batch (of the longest).")
]
StepMaxLength = Annotated[int | None, typer.Option("--max-length", parser=as_given, help="Max tokens per text.")]
POOLING_CHOICE = EnumChoice(PoolingName, "pooling")
SIMILARITY_CHOICE = EnumChoice(Similarity, "similarity")
Pooling = Annotated[
    str | None,
    typer.Option(
        "--pooling",
        metavar=POOLING_CHOICE.choices_metavar,
        callback=POOLING_CHOICE.callback,
        help="Dense: cls, mean or last-token.",
    ),
]
SimilarityOption = Annotated[
    str | None,
    typer.Option(
        "--similarity",
        metavar=SIMILARITY_CHOICE.choices_metavar,
        callback=SIMILARITY_CHOICE.callback,
        help="Dense: cosine (the paper's, the default) or dot.",
    ),
]
DTYPE_CHOICE = EnumChoice(Dtype, "dtype", aliases=DTYPE_ALIASES, normalize=str.lower)
"""``--dtype``: fp32, fp16, bf16, fp16-autocast or auto, in any case (torch's names ``float16``... accepted)."""
ANALYZER_CHOICE = EnumChoice(AnalyzerName, "analyzer", aliases=ANALYZER_ALIASES)
FUSION_METHOD_CHOICE = EnumChoice(FusionMethod, "fusion method")
NORMALISATION_CHOICE = EnumChoice(Normalisation, "normalisation")
EXPANSION_METHOD_CHOICE = EnumChoice(ExpansionMethod, "expansion method", normalize=method_spelling)
TrustRemoteCode = Annotated[
    bool, typer.Option("--trust-remote-code", help="Dense: allow models that run their own code (NV-Embed-v2).")
]
#: a retriever's BM25 and dense options, as every command that runs one (``evaluate``, ``serve``) declares them
K1 = Annotated[float | None, typer.Option("--k1", parser=as_given, help="BM25 k1 (default: the paper's 0.9).")]
B = Annotated[float | None, typer.Option("--b", parser=as_given, help="BM25 b, 0 to 1 (default: the paper's 0.4).")]
AnalyzerOption = Annotated[
    str | None,
    typer.Option(
        "--analyzer",
        metavar=ANALYZER_CHOICE.choices_metavar,
        callback=ANALYZER_CHOICE.callback,
        help="BM25 analyzer: english (pure Python, the default) or lucene.",
    ),
]
DenseDtype = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        metavar=DTYPE_CHOICE.choices_metavar,
        callback=DTYPE_CHOICE.callback,
        help="Dense: bf16, fp16 or fp32 (default: the paper's per preset, fp32 for other models).",
    ),
]
Ray = Annotated[
    bool,
    typer.Option(
        "--ray", help="Run on Ray (extra 'scale'): a private local cluster, or the one at --ray-address / $RAY_ADDRESS."
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        envvar="RAY_ADDRESS",
        help="With --ray: auto, host:port or ray://host:10001 (default: start a local cluster).",
    ),
]
Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse data files with repeated ids or judgments (default: keep the last, as the paper's loader).",
    ),
]
Format = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        metavar=REPORT_FORMAT_CHOICE.choices_metavar,
        callback=REPORT_FORMAT_CHOICE.callback,
        help="Output: table (terminal), markdown, csv, latex or json.",
    ),
]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file instead of stdout.")]
Permutations = Annotated[
    int, typer.Option("--permutations", callback=at_least(100), help="Randomisation test permutations.")
]
Seed = Annotated[int, typer.Option("--seed", callback=AT_LEAST_0, help="Seed of the randomisation test and bootstrap.")]
Alpha = Annotated[float, typer.Option("--alpha", callback=OPEN_UNIT, help="Significance level.")]
Tolerance = Annotated[
    float | None,
    typer.Option(
        "--tolerance",
        callback=AT_LEAST_0,
        help="Allowed |delta| to the published figure (x100); default by retriever kind.",
    ),
]
BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, ...); default: OpenAI.")
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="OPENAI_API_KEY", show_envvar=True, help="API key (not needed for local endpoints)."
    ),
]
