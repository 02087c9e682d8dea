"""A real engine: llama.cpp's llama-server running the bundled pair, exported to GGUF.

The server (built by scripts/build-llama-server, started on loopback by the ``llama_server``
fixture with K = 4 fixed) is read through every path a user has: its /metrics, each
completion's ``timings``, its own log, the Server monitor page, and the load generator.
The export is checked the strict way: llama.cpp's greedy continuation equals ours, token for token.
"""

from __future__ import annotations

import itertools
import statistics
import time

import pytest
import torch
from _apps import open_app
from conftest import LLAMA_K

from specviz.core import theory
from specviz.data.measurements import load_measurements
from specviz.engine import bench, decoding
from specviz.engine.models import BUNDLED_DIR, ByteTokenizer
from specviz.engine.models.gguf import as_llama_cpp_computes
from specviz.engine.models.gpt import GPT
from specviz.servers import fetch, llamacpp, loadgen, read_llamacpp, read_llamacpp_timings, window

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]
NEW = 128  # bytes of continuation, as the pair-quality benchmark measures text


@pytest.fixture(scope="module")
def prompts() -> list[torch.Tensor]:
    tok = ByteTokenizer()
    return [torch.tensor(tok.encode(p), dtype=torch.long) for p in bench.load_prompts()]


@pytest.fixture(scope="module")
def target() -> GPT:
    return GPT.load(BUNDLED_DIR / "target")


def llama_greedy(url: str, prompt: torch.Tensor) -> torch.Tensor:
    answer = llamacpp.complete(url, prompt.tolist(), NEW)
    return torch.tensor(answer["tokens"], dtype=torch.long)


def with_ggml_gelu_table(model):
    """A copy of ``model`` whose GELUs see and return fp16 values, as ggml's CPU GELU does (it looks
    the result up in a table indexed by the fp16 input, holding fp16 outputs)."""
    import copy

    twin = copy.deepcopy(model)
    for m in twin.modules():
        if isinstance(m, torch.nn.GELU):
            m.register_forward_pre_hook(lambda mod, args: (args[0].half().float(),))
            m.register_forward_hook(lambda mod, args, out: out.half().float())
    return twin


def test_llama_cpp_computes_the_exported_function_token_for_token(llama_server, prompts, target, one_torch_thread):
    """Weights, layout and tokenizer: llama.cpp's greedy continuation equals our model's with llama.cpp's GELU
    (the tanh approximation) on every bundled prompt, except at a near-tie: a top-2 margin smaller than
    ggml's fp16 GELU table moves the logits there (measured there, at most two); anything else names the
    position, tokens and margin."""
    twin = as_llama_cpp_computes(target)
    table = with_ggml_gelu_table(twin)
    problems, near_ties = [], []
    for i, prompt in enumerate(prompts):
        ours, _ = decoding.generate_target_only(twin, prompt, NEW, 0.0)
        d = decoding.first_divergence(twin, prompt, ours, llama_greedy(llama_server.url, prompt))
        if d is None:
            continue
        context = torch.cat([prompt, ours[: d.position]]).view(1, -1)
        with torch.no_grad():
            moved = float((twin(context)[0, -1] - table(context)[0, -1]).abs().max())
        (near_ties if d.margin < 2 * moved else problems).append(f"prompt {i}: {d}, fp16 GELU moves {moved:.2e}")
    assert not problems, "\n".join(problems)
    assert len(near_ties) <= 2, near_ties
    print(f"llama.cpp against its tanh-GELU twin: {len(prompts) - len(near_ties)} of {len(prompts)} equal; {near_ties}")


def test_greedy_continuations_against_our_engine(llama_server, prompts, target, one_torch_thread):
    """Against our engine (exact erf GELU): equal, or diverging only where our top-2 logit margin is smaller
    than the GELU approximation moves the logits at that point (measured there, not assumed)."""
    twin = as_llama_cpp_computes(target)
    equal, near_ties = 0, []
    for i, prompt in enumerate(prompts):
        ours, _ = decoding.generate_target_only(target, prompt, NEW, 0.0)
        d = decoding.first_divergence(target, prompt, ours, llama_greedy(llama_server.url, prompt))
        if d is None:
            equal += 1
            continue
        context = torch.cat([prompt, ours[: d.position]]).view(1, -1)
        with torch.no_grad():
            moved = float((target(context)[0, -1] - twin(context)[0, -1]).abs().max())
        assert d.margin < 2 * moved, f"prompt {i}: {d} is not a near-tie (the GELU moves logits by {moved:.2e})"
        near_ties.append((i, d.position, d.margin, moved))
    assert equal >= len(prompts) - 2, f"only {equal} of {len(prompts)} continuations equal; near-ties {near_ties}"
    print(
        f"llama.cpp against ours: {equal} of {len(prompts)} equal; near-ties (prompt, position, margin, moved) {near_ties}"
    )


