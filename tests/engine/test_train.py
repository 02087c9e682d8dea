"""Training the pair (specviz.engine.train) on a tiny corpus: resume, the model card, `card` CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from specviz import cli
from specviz.engine import card as model_card
from specviz.engine import train
from specviz.engine.models.gpt import GPT, GPTConfig

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


@pytest.mark.slow
def test_training_lowers_the_loss(data, tmp_path):
    tc = train.TrainConfig(steps=40, batch_size=4, seq_len=64, lr=3e-3, warmup=5, checkpoint_every=40)
    torch.manual_seed(tc.seed)
    before = train.evaluate(GPT(TINY), data)  # the same initialisation train_model starts from
    model, log = train.train_model(TINY, tc, data, tmp_path / "w")
    after = train.evaluate(model, data)
    assert log["resumed_from"] == 0 and log["steps"] == 40
    assert before > 7.9  # uniform over 256 bytes is 8 bits
    assert after < before - 1.0


@pytest.mark.slow
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


@pytest.mark.slow
def test_train_pair_writes_weights_and_card(corpus, tmp_path):
    out = tmp_path / "pair"
    card = model_card.train_pair(
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


@pytest.mark.slow
def test_card_command_remeasures_without_touching_weights(corpus, tmp_path, capsys):
    out = tmp_path / "pair"
    model_card.train_pair(out, tmp_path / "work", TC, TC, corpus_root=corpus, target_cfg=TINY, draft_cfg=TINY)
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


# ------------------------------------------------------------------------------------------
# the recipe: initialisation, micro-batches, precision, distillation, the loss curve
# ------------------------------------------------------------------------------------------


def test_residual_projections_start_smaller_by_sqrt_2_layers():
    """GPT-2's init: std 0.02 everywhere, 0.02 / √(2 · n_layer) on the two projections into the residual."""
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=8, n_head=4, n_embd=128, block_size=64)
    model = GPT(cfg)
    for blk in model.blocks:
        for w, want in ((blk.attn.qkv.weight, 0.02), (blk.attn.proj.weight, 0.005), (blk.mlp[2].weight, 0.005)):
            w, n = w.detach(), w.numel()
            # the sample std of n normal draws has relative standard error 1 / √(2n); allow 5 of them
            assert abs(float(w.std()) / want - 1) < 5 / (2 * n) ** 0.5, (w.shape, float(w.std()), want)
    assert torch.equal(model.blocks[0].ln1.weight, torch.ones(cfg.n_embd))


@pytest.mark.slow
def test_micro_batches_give_the_whole_batchs_gradient(data):
    """Splitting a step's batch into micro-batches changes nothing but memory: same loss, same weights."""
    models, losses = [], []
    for micro in (1, 4):
        torch.manual_seed(0)
        model = GPT(TINY)
        tc = train.TrainConfig(steps=1, batch_size=8, seq_len=64, micro_batches=micro)
        losses.append(train.train_step(model, train.optimizer(model, tc), data, tc, np.random.default_rng(3)))
        models.append(model)
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_bf16_step_tracks_the_fp32_step(data):
    losses = []
    for precision in ("fp32", "bf16"):
        torch.manual_seed(0)
        model = GPT(TINY)
        tc = train.TrainConfig(steps=1, batch_size=4, seq_len=64, precision=precision)
        opt = train.optimizer(model, tc)
        rng = np.random.default_rng(0)
        losses.append([train.train_step(model, opt, data, tc, rng) for _ in range(5)])
    # bf16 keeps 8 bits of mantissa: the losses agree to well under 1 %
    np.testing.assert_allclose(losses[1], losses[0], rtol=0.01)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(batch_size=6, micro_batches=4), "micro_batches must be >= 1 and divide batch_size 6; got 4"),
        (dict(micro_batches=0), "micro_batches must be >= 1"),
        (dict(precision="fp8"), "precision must be one of \\['bf16', 'fp32'\\]; got 'fp8'"),
    ],
)
def test_train_config_names_the_bad_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train.TrainConfig(steps=1, **kwargs)


