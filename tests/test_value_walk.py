"""A value's walk from the command line to the code that uses it: typed after the one parse, every hop.

Issue 30 asks that ``k1`` given to ``r2med evaluate`` reach ``retrieval/bm25.py`` through typed values (the issue
names a ``farm-studio walk``; that tool is not on this machine, so the walk is taken at run time instead). The
test runs the command in this process under a profiler that looks, at every call into r2med, for the value in
each argument: as a plain number (a typed parameter), as a field of a typed object (a step, an options type), or
inside a plain ``dict`` (an untyped hop). The walk ends when ``BM25.__init__`` is entered.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from test_report import write_collection

K1 = 1.37  # a value no default has, so every sighting is this one
VAR_POSITIONAL, VAR_KEYWORD = 0x04, 0x08


def _holds(value: Any, depth: int = 0) -> str | None:
    """How ``value`` holds :data:`K1`: ``float``, ``dict``, or the typed field path (``EvaluateStep.options>...``)."""
    if depth > 5 or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return "float" if value == K1 else None
    if isinstance(value, dict):
        return "dict" if any(_holds(v, depth + 1) for v in value.values()) else None
    if isinstance(value, list | tuple):
        return next((h for v in value if (h := _holds(v, depth + 1))), None)
    fields = getattr(type(value), "model_fields", None)  # pydantic: the declared fields only
    names = list(fields) if fields else list(getattr(value, "__dict__", {}))
    if not names or type(value).__module__.split(".")[0] != "r2med":
        return None
    for name in names:
        held = _holds(getattr(value, name, None), depth + 1)
        if held == "float":
            return f"{type(value).__name__}.{name}"
        if held:
            return held if held == "dict" else f"{type(value).__name__}.{name}>{held}"
    return None


def _walk(args: list[str]) -> list[tuple[str, str, str, str]]:
    """(module, function, argument, how it holds K1) for every call into r2med until ``BM25.__init__``."""
    from r2med.cli import main

    hops: list[tuple[str, str, str, str]] = []
    arrived = [False]

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if arrived[0] or event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("r2med"):
            return
        code = frame.f_code
        n_args = code.co_argcount + code.co_kwonlyargcount
        names = list(code.co_varnames[:n_args])
        flags = [bool(code.co_flags & VAR_POSITIONAL), bool(code.co_flags & VAR_KEYWORD)]
        extra = list(code.co_varnames[n_args : n_args + sum(flags)])
        keywords = extra[-1] if flags[1] else None
        for name in names + extra:
            held = _holds(frame.f_locals.get(name))
            if held:
                hops.append((module, code.co_name, "**" + name if name == keywords else name, held))
        if module == "r2med.retrieval.bm25" and code.co_name == "__init__":
            arrived[0] = True

    argv = sys.argv
    sys.argv = ["r2med", *args]
    sys.setprofile(profile)
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc
    finally:
        sys.setprofile(None)
        sys.argv = argv
    assert arrived[0], "BM25 was never built"
    return hops


def test_k1_from_the_command_line_reaches_bm25_through_typed_values(tmp_path: Path) -> None:
    data = write_collection(tmp_path, "Biology")
    hops = _walk(["evaluate", "-r", "bm25", "--k1", str(K1), "-d", str(data), "-o", str(tmp_path / "out"), "-q"])
    where = [f"{m}.{f}({a}): {h}" for m, f, a, h in hops]
    # it enters as the command's typed parameter and arrives as BM25's
    assert ("r2med.cli.core", "evaluate_command", "k1", "float") in hops, where
    assert hops[-1][:4] == ("r2med.retrieval.bm25", "__init__", "options", "Bm25Options.k1"), where
    # the one parse: the first hop whose value is a field of the options type
    first_typed = next(i for i, h in enumerate(hops) if "Bm25Options.k1" in h[3])
    before, after = hops[:first_typed], hops[first_typed:]
    assert any(m.startswith("r2med.typed") and f == "parse" for m, f, _, _ in before), where  # parsed, not guessed
    # the step it is a field of is built by the same parse (its fields, the options object among them); from the job
    # on, no hop holds k1 in a plain dict, keywords included (no ``**options.given()`` into the factory), and nothing
    # parses it again (issue 35: one value, one reading): the registry's factory and BM25 take the options object
    job = next(i for i, h in enumerate(hops) if h[0].startswith("r2med.jobs"))
    assert all(h == "dict" or "Bm25Options.k1" in h for _, _, _, h in hops[first_typed:job]), where
    untyped = [f"{m}.{f}({a})" for m, f, a, h in hops[job:] if h == "dict"]
    assert untyped == [], where
    assert not any(m.startswith("r2med.typed") and f in ("parse", "model_validate") for m, f, _, _ in hops[job:])
    assert any(m == "r2med.retrieval.bm25" and f == "make" and h == "Bm25Options.k1" for m, f, _, h in after), where
    # and jobs/ carries the whole step, not its keywords
    assert any(m.startswith("r2med.jobs") and h.startswith("EvaluateStep.options>Bm25Options") for m, _, _, h in after)
