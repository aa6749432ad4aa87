"""The registry of retrievers: one :class:`RetrieverMeta` per name holds every fact about a retriever.

Every consumer asks the registry rather than testing names: the command line (which options a
retriever takes), query expansion (its family), ``reproduce`` (GPU, API key, packages, weights),
the leaderboard (tolerance to the published figures, the paper's precision), Ray (whether a cell
wants a GPU) and ``r2med models`` (its settings).  A retriever is added by registering its record
(:func:`register_retriever`); the built-in ones register when their module is imported: BM25
(:mod:`.bm25`), the dense presets -- one record per entry of the preset data (:mod:`.presets`) --
any embedding model (:mod:`.dense`), and the embedders published on R2MED after the paper
(:mod:`.later`, from ``protocol/later_models.json``) and BRIGHT's retrievers r2med had no preset for
(:mod:`.bright_presets`, from ``protocol/bright_models.json``).  A record's ``contamination`` is looked up by its
checkpoint in ``protocol/bright_contamination.json`` (models trained on data rebuilt from BRIGHT's documents).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from ..errors import OptionError, did_you_mean, shown
from ..infra.json_types import JsonObject, JsonValue
from ..infra.records import record_from
from ..infra.registry import TOLERANCES, Registry
from ..protocol.bright import Contamination, contamination_of
from ..typed.parse import Origin, RetrieverOptions, parse
from .base import Retriever, as_retriever

#: What builds a retriever: ``factory(task, options)``, ``options`` parsed by the record's options type (a
#: factory reads them as its own with :func:`options_as`); it returns a :class:`~r2med.retrieval.base.Retriever`
#: (a :class:`~r2med.retrieval.base.BaseRetriever` subclass has the capabilities' defaults)
RetrieverFactory = Callable[[str | None, RetrieverOptions], Retriever]
OptionsType = TypeVar("OptionsType", bound=RetrieverOptions)
#: How an expansion joins a retriever's query (:func:`r2med.expansion.combine.combine`).
RetrieverFamily = Literal["lexical", "dense"]

#: The Python packages a local dense model needs, and how to install them.
DENSE_EXTRA = (("torch", "transformers", "sentence_transformers"), "pip install 'r2med[dense]'")


@dataclass(frozen=True)
class RetrieverMeta:
    """Every fact about one retriever (as mteb's ``ModelMeta``)."""

    name: str
    factory: RetrieverFactory  # factory(task, options) -> Retriever
    description: str = ""
    #: "lexical" or "dense": how an expansion joins the query (:mod:`r2med.expansion.combine`)
    family: RetrieverFamily = "dense"
    #: the type of its options (:mod:`r2med.typed.options`): what ``r2med evaluate``, a ``[[retrievers]]`` table
    #: and :func:`make_retriever` may set, with its constraints and defaults
    options: type[RetrieverOptions] = RetrieverOptions
    #: the paper's values of stored configuration fields: a run with another value is not the published one
    paper: Mapping[str, JsonValue] = field(default_factory=dict)
    #: options that change what a preset computes: a run that sets any is not the published one
    overrides: tuple[str, ...] = ()
    #: the model weights it loads (None: none, or the user's --model)
    hub_id: str | None = None
    #: an embedding API: the environment variable holding its key
    api_key_env: str | None = None
    #: too large for a CPU in reasonable time: its size ("7B")
    needs_gpu: str | None = None
    #: runs its hub repository's own code: a run must opt in (``--trust-remote-code``)
    trust_remote_code: bool = False
    #: (modules it imports, how to install them); None: the core install suffices
    extra: tuple[tuple[str, ...], str] | None = None
    #: class of its default tolerance to the published figures (:data:`~r2med.infra.registry.TOLERANCES`)
    tolerance: str = "dense"
    #: the precision the published code ran it with (dense presets; its similarity is in ``paper``)
    paper_dtype: str | None = None
    #: the precision the published code falls back to on a CPU (a run in it still is the published one)
    cpu_dtype: str | None = None
    #: its settings for ``r2med models``
    summary: Mapping[str, JsonValue] = field(default_factory=dict)
    #: an option whose value names the result (``dense`` with ``--model X``: ``dense-X``), so two models differ
    named_after: str | None = None
    #: the name of its published figures' retriever in ``protocol/r2med_published_ndcg10.csv`` when it is
    #: not ``name`` (``ReasonEmbed-Qwen3-8B`` for ``reasonembed-qwen3-8b``)
    published_as: str | None = None
    #: published on R2MED after the paper (``r2med models``: "later work")
    later: bool = False
    #: where its settings come from, for display: its published row and average, the source of each
    #: setting, what could not be found (gaps), whether r2med assumed them (``protocol/later_models.json``)
    provenance: JsonObject = field(default_factory=dict)
    #: the family whose settings its own are (``r2med``; ``bright`` for the presets defined from BRIGHT's records)
    home: str = "r2med"
    #: options its runs also recorded beside ``config.options`` before each fact was recorded once (BM25's k1 and b
    #: until issue 35): :meth:`upgrade_config` reads such a record as recorded once
    recorded_once: tuple[str, ...] = ()

    @property
    def contamination(self) -> tuple[Contamination, ...]:
        """What is known of its training data being rebuilt from a benchmark's documents (BRIGHT's: the tasks it
        touches, how, the sources), looked up by its checkpoint (:func:`r2med.protocol.bright.contamination_of`)."""
        return contamination_of(self.hub_id)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> RetrieverMeta:
        """The record of ``data`` (field -> value); a key that is no field is an error naming it."""
        return record_from(cls, data, f"retriever {data.get('name')!r}")

    @property
    def local_model(self) -> bool:
        """A neural model run on this machine (a GPU helps), as opposed to BM25 or an API."""
        return self.family == "dense" and self.api_key_env is None

    @property
    def default_tolerance(self) -> float | None:
        """public: the default |delta| (nDCG@10 x100) of its runs to the published figures (None: shown, not
        graded); a published configuration's own (its reranker's when it has one):
        :func:`r2med.results.published.tolerance_of`."""
        return TOLERANCES[self.tolerance]

    @property
    def defaults(self) -> dict[str, object]:
        """The values its options type gives the options a run does not set (BM25's k1, b, analyzer)."""
        return {k: v for k, v in self.options.model_construct().given().items() if k != "cache"}

    def upgrade_config(self, config: Mapping[str, JsonValue]) -> JsonObject:
        """A recorded evaluate ``config`` of this retriever with each fact once (a new dict; ``config`` is not
        changed): an option of :attr:`recorded_once` recorded beside ``options`` is read into ``options`` where they
        do not hold it (a record written before they did) and dropped where they agree; a copy that disagrees with
        them is kept, so such a record matches no run."""
        moved = [name for name in self.recorded_once if name in config]
        if not moved:
            return dict(config)
        given = config.get("options")
        options = dict(given) if isinstance(given, dict) else {}
        upgraded = dict(config)
        for name in moved:
            if name not in options:
                options[name] = upgraded.pop(name)
            elif options[name] == upgraded[name]:
                del upgraded[name]
        upgraded["options"] = options
        return upgraded

    def parse_options(self, options: Mapping[str, object], origin: Origin | None = None) -> RetrieverOptions:
        """``options`` as its options type (None: not set); a value it does not take is one
        :class:`~r2med.typed.parse.SpecError` line naming ``origin`` (default: ``make_retriever('<name>')``)."""
        return parse(self.options, options, origin or Origin.python(f"make_retriever({self.name!r})"))


#: the built-ins, then (``custom``, last) your own encoder and the packages' entry points (a built-in name wins)
RETRIEVERS: Registry[RetrieverMeta] = Registry(
    "retriever", __package__, ["bm25", "dense", "later_presets", "bright_presets", "custom"]
)


#: Add a retriever's record (a different record under a registered name is an error).
register_retriever = RETRIEVERS.add
#: Every registered retriever's record by name, in name order.
all_retrievers = RETRIEVERS.all
#: Name -> description of every registered retriever.
available_retrievers = RETRIEVERS.descriptions


def retriever_meta(name: str) -> RetrieverMeta:
    """The record of ``name``; an unknown name is a one-line error listing the known ones."""
    meta = RETRIEVERS.get(name)
    if meta is None:
        raise OptionError(
            f"unknown retriever {shown(name)}{did_you_mean(name, RETRIEVERS.all())}; "
            f"choose from: {', '.join(RETRIEVERS.all())}"
        )
    return meta


def make_retriever(
    name: object, task: str | None = None, options: RetrieverOptions | None = None, **values: object
) -> Retriever:
    """Build the retriever registered as ``name`` for ``task``, with ``options`` (its options type) or the
    keyword ``values`` parsed into it (None: not set): a value it does not take is one typed
    :class:`~r2med.typed.parse.SpecError` naming the argument, before anything loads.

    ``name`` may also be your own encoder (an object with ``encode(texts, role)``, or its class or factory):
    the ``custom`` retriever over it (:mod:`r2med.retrieval.custom`)."""
    if not isinstance(name, str):
        values = {"encoder": name, **values}
        name = "custom"
    meta = retriever_meta(name)
    if options is None:
        options = meta.parse_options(values)
    elif values:
        raise OptionError("make_retriever: pass the options as one options object or as keywords, not both")
    elif not isinstance(options, meta.options):
        raise OptionError(f"make_retriever({name!r}): options must be {meta.options.__name__}")
    return as_retriever(meta.factory(task, options), meta.name)


def options_as(options: RetrieverOptions, kind: type[OptionsType]) -> OptionsType:
    """A factory's ``options`` as its own options type ``kind`` (what :func:`make_retriever` checked: any other
    type is a caller's mistake, one line)."""
    if not isinstance(options, kind):
        raise OptionError(f"expected {kind.__name__} options, got {type(options).__name__}")
    return options