def test_distillation_loss_is_the_cross_entropy_to_the_teachers_mixture():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 256)  # (B, T, V)
    y = torch.randint(0, 256, (2, 3))
    logq = torch.log_softmax(logits, -1)
    # a one-hot teacher on the byte that came is plain cross-entropy
    one_hot = train.lm_loss(logits, y, torch.ones(2, 3, 1), y.unsqueeze(-1))
    assert float(one_hot) == pytest.approx(float(train.lm_loss(logits, y)), rel=1e-6)
    # top-2 with mass 0.7: the other 0.3 goes to the byte that came
    top_i = torch.stack([(y + 1) % 256, (y + 2) % 256], -1)
    top_p = torch.tensor([0.5, 0.2]).expand(2, 3, 2)
    want = -(0.5 * logq.gather(-1, top_i[..., :1]) + 0.2 * logq.gather(-1, top_i[..., 1:])).squeeze(-1)
    want = (want - 0.3 * logq.gather(-1, y.unsqueeze(-1)).squeeze(-1)).mean()
    assert float(train.lm_loss(logits, y, top_p, top_i)) == pytest.approx(float(want), rel=1e-6)
    # and its minimum over q is the mixture itself (Gibbs' inequality)
    mix = torch.full((256,), 1e-9)
    mix[[5, 6]] = torch.tensor([0.5, 0.2])
    mix[7] += 0.3
    one = dict(y=torch.tensor([[7]]), top_p=torch.tensor([[[0.5, 0.2]]]), top_i=torch.tensor([[[5, 6]]]))
    at_mix = float(train.lm_loss(mix.log().view(1, 1, 256), **one))
    for _ in range(5):
        other = (mix.log() + 0.3 * torch.randn(256)).view(1, 1, 256)
        assert float(train.lm_loss(other, **one)) > at_mix


def test_teacher_keeps_the_targets_top_k_and_round_trips(data, tmp_path):
    torch.manual_seed(0)
    target = GPT(TINY).eval()
    teacher = train.teacher_outputs(target, data, windows=5, seq_len=64, top_k=4, seed=1, chunk=2)
    assert teacher.tokens.shape == (5, 65) and teacher.top_p.shape == teacher.top_i.shape == (5, 64, 4)
    p = np.asarray(teacher.top_p, dtype=np.float32)
    assert (np.diff(p, axis=-1) <= 1e-3).all() and (p.sum(-1) <= 1 + 1e-2).all()
    with torch.no_grad():
        argmax = target(torch.from_numpy(teacher.tokens[:, :-1].astype(np.int64))).argmax(-1).numpy()
    assert (teacher.top_i[..., 0] == argmax).mean() > 0.95  # bf16 may swap near-ties
    teacher.save(tmp_path / "t.npz")
    again = train.Teacher.load(tmp_path / "t.npz")
    assert all(np.array_equal(a, b) for a, b in zip(vars(teacher).values(), vars(again).values(), strict=True))


def test_teacher_is_computed_once_per_target(data, tmp_path, monkeypatch):
    torch.manual_seed(0)
    GPT(TINY).save(tmp_path / "pair" / "target")
    dc = train.DistilConfig(windows=3, top_k=2)
    first = train.cached_teacher(tmp_path / "pair" / "target", data, dc, 64, tmp_path / "work")
    monkeypatch.setattr(train.distil, "teacher_outputs", lambda *a, **k: pytest.fail("recomputed a cached teacher"))
    second = train.cached_teacher(tmp_path / "pair" / "target", data, dc, 64, tmp_path / "work")
    assert np.array_equal(first.top_p, second.top_p)
    assert len(list((tmp_path / "work").glob("teacher-*-3x64-top2-seed0-fp32.npz"))) == 1
    monkeypatch.undo()
    other = train.cached_teacher(tmp_path / "pair" / "target", data[::-1].copy(), dc, 64, tmp_path / "work")
    assert not np.array_equal(other.tokens, first.tokens)  # another corpus is another teacher
    assert len(list((tmp_path / "work").glob("teacher-*-3x64-top2-seed0-fp32.npz"))) == 2


@pytest.mark.slow
def test_distilled_draft_gets_closer_to_the_target(data, tmp_path):
    """Σ min(p, q) on held-out text rises when the draft learns the target's distribution."""
    torch.manual_seed(0)
    target = GPT(TINY)
    tc = train.TrainConfig(steps=30, batch_size=4, seq_len=64, lr=3e-3, warmup=3, checkpoint_every=30)
    target, _ = train.train_model(TINY, tc, data, tmp_path / "t")
    teacher = train.teacher_outputs(target, data, windows=64, seq_len=64, top_k=8)
    small = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)
    torch.manual_seed(0)
    before = model_card.pair_agreement(target, GPT(small), data, windows=8)["alpha_t1"]
    draft, _ = train.train_model(small, tc, teacher, tmp_path / "d")
    after = model_card.pair_agreement(target, draft, data, windows=8)["alpha_t1"]
    assert after > before + 0.1, (before, after)


