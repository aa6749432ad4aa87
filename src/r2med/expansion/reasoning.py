"""BRIGHT's reasoning query sets as an expansion: ``-e reason:<llm>`` searches with the LLM's reasoning in place of
the query, as BRIGHT's ``run.py --reasoning <llm>`` does.

BRIGHT's hub holds, per task, the examples rewritten by five LLMs (configs ``gpt4_reason``, ``llama3-70b_reason``,
``claude-3-opus_reason``, ``Gemini-1.0_reason``, ``grit_reason``): each row's ``query`` is the LLM's reasoning
about the original query (BRIGHT reason.py:157-165), and BRIGHT's run.py:39-40 and 63 search with it alone -- the
reasoning *replaces* the query (no combination with it, unlike R2MED's HyDE/Query2doc rule).  The judgments and the
exclusions stay the example's (r2med reads them from ``examples``; BRIGHT's code reads the copies the reasoning
rows carry, and a row whose copy differs is counted in a warning).

A set is named by its LLM as BRIGHT's ``--reasoning`` takes it (``gpt4``, ``llama3-70b``, ``claude-3-opus``,
``Gemini-1.0``, ``grit``; case aside), read from the hub at the commit the task's data came from when the hub's
record does not show it absent there, else at BRIGHT's pin, which holds the five (``a75a0eb``, mteb's v1 pin, has
none): its commit (``revision``) and the file's fingerprint are recorded apart from the documents' commit.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..data import bright
from ..data.benchmarks import benchmark
from ..data.collection import Collection
from ..data.hub import snapshot_commit
from ..errors import R2MedError
from ..expansion_name import ExpansionName
from ..retrieval.base import QueryText

log = logging.getLogger(__name__)

#: The combination rule recorded with results: the reasoning replaces the query.
RULE = "replace"


class ReasoningQueries:
    """A ``QueryBuilder`` (:mod:`r2med.jobs.evaluate`): a BRIGHT task's queries replaced by one LLM's reasoning."""

    def __init__(self, llm: str, path: str | Path | None = None, strict: bool = False):
        self.strict = strict
        self.method = bright.REASON
        self.llm = bright.reasoning_name(llm)  # an unknown set is a one-line error listing the five
        #: one task's file of the set (``--expansion-file``: the hub config's parquet file of that task),
        #: read in place of the hub's -- offline, as ``hyde:mine --expansion-file`` is
        self.path = Path(path) if path is not None else None
        self.loaded: dict[str, Path] = {}

    def hub_expansion(self, task: str) -> ExpansionName | None:
        """``(reason, llm)``: the reasoning set is read from the hub (what :func:`r2med.data.check_hub` checks
        before any download; a task of another family refuses it there); None with a file of it given."""
        return None if self.path is not None else ExpansionName(self.method, self.llm)

    @property
    def label(self) -> str:
        """The results folder suffix: ``reason-<llm>`` (lower case: ``reason-gemini-1.0``)."""
        return f"{self.method}-{self.llm.lower()}"

    def describe(self, collection: Collection | None = None) -> dict[str, str]:
        """What decides the query texts, recorded as ``config["expansion"]``: the set, its rule (the reasoning
        replaces the query) and, once read for ``collection``, the file it came from."""
        described = {"method": self.method, "llm": self.llm, "rule": RULE}
        if collection is not None and collection.name in self.loaded:
            file = self.loaded[collection.name]
            described["file"] = str(file)
            commit = snapshot_commit(file)  # the reasoning set's own commit, apart from the documents'
            if commit:
                described["revision"] = commit
        return described

    def __call__(self, collection: Collection, family: str) -> dict[str, QueryText]:
        found = (
            benchmark(collection.benchmark).reasoning_queries(collection, self.llm, self.path, strict=self.strict)
            if collection.benchmark
            else None
        )
        if found is None:
            raise R2MedError(
                f"{collection.name}: {ExpansionName(self.method, self.llm).text} is one of BRIGHT's reasoning query "
                f"sets; {collection.name} is not a BRIGHT task"
            )
        texts, path = found
        self.loaded[collection.name] = path
        log.info("%s: queries replaced by %s's reasoning (%s)", collection.name, self.llm, path)
        return dict(texts)
