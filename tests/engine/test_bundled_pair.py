"""The shipped pair is what its model card and the hardware catalogue say it is.

The card's held-out bits/byte are recomputed here from the weights as shipped over the held-out
files it lists (this Python's standard library), and the target must beat its draft; the distinct
4-grams of its greedy text are recomputed too.
"""

from __future__ import annotations

import json
import platform

import pytest

from specviz.core import hardware
from specviz.engine import train
from specviz.engine.models import BUNDLED_DIR
from specviz.engine.models.gpt import GPT

CARD = json.loads((BUNDLED_DIR / "card.json").read_text())


def test_the_card_says_the_target_beats_its_draft_by_a_clear_margin():
    target, draft = (CARD[name]["validation_bits_per_byte"] for name in ("target", "draft"))
    assert target <= 1.70 and target < draft - 0.1, (target, draft)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_the_cards_held_out_bits_per_byte_are_the_shipped_weights():
    source = CARD["corpus"]["source"]
    if f"CPython {platform.python_version()} " not in source:
        pytest.skip(f"the held-out files are {source}'s; this is Python {platform.python_version()}")
    root = train.stdlib_root()
    val = train.load_bytes([root / name for name in CARD["corpus"]["validation_file_list"]])
    assert len(val) == CARD["corpus"]["validation_bytes"]
    for name in ("target", "draft"):
        bits = train.evaluate_all(GPT.load(BUNDLED_DIR / name), val)
        assert bits == pytest.approx(CARD[name]["validation_bits_per_byte"], abs=0.01), name


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_the_shipped_target_writes_text_that_does_not_loop():
    """The card's distinct-4-gram ratio of greedy continuations is the shipped weights' and >= 0.6."""
    from specviz import cli

    card = CARD["text_quality"]
    assert card["distinct_4gram_ratio"] >= 0.6, card
    again = cli.card.text_quality(GPT.load(BUNDLED_DIR / "target"), None)["text_quality"]
    assert again["distinct_4gram_ratio"] == pytest.approx(card["distinct_4gram_ratio"], abs=0.01)
    assert again["prompts"] == card["prompts"] == 12 and again["new_tokens"] == card["new_tokens"] == 128


@pytest.mark.parametrize("name", ["target", "draft"])
def test_the_hardware_catalogue_rows_are_the_shipped_architecture(name):
    config = json.loads((BUNDLED_DIR / name / "config.json").read_text())
    row = hardware.model_spec(f"specviz/bundled-{name}")
    assert (row["n_layers"], row["hidden_size"], row["n_heads"]) == (
        config["n_layer"],
        config["n_embd"],
        config["n_head"],
    )
    assert row["max_context"] == config["block_size"] and row["vocab_size"] == config["vocab_size"]
    model = GPT.load(BUNDLED_DIR / name)
    assert row["params"] == hardware.parameter_count(row) == sum(p.numel() for p in model.parameters())
    assert CARD[name]["parameters"] == row["params"]


def test_the_shipped_readme_is_the_card_template_rendered_from_card_json():
    """data/models/bundled/README.md is what ``specviz card`` writes from card.json (specviz/engine/card.md.j2)."""
    from specviz.engine import card

    assert card.card_markdown(CARD) == (BUNDLED_DIR / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("before", [True, False])
def test_loading_a_pair_on_the_cpu_leaves_the_cuda_attention_backends_alone(before):
    """plan_free_attention acts on CUDA only: a CPU load must not flip a process-wide CUDA switch."""
    import torch

    from specviz.engine.models import load_pair

    was = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(before)
        load_pair("bundled", "cpu")
        assert torch.backends.cuda.cudnn_sdp_enabled() is before
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)