def test_loss_curve_is_logged_and_continues_after_a_resume(data, tmp_path):
    tc = train.TrainConfig(steps=6, batch_size=2, seq_len=64, warmup=2, checkpoint_every=2, eval_every=2)

    def stop_at_4(step: int, bits: float) -> None:
        if step == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train.train_model(TINY, tc, data, tmp_path / "w", stop_at_4, val_data=data)
    _, log = train.train_model(TINY, tc, data, tmp_path / "w", val_data=data)
    assert [row[0] for row in log["curve"]] == [2, 4, 6]
    assert all(0 < bits < 9 for row in log["curve"] for bits in row[1:])
    assert log["seconds_all_runs"] >= log["seconds_this_run"] >= 0  # the first run's time is carried over


def test_evaluate_all_scores_every_whole_window_once():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    data = np.random.default_rng(0).integers(0, 256, size=64 * 3 + 10).astype(np.uint8)
    with torch.no_grad():
        w = torch.from_numpy(data[: 64 * 3 + 1].astype(np.int64))
        logits = model(torch.stack([w[i * 64 : i * 64 + 64] for i in range(3)]))
        targets = torch.stack([w[i * 64 + 1 : i * 64 + 65] for i in range(3)])
        want = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
    assert train.evaluate_all(model, data, batch_size=2) == pytest.approx(want / np.log(2), rel=1e-5)


@pytest.mark.slow
def test_train_one_writes_its_record_and_the_card_is_made_from_two(corpus, tmp_path, capsys):
    out = tmp_path / "pair"
    small = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)
    tc = train.TrainConfig(steps=4, batch_size=2, seq_len=64, warmup=1, checkpoint_every=2, eval_every=2)
    train.train_one("target", TINY, tc, out, tmp_path / "w", corpus, command="train target")
    assert not (out / "card.json").exists()
    record = train.train_one(
        "draft", small, tc, out, tmp_path / "w", corpus, "train draft", distil=train.DistilConfig(8, 4)
    )
    assert record["distil"] == {"windows": 8, "top_k": 4}
    assert json.loads((out / "draft" / "train.json").read_text())["command"] == "train draft"
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 0
    assert "distinct 4-grams" in capsys.readouterr().out
    card = json.loads((out / "card.json").read_text())
    assert card["command"] == "train target && train draft"
    assert card["draft"]["distil"]["top_k"] == 4 and len(card["target"]["log"]["curve"]) == 2
    assert 0 <= card["text_quality"]["distinct_4gram_ratio"] <= 1 and card["text_quality"]["prompts"] == 12
    text = (out / "README.md").read_text()
    assert "![loss curve](loss_curve.svg)" in text and "distilled from the target's top-4" in text
    svg = (out / "loss_curve.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 2


@pytest.mark.slow
def test_retraining_one_model_replaces_its_entry_in_an_existing_card(corpus, tmp_path, capsys):
    out = tmp_path / "pair"
    tc = train.TrainConfig(steps=2, batch_size=2, seq_len=64, warmup=1, eval_every=1)
    for name in ("target", "draft"):
        train.train_one(name, TINY, tc, out, tmp_path / "w", corpus, command=f"first {name}")
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 0
    (out / "draft" / "train.json").unlink()  # a shipped pair keeps only the retrained model's record
    longer = train.TrainConfig(steps=3, batch_size=2, seq_len=64, warmup=1, eval_every=1)
    train.train_one("target", TINY, longer, out, tmp_path / "w2", corpus, command="second target")
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["target"]["train"]["steps"] == 3 and len(card["target"]["log"]["curve"]) == 3
    assert card["target"]["command"] == "second target" and card["draft"]["train"]["steps"] == 2
    capsys.readouterr()


def test_draft_distillation_needs_the_target(tmp_path, capsys):
    argv = ["train", "--only", "draft", "--teacher-windows", "4", "--out", str(tmp_path), "--draft-steps", "1"]
    assert cli.main(argv) == 2
    assert f"--teacher-windows needs the trained target in {tmp_path / 'target'}" in capsys.readouterr().err


def test_distinct_ngram_ratio():
    from specviz.engine.bench import distinct_ngram_ratio

    assert distinct_ngram_ratio(list(range(10)), 4) == 1.0
    assert distinct_ngram_ratio([32] * 128, 4) == 1 / 125  # 128 spaces: one 4-gram, 125 times
    assert distinct_ngram_ratio([1, 2, 1, 2, 1, 2], 2) == 2 / 5
    with pytest.raises(ValueError, match="at least n tokens; got n=4, 3 tokens"):
        distinct_ngram_ratio([1, 2, 3], 4)


def test_a_resume_between_curve_points_keeps_the_training_losses_of_the_interrupted_run(data, tmp_path):
    tc = train.TrainConfig(steps=6, batch_size=2, seq_len=64, warmup=2, checkpoint_every=1, eval_every=3)

    def stop_at_2(step: int, bits: float) -> None:
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train.train_model(TINY, tc, data, tmp_path / "a", stop_at_2, val_data=data)
    _, resumed = train.train_model(TINY, tc, data, tmp_path / "a", val_data=data)
    _, straight = train.train_model(TINY, tc, data, tmp_path / "b", val_data=data)
    assert resumed["resumed_from"] == 1 and straight["resumed_from"] == 0
    flat = [np.ravel(log["curve"]) for log in (resumed, straight)]
    np.testing.assert_allclose(flat[0], flat[1], atol=2e-4)  # the first point averages steps 1–3, not 2–3


def test_auto_precision_is_bf16_only_where_the_cpu_multiplies_bf16():
    amx = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f amx_bf16 amx_tile\n"
    epyc = "processor\t: 0\nflags\t\t: fpu sse avx avx2 fma\n"
    assert train.native_bf16(amx) and train.native_bf16("flags : avx512_bf16") and not train.native_bf16(epyc)
    assert train.auto_precision("fp32") == "fp32" and train.auto_precision("bf16") == "bf16"
    assert train.auto_precision("auto") == ("bf16" if train.native_bf16() else "fp32")


@pytest.mark.slow
def test_a_warm_start_begins_from_the_given_weights(data, tmp_path, capsys):
    torch.manual_seed(5)
    GPT(TINY).save(tmp_path / "start")
    zero = train.TrainConfig(steps=0, batch_size=2, seq_len=64, warmup=1)
    model, _ = train.train_model(TINY, zero, data, tmp_path / "w", init_from=tmp_path / "start")
    want = GPT.load(tmp_path / "start").state_dict()
    assert all(torch.equal(v, want[k]) for k, v in model.state_dict().items())
    small = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)
    with pytest.raises(ValueError, match="holds a GPTConfig.*n_embd=32.*training a GPTConfig.*n_embd=16"):
        train.train_model(small, zero, data, tmp_path / "w2", init_from=tmp_path / "start")
    argv = [
        "train",
        "--only",
        "draft",
        "--draft-steps",
        "1",
        "--out",
        str(tmp_path / "o"),
        "--init-from",
        str(tmp_path),
    ]
    assert cli.main(argv) == 2 and "config.json is missing" in capsys.readouterr().err


