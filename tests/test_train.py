"""Training the pair (specviz.models.train) on a tiny corpus: resume, the model card, `card` CLI."""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from specviz import __main__ as cli
from specviz.models import train
from specviz.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=64)
TC = train.TrainConfig(steps=6, batch_size=2, seq_len=64, warmup=2, checkpoint_every=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib")
    for i in range(20):
        (root / f"mod{i}.py").write_text("".join(f"def f{j}_{i}(x):\n    return x * {j} + {i}\n" for j in range(60)))
    return root


@pytest.fixture(scope="module")
def data(corpus):
    train_files, _ = train.corpus_files(corpus)
    return train.load_bytes(train_files)


def test_learning_rate_schedule():
    tc = train.TrainConfig(steps=100, lr=1e-3, min_lr=1e-4, warmup=10)
    assert train.learning_rate(0, tc) == pytest.approx(1e-4)  # (0 + 1) / 10 of the peak
    assert train.learning_rate(9, tc) == pytest.approx(1e-3)
    assert train.learning_rate(10, tc) == pytest.approx(1e-3)  # cosine starts at the peak
    assert train.learning_rate(55, tc) == pytest.approx(0.5 * (1e-3 + 1e-4))  # half way
    assert train.learning_rate(100, tc) == pytest.approx(1e-4)
    lrs = [train.learning_rate(s, tc) for s in range(10, 101)]
    assert all(a >= b for a, b in itertools.pairwise(lrs))


def test_training_lowers_the_loss(data, tmp_path):
    tc = train.TrainConfig(steps=40, batch_size=4, seq_len=64, lr=3e-3, warmup=5, checkpoint_every=40)
    torch.manual_seed(tc.seed)
    before = train.evaluate(GPT(TINY), data)  # the same initialisation train_model starts from
    model, log = train.train_model(TINY, tc, data, tmp_path / "w")
    after = train.evaluate(model, data)
    assert log["resumed_from"] == 0 and log["steps"] == 40
    assert before > 7.9  # uniform over 256 bytes is 8 bits
    assert after < before - 1.0


def test_interrupted_training_resumes_to_the_same_weights(data, tmp_path):
    straight, _ = train.train_model(TINY, TC, data, tmp_path / "a")

    class Interrupt(Exception):
        """Stands in for Ctrl-C in the middle of training."""

    def stop_at_4(step: int, bits: float) -> None:
        if step == 4:
            raise Interrupt  # the callback runs before step 4's checkpoint, so step 2's is the last one

    with pytest.raises(Interrupt):
        train.train_model(TINY, TC, data, tmp_path / "b", stop_at_4)
    assert json.loads((tmp_path / "b" / "progress.json").read_text())["step"] == 2  # last checkpoint kept
    resumed, log = train.train_model(TINY, TC, data, tmp_path / "b")
    assert log["resumed_from"] == 2
    for (name, p), q in zip(straight.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7, msg=name)
    assert not any(tmp_path.joinpath("b").glob("*.tmp"))


def test_train_pair_writes_weights_and_card(corpus, tmp_path):
    out = tmp_path / "pair"
    card = train.train_pair(
        out,
        tmp_path / "work",
        TC,
        TC,
        corpus_root=corpus,
        target_cfg=TINY,
        draft_cfg=GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64),
        command="cmd",
    )
    for name in ("target", "draft"):
        model = GPT.load(out / name)
        assert model.num_params() == card[name]["parameters"]
        assert 0 < card[name]["validation_bits_per_byte"] < 9
    saved = json.loads((out / "card.json").read_text())
    assert saved == json.loads(json.dumps(card))
    _, val = train.corpus_files(corpus)
    assert saved["corpus"]["validation_file_list"] == [p.name for p in val]
    acc, speed = saved["acceptance_on_validation"], saved["speed"]
    assert 0 <= acc["alpha_greedy"] <= 1 and 0 <= acc["alpha_t1"] <= 1
    # c comes from the unrounded times; the card rounds them to 1 µs, so allow that rounding's effect
    rounding = 0.0005 / speed["t_target_ms"] + 0.0005 / speed["t_draft_ms"]
    assert speed["c"] == pytest.approx(speed["t_target_ms"] / speed["t_draft_ms"], rel=rounding + 0.005)
    text = (out / "README.md").read_text()
    assert f"**{acc['alpha_greedy']}**" in text and f"**{speed['c']}**" in text and "`cmd`" in text


def test_card_command_remeasures_without_touching_weights(corpus, tmp_path, capsys):
    out = tmp_path / "pair"
    train.train_pair(out, tmp_path / "work", TC, TC, corpus_root=corpus, target_cfg=TINY, draft_cfg=TINY)
    weights = {p: p.read_bytes() for p in out.glob("*/model.safetensors")}
    card = json.loads((out / "card.json").read_text())
    card["speed"] = {"machine": "elsewhere", "t_target_ms": 1.0, "t_draft_ms": 1.0, "c": 1.0}
    (out / "card.json").write_text(json.dumps(card))
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 0
    assert "rewrote" in capsys.readouterr().out
    new = json.loads((out / "card.json").read_text())
    assert new["speed"]["machine"] != "elsewhere"
    assert new["acceptance_on_validation"] == card["acceptance_on_validation"]  # deterministic measurement
    assert new["target"]["validation_bits_per_byte"] == card["target"]["validation_bits_per_byte"]
    assert {p: p.read_bytes() for p in out.glob("*/model.safetensors")} == weights


def test_card_command_errors_are_clear(corpus, tmp_path, capsys):
    assert cli.main(["card", "--out", str(tmp_path / "nowhere")]) == 2
    assert "card.json is missing or lacks" in capsys.readouterr().err
    out = tmp_path / "pair"
    out.mkdir()
    (out / "card.json").write_text(
        json.dumps({"corpus": {"validation_file_list": ["gone.py"]}, "target": {}, "draft": {}})
    )
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 2
    assert "gone.py" in capsys.readouterr().err
    (out / "card.json").write_text(json.dumps({"corpus": {"validation_file_list": []}}))
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 2
    assert "lacks corpus.validation_file_list, target or draft" in capsys.readouterr().err
