"""Model weights that do not cover what runs are refused: no score from freshly random tensors.

``transformers`` builds whatever architecture it is asked for and initialises at random every tensor the
checkpoint lacks (a bi-encoder folder loaded as a cross-encoder gets a random classifier head), with only a
load report on stderr to say so.  Every local model r2med loads goes through :func:`load_pretrained` (the
loader's own loading info, ``output_loading_info=True``) or, where a library loads it out of reach
(sentence-transformers), :func:`recording_loads` (the same info, recorded as ``transformers`` reports it);
a model with missing or newly initialised tensors is an :class:`IncompleteWeights` error -- one line naming
the model and the tensors, exit 2 at the CLI, before anything is scored or written.

Tests with tiny random models that deliberately leave a head random opt out with :func:`allowing_random_init`,
``$R2MED_ALLOW_RANDOM_INIT=1`` or the CLI's ``--allow-random-init`` (the tensors are then logged as a warning).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from ..errors import R2MedError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT")

ALLOW_ENV = "R2MED_ALLOW_RANDOM_INIT"
_ALLOW: contextvars.ContextVar[bool | None] = contextvars.ContextVar("r2med_allow_random_init", default=None)
_SHOWN_TENSORS = 4
_RECORDING = threading.RLock()  # one recorded load at a time (the recorder replaces a module-level function)
#: the ``transformers.modeling_utils`` function that transformers >= 5 reports loading info to (by name:
#: modeling_utils imports it without re-exporting it, so its typing does not list it)
_LOAD_REPORT = "log_state_dict_report"


class IncompleteWeights(R2MedError):
    """A model whose checkpoint lacks tensors its architecture runs (they would be random)."""


def random_init_allowed() -> bool:
    """Whether models with random tensors may run: :func:`allowing_random_init` if active, else the environment."""
    value = _ALLOW.get()
    if value is not None:
        return value
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def allowing_random_init(allow: bool = True) -> Iterator[None]:
    """Within the block, models with missing tensors load (``allow=True``, with a warning) or are refused."""
    token = _ALLOW.set(allow)
    try:
        yield
    finally:
        _ALLOW.reset(token)


def _listed(value: object) -> Iterable[object]:
    """A loading info's list of tensor names (anything else, None included: none)."""
    return value if isinstance(value, Iterable) else ()


def missing_tensors(info: Mapping[str, object]) -> list[str]:
    """The tensors a ``transformers`` loading info says were initialised at random: missing ones, and
    mismatched ones (a checkpoint tensor of another shape, replaced), marked so."""
    missing = sorted(str(key) for key in _listed(info.get("missing_keys")))
    mismatched = sorted(
        str(key[0] if isinstance(key, (tuple, list)) else key) for key in _listed(info.get("mismatched_keys"))
    )
    return missing + [f"{key} (other shape in the checkpoint)" for key in mismatched]


def check_complete(model: str, what: str, tensors: Iterable[str]) -> None:
    """Refuse ``model`` (an :class:`IncompleteWeights` naming it and ``tensors``) unless random init is allowed."""
    tensors = list(tensors)
    if not tensors:
        return
    shown = ", ".join(tensors[:_SHOWN_TENSORS]) + (
        f" and {len(tensors) - _SHOWN_TENSORS} more" if len(tensors) > _SHOWN_TENSORS else ""
    )
    if random_init_allowed():
        log.warning(
            "%s %s: %d tensor(s) not in its checkpoint, initialised at random (allowed): %s",
            what,
            model,
            len(tensors),
            shown,
        )
        return
    raise IncompleteWeights(
        f"{what} {model!r} lacks {len(tensors)} tensor(s) it would run with random values "
        f"({shown}): it is not a model of this kind (--allow-random-init, for tests only)"
    )


class _OwnLoadReport(logging.Filter):
    """Drops ``transformers``' own load report (r2med reports, or refuses, the same tensors in one line),
    collecting the tensors a ``transformers`` < 5 "newly initialized" warning names into ``found``."""

    MARKS = ("LOAD REPORT", "were not initialized from the model checkpoint", "newly initialized")
    _KEYS = re.compile(r"newly initialized: \[([^\]]*)\]")

    def __init__(self, found: list[str] | None = None) -> None:
        super().__init__()
        self.found = found

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        match = self._KEYS.search(message)
        if match and self.found is not None:
            self.found.extend(k.strip().strip("'\"") for k in match.group(1).split(",") if k.strip())
        return not any(mark in message for mark in self.MARKS)