@pytest.mark.slow
def test_a_warm_started_model_carries_its_earlier_training_into_the_card(corpus, tmp_path, capsys):
    first = train.TrainConfig(steps=4, batch_size=2, seq_len=64, warmup=1, eval_every=2)
    more = train.TrainConfig(steps=2, batch_size=2, seq_len=64, lr=5e-4, warmup=1, eval_every=1)
    train.train_one("target", TINY, first, tmp_path / "a", tmp_path / "w", corpus, command="train a")
    out = tmp_path / "b"
    record = train.train_one(
        "target", TINY, more, out, tmp_path / "w2", corpus, "train b", init_from=tmp_path / "a" / "target"
    )
    assert record["warmed_from"]["command"] == "train a" and record["warmed_from"]["train"]["steps"] == 4
    assert [s["train"]["steps"] for s in model_card.stages(record)] == [4, 2]
    assert [row[0] for row in model_card.full_curve(record)] == [2, 4, 5, 6]  # the second run's steps follow on
    train.train_one("draft", TINY, first, out, tmp_path / "w3", corpus, command="train draft")
    record["log"]["seconds_all_runs"], record["warmed_from"]["log"]["seconds_all_runs"] = 1800.0, 5400.0
    (out / "target" / "train.json").write_text(json.dumps({**record, "command": "train b"}))  # hours to sum
    assert cli.main(["card", "--out", str(out), "--corpus", str(corpus)]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["command"] == "train a && train b && train draft"
    text = (out / "README.md").read_text()
    assert "4 steps of 2 × 64 bytes, AdamW lr 0.001" in text
    assert "; then, from those weights, 2 more steps of 2 × 64 bytes, AdamW lr 0.0005" in text
    assert "2.00 h of training (wall clock)" in text  # both runs
    assert (out / "loss_curve.svg").read_text().count("<polyline") == 2
    capsys.readouterr()


def test_repeated_ngram_mask_marks_every_byte_of_a_repeated_ngram():
    mask = train.repeated_ngram_mask(np.array([[1, 2, 3, 4, 5, 1, 2, 3, 4], [7, 7, 7, 7, 7, 7, 0, 1, 2]]), 4)
    assert mask[0].tolist() == [False] * 5 + [True] * 4  # 1 2 3 4 came again at 5..8
    assert mask[1].tolist() == [False] + [True] * 5 + [False] * 3  # 7 7 7 7 at 0, again at 1 and 2
    assert not train.repeated_ngram_mask(np.arange(12)[None], 4).any()


@given(st.lists(st.integers(0, 3), min_size=4, max_size=40), st.integers(1, 5))
def test_a_sequence_has_a_repeat_marked_exactly_when_an_ngram_repeats(tokens, n):
    from specviz.engine.bench import distinct_ngram_ratio

    if len(tokens) < n:
        return
    mask = train.repeated_ngram_mask(np.array([tokens]), n)[0]
    assert mask.any() == (distinct_ngram_ratio(tokens, n) < 1)


def test_unlikelihood_loss_is_minus_log_one_minus_p_over_the_marked_tokens():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 8, generator=g, requires_grad=True)  # (B, N, V)
    tokens = torch.randint(0, 8, (2, 5), generator=g)
    mask = torch.tensor([[1, 0, 0, 1, 0], [0, 0, 0, 0, 1]], dtype=torch.bool)
    p = torch.softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]
    expected = -(torch.log(1 - p[0, 0]) + torch.log(1 - p[0, 3]) + torch.log(1 - p[1, 4])) / 10
    loss = train.unlikelihood_loss(logits, tokens, mask)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert train.unlikelihood_loss(logits, tokens, torch.zeros_like(mask)).item() == 0
    loss.backward()
    after = torch.softmax(logits - 0.5 * logits.grad, -1).gather(-1, tokens[..., None])[..., 0]
    assert (after[mask] < p[mask]).all()  # a descent step lowers exactly the marked tokens' probability
    assert (logits.grad[~mask] == 0).all()


