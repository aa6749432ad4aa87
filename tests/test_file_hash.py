"""One file-hash helper (``r2med.infra.file_hash``) serves every record: its digests against independent references
(hashlib over the whole bytes, git's own blob id), and each record that names a file holds the helper's digest."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_r2med
from hub_server import git_blob_sha1
from test_report import write_collection

#: more than one read block (1 MiB), so the blocks are joined as one stream
BIG = bytes(range(256)) * 5000 + b"tail"


@pytest.mark.parametrize("data", [b"", b"one line\n", BIG], ids=["empty", "small", "two blocks"])
def test_the_digests_are_those_of_the_whole_bytes(tmp_path, data):
    from r2med.infra.file_hash import file_fingerprint, file_hash

    path = tmp_path / "f"
    path.write_bytes(data)
    assert file_hash(path) == file_hash(path, "sha256") == hashlib.sha256(data).hexdigest()
    assert file_fingerprint(path) == file_hash(path, "blake2b-80") == hashlib.blake2b(data, digest_size=10).hexdigest()
    assert file_hash(path, "git-sha1") == git_blob_sha1(data)
    if shutil.which("git"):  # git's own blob id of the file
        out = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True)
        assert file_hash(path, "git-sha1") == out.stdout.strip()
    with pytest.raises(ValueError, match="unknown file hash 'md5'"):
        file_hash(path, "md5")  # type: ignore[arg-type]  # the refusal of a name it does not know


def test_every_record_of_a_file_holds_the_helpers_digest(tmp_path):
    """``r2med import`` (sha256 of the run file), ``evaluate`` with an expansion file (its fingerprint), ``rerank``
    (its first stage's run fingerprint) and a custom scorer's module (its sha256): the values are the helper's,
    as hashlib gives them (no recorded value changed when the three copies became one)."""
    data = write_collection(tmp_path / "data", "Biology")
    runs = tmp_path / "runs"
    assert run_r2med("evaluate", "-r", "bm25", "-d", str(data), "-o", str(runs)).returncode == 0
    run_file = runs / "bm25" / "Biology" / "run.trec"
    assert run_r2med("import", str(run_file), "-d", str(data), "--name", "imp", "-o", str(runs)).returncode == 0
    imported = json.loads((runs / "imp" / "Biology" / "metrics.json").read_text())["config"]["imported"]
    assert imported["sha256"] == hashlib.sha256(run_file.read_bytes()).hexdigest()

    expansion = tmp_path / "exp" / "hyde" / "gpt4" / "query_with_hydoc.jsonl"
    expansion.parent.mkdir(parents=True)
    queries = [json.loads(line) for line in (data / "query.jsonl").read_text().splitlines()]
    expansion.write_text("".join(json.dumps({"id": q["id"], "hy_doc": "insulin"}) + "\n" for q in queries))
    res = run_r2med(
        "evaluate",
        "-r",
        "bm25",
        "-e",
        "hyde:gpt4",
        "--expansion-file",
        str(expansion),
        "-d",
        str(data),
        "-o",
        str(runs),
    )
    assert res.returncode == 0, res.stderr
    config = json.loads((runs / "bm25+hyde-gpt4" / "Biology" / "metrics.json").read_text())["config"]
    assert config["expansion_fingerprint"] == hashlib.blake2b(expansion.read_bytes(), digest_size=10).hexdigest()

    scorer = tmp_path / "scorer.py"
    scorer.write_text("class Overlap:\n    def score(self, query, docs):\n        return [len(d) for d in docs]\n")
    res = run_r2med("rerank", "--run", str(runs / "bm25"), "--reranker", "custom", "--scorer", f"{scorer}:Overlap")
    assert res.returncode == 0, res.stderr
    reranked = json.loads((runs / "bm25+custom-Overlap" / "Biology" / "metrics.json").read_text())["config"]
    assert (
        reranked["first_stage"]["run_fingerprint"] == hashlib.blake2b(run_file.read_bytes(), digest_size=10).hexdigest()
    )
    assert reranked["reranker"]["scorer"]["module_sha256"] == hashlib.sha256(scorer.read_bytes()).hexdigest()


def test_no_other_file_hash_in_the_package():
    """Only the helper reads a file to hash it: no other module opens a file for hashlib."""
    import r2med

    root = Path(r2med.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name == "file_hash.py":
            continue
        assert not ("hashlib." in text and ".read(1 << 20)" in text), f"{path}: hashes a file itself"
