"""The special tokens around each text, on the tokenizer's side: named by text, resolved, built, checked, and
read from the tokenizer's own files.

A framing (:data:`.base.Framing`) names its tokens by their text (``"<s> {text} </s>"``): they are looked up
in the tokenizer's vocabulary, never taken from a role such as ``eos_token_id`` (Qwen3-Embedding's tokenizer
appends ``<|endoftext|>``, which its config calls the PAD token, while its EOS is ``<|im_end|>``).

* :func:`resolve` -- a framing's token texts as ids (a token the vocabulary lacks: one line);
* :func:`framed_ids` -- texts tokenized without special tokens, cut to the limit minus the framing's tokens,
  then those tokens put around them (the limit counts them, as a tokenizer's own truncation does);
* :func:`check_ids` -- the ids a library made (sentence-transformers tokenizes itself) against a framing;
* :func:`tokenizer_alone` -- what the tokenizer itself adds around a text, by text and id (``metrics.json``);
* :func:`file_framings` / :func:`tokenizers_own` -- what ``tokenizer_config.json`` (``add_bos_token`` /
  ``add_eos_token``) and ``tokenizer.json``'s post-processor each say, and the framing they agree on; where
  they disagree the framing depends on the library version that reads them (transformers < 5 built e5-mistral's
  ``<s> text </s>`` from its config, >= 5 reads ``<s> text`` from ``tokenizer.json``), so a run that follows
  the tokenizer stops with one line naming both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ...errors import R2MedError, shown
from ...infra.home import read_json
from ...infra.json_types import JsonObject, JsonValue
from .base import DOCUMENT, QUERY, TOKENIZER_FRAMING, Framing, framing_template, framing_tokens, pair_framing_tokens
from .files import model_file

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

#: Characters of a text used to read what a tokenizer adds around it (the special tokens do not depend on it).
_PROBE_CHARS = 200


def resolve(model: str, tok: PreTrainedTokenizerBase, framing: Framing, tokens: Sequence[str]) -> list[int]:
    """The ids of token texts ``tokens`` (of ``framing``) in ``tok``'s vocabulary, added tokens included; a
    text the vocabulary lacks is a one-line error naming it."""
    vocab = tok.get_vocab()
    missing = [t for t in tokens if t not in vocab]
    if missing:
        raise R2MedError(
            f"model {model!r}: its framing {shown(framing)} names the token {shown(missing[0])}, which its "
            "tokenizer's vocabulary lacks (this tokenizer is not the model's own)"
        )
    return [int(vocab[t]) for t in tokens]


def resolve_framing(model: str, tok: PreTrainedTokenizerBase, framing: Framing) -> tuple[list[int], list[int]]:
    """The ids before and after the text for a framing template."""
    before, after = framing_tokens(framing)
    return resolve(model, tok, framing, before), resolve(model, tok, framing, after)


def framed_ids(
    tok: PreTrainedTokenizerBase,
    texts: Sequence[str],
    before: Sequence[int],
    after: Sequence[int],
    max_length: int,
    framing: Framing,
) -> list[list[int]]:
    """Token ids of ``texts``: tokenized without special tokens, cut to ``max_length`` minus the framing's
    tokens, then ``before`` / ``after`` put around them."""
    room = max_length - len(before) - len(after)
    if room < 1:
        raise R2MedError(f"max_length {max_length} leaves no room for text beside the tokens of {shown(framing)}")
    body = tok(
        list(texts),
        add_special_tokens=False,
        truncation=True,
        max_length=room,
        padding=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )["input_ids"]
    return [[*before, *ids, *after] for ids in body]


def check_ids(
    model: str,
    ids: Sequence[int],
    before: Sequence[int],
    after: Sequence[int],
    framing: Framing,
    own: Sequence[int] = (),
) -> None:
    """One line, never a run, when a text's ids (unpadded, made by a library r2med does not drive) are not
    framed by exactly ``before`` ... ``after``: each at its end once, and no other token of those or of ``own``
    (the ids the tokenizer alone adds) next to them."""
    ids = list(ids)
    fits = len(ids) >= len(before) + len(after)
    body = ids[len(before) : len(ids) - len(after)] if fits else []
    framed = fits and ids[: len(before)] == list(before) and ids[len(ids) - len(after) :] == list(after)
    ends = {*before, *after, *own}
    stray = bool(body) and (body[0] in ends or body[-1] in ends)
    if not framed or stray:
        raise R2MedError(
            f"model {model!r}: its first text's token ids (starting {ids[:3]}, ending {ids[-3:]}) are not framed "
            f"{shown(framing)} (ids {list(before)} ... {list(after)}); r2med cannot repair them for this loader"
        )


def ends(tok: PreTrainedTokenizerBase, text: str) -> tuple[list[int], list[int]]:
    """The ids ``tok`` alone puts before and after ``text`` (its post-processor, as this library reads it)."""
    text = text[:_PROBE_CHARS]
    plain = list(tok(text, add_special_tokens=False)["input_ids"])
    full = list(tok(text)["input_ids"])
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start], full[start + len(plain) :]
    return full, []  # pragma: no cover - a post-processor that rewrites the text itself


@dataclass(frozen=True)
class TokensAround:
    """The special tokens before and after a text, each by its text and id (what ``metrics.json`` records)."""

    before: tuple[tuple[str, int], ...]
    after: tuple[tuple[str, int], ...]

    @property
    def framing(self) -> Framing:
        return framing_template([t for t, _ in self.before], [t for t, _ in self.after])

    @property
    def ids(self) -> tuple[list[int], list[int]]:
        """The ids before and after the text."""
        return [i for _, i in self.before], [i for _, i in self.after]

    def describe(self) -> JsonObject:
        """``{"framing": "<s> {text}", "before": [{"token": "<s>", "id": 1}], "after": []}``."""

        def listed(tokens: tuple[tuple[str, int], ...]) -> list[JsonValue]:
            return [{"token": text, "id": i} for text, i in tokens]

        return {"framing": self.framing, "before": listed(self.before), "after": listed(self.after)}


def described(tok: PreTrainedTokenizerBase, before: Sequence[int], after: Sequence[int]) -> TokensAround:
    """Tokens ``before`` and ``after`` a text by text and id."""

    def listed(ids: Sequence[int]) -> tuple[tuple[str, int], ...]:
        return tuple((str(tok.convert_ids_to_tokens(int(i))), int(i)) for i in ids)

    return TokensAround(listed(before), listed(after))


def tokenizer_alone(tok: PreTrainedTokenizerBase, text: str) -> TokensAround:
    """What ``tok`` itself adds around ``text`` (any special token, either end), by text and id."""
    return described(tok, *ends(tok, text))


# -- what the tokenizer's own files say ----------------------------------------------------------------------


@dataclass(frozen=True)
class FileFramings:
    """What each of a tokenizer's files says it puts around a text (``around = "text"``: an encoder's input) or a
    (query, document) pair (``"pair"``: a reranker's), and what this library gives: the one record of both."""

    #: ``tokenizer_config.json``'s ``add_bos_token`` / ``add_eos_token`` (the post-processor's side where a key
    #: is absent; for a pair, transformers' own template for them); None: neither key is there
    config: Framing | None
    #: ``tokenizer.json``'s post-processor (its single-text template, or its ``pair`` template); None: no such
    #: file, or a processor r2med cannot read
    post_processor: Framing | None
    #: what the tokenizer as loaded here adds
    loaded: Framing
    #: what the framings put tokens around: one text, or a (query, document) pair
    around: Literal["text", "pair"] = "text"

    @property
    def agree(self) -> bool:
        """Both files say the same (a file that says nothing agrees)."""
        return self.config is None or self.post_processor is None or self.config == self.post_processor

    @property
    def stated(self) -> Framing:
        """The framing the files agree on (the post-processor's, else the config's, else what loads)."""
        return self.post_processor or self.config or self.loaded

    def describe(self) -> JsonObject:
        """What ``metrics.json`` records of them (the run's ``tokenizer_files``)."""
        return {"tokenizer_config": self.config, "tokenizer_json": self.post_processor, "loaded": self.loaded}

    @classmethod
    def from_described(
        cls, described: Mapping[str, JsonValue], around: Literal["text", "pair"] = "text"
    ) -> FileFramings:
        """The record a run's ``tokenizer_files`` (:meth:`describe`) holds, read back."""
        config, post, loaded = (described.get(key) for key in ("tokenizer_config", "tokenizer_json", "loaded"))
        if not isinstance(loaded, str) or not all(v is None or isinstance(v, str) for v in (config, post)):
            raise R2MedError(f"tokenizer_files {shown(str(dict(described)))}: its framings must be templates")
        return cls(config if isinstance(config, str) else None, post if isinstance(post, str) else None, loaded, around)

    def disagreement(self, model: str) -> str:
        """The one line saying how its files disagree (what follows it says what a run does about it)."""
        return (
            f"model {model!r}: its tokenizer's files disagree on the special tokens around a {self.around} -- "
            f"tokenizer_config.json says {self.config!r}, tokenizer.json's post-processor {self.post_processor!r} "
            f"(this transformers gives {self.loaded!r}) -- and which one its published run saw is not recorded"
        )


def _token_text(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def _pieces(value: JsonValue) -> list[JsonValue]:
    """The items of a post-processor's list (its template's pieces, a sequence's processors); none: no list."""
    return value if isinstance(value, list) else []


def _special_token(piece: JsonObject) -> str:
    """The token text of a template's ``{"SpecialToken": {"id": "<s>", ...}}`` piece."""
    special = piece["SpecialToken"]
    return str(special.get("id") if isinstance(special, dict) else None)


def _processor_tokens(proc: JsonValue) -> tuple[list[str], list[str]] | None:
    """The token texts a ``tokenizer.json`` post-processor puts before / after a single text; None: unknown."""
    if proc is None:
        return [], []
    if not isinstance(proc, dict):
        return None
    kind = proc.get("type")
    if kind == "ByteLevel":
        return [], []
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls, sep = proc.get("cls"), proc.get("sep")
        if isinstance(cls, list) and isinstance(sep, list) and cls and sep:
            return [str(cls[0])], [str(sep[0])]
        return None
    if kind == "TemplateProcessing":
        before: list[str] = []
        after: list[str] = []
        seen_text = False
        for piece in _pieces(proc.get("single")):
            if not isinstance(piece, dict):
                return None
            if "Sequence" in piece:
                seen_text = True
            elif "SpecialToken" in piece:
                (after if seen_text else before).append(_special_token(piece))
            else:
                return None
        return before, after
    if kind == "Sequence":
        before, after = [], []
        for child in _pieces(proc.get("processors")):
            tokens = _processor_tokens(child)
            if tokens is None:
                return None
            before, after = [*before, *tokens[0]], [*after, *tokens[1]]
        return before, after
    return None


def _read_json(path: Path | None) -> JsonObject | None:
    if path is None:
        return None
    try:  # the one JSON reader: bad UTF-8, malformed or nested too deeply is a ValueError (the file says nothing)
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def file_framings(tok: PreTrainedTokenizerBase, source: str | None = None, revision: str | None = None) -> FileFramings:
    """What ``tok``'s files say (``source``: its folder or hub id, default the one it was loaded from)."""
    source = source or str(getattr(tok, "name_or_path", "") or "")
    probe = "r2med"
    loaded = described(tok, *ends(tok, probe)).framing
    tokenizer_json = _read_json(model_file(source, "tokenizer.json", revision)) if source else None
    config = (_read_json(model_file(source, "tokenizer_config.json", revision)) if source else None) or {}
    processor = _processor_tokens(tokenizer_json.get("post_processor")) if tokenizer_json is not None else None
    post = framing_template(*processor) if processor is not None else None
    config_framing = None
    if "add_bos_token" in config or "add_eos_token" in config:
        bos = _token_text(config.get("bos_token")) or _token_text(getattr(tok, "bos_token", None))
        eos = _token_text(config.get("eos_token")) or _token_text(getattr(tok, "eos_token", None))
        side = processor or framing_tokens(loaded)
        before = list(side[0])
        after = list(side[1])
        if "add_bos_token" in config and bos is not None:
            before = [bos] if config["add_bos_token"] else [t for t in before if t != bos]
        if "add_eos_token" in config and eos is not None:
            after = [eos] if config["add_eos_token"] else [t for t in after if t != eos]
        config_framing = framing_template(before, after)
    return FileFramings(config_framing, post, loaded)


def tokenizers_own(
    model: str, tok: PreTrainedTokenizerBase, revision: str | None = None, source: str | None = None
) -> FileFramings:
    """The framing ``tok``'s files agree on, for a run whose published framing was the tokenizer's and is not
    recorded (:data:`.base.TOKENIZER_FRAMING`): their disagreement is a one-line error naming both."""
    files = file_framings(tok, source, revision)
    if not files.agree:
        raise R2MedError(f"{files.disagreement(model)}; choose with the retriever option framing (one of the two)")
    return files


def note_files(
    model: str, tok: PreTrainedTokenizerBase, revision: str | None = None, source: str | None = None
) -> FileFramings:
    """:func:`file_framings`, with a warning when they disagree (a model run with its tokenizer's own framing,
    unchecked: its tokens may change with the transformers version)."""
    files = file_framings(tok, source, revision)
    if not files.agree:
        log.warning(
            "%s: tokenizer_config.json says %r, tokenizer.json %r; this transformers gives %r (another version "
            "may not): set framing to fix the tokens",
            model,
            files.config,
            files.post_processor,
            files.loaded,
        )
    return files


def settled(
    model: str, tok: PreTrainedTokenizerBase, framing: Framing, revision: str | None = None
) -> tuple[Framing, JsonObject]:
    """The template a run builds for ``framing`` (the tokenizer's own, checked, for :data:`TOKENIZER_FRAMING`),
    and what the tokenizer's files said (for ``metrics.json``)."""
    if framing == TOKENIZER_FRAMING:
        files = tokenizers_own(model, tok, revision)
        return files.stated, files.describe()
    return framing, file_framings(tok, None, revision).describe()


# -- (query, document) pairs ---------------------------------------------------------------------------------


def pair_processor_tokens(proc: JsonValue) -> tuple[list[str], list[str], list[str]] | None:
    """The token texts a post-processor puts before $A, between $A and $B, and after $B; None: unknown."""
    if isinstance(proc, dict) and proc.get("type") == "Sequence":
        found = [pair_processor_tokens(child) for child in _pieces(proc.get("processors"))]
        if any(f is None for f in found):
            return None
        return (
            [t for f in found if f for t in f[0]],
            [t for f in found if f for t in f[1]],
            [t for f in found if f for t in f[2]],
        )
    if proc is None or (isinstance(proc, dict) and proc.get("type") == "ByteLevel"):
        return [], [], []
    if not isinstance(proc, dict) or proc.get("type") != "TemplateProcessing":
        return None
    parts: list[list[str]] = [[], [], []]
    slot = 0
    for piece in _pieces(proc.get("pair")):
        if not isinstance(piece, dict):
            return None
        if "Sequence" in piece:
            slot += 1
        elif "SpecialToken" in piece:
            parts[slot].append(_special_token(piece))
        else:
            return None
    return parts[0], parts[1], parts[2]


def pair_template(before: Sequence[str], middle: Sequence[str], after: Sequence[str]) -> Framing:
    return " ".join((*before, QUERY, *middle, DOCUMENT, *after))


def pair_ends(tok: PreTrainedTokenizerBase, a: str, b: str) -> tuple[list[int], list[int], list[int]]:
    """The ids ``tok`` alone puts before, between and after a pair (a, b)."""
    ia = list(tok(a[:_PROBE_CHARS], add_special_tokens=False)["input_ids"])
    ib = list(tok(b[:_PROBE_CHARS], add_special_tokens=False)["input_ids"])
    full = list(tok(a[:_PROBE_CHARS], b[:_PROBE_CHARS])["input_ids"])
    for i in range(len(full) - len(ia) + 1):
        if full[i : i + len(ia)] != ia:
            continue
        rest = full[i + len(ia) :]
        for j in range(len(rest) - len(ib) + 1):
            if rest[j : j + len(ib)] == ib:
                return full[:i], rest[:j], rest[j + len(ib) :]
    return full, [], []  # pragma: no cover - a post-processor that rewrites the texts


def pair_ids(
    tok: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    tokens: tuple[Sequence[int], Sequence[int], Sequence[int]],
    max_length: int,
    framing: Framing,
) -> list[list[int]]:
    """Ids of (a, b) pairs framed by ``tokens`` (before, between, after), cut as a tokenizer's
    ``truncation='longest_first'`` does: a token off the longer segment (the second on a tie) until the pair
    and its special tokens fit ``max_length``."""
    before, middle, after = (list(t) for t in tokens)
    room = max_length - len(before) - len(middle) - len(after)
    if room < 2:
        raise R2MedError(f"max_length {max_length} leaves no room for a pair beside the tokens of {shown(framing)}")
    firsts = tok([a for a, _ in pairs], add_special_tokens=False, return_attention_mask=False)["input_ids"]
    seconds = tok([b for _, b in pairs], add_special_tokens=False, return_attention_mask=False)["input_ids"]
    out = []
    for a_ids, b_ids in zip(firsts, seconds):
        n_a, n_b = len(a_ids), len(b_ids)
        for _ in range(max(0, n_a + n_b - room)):
            if n_a > n_b:
                n_a -= 1
            else:
                n_b -= 1
        out.append([*before, *a_ids[:n_a], *middle, *b_ids[:n_b], *after])
    return out


def pair_file_framings(
    tok: PreTrainedTokenizerBase, source: str | None = None, revision: str | None = None
) -> FileFramings:
    """What ``tok``'s files say about a pair: ``add_bos_token`` / ``add_eos_token`` read as transformers' own
    template for them (``[bos] A [eos] [bos] B [eos]``), and the post-processor's ``pair`` template."""
    source = source or str(getattr(tok, "name_or_path", "") or "")
    before, middle, after = pair_ends(tok, "r2med", "pairs")
    text = {"before": before, "middle": middle, "after": after}
    named = {k: [str(tok.convert_ids_to_tokens(int(i))) for i in v] for k, v in text.items()}
    loaded = pair_template(named["before"], named["middle"], named["after"])
    tokenizer_json = _read_json(model_file(source, "tokenizer.json", revision)) if source else None
    config = (_read_json(model_file(source, "tokenizer_config.json", revision)) if source else None) or {}
    processor = pair_processor_tokens(tokenizer_json.get("post_processor")) if tokenizer_json is not None else None
    post = pair_template(*processor) if processor is not None else None
    config_framing = None
    if "add_bos_token" in config or "add_eos_token" in config:
        bos = _token_text(config.get("bos_token")) or _token_text(getattr(tok, "bos_token", None))
        eos = _token_text(config.get("eos_token")) or _token_text(getattr(tok, "eos_token", None))
        b = [bos] if config.get("add_bos_token") and bos else []
        e = [eos] if config.get("add_eos_token") and eos else []
        config_framing = pair_template(b, [*e, *b], e)
    return FileFramings(config_framing, post, loaded, around="pair")


def settled_pair(
    model: str, tok: PreTrainedTokenizerBase, framing: Framing, follow_tokenizer: bool, revision: str | None = None
) -> tuple[Framing, tuple[list[int], list[int], list[int]], FileFramings]:
    """The pair template a reranker builds (``framing``, or the tokenizer's own where ``follow_tokenizer`` and
    its files agree; their disagreement is a one-line error naming both), resolved to ids by text."""
    files = pair_file_framings(tok, None, revision)
    if follow_tokenizer:
        if not files.agree:
            raise R2MedError(files.disagreement(model))
        framing = files.stated
    before, middle, after = pair_framing_tokens(framing)
    ids = (
        resolve(model, tok, framing, before),
        resolve(model, tok, framing, middle),
        resolve(model, tok, framing, after),
    )
    return framing, ids, files
