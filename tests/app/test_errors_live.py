"""The live benchmark's, the engine's and the bench's errors and notes: English as before, Chinese on a page.

Each case: the English ``str`` a person reads for one bad input, and a Chinese text with CJK characters
and the same numbers and inputs.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import Future
from dataclasses import replace

import pytest
import torch
from _messages import caught, check

from specviz.app import live
from specviz.base import i18n
from specviz.base.i18n import Message, Phrase, plural
from specviz.engine import bench, decoding

# ----------------------------------------------------------------------------- specviz.app.live.request

LIMITS = live.Limits()
HOSTED = live.Limits(hosted=True, hf_allowlist=("gpt2-large,gpt2",))


@pytest.mark.parametrize(
    ("env", "english", "same"),
    [
        ({"SPECVIZ_MAX_REPEATS": "0"}, "SPECVIZ_MAX_REPEATS must be a positive integer; got '0'", ("'0'",)),
        ({"SPECVIZ_MAX_CELLS": "many"}, "SPECVIZ_MAX_CELLS must be a positive integer; got 'many'", ("'many'",)),
        ({"SPECVIZ_MAX_WALL_S": "-1"}, "SPECVIZ_MAX_WALL_S must be a positive number; got '-1'", ("'-1'",)),
        (
            {"SPECVIZ_HF_ALLOWLIST": "gpt2"},
            "SPECVIZ_HF_ALLOWLIST entries must be 'TARGET,DRAFT' separated by ';'; got 'gpt2'",
            ("'gpt2'",),
        ),
    ],
)
def test_limits_from_env(env, english, same):
    exc = caught(live.limits_from_env, env)
    check(exc, english, *same, next(iter(env)))
    assert exc.__suppress_context__ or exc.__context__ is None  # "from None" where it was


def test_check_pair():
    check(
        caught(live.check_pair, "", LIMITS),
        "pair must be 'bundled' or 'TARGET,DRAFT' (Hugging Face ids); got an empty value",
        "'bundled'",
    )
    check(caught(live.check_pair, "a,", LIMITS), "pair must be 'bundled' or 'TARGET,DRAFT'; got 'a,'", "'a,'")
    check(
        caught(live.check_pair, "x,y", HOSTED),
        "pair 'x,y' is not allowed on this hosted deployment; allowed: 'bundled', 'bundled-target+ngram', "
        "'gpt2-large,gpt2'",
        "'x,y'",
        "'gpt2-large,gpt2'",
    )


@pytest.mark.parametrize(
    ("changes", "english", "same"),
    [
        ({"ks": []}, "K values: choose at least one draft length", ()),
        ({"ks": [70]}, "K values: 70 is outside [1, 64]", ("70", "[1, 64]")),
        ({"temperatures": []}, "temperatures: choose at least one (0 = greedy)", ("0",)),
        ({"temperatures": [2.5]}, "temperatures: 2.5 is outside [0, 2]", ("2.5", "[0, 2]")),
        ({"batches": []}, "batch sizes: choose at least one (1 = one sequence at a time)", ("1",)),
        ({"batches": [65]}, "batch sizes: 65 is outside [1, 64]", ("65", "[1, 64]")),
        (
            {"ks": list(range(1, 17)), "temperatures": [0.0, 0.5, 1.0, 1.5, 2.0]},
            "K values × temperatures × batch sizes: 80 cells; this deployment allows at most 64",
            ("80", "64"),
        ),
        (
            {"shapes": ["chain:2"] * 17, "temperatures": [0.0, 1.0]},
            "trees × temperatures: 34 cells; this deployment allows at most 16",
            ("34", "16"),
        ),
        ({"new_tokens": 2000}, "new tokens: 2000; allowed 1 to 1024", ("2000", "1024")),
        ({"repeats": 11}, "repeats: 11; allowed 1 to 10", ("11", "10")),
        ({"prompts": ["  "]}, "prompts: the prompt is empty; type some text or use the bundled prompts", ()),
        ({"prompts": ["x"] * 33}, "prompts: 33; this deployment allows at most 32", ("33", "32")),
    ],
)
def test_check_request(changes, english, same):
    args = {"ks": [1], "temperatures": [0.0], "new_tokens": 8, "repeats": 1, "prompts": ["x"], "limits": LIMITS}
    limits = replace(LIMITS, max_cells=16) if "shapes" in changes else LIMITS
    check(caught(live.check_request, **(args | {"limits": limits} | changes)), english, *same)


VIEW = {
    "pair": "bundled",
    "device": "cpu",
    "dtype": "auto",
    "prompts": "custom",
    "n_prompts": 1,
    "text": "def f(x):",
    "shape": "chain",
    "ks": [1],
    "trees": "",
    "tree_p": "",
    "temps": [0.0],
    "new_tokens": 8,
    "repeats": 1,
    "seed": 0,
    "batches": [1],
    "trace": False,
    "engine": "eager",
}


@pytest.mark.parametrize(
    ("changes", "english", "same"),
    [
        (
            {"pair": "t,d", "batches": [1, 2]},
            "batch sizes: decoding several sequences at once needs specviz's own GPT pair, not Hugging Face's",
            ("specviz", "GPT", "Hugging Face"),
        ),
        (
            {"shape": "tree", "trees": "chain:2", "batches": [2]},
            "batch sizes: draft trees decode one sequence at a time; choose batch size 1 only",
            ("1",),
        ),
        (
            {"shape": "tree", "trees": "chain:2", "pair": "t,d"},
            "draft shape: trees need tree attention, which specviz's own GPT pair has; use 'bundled'",
            ("'bundled'",),
        ),
        (
            {"pair": "bundled-target+ngram", "batches": [2]},
            "batch sizes: the n-gram drafter decodes one sequence at a time; choose batch size 1 only",
            ("n-gram", "1"),
        ),
        ({"dtype": "int8"}, "dtype: 'int8'; allowed: auto, float32, float16, bfloat16", ("'int8'", "float16")),
        (
            {"trace": True, "temps": [1.0]},
            "record a trace: traces are of greedy chains — include temperature 0, draft chains (not trees), "
            "batch size 1",
            ("0", "1"),
        ),
        (
            {"trace": True, "pair": "t,d"},
            "record a trace: specviz's own GPT pair is needed (the Hugging Face adapter is not traced)",
            ("GPT", "Hugging Face"),
        ),
        ({"shape": "tree", "trees": " "}, "trees: type at least one draft shape, e.g. chain:4 optimal:16,6", ()),
        (
            {"engine": "compiled", "pair": "t,d"},
            "engine: compiled steps are built for specviz's own GPT pair; use 'bundled' or the eager engine",
            ("GPT", "'bundled'", "eager"),
        ),
        (
            {"engine": "both", "batches": [1, 4]},
            "engine: the compiled engine decodes one sequence at a time; choose batch size 1 only",
            ("1",),
        ),
        ({"engine": "turbo"}, "engine: 'turbo'; allowed: eager, compiled, both", ("'turbo'", "eager", "compiled")),
    ],
)
def test_make_request(changes, english, same):
    check(caught(live.make_request, VIEW | changes, LIMITS), english, *same)


# ----------------------------------------------------------------------------- specviz.app.live.worker


def test_torch_dtype():
    check(caught(live.torch_dtype, "fp8"), "dtype: 'fp8'; allowed: auto, float32, float16, bfloat16", "'fp8'")


def test_the_queue_says_who_holds_it_and_how_long_another_waited_in_any_language():
    queue, waits, inside = live.RunQueue(), [], threading.Event()
    release = threading.Event()

    def holder() -> None:
        with queue.hold(Phrase(plural("a run of {cells} cell", "a run of {cells} cells", 3), cells=3)):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert inside.wait(10)
    busy = queue.busy()
    assert re.fullmatch(r"a run of 3 cells, running for \d+ s", busy), busy  # seconds: as the machine allows
    check(busy, str(busy), "3 个单元")
    check(Phrase("{who}, running for {s:.0f} s", who="run 1", s=12.6), "run 1, running for 13 s", "run 1", "13")

    def waiter() -> None:
        with queue.hold("run 2", on_wait=waits.append, poll_s=0.05):
            pass

    other = threading.Thread(target=waiter)
    other.start()
    deadline = time.monotonic() + 10
    while not waits and time.monotonic() < deadline:
        time.sleep(0.02)
    release.set()
    thread.join(10), other.join(10)
    assert queue.busy() is None
    english = r"Queued behind another run \(a run of 3 cells, running for \d+ s\); waited \d+ s\."
    assert re.fullmatch(english, waits[0]), waits[0]
    check(waits[0], str(waits[0]), "3 个单元")
    assert all(isinstance(w, Phrase) and w.startswith("Queued behind another run (a run of 3 cells") for w in waits)
    check(
        Phrase("Queued behind another run ({holder}); waited {s:.0f} s.", holder=Phrase("finishing"), s=2.4),
        "Queued behind another run (finishing); waited 2 s.",
        "2",
    )


# ----------------------------------------------------------------------------- specviz.app.live.run


def tiny_request(**changes) -> live.Request:
    request = live.Request(
        pair="bundled",
        device="cpu",
        dtype="auto",
        prompts=("def f(x):",),
        ks=(1, 2),
        temperatures=(0.0,),
        new_tokens=4,
        repeats=1,
        seed=0,
        max_wall_s=120.0,
    )
    return replace(request, **changes)


def test_execute_names_the_run_holding_the_queue():
    queue, seen = live.RunQueue(), []

    class Worker:  # runs nothing: the test looks at the queue while the run holds it
        pair = None

        def submit(self, fn, *args):
            seen.append(queue.busy())
            future = Future()
            future.set_result(None)
            return future

    live.execute(live.LiveRun(tiny_request()), queue=queue, worker=Worker(), poll_s=0.01)
    assert re.fullmatch(r"a run of 2 cells, running for \d+ s", seen[0]), seen[0]
    check(seen[0], str(seen[0]), "2 个单元")


def test_an_error_that_stopped_a_run_reads_in_the_pages_language():
    previous, partial = live.LiveRun(tiny_request()), live.LiveRun(tiny_request())
    partial.rows.append({"k": 1})
    exc = Message("new tokens: {n}; allowed 1 to {max}", n=2000, max=1024)
    assert live.kept_after_error(partial, previous, exc) is partial
    assert partial.stopped == partial.stopped_text() == "an error in a later cell: new tokens: 2000; allowed 1 to 1024"
    zh = partial.stopped_text("zh")
    assert (
        zh == i18n.text("zh", "an error in a later cell: {error}", error=exc.text("zh"))
        and "新生成 token 数：2000" in zh
    )
    other = live.LiveRun(tiny_request())
    other.rows.append({"k": 1})
    live.kept_after_error(other, previous, RuntimeError("out of memory"))
    assert other.stopped_text("zh") == "后面的某个单元出错：out of memory"


@pytest.fixture(scope="module")
def rows(one_torch_thread) -> list[dict]:
    """Two cells as a live run measures them (a greedy and a sampled one)."""
    from specviz.engine.models import load_pair

    target, draft, tok = load_pair("bundled")
    frame = bench.sweep(target, draft, tok, ["def f(x):"], [1], [0.0, 1.0], 4, 1, meta=tiny_request().meta())
    return frame.to_dict("records")


def test_canonical(rows):
    bad = [rows[0], rows[1] | {"alpha": 1.5}]
    exc = caught(live.canonical, bad)
    english = "live run: a row does not pass the measurement schema: row 2, alpha: '1.5' — allowed: [0, 1]"
    assert str(exc).startswith(english)
    check(exc, str(exc), "实时运行", "'1.5'", "[0, 1]")
    assert exc.text("zh").startswith("实时运行：")
    exc = caught(live.canonical, [rows[0], rows[1] | {"alpha": 1.5, "c": -1.0}])
    assert str(exc).startswith(english) and str(exc).endswith(" (and 1 more bad cell(s))")
    check(exc, str(exc), "实时运行", "'1.5'", "另有 1 个")
    assert caught(live.canonical, bad, name="my rows").text("zh").startswith("my rows：")


# ----------------------------------------------------------------------------- specviz.engine.decoding


class Model:
    context_length = 32


def test_check_inputs():
    p = torch.zeros(3, dtype=torch.long)
    cases = [
        (
            (torch.zeros(0, dtype=torch.long), 4, 0.0, 1),
            "prompt must be a non-empty 1-D tensor of token ids; got shape (0,)",
            "(0,)",
        ),
        ((p, 0, 0.0, 1), "max_new_tokens must be >= 1; got 0", "0"),
        ((p, 4, float("nan"), 1), "temperature must be a finite number >= 0; got nan", "nan"),
        (
            (p, 30, 0.0, 4),
            "prompt (3 tokens) + max_new_tokens (30) + K + 1 = 38 exceeds the model's context of 32 tokens",
            "38",
        ),
    ]
    for args, english, same in cases:
        check(caught(decoding.check_inputs, [Model()], *args), english, same)
    exc = caught(decoding.check_inputs, [Model()], p, 30, 0.0, 4)
    assert "32" in exc.text("zh") and "30" in exc.text("zh")


def test_the_engines_check_k_and_the_batch():
    p = torch.zeros(3, dtype=torch.long)
    check(caught(decoding.speculative_generate, None, None, p, 0, 0.0, 4), "k must be an integer >= 1; got 0", "0")
    check(
        caught(decoding.speculative_generate_batch, None, None, [p], 1.5, 0.0, 4),
        "k must be an integer >= 1; got 1.5",
        "1.5",
    )
    models = (Model(), Model())
    check(caught(decoding.speculative_generate_batch, *models, [], 1, 0.0, 4), "prompts must hold at least one prompt")
    exc = caught(decoding.speculative_generate_batch, *models, [p, torch.zeros(1, dtype=torch.long)], 1, 0.0, 4)
    check(exc, "prompt 1: batched decoding needs prompts of at least 2 tokens; got 1", "1", "2")
    exc = caught(decoding.speculative_generate_batch, *models, [p, p[:2]], 1, 0.0, 40)
    check(
        exc,
        "prompt 0: prompt (3 tokens) + max_new_tokens (40) + K + 1 = 45 exceeds the model's context of 32 tokens",
        "提示词 0",
        "45",
    )
    assert exc.fields["cause"].text("zh") in exc.text("zh")  # the cause in the same language
    assert exc.__suppress_context__


# ----------------------------------------------------------------------------- specviz.engine.bench


def test_load_prompts(tmp_path):
    missing = tmp_path / "none.txt"
    check(caught(bench.load_prompts, missing), f"prompts file {str(missing)!r} does not exist", repr(str(missing)))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n---\n  \n", encoding="utf-8")
    check(caught(bench.load_prompts, empty), f"prompts file {str(empty)!r} holds no prompt", repr(str(empty)))


class Tokenizer:
    def encode(self, text: str) -> list[int]:
        return [0] * len(text)


def test_sweep():
    m = (Model(), Model(), Tokenizer())
    check(caught(bench.sweep, *m, ["ab"], [], [0.0], 4, 1), "a sweep needs at least one draft length K or tree", "K")
    check(caught(bench.sweep, *m, ["ab"], [1], [-1.0], 4, 1), "temperature must be >= 0; got [-1.0]", "[-1.0]")
    check(caught(bench.sweep, *m, ["ab"], [1], [0.0], 4, 0), "repeats must be >= 1; got 0", "0")
    exc = caught(bench.sweep, *m, ["ab", "x" * 30], [2], [0.0], 4, 1)
    check(
        exc,
        "prompt 2: prompt (30 tokens) + max_new_tokens (4) + K + 1 = 37 exceeds the model's context of 32 tokens",
        "提示词 2",
        "37",
    )
    assert exc.__suppress_context__