@pytest.mark.slow
def test_unlikelihood_steps_log_the_repeat_share_and_resume_exactly(data, tmp_path):
    tc = train.TrainConfig(steps=6, batch_size=2, seq_len=64, warmup=2, checkpoint_every=1, eval_every=3)
    ul = train.UnlikelihoodConfig(every=2, prefix=16, new_tokens=24, n=2)

    def stop_at_3(step: int, bits: float) -> None:
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train.train_model(TINY, tc, data, tmp_path / "a", stop_at_3, data, unlikelihood=ul)
    saved = json.loads((tmp_path / "a" / "progress.json").read_text())
    assert saved["step"] == 2 and len(saved["window"]) == 2  # an unlikelihood step's [share], a plain step's loss
    assert isinstance(saved["window"][0], list) and isinstance(saved["window"][1], float)
    _, resumed = train.train_model(TINY, tc, data, tmp_path / "a", val_data=data, unlikelihood=ul)
    _, straight = train.train_model(TINY, tc, data, tmp_path / "b", val_data=data, unlikelihood=ul)
    assert [len(row) for row in straight["curve"]] == [4, 4]  # step, plain-step bits, held-out, repeat share
    assert straight["curve"][0][3] > 0  # an untrained model's greedy bytes repeat bigrams
    np.testing.assert_allclose(np.ravel(resumed["curve"]), np.ravel(straight["curve"]), atol=2e-4)


def test_unlikelihood_config_and_its_combination_with_distillation_are_checked(corpus, tmp_path):
    with pytest.raises(ValueError, match="unlikelihood prefix must be >= 1; got 0"):
        train.UnlikelihoodConfig(prefix=0)
    with pytest.raises(ValueError, match="cannot be combined with distillation"):
        train.train_one(
            "draft",
            TINY,
            TC,
            tmp_path,
            tmp_path / "w",
            corpus,
            distil=train.DistilConfig(),
            unlikelihood=train.UnlikelihoodConfig(),
        )


def test_train_one_records_its_unlikelihood_steps(corpus, tmp_path):
    tc = train.TrainConfig(steps=2, batch_size=2, seq_len=64, warmup=1, eval_every=2)
    ul = train.UnlikelihoodConfig(every=2, prefix=16, new_tokens=24)
    train.train_one("target", TINY, tc, tmp_path, tmp_path / "w", corpus, "train target", unlikelihood=ul)
    record = json.loads((tmp_path / "target" / "train.json").read_text())
    assert record["unlikelihood"] == {"every": 2, "prefix": 16, "new_tokens": 24, "n": 16}
    assert len(record["log"]["curve"][0]) == 4
