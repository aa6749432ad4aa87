"""CI's own rules: it installs what the browser tests need when any part is missing, and under ``CI=true`` a test
that cannot run fails with its reason instead of skipping."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]


def _missing_with(tmp_path: Path, commands: list[str] | dict[str, str], script: str = "browser-packages") -> str:
    """What ``.ci/<script>`` prints on a machine whose PATH holds only ``commands`` (stand-ins: a name, or a name
    and what it prints) and bash."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    said = commands if isinstance(commands, dict) else dict.fromkeys(commands, "")
    for name, output in said.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\necho '{output}'\nexit 0\n" if output else "#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    res = subprocess.run(
        ["/bin/bash", str(ROOT / ".ci" / script)],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.strip()


@pytest.mark.parametrize(
    ("present", "missing"),
    [
        ([], "chromium chromium-driver"),
        (["chromium"], "chromium-driver"),  # the case that lost the browser tests: a browser without its driver
        (["chromedriver"], "chromium"),
        (["chromium-browser", "chromedriver"], ""),
        (["chromium", "chromedriver"], ""),
    ],
)
def test_browser_packages_are_checked_apart(tmp_path, present, missing):
    assert _missing_with(tmp_path, present) == missing


@pytest.mark.parametrize(
    ("present", "missing"),
    [
        ({}, "texlive-latex-base texlive-latex-recommended"),
        ({"pdflatex": ""}, "texlive-latex-recommended"),  # pdflatex without booktabs: the tables do not compile
        ({"pdflatex": "", "kpsewhich": ""}, "texlive-latex-recommended"),  # kpsewhich finds no booktabs.sty
        ({"kpsewhich": "/usr/share/texmf/booktabs.sty"}, "texlive-latex-base"),
        ({"pdflatex": "", "kpsewhich": "/usr/share/texmf/booktabs.sty"}, ""),
    ],
)
def test_latex_packages_are_checked_apart(tmp_path, present, missing):
    assert _missing_with(tmp_path, present, "latex-packages") == missing


def test_ci_run_installs_what_is_missing_and_runs_as_ci():
    script = (ROOT / ".ci" / "run").read_text()
    assert "install_missing .ci/browser-packages" in script
    assert "install_missing .ci/latex-packages" in script  # before: the LaTeX compile test skipped everywhere
    assert 'export CI="${CI:-true}"' in script
    assert "make test" in script


@pytest.mark.parametrize("value", ["true", "1", "TRUE", "yes"])
def test_a_test_that_cannot_run_fails_under_ci(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI: no browser"):
        unavailable("no browser")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_a_test_that_cannot_run_skips_outside_ci(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception, match="no browser"):
        unavailable("no browser")
    assert os.environ.get("CI") == value
