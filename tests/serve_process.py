"""``r2med serve`` started as a real process on 127.0.0.1 for tests (a server is a whole process: a kill -9, a
SIGTERM, its own port): its URL read from its own startup line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

LISTENING = re.compile(r"listening on (http://\S+?):? ")


class ServeProcess:
    """``python -m r2med serve ARGS`` (``--port`` as given, 0 by default); ``url`` once it listens."""

    def __init__(self, *args: object, cwd: Path | None = None, timeout: float = 120.0):
        self.args = [str(a) for a in args]
        if "--port" not in self.args:
            self.args += ["--port", "0"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "r2med", "serve", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.lines: list[str] = []
        self.url = ""
        found = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                match = LISTENING.search(line)
                if match and not self.url:
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.1):
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("the server did not start: " + "".join(self.lines))
        if not self.url:
            raise AssertionError("the server stopped before listening: " + "".join(self.lines))

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        """SIGKILL, no goodbye."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> int:
        """SIGTERM, then wait for the graceful shutdown; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(60)

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