def test_metrics_and_timings_readers_agree_on_one_request(llama_server, prompts):
    before = read_llamacpp(llamacpp.metrics_text(llama_server.url))
    answer = llamacpp.complete(llama_server.url, prompts[0].tolist(), 64)
    after = read_llamacpp(llamacpp.metrics_text(llama_server.url))
    w = window(before, after)
    one = window(None, read_llamacpp_timings(answer, k=LLAMA_K))
    assert after.k == LLAMA_K and len(after.accepted_per_position) == LLAMA_K
    assert w.drafts > 0 and w.draft_tokens == LLAMA_K * w.drafts  # K fixed: every draft has K tokens
    assert (w.draft_tokens, w.accepted_tokens) == (one.draft_tokens, one.accepted_tokens)
    assert w.rounds == one.rounds and w.mean_acceptance_length == pytest.approx(one.mean_acceptance_length)
    # per-position counts: drafts accepting ≥ i tokens, so they fall with i and sum to the accepted tokens
    per = w.accepted_per_position
    assert all(a >= b for a, b in itertools.pairwise(per)) and sum(per) == w.accepted_tokens
    assert 0.0 <= w.alpha() <= 1.0


def test_forward_probe_evaluates_exactly_the_extension(llama_server, prompts):
    prefix = prompts[3].tolist()
    ms = {n: [llamacpp.forward_ms(llama_server.url, prefix, prefix[:n]) for _ in range(5)] for n in (1, 8)}
    # each call raised unless the server evaluated exactly n tokens; eight tokens in one forward take
    # longer than one (about 1.6× on a 2-core CPU; single forwards vary by ±30 %, so medians of five)
    assert 0.0 < statistics.median(ms[1]) < statistics.median(ms[8]) < 5_000.0


def test_log_readers_on_the_servers_own_log(llama_server, prompts):
    def logged():
        return load_measurements(llama_server.log_text(), name="llama-server.log", k=LLAMA_K)

    def rows_logged() -> int:
        try:
            return len(logged()[0])
        except ValueError:  # no statistics line yet
            return 0

    rows_before = rows_logged()
    before = read_llamacpp(llamacpp.metrics_text(llama_server.url))
    llamacpp.complete(llama_server.url, prompts[1].tolist(), 48)
    w = window(before, read_llamacpp(llamacpp.metrics_text(llama_server.url)))
    deadline = time.monotonic() + 10  # the server may write a request's statistics after answering it
    while rows_logged() <= rows_before and time.monotonic() < deadline:
        time.sleep(0.05)
    frame, report = logged()
    assert report.format == "llamacpp_log"
    assert len(frame) >= 1 and frame["k"].eq(LLAMA_K).all()
    last = frame.iloc[-1]
    # the log's last statistics are this request's, as /metrics counted it (the log prints 2 decimals)
    assert last["mean_accepted_tokens"] == pytest.approx(w.mean_acceptance_length, abs=0.006)
    assert last["acceptance_rate"] == pytest.approx(w.accepted_tokens / w.draft_tokens, abs=0.006)


def test_server_monitor_page_reads_the_server(llama_server, prompts, db_url):
    llamacpp.complete(llama_server.url, prompts[2].tolist(), 32)
    w = window(None, read_llamacpp(llamacpp.metrics_text(llama_server.url)))
    at = open_app("pages/server-monitor.py", endpoints=llama_server.url, k="8")
    m = {x.label: x.value for x in at.metric}
    assert m[f"α at K = {LLAMA_K}"] != "—"  # the engine's own K (from its per-position series), not the assumed 8
    got = float(m["Mean acceptance length"])
    assert got == pytest.approx(w.mean_acceptance_length, abs=0.01) or got >= 1.0  # traffic may land between reads
    assert not at.error


def test_load_generator_against_the_server(llama_server):
    spec = loadgen.LoadSpec(
        llama_server.url, ["def main():\n", "class Parser:\n"], max_tokens=24, concurrency=1, max_requests=3
    )
    result = loadgen.run_load(spec, fetch.FetchPolicy())
    assert (result.done, result.failed) == (3, 0) and result.tokens == 3 * 24
    assert result.tokens_per_s == pytest.approx(result.tokens / result.wall_s)
    assert result.draft_acceptance is not None and 0.0 <= result.draft_acceptance <= 1.0
    assert theory.alpha_from_acceptance_rate(result.draft_acceptance, LLAMA_K) >= 0.0
