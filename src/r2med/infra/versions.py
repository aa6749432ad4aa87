"""Installed versions of the packages that make dense vectors and reranker scores, for ``metrics.json``."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version

#: The packages that make dense vectors (and reranker scores), by loader: their versions go in ``metrics.json``
#: (``encoding.versions``), since a tokenizer or a library release can change the vectors (issue 20).
VECTOR_PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch", "transformers", "tokenizers", "sentence-transformers"),
    "gritlm": ("gritlm",),
    "openai": ("openai",),
    "voyage": ("voyageai",),
    "peft": ("peft",),
}


def package_versions(groups: Iterable[str]) -> dict[str, str]:
    """Installed versions of the :data:`VECTOR_PACKAGES` of ``groups`` (an absent package is left out)."""
    out: dict[str, str] = {}
    for group in groups:
        for package in VECTOR_PACKAGES.get(group, ()):
            try:
                out[package] = version(package)
            except PackageNotFoundError:
                continue
    return out
