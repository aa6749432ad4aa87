"""``[data]`` and ``[report]`` of an experiment file go through the one parse (``typed/parse.parse``) with the specs
``DataTable`` and ``ReportSpec``: their keys are the specs' fields, and a bad value is the parse's one line, naming
the file, the table and the key -- the same words a Python caller gets after its own prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from r2med.errors import R2MedError
from r2med.jobs.experiment import DATA_KEYS, REPORT_KEYS, DataTable, Reader, ReportSpec, load_experiment
from r2med.typed.parse import Spec, field_names

STEP = '[[retrievers]]\nname = "bm25"\n'


def _load(tmp_path: Path, body: str):
    exp = tmp_path / "exp.toml"
    exp.write_text(f'out = "res"\n{body}', encoding="utf-8")
    return exp, (lambda: load_experiment(exp))


def test_the_tables_keys_are_their_specs_fields():
    assert issubclass(DataTable, Spec) and issubclass(ReportSpec, Spec)
    assert DATA_KEYS == field_names(DataTable) == ("tasks", "dirs", "revision", "long_documents")
    assert field_names(ReportSpec) == REPORT_KEYS
    assert REPORT_KEYS == ("measures", "html", "latex", "markdown", "baseline", "title", "data_dir")


@pytest.mark.parametrize(
    "table,python,words",
    [
        ("[data]\nlong_documents = 'yes'\n", None, "long_documents: expected true or false, got 'yes'"),
        ("[data]\nrevision = 5\n", None, "revision: expected text, got 5"),
        ("[data]\ndirs = 5\n", None, "dirs: expected a path or a list of paths, got 5"),
        ("[report]\ntitle = 3\n", {"title": 3}, "title: expected text, got 3"),
        ("[report]\nmeasures = []\n", {"measures": []}, "measures: name at least one measure (e.g. 'nDCG@10')"),
        ("[report]\nhtml = ''\n", {"html": ""}, "html: expected a path (text), got ''"),
        ("[report]\nbaseline = 1\n", {"baseline": 1}, "baseline: expected text, got 1"),
    ],
)
def test_a_bad_value_is_the_parses_one_line_in_a_file_and_in_python(tmp_path, table, python, words):
    exp, load = _load(tmp_path, table + STEP)
    where = table.split("\n")[0]
    with pytest.raises(R2MedError) as file:
        load()
    assert str(file.value) == f"{exp}: {where}: {words}"
    if python is not None:
        with pytest.raises(R2MedError) as made:
            ReportSpec(**python)
        assert str(made.value) == f"ReportSpec: {words}"


def test_an_unknown_key_names_the_specs_fields(tmp_path):
    exp, load = _load(tmp_path, "[report]\ntitel = 'x'\n" + STEP)
    with pytest.raises(R2MedError) as info:
        load()
    assert str(info.value) == (
        f"{exp}: [report]: unknown option 'titel' (did you mean 'title'?); it takes: " + ", ".join(REPORT_KEYS)
    )


def test_relative_paths_are_the_files_folder_and_one_value_is_a_list(tmp_path):
    reader = Reader("exp.toml", tmp_path)
    data = reader.data({"dirs": "data", "tasks": ["Biology"]})
    assert data.dirs == [tmp_path / "data"] and data.tasks == ["Biology"]
    assert reader.data({"dirs": ["/abs/data"]}).dirs == [Path("/abs/data")]  # an absolute one stays
    report = reader.report_spec({"measures": "R@100", "html": "page.html", "latex": "/abs/t.tex"})
    assert report.html == tmp_path / "page.html" and report.latex == Path("/abs/t.tex")
    assert [m.trec for m in report.measures] == ["recall_100"]
