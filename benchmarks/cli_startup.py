"""How long ``r2med --help`` takes to start, against a baseline checkout's, side by side in one run (issue 35: under
0.8 s on the 2-core machine).

    python benchmarks/cli_startup.py                       # this checkout against git's main (exported to a temp dir)
    python benchmarks/cli_startup.py --baseline f116424 -n 15

Each round runs both sources' ``r2med --help`` in a fresh interpreter, alternating (so the machine's load falls on
both alike): *warm* with their bytecode caches in place (the usual case: an installed package), *cold* with an empty
bytecode cache each time (``PYTHONPYCACHEPREFIX`` to a new folder: every module compiled, as on the first run after
an install or upgrade).  It prints the median and the best of each, wall-clock and CPU time (user + system: less
sensitive to a loaded machine's other work), and the ratio of medians (this / baseline).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = (
    "import sys; sys.argv = ['r2med', '--help']\n"
    "from r2med.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass"
)


def export(rev: str, into: Path) -> Path:
    """``src/`` of git revision ``rev`` under ``into``."""
    data = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def once(src: Path, cache: Path | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one ``r2med --help``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if cache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    else:
        env.pop("PYTHONPYCACHEPREFIX", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CODE], env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("-n", type=int, default=10, help="rounds (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.baseline, Path(tmp) / "base")
        sources = {"this": ROOT / "src", args.baseline: base}
        times: dict[tuple[str, str], list[tuple[float, float]]] = {
            (s, k): [] for s in sources for k in ("warm", "cold")
        }
        for src in sources.values():  # bytecode caches in place for the warm runs
            once(src, None)
        for i in range(args.n):
            for name, src in sources.items():
                times[(name, "warm")].append(once(src, None))
                times[(name, "cold")].append(once(src, Path(tmp) / f"pyc-{name}-{i}"))
    print(f"r2med --help, {args.n} rounds alternating, seconds: median / best (wall; CPU = user + system)")
    for kind in ("warm", "cold"):
        for i, what in ((0, "wall"), (1, "CPU")):
            this = [t[i] for t in times[("this", kind)]]
            base_t = [t[i] for t in times[(args.baseline, kind)]]
            print(
                f"  {kind} {what:>4}: this {statistics.median(this):.3f} / {min(this):.3f}   "
                f"{args.baseline} {statistics.median(base_t):.3f} / {min(base_t):.3f}   "
                f"ratio {statistics.median(this) / statistics.median(base_t):.2f}"
            )


if __name__ == "__main__":
    main()
