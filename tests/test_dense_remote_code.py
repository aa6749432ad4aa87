"""The trust_remote_code path (NV-Embed-v2 style ``model.encode(texts, instruction=, max_length=)``)
with a tiny local model that ships its own modeling code; no download."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from r2med.errors import R2MedError
from r2med.retrieval.encoders import EncoderSettings, RemoteCodeEncoder, make_encoder
from test_dense_fixtures import TEXTS, bert_dir  # noqa: F401

MODELING = textwrap.dedent('''
    import torch
    from transformers import AutoTokenizer, BertModel


    class ToyEmbedder(BertModel):
        """Mean-pools BERT states of instruction + text, like NV-Embed's encode() (simplified)."""

        def encode(self, texts, instruction="", max_length=512, **kwargs):
            tok = AutoTokenizer.from_pretrained(self.name_or_path)
            feats = tok([instruction + t for t in texts], padding=True, truncation=True,
                        max_length=max_length, return_tensors="pt")
            h = self(**feats).last_hidden_state
            m = feats["attention_mask"].unsqueeze(-1).float()
            return (h * m).sum(1) / m.sum(1)
''')


@pytest.fixture(scope="module")
def remote_dir(bert_dir, tmp_path_factory):
    import shutil

    folder = tmp_path_factory.mktemp("toy_remote")
    shutil.copytree(bert_dir, folder, dirs_exist_ok=True)
    (folder / "modeling_toy.py").write_text(MODELING)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_toy.ToyEmbedder"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


def hand(folder: str, texts, prefix: str, max_length: int) -> np.ndarray:
    import torch
    from transformers import AutoTokenizer, BertModel

    tok = AutoTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder).eval()
    rows = []
    for t in texts:
        ids = tok(prefix + t, truncation=True, max_length=max_length)["input_ids"]
        with torch.no_grad():
            v = model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0).numpy()
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows)


def test_remote_code_needs_explicit_opt_in(remote_dir):
    with pytest.raises(R2MedError, match="trust-remote-code"):
        make_encoder(EncoderSettings(model=remote_dir, loader="remote-code"))


def test_remote_code_encode_with_instructions_matches_hand_computation(remote_dir):
    s = EncoderSettings(
        model=remote_dir,
        loader="remote-code",
        trust_remote_code=True,
        normalize=True,
        max_length=40,
        query_instruction="Instruct: find\nQuery: ",
    )
    enc = make_encoder(s, device="cpu", batch_size=3)
    assert isinstance(enc, RemoteCodeEncoder)
    np.testing.assert_allclose(enc.encode_corpus(TEXTS), hand(remote_dir, TEXTS, "", 40), atol=2e-5)
    np.testing.assert_allclose(
        enc.encode_queries(TEXTS[:2]), hand(remote_dir, TEXTS[:2], "Instruct: find\nQuery: ", 40), atol=2e-5
    )
