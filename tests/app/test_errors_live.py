"""The live benchmark's, the engine's and the bench's errors and notes, in English and in Chinese.

Each case: the message's key and fields for one bad input, and its values read the same in English and
in Chinese (tests/_messages.py).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import replace

import pytest
import torch
from _messages import caught, expect, inner

from specviz.app import live
from specviz.base.i18n import Message, Phrase, plural
from specviz.engine import bench, decoding

# ----------------------------------------------------------------------------- specviz.app.live.request

LIMITS = live.Limits()
HOSTED = live.Limits(hosted=True, hf_allowlist=("gpt2-large,gpt2",))


@pytest.mark.parametrize(
    ("env", "msgid", "fields", "shows"),
    [
        (
            {"SPECVIZ_MAX_REPEATS": "0"},
            "{name} must be a positive integer; got {raw!r}",
            {"name": "SPECVIZ_MAX_REPEATS", "raw": "0"},
            ("'0'",),
        ),
        (
            {"SPECVIZ_MAX_CELLS": "many"},
            "{name} must be a positive integer; got {raw!r}",
            {"name": "SPECVIZ_MAX_CELLS", "raw": "many"},
            ("'many'",),
        ),
        (
            {"SPECVIZ_MAX_WALL_S": "-1"},
            "{name} must be a positive number; got {raw!r}",
            {"name": "SPECVIZ_MAX_WALL_S", "raw": "-1"},
            ("'-1'",),
        ),
        (
            {"SPECVIZ_HF_ALLOWLIST": "gpt2"},
            "SPECVIZ_HF_ALLOWLIST entries must be 'TARGET,DRAFT' separated by ';'; got {pair!r}",
            {"pair": "gpt2"},
            ("'gpt2'",),
        ),
    ],
)
def test_limits_from_env(env, msgid, fields, shows):
    exc = caught(live.limits_from_env, env)
    expect(exc, msgid, fields, (*shows, next(iter(env))))
    assert exc.__suppress_context__ or exc.__context__ is None  # "from None" where it was


def test_check_pair():
    expect(
        caught(live.check_pair, "", LIMITS),
        "pair must be 'bundled' or 'TARGET,DRAFT' (Hugging Face ids); got an empty value",
        {},
        ("'bundled'",),
    )
    expect(
        caught(live.check_pair, "a,", LIMITS),
        "pair must be 'bundled' or 'TARGET,DRAFT'; got {spec!r}",
        {"spec": "a,"},
        ("'a,'",),
    )
    allowed = "'bundled', 'bundled-target+ngram', 'gpt2-large,gpt2'"
    expect(
        caught(live.check_pair, "x,y", HOSTED),
        "pair {spec!r} is not allowed on this hosted deployment; allowed: {allowed}",
        {"spec": "x,y", "allowed": allowed},
        ("'x,y'", allowed),
    )


@pytest.mark.parametrize(
    ("changes", "msgid", "fields", "shows"),
    [
        ({"ks": []}, "K values: choose at least one draft length", {}, ()),
        ({"ks": [70]}, "K values: {k} is outside [1, 64]", {"k": 70}, ("70", "[1, 64]")),
        ({"temperatures": []}, "temperatures: choose at least one (0 = greedy)", {}, ("0",)),
        ({"temperatures": [2.5]}, "temperatures: {t} is outside [0, 2]", {"t": 2.5}, ("2.5", "[0, 2]")),
        ({"batches": []}, "batch sizes: choose at least one (1 = one sequence at a time)", {}, ("1",)),
        ({"batches": [65]}, "batch sizes: {b} is outside [1, {max}]", {"b": 65, "max": 64}, ("65", "[1, 64]")),
        (
            {"ks": list(range(1, 17)), "temperatures": [0.0, 0.5, 1.0, 1.5, 2.0]},
            "K values × temperatures × batch sizes: {cells} cells; this deployment allows at most {max}",
            {"cells": 80, "max": 64},  # 16 K × 5 temperatures × 1 batch size
            ("80", "64"),
        ),
        (
            {"shapes": ["chain:2"] * 17, "temperatures": [0.0, 1.0]},
            "trees × temperatures: {cells} cells; this deployment allows at most {max}",
            {"cells": 34, "max": 16},  # 17 trees × 2 temperatures
            ("34", "16"),
        ),
        ({"new_tokens": 2000}, "new tokens: {n}; allowed 1 to {max}", {"n": 2000, "max": 1024}, ("2000", "1024")),
        ({"repeats": 11}, "repeats: {n}; allowed 1 to {max}", {"n": 11, "max": 10}, ("11", "10")),
        ({"prompts": ["  "]}, "prompts: the prompt is empty; type some text or use the bundled prompts", {}, ()),
        (
            {"prompts": ["x"] * 33},
            "prompts: {n}; this deployment allows at most {max}",
            {"n": 33, "max": 32},
            ("33", "32"),
        ),
    ],
)
def test_check_request(changes, msgid, fields, shows):
    args = {"ks": [1], "temperatures": [0.0], "new_tokens": 8, "repeats": 1, "prompts": ["x"], "limits": LIMITS}
    limits = replace(LIMITS, max_cells=16) if "shapes" in changes else LIMITS
    expect(caught(live.check_request, **(args | {"limits": limits} | changes)), msgid, fields, shows)


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
    ("changes", "msgid", "fields", "shows"),
    [
        (
            {"pair": "t,d", "batches": [1, 2]},
            "batch sizes: decoding several sequences at once needs specviz's own GPT pair, not Hugging Face's",
            {},
            ("specviz", "GPT", "Hugging Face"),
        ),
        (
            {"shape": "tree", "trees": "chain:2", "batches": [2]},
            "batch sizes: draft trees decode one sequence at a time; choose batch size 1 only",
            {},
            ("1",),
        ),
        (
            {"shape": "tree", "trees": "chain:2", "pair": "t,d"},
            "draft shape: trees need tree attention, which specviz's own GPT pair has; use 'bundled'",
            {},
            ("'bundled'",),
        ),
        (
            {"pair": "bundled-target+ngram", "batches": [2]},
            "batch sizes: the n-gram drafter decodes one sequence at a time; choose batch size 1 only",
            {},
            ("n-gram", "1"),
        ),
        (
            {"dtype": "int8"},
            "dtype: {dtype!r}; allowed: {allowed}",
            {"dtype": "int8", "allowed": "auto, float32, float16, bfloat16"},
            ("'int8'", "auto, float32, float16, bfloat16"),
        ),
        (
            {"trace": True, "temps": [1.0]},
            "record a trace: traces are of greedy chains — include temperature 0, draft chains (not trees), "
            "batch size 1",
            {},
            ("0", "1"),
        ),
        (
            {"trace": True, "pair": "t,d"},
            "record a trace: specviz's own GPT pair is needed (the Hugging Face adapter is not traced)",
            {},
            ("GPT", "Hugging Face"),
        ),
        ({"shape": "tree", "trees": " "}, "trees: type at least one draft shape, e.g. chain:4 optimal:16,6", {}, ()),
        (
            {"engine": "compiled", "pair": "t,d"},
            "engine: compiled steps are built for specviz's own GPT pair; use 'bundled' or the eager engine",
            {},
            ("GPT", "'bundled'", "eager"),
        ),
        (
            {"engine": "both", "batches": [1, 4]},
            "engine: the compiled engine decodes one sequence at a time; choose batch size 1 only",
            {},
            ("1",),
        ),
        (
            {"engine": "turbo"},
            "engine: {value!r}; allowed: eager, compiled, both",
            {"value": "turbo"},
            ("'turbo'", "eager", "compiled"),
        ),
    ],
)
def test_make_request(changes, msgid, fields, shows):
    expect(caught(live.make_request, VIEW | changes, LIMITS), msgid, fields, shows)


# ----------------------------------------------------------------------------- specviz.app.live.worker


def test_torch_dtype():
    expect(
        caught(live.torch_dtype, "fp8"),
        "dtype: {dtype!r}; allowed: {allowed}",
        {"dtype": "fp8", "allowed": "auto, float32, float16, bfloat16"},
        ("'fp8'",),
    )


A_RUN_OF_3 = inner("a run of {cells} cells", cells=3)  # the plural's msgid for 3
QUEUED = "Queued behind another run ({holder}); waited {s:.0f} s."


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
    # seconds: as the machine allows
    expect(busy, "{who}, running for {s:.0f} s", {"who": A_RUN_OF_3, "s": float}, ("3",))
    assert 0 <= busy.fields["s"] < 10
    expect(
        Phrase("{who}, running for {s:.0f} s", who="run 1", s=12.6),
        "{who}, running for {s:.0f} s",
        {"who": "run 1", "s": 12.6},
        ("run 1", "13"),
    )  # rounded in both languages

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
    holder = inner("{who}, running for {s:.0f} s", who=A_RUN_OF_3, s=float)
    assert waits
    for wait in waits:
        expect(wait, QUEUED, {"holder": holder, "s": float}, ("3",))
        assert 0 <= wait.fields["s"] < 10
    expect(Phrase(QUEUED, holder=Phrase("finishing"), s=2.4), QUEUED, {"holder": inner("finishing"), "s": 2.4}, ("2 ",))


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
    expect(
        seen[0], "{who}, running for {s:.0f} s", {"who": inner("a run of {cells} cells", cells=2), "s": float}, ("2",)
    )


def test_an_error_that_stopped_a_run_reads_in_the_pages_language():
    previous, partial = live.LiveRun(tiny_request()), live.LiveRun(tiny_request())
    partial.rows.append({"k": 1})
    exc = Message("new tokens: {n}; allowed 1 to {max}", n=2000, max=1024)
    assert live.kept_after_error(partial, previous, exc) is partial
    stopped = Phrase(partial.stop_reason[0], **partial.stop_reason[1])
    error = inner("new tokens: {n}; allowed 1 to {max}", n=2000, max=1024)
    expect(stopped, "an error in a later cell: {error}", {"error": error}, ("2000", "1024"))
    assert partial.stopped == partial.stopped_text() == str(stopped)
    assert partial.stopped_text("zh") == stopped.text("zh")
    assert exc.text("zh") in stopped.text("zh")  # the error in the page's language too
    other = live.LiveRun(tiny_request())
    other.rows.append({"k": 1})
    live.kept_after_error(other, previous, RuntimeError("out of memory"))
    stopped = Phrase(other.stop_reason[0], **other.stop_reason[1])
    expect(stopped, "an error in a later cell: {error}", {"error": "out of memory"}, ("out of memory",))
    assert other.stopped_text("zh") == stopped.text("zh")


@pytest.fixture(scope="module")
def rows(one_torch_thread) -> list[dict]:
    """Two cells as a live run measures them (a greedy and a sampled one)."""
    from specviz.engine.models import load_pair

    target, draft, tok = load_pair("bundled")
    frame = bench.sweep(target, draft, tok, ["def f(x):"], [1], [0.0, 1.0], 4, 1, meta=tiny_request().meta())
    return frame.to_dict("records")


SCHEMA = "{name}: a row does not pass the measurement schema: {error}"
SCHEMA_MORE = "{name}: a row does not pass the measurement schema: {error} (and {more} more bad cell(s))"


@pytest.mark.slow
def test_canonical(rows):
    bad = [rows[0], rows[1] | {"alpha": 1.5}]
    exc = caught(live.canonical, bad)
    # the bad cell in the page's language, not English inside a Chinese message
    percent = inner("{allowed} (a column wholly in percent is read as percent)", allowed=inner("[0, 1]"))
    alpha = inner(
        "row {row}, {column}: {value!r} — allowed: {allowed}", row=2, column="alpha", value="1.5", allowed=percent
    )
    expect(exc, SCHEMA, {"name": inner("live run"), "error": alpha}, ("'1.5'", "[0, 1]"))
    exc = caught(live.canonical, [rows[0], rows[1] | {"alpha": 1.5, "c": -1.0}])
    expect(exc, SCHEMA_MORE, {"name": inner("live run"), "error": alpha, "more": 1}, ("'1.5'", "1"))
    expect(caught(live.canonical, bad, name="my rows"), SCHEMA, {"name": "my rows", "error": alpha}, ("my rows",))


# ----------------------------------------------------------------------------- specviz.engine.decoding


class Model:
    context_length = 32


CONTEXT = (
    "prompt ({prompt} tokens) + max_new_tokens ({new}) + K + 1 = {need} exceeds the model's context of {context} tokens"
)


def test_check_inputs():
    p = torch.zeros(3, dtype=torch.long)
    cases = [
        (
            (torch.zeros(0, dtype=torch.long), 4, 0.0, 1),
            "prompt must be a non-empty 1-D tensor of token ids; got shape {shape}",
            {"shape": (0,)},
            ("(0,)",),
        ),
        ((p, 0, 0.0, 1), "max_new_tokens must be >= 1; got {n}", {"n": 0}, ("0",)),
        (
            (p, 4, float("nan"), 1),
            "temperature must be a finite number >= 0; got {temperature}",
            {"temperature": float("nan")},
            ("nan",),
        ),
        ((p, 30, 0.0, 4), CONTEXT, {"prompt": 3, "new": 30, "need": 38, "context": 32}, ("3", "30", "38", "32")),
    ]
    for args, msgid, fields, shows in cases:
        expect(caught(decoding.check_inputs, [Model()], *args), msgid, fields, shows)


def test_the_engines_check_k_and_the_batch():
    p = torch.zeros(3, dtype=torch.long)
    k_msgid = "k must be an integer >= 1; got {k!r}"
    expect(caught(decoding.speculative_generate, None, None, p, 0, 0.0, 4), k_msgid, {"k": 0}, ("0",))
    expect(caught(decoding.speculative_generate_batch, None, None, [p], 1.5, 0.0, 4), k_msgid, {"k": 1.5}, ("1.5",))
    models = (Model(), Model())
    exc = caught(decoding.speculative_generate_batch, *models, [], 1, 0.0, 4)
    expect(exc, "prompts must hold at least one prompt")
    exc = caught(decoding.speculative_generate_batch, *models, [p, torch.zeros(1, dtype=torch.long)], 1, 0.0, 4)
    expect(exc, "prompt {i}: batched decoding needs prompts of at least 2 tokens; got 1", {"i": 1}, ("1", "2"))
    exc = caught(decoding.speculative_generate_batch, *models, [p, p[:2]], 1, 0.0, 40)
    cause = inner(CONTEXT, prompt=3, new=40, need=45, context=32)  # 3 + 40 + 1 + 1 = 45 > 32
    expect(exc, "prompt {i}: {cause}", {"i": 0, "cause": cause}, ("0", "45", "32"))
    assert exc.__suppress_context__


# ----------------------------------------------------------------------------- specviz.engine.bench


def test_load_prompts(tmp_path):
    missing = tmp_path / "none.txt"
    exc = caught(bench.load_prompts, missing)
    expect(exc, "prompts file {path!r} does not exist", {"path": str(missing)}, (repr(str(missing)),))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n---\n  \n", encoding="utf-8")
    exc = caught(bench.load_prompts, empty)
    expect(exc, "prompts file {path!r} holds no prompt", {"path": str(empty)}, (repr(str(empty)),))


class Tokenizer:
    def encode(self, text: str) -> list[int]:
        return [0] * len(text)


def test_sweep():
    m = (Model(), Model(), Tokenizer())
    expect(caught(bench.sweep, *m, ["ab"], [], [0.0], 4, 1), "a sweep needs at least one draft length K or tree")
    exc = caught(bench.sweep, *m, ["ab"], [1], [-1.0], 4, 1)
    expect(exc, "temperature must be >= 0; got {temperatures}", {"temperatures": [-1.0]}, ("[-1.0]",))
    exc = caught(bench.sweep, *m, ["ab"], [1], [0.0], 4, 0)
    expect(exc, "repeats must be >= 1; got {repeats}", {"repeats": 0}, ("0",))
    exc = caught(bench.sweep, *m, ["ab", "x" * 30], [2], [0.0], 4, 1)
    cause = inner(CONTEXT, prompt=30, new=4, need=37, context=32)  # 30 + 4 + 2 + 1 = 37 > 32
    expect(exc, "prompt {i}: {cause}", {"i": 2, "cause": cause}, ("2", "37"))
    assert exc.__suppress_context__