@contextlib.contextmanager
def _own_load_report(found: list[str] | None = None) -> Iterator[None]:
    logger = logging.getLogger("transformers.modeling_utils")
    own = _OwnLoadReport(found)
    logger.addFilter(own)
    try:
        yield
    finally:
        logger.removeFilter(own)


#: a ``transformers`` auto class's ``from_pretrained`` (``AutoModel.from_pretrained`` ...): with
#: ``output_loading_info=True`` it gives the model and its loading info, which its (untyped) return does not say
Loader = Callable[..., object]


def pretrained_with_gaps(load: Loader, name: str, **kwargs: object) -> tuple[PreTrainedModel, list[str]]:
    """``load(name, **kwargs)`` (an ``AutoModel...`` class's ``from_pretrained``) and the tensors it initialised
    at random (:func:`missing_tensors`), for a caller that fills some from elsewhere (a peft adapter)."""
    from transformers import PreTrainedModel

    with _own_load_report():
        loaded = load(name, output_loading_info=True, **kwargs)
    match loaded:
        case (PreTrainedModel() as model, Mapping() as info):
            return model, missing_tensors(info)
    given = type(loaded).__name__
    raise TypeError(f"{name}: from_pretrained(output_loading_info=True) gave {given}, not (model, info)")


def load_pretrained(load: Loader, name: str, what: str, **kwargs: object) -> PreTrainedModel:
    """``load(name, **kwargs)`` (a ``from_pretrained``), refused when tensors are missing (:func:`check_complete`)."""
    model, gaps = pretrained_with_gaps(load, name, **kwargs)
    check_complete(name, what, gaps)
    return model


@contextlib.contextmanager
def recording_loads(name: str, what: str) -> Iterator[None]:
    """Check every ``transformers`` model loaded inside the block (by a library that hides the loading info,
    such as sentence-transformers) as :func:`load_pretrained` does, after the block ends.

    The loading info is recorded where ``transformers`` >= 5 reports it (``log_state_dict_report``); older
    versions are read from their "newly initialized" warning.
    """
    from transformers import modeling_utils

    found: list[str] = []
    report = getattr(modeling_utils, _LOAD_REPORT, None)
    with _RECORDING:
        if report is not None:

            def recorded(*args: object, **kwargs: object) -> object:
                info = kwargs.get("loading_info")
                if info is not None:
                    found.extend(
                        missing_tensors(
                            {
                                "missing_keys": getattr(info, "missing_keys", ()),
                                "mismatched_keys": getattr(info, "mismatched_keys", ()),
                            }
                        )
                    )
                return report(*args, **kwargs)

            setattr(modeling_utils, _LOAD_REPORT, recorded)
        try:
            with _own_load_report(found):
                yield
        finally:
            if report is not None:
                setattr(modeling_utils, _LOAD_REPORT, report)
    check_complete(name, what, dict.fromkeys(found))


def load_adapter(adapter: str, what: str, base_missing: Iterable[str], load: Callable[[], ModelT]) -> ModelT:
    """``load()`` (``PeftModel.from_pretrained`` of ``adapter`` onto a base model), refused when tensors stay
    random: the base's missing ones the adapter file does not hold (RankLLaMA's score head comes from its
    adapter, not from Llama-2), and the adapter tensors peft reports missing."""
    from peft.utils import load_peft_weights

    held = {key.removeprefix("base_model.model.") for key in load_peft_weights(adapter)}
    gaps = [key for key in base_missing if key not in held]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load()
    for warning in caught:
        text = str(warning.message)
        if "missing adapter keys" in text:
            gaps.append(f"adapter tensors {text.partition('checkpoint: ')[2].rstrip('.') or text}")
        else:  # not ours: shown as they would have been
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    check_complete(adapter, what, gaps)
    return model
