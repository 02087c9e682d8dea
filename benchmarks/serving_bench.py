"""The serving model (specviz.core.serving): its sweep's speed, and its predictions against a real server
under load, with PASS/FAIL.

Run from the repository root::

    python benchmarks/serving_bench.py                 # both parts (the server part needs llama.cpp built)
    python benchmarks/serving_bench.py --sweep-only    # the timing part only (seconds)

1. Sweep: the Serving view's whole sweep, ``--loads`` Poisson rates × K = 0..8 for one pair and GPU
   (``serving.cost_grid`` + ``serving.steady_state`` + ``serving.best_by_load``), against the same
   steady states from a per-point loop (``serving.open_loop_point``: the same chain walked level by level
   in Python, pricing every step with ``serving.round_seconds``). Targets: <= 0.5 s, >= 50× the loop, the
   same best K at every load and TPOT within 0.5 %.
1b. The model against ``serving.simulate_batching``: the same server, round by round, under llama-server's
   rules (every admitted prompt rides in the next round, fixed prompt costs, outputs uniform over 64 … 192)
   rather than the model's (exponential prompts and outputs, one prompt a round), for three step shapes at
   two open-loop rates and 2, 4, 8 users; beside it, the open-loop TPOT of the fluid stretch the model
   replaced. Target: within ±10 % everywhere (half the budget against the real server).
2. A real server: llama.cpp's llama-server (``scripts/build-llama-server``) with ``--slots`` slots
   (continuous batching) serves the bundled pair exported to GGUF, once without the draft and once
   with it at ``--k``. The load generator (specviz.servers.loadgen, streaming) drives each at
   concurrency 1, 2, 4, 8 and at two Poisson rates (35 % and 70 % of the capacity the first calibration
   predicts without the draft), output lengths uniform over g/2 … 3g/2, a prompt never seen before for
   every request. Predicted: the serving model on the server's own costs, measured apart from the load
   on prompts drawn as the load's are but never sent by it (``server_steps``: synchronised batches of
   B = 1 … slots decoding from cached prompts, the server's timings, and E[N] from its draft counters,
   pooled over every calibration so far;
   ``stall``: what one new request costs the requests decoding), measured just before each server's run of each load (this VM's speed drifts by ±20 % over minutes),
   never fitted to the load runs. Each calibration batch of B decodes in B slots drawn from the layouts the
   load's rounds at B busy slots meet under llama-server's least-recently-used slot choice
   (``serving.lru_slot_layouts``, simulated for that load on the costs measured before; llama-server
   forwards each run of consecutive busy slots apart, and two lone slots cost more than two one-slot
   steps); ``--contiguous`` calibrates slots 0 … B − 1 and prices the spread with
   ``serving.scattered_steps``, as the Serving view does.
   The servers run on the last core and the load generator on the other (``--pin``, the default),
   without llama-server's host-memory prompt cache (``--cache-ram 0``: no request reuses another's prompt).
   Each of ``--repeats`` rounds runs every load on both servers; the table holds the medians, how much
   a 10 % error in the costs would move each prediction (``tpot_sens``) and how far the measured TPOT moved
   between rounds ((max − min) / median, ``tpot_spread``). An open loop's mean TPOT rests on its bursts:
   each open-loop run sends ``--open-seconds`` (120 s) of Poisson arrivals. Targets: TPOT and output
   throughput within ±20 % at every load; the concurrency from which speculation stops paying within one
   step of the measured one.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
from _report import machine_line, median_time, record, summary

from specviz.core import hardware, serving

T0 = time.perf_counter()


def sweep_check(pair: str, gpu: str, tp: int, engine: str, alpha: float, n_loads: int) -> None:
    """Part 1: the whole sweep, vectorised against the per-point loop."""
    row = hardware.preset_pairs(heads=True).set_index("name").loc[pair]
    target, draft = row["target"], row["draft"]
    prompt, output = serving.Lengths.fixed(1024), serving.Lengths.fixed(256)
    options = serving.chain_options(alpha, 8)
    kw = dict(tp=tp, stack=engine)

    def vectorised():
        grid = serving.cost_grid(target, draft, gpu, options, prompt, output, **kw)
        cap_rate = float(np.max(grid.cap / ((output.mean - 1) / grid.mean_tokens * grid.round_s[-1])))
        loads = np.geomspace(cap_rate / 200, cap_rate * 0.75, n_loads)
        frame = serving.steady_state(grid, output, loads)
        return grid, loads, frame, serving.best_by_load(frame)

    t_vec, _ = median_time(vectorised, repeats=7, warmup=1)
    grid, loads, frame, best = vectorised()
    rounds = (output.mean - 1) / grid.mean_tokens
    eff = hardware.as_efficiency(engine) if engine else None
    t0 = time.perf_counter()
    ref = np.full((loads.size, len(options)), np.nan)
    for i, rate in enumerate(loads):
        for k, option in enumerate(options):

            def price(b, option=option):
                return float(
                    serving.round_seconds(target, draft, gpu, [option], [b], grid.context, tp=tp, efficiency=eff)[0, 0]
                )

            ref[i, k] = serving.open_loop_point(
                price, rate, rounds[k], grid.prefill_s[k], grid.mean_tokens[k], grid.option_caps()[k]
            )["tpot_s"]
    t_loop = time.perf_counter() - t0
    got = frame["tpot_s"].to_numpy().reshape(loads.size, len(options))
    both = np.isfinite(ref) & np.isfinite(got)
    same_overload = bool((np.isfinite(ref) == np.isfinite(got)).all())
    worst = float(np.max(np.abs(got[both] / ref[both] - 1)))
    k_ref = np.where(np.isfinite(ref).any(1), np.nanargmin(np.where(np.isfinite(ref), ref, np.inf), 1), -1)
    k_vec = best["k_best"].fillna(-1).to_numpy().astype(int)
    print(f"\n1. sweep: {pair} on {tp} × {gpu}, {engine} profile, α = {alpha}: {loads.size} rates × K = 0..8")
    print(f"   rates {loads[0]:.3g} … {loads[-1]:.3g} requests/s; cap {grid.cap:.0f} sequences; L̄ = {grid.context:.0f}")
    print(f"   vectorised: {t_vec * 1e3:.1f} ms (median of 7); per-point loop: {t_loop:.2f} s")
    print("   best K by load:", " ".join(str(k) for k in k_vec))
    record("whole sweep time", f"{t_vec * 1e3:.1f} ms", "<= 500 ms", t_vec <= 0.5)
    record("sweep vs per-point loop", f"{t_loop / t_vec:.0f}×", ">= 50×", t_loop / t_vec >= 50)
    record("same TPOT as the loop", f"worst {worst:.2e}", "<= 0.5 %", worst <= 5e-3 and same_overload)
    record(
        "same best K as the loop", f"{int((k_vec == k_ref).sum())}/{k_vec.size}", "all", bool((k_vec == k_ref).all())
    )


# --------------------------------------------------------------------------------------
# 1b. the model against a simulation of the server it describes
# --------------------------------------------------------------------------------------

#: step shapes t(n) over 8 sequences, ms a round (not measurements): a memory-bound step (flat), a
#: compute-bound one (linear), and a steep-then-flattening one of the kind llama-server's one-thread CPU
#: steps take (two busy slots cost more than twice one, docs/serving-llamacpp-slots.md)
SHAPES = {
    "flat": np.full(8, 1.0),
    "linear": np.arange(1.0, 9.0),
    "steep": np.array([1.0, 2.4, 3.5, 4.4, 5.3, 6.0, 6.4, 6.6]),
}


def model_check(requests: int, seed: int = 0) -> None:
    """Part 1b: the steady state against :func:`serving.simulate_batching` of llama-server's round rule
    (every admitted prompt rides in the next round beside one decode step), fixed 40 ms prompts and outputs
    uniform over 64 … 192 tokens: the assumptions the chain makes (exponential prompts and outputs, one
    prompt a round) against the server's. TPOT as ``vllm bench serve`` takes it, a mean over requests, with
    its standard error from 20 batch means; loads at 35 % and 70 % of each shape's capacity, and 2, 4, 8 users.
    """
    rng = np.random.default_rng(seed)
    prefill = 0.040
    output = serving.Lengths.uniform(64, 192)
    rounds_mean = output.mean - 1
    option = serving.Option("K = 0", 0, 1.0)
    print(f"\n1b. the model against a simulation of the server: {requests} requests a load, 8 sequences, 40 ms prompts")
    print("   shape   load           model  simulated (± s.e.)  error   fluid stretch (error)")
    worst = {"open": 0.0, "closed": 0.0}
    for name, ms in SHAPES.items():
        steps = ms * 1e-3
        grid = serving.grid_from_steps(np.arange(1, 9), steps[:, None], [option], [prefill], context=320)
        capacity = 8 / (rounds_mean * steps[-1] + 8 * prefill)
        for mode, load in [
            ("open", 0.35 * capacity),
            ("open", 0.7 * capacity),
            ("closed", 2),
            ("closed", 4),
            ("closed", 8),
        ]:
            g = rng.integers(64, 193, requests)
            kw = (
                dict(arrivals=np.cumsum(rng.exponential(1 / load, requests)))
                if mode == "open"
                else dict(users=int(load))
            )
            sim = serving.simulate_batching(steps, prefill, g - 1, prompts="all", **kw)
            tpot = (sim["decode_s"] / (g - 1)).to_numpy()[requests // 20 :]  # past the empty start
            per = np.array([b.mean() for b in np.array_split(tpot, 20)])
            got, err = tpot.mean(), per.std(ddof=1) / np.sqrt(per.size)
            row = serving.steady_state(grid, output, [load], mode=mode).iloc[0]
            e = row["tpot_s"] / got - 1
            worst[mode] = max(worst[mode], abs(e))
            fluid = ""
            if mode == "open":
                # the model this one replaced: every decode stretched by 1 / (1 − λp), the product form on slower rounds
                slower = replace(grid, prefill_s=np.zeros(1), round_s=grid.round_s / (1 - load * prefill))
                f = serving.steady_state(slower, output, [load]).iloc[0]["tpot_s"]
                fluid = f"{f * 1e3:.3f} ({f / got - 1:+.1%})"
            shown = f"{load:.2f}/s" if mode == "open" else f"{int(load)} users"
            print(
                f"   {name:7s} {mode:6s} {shown:9s} {row['tpot_s'] * 1e3:6.3f}  {got * 1e3:6.3f} ± {err * 1e3:.3f}"
                f"       {e:+6.1%}  {fluid}"
            )
    record("model vs simulated server, closed loops", f"worst {worst['closed']:.1%}", "<= 10 %", worst["closed"] <= 0.1)
    record("model vs simulated server, open loops", f"worst {worst['open']:.1%}", "<= 10 %", worst["open"] <= 0.1)


# --------------------------------------------------------------------------------------
# 2. against llama-server under load
# --------------------------------------------------------------------------------------


def server_steps(
    url: str,
    prompts: Iterator[str],
    stall_prompts: Iterator[str],
    stall_running: str,
    *,
    tokens: int,
    slots: int,
    k: int,
    repeats: int = 2,
    layout=None,
) -> dict:
    """What the server's steps cost, from its own timings of synchronised batches (never from a load run).

    For every B = 1 … ``slots``: B requests start together (a barrier), each generating ``tokens`` tokens,
    streamed as the load streams them, in the B slots ``layout(B)`` gives (a new draw each batch; None:
    slots 0 … B − 1); each prompt was left in its slot's cache just before
    (``cache_prompt``, the slot pinned by ``id_slot``), so the batch decodes without a prefill among its
    steps (a request that prefilled more than its last token is an error). The batches take ``slots`` new
    prompts from ``prompts``, drawn as the load's are but never sent by it: how many drafts the target accepts
    depends on the text (the bundled pair accepted 0.64 of them on one calibration prompt and 0.53 on
    the load's spliced prompts, 2026-12-05), so E[N] is measured on prompts like the load's, as a user
    measures α on their own traffic. The server's ``timings.predicted_ms / predicted_n`` of a request is
    its time per generated token at B decoding; times the batch's own E[N] it is the batch's round (the
    mean over the B requests and ``repeats`` batches: the model predicts means, and the load's TPOT is a
    mean over requests whose speed, on this VM, has a tail to the slow side). A prompt's prefill p is what
    a new request stalls a decoding one (:func:`stall`, the mean of 3, each a request on ``stall_running``
    stalled by a prompt from ``stall_prompts`` the server has never seen: one it has, it finds in a
    slot's cache); the server's own ``prompt_ms`` leaves out its handling of the request and the slot's
    cache (about 45 against 50 ms here).

    The slots matter: llama-server forwards each run of consecutive busy slots apart, and on dev-cpu two
    lone slots took 1.77–2.01 ms a step against 2 × 0.84–0.87 ms for one and 2.15–2.29 ms for two
    neighbours (2026-12-05), so B's step is measured over the layouts the load meets (:func:`slot_plan`),
    B = 1, 2 and 3 with 8×, 4× and 3× the batches.

    Returns per_token (slots,) and per_round (slots,) seconds, mean_tokens (E[N] over every batch:
    1 + K·accepted/drafted, 1 without a draft), the counts accepted and drafted, and prefill (seconds).
    """
    import json
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    def request(prompt: str, n: int, *, cache: bool, stream: bool, slot: int = -1) -> dict:
        # as the load generator asks (loadgen.payload: /v1/completions, greedy, usage in the last event),
        # plus the slot and its cache: the OpenAI endpoint's per-token chunks cost the server more than
        # the native /completion's
        body = {"prompt": prompt, "max_tokens": n, "temperature": 0.0, "stream": stream}
        body |= {"cache_prompt": cache, "id_slot": slot}  # id_slot -1: any slot
        if stream:
            body["stream_options"] = {"include_usage": True}
        else:
            return httpx.post(url + "/v1/completions", json=body, timeout=120.0).raise_for_status().json()["timings"]
        timings = {}
        with httpx.stream("POST", url + "/v1/completions", json=body, timeout=120.0) as r:
            r.raise_for_status()
            for line in r.iter_lines():
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                    timings = json.loads(line[5:]).get("timings", timings)
        return timings

    per_token, per_round = np.zeros(slots), np.zeros(slots)
    drafted = accepted = 0
    drawn = [next(prompts) for _ in range(slots)]  # new ones each call, shared by its batches
    for b in range(1, slots + 1):
        times, weights, b_drafted, b_accepted = [], [], 0, 0
        # B = 1: one time a batch, ±25 % from one to the next here (the lightest loads hang on it: 8× the
        # batches, 1 s); B = 2 and 3: their layouts' kinds differ by up to 45 %, each measured
        batches = {1: 8 * repeats, 2: 4 * repeats, 3: 3 * repeats}.get(b, repeats)
        plan = [(list(range(b)), 1 / batches)] * batches if layout is None else layout(b, batches)
        for r, (ids, weight) in enumerate(plan):
            batch = [drawn[(r + i) % slots] for i in range(b)]
            at = dict(zip(ids, batch, strict=True))  # slot → its prompt, cached there first
            for slot, prompt in at.items():
                request(prompt, 1, cache=True, stream=False, slot=slot)
            barrier = threading.Barrier(b)

            def together(slot, barrier=barrier, at=at):
                barrier.wait()
                return request(at[slot], tokens, cache=True, stream=True, slot=slot)

            with ThreadPoolExecutor(b) as pool:
                got = list(pool.map(together, at))
            prefilled = [t["prompt_n"] for t in got if t["prompt_n"] > 1]
            if prefilled:  # a request outside its cached slot: its prefill stalled the batch
                raise RuntimeError(f"calibration: {len(prefilled)} of {b} requests prefilled {prefilled} tokens")
            times.append(np.mean([t["predicted_ms"] / t["predicted_n"] / 1e3 for t in got]))  # tokens alike: n each
            weights.append(weight)
            b_drafted += sum(t.get("draft_n", 0) for t in got)
            b_accepted += sum(t.get("draft_n_accepted", 0) for t in got)
        per_token[b - 1] = np.average(times, weights=weights)
        per_round[b - 1] = per_token[b - 1] * mean_tokens(k, b_accepted, b_drafted)
        drafted, accepted = drafted + b_drafted, accepted + b_accepted
    prefill = np.mean([stall(url, stall_running, next(stall_prompts)) for _ in range(3)])
    return {
        "per_token": per_token,
        "per_round": per_round,
        "mean_tokens": mean_tokens(k, accepted, drafted),
        "accepted": accepted,
        "drafted": drafted,
        "prefill": float(prefill),
    }


def slot_plan(layouts: dict, slots: int, rng: np.random.Generator, *, stratified: int = 3):
    """A calibration's slots, as the load places its busy ones: ``plan(b, batches)`` gives ``batches``
    (slots, weight) pairs for b busy slots, from the layouts ``serving.lru_slot_layouts`` met weighted by
    the rounds each held (b slots drawn uniformly where the load never had b busy).

    Up to b = ``stratified`` the batches are spread over the layouts' kinds (their runs' lengths: {0, 1} and
    {3, 7} differed by 45 % a step with the draft here, and the mean of 8 draws from a 25 / 75 mixture
    of them moves by ±7 %) and each kind weighs what the load gives it; beyond, draws."""

    def plan(b: int, batches: int) -> list[tuple[list[int], float]]:
        if b not in layouts:
            return [(sorted(int(x) for x in rng.choice(slots, b, replace=False)), 1 / batches) for _ in range(batches)]
        met, rounds = layouts[b]
        p = rounds / rounds.sum()
        if b > stratified:
            return [(list(met[i]), 1 / batches) for i in rng.choice(len(met), batches, p=p)]
        kinds: dict[tuple[int, ...], list[int]] = {}
        for i, layout in enumerate(met):
            kinds.setdefault(serving.run_lengths(layout), []).append(i)
        order = sorted(kinds, key=lambda kind: -p[kinds[kind]].sum())[:batches]  # the likeliest, if too many
        share = np.array([p[kinds[kind]].sum() for kind in order])
        share /= share.sum()
        out = []
        for j, kind in enumerate(order):
            n = batches // len(order) + (j < batches % len(order))  # batches spread over the kinds
            members = np.array(kinds[kind])
            for i in rng.choice(members, n, p=p[members] / p[members].sum()):
                out.append((list(met[i]), share[j] / n))
        return out

    return plan


def mean_tokens(k: int, accepted: int, drafted: int) -> float:
    """E[N] of a chain of K from a server's draft counters: 1 + K · accepted / drafted (1 with none drafted)."""
    return 1 + k * accepted / drafted if drafted else 1.0


def stall(url: str, running: str, fresh: str, *, tokens: int = 250) -> float:
    """Seconds one new request costs the requests decoding: what the model calls a prompt's prefill p.

    A request on ``running`` (cached in slot 0) streams ``tokens`` tokens; 0.12 s in, one request on
    ``fresh`` arrives as the load's do (``/v1/completions``, the server's default prompt caching) and asks
    one token, so all it costs is its arrival (prompt processing, the slot's cache handling). The stall is
    the time the running stream's gaps between rounds exceed their median, where they exceed it threefold.
    """
    import threading
    import time

    import httpx

    from specviz.servers import llamacpp

    body = {**llamacpp.GREEDY, "prompt": running, "n_predict": 1, "cache_prompt": True, "id_slot": 0}
    llamacpp.complete_raw(url, body)
    times: list[float] = []

    def stream() -> None:
        with httpx.stream("POST", url + "/completion", json={**body, "n_predict": tokens, "stream": True}) as r:
            for line in r.iter_lines():
                if line.startswith("data:"):
                    times.append(time.perf_counter())

    reader = threading.Thread(target=stream)
    reader.start()
    time.sleep(0.12)
    httpx.post(url + "/v1/completions", json={"prompt": fresh, "max_tokens": 1, "temperature": 0}, timeout=60.0)
    reader.join()
    gaps = np.diff(times)
    gaps = gaps[gaps > 3e-4]  # between rounds: a speculative round streams its tokens back to back
    base = np.median(gaps)
    return float((gaps - base)[gaps > 3 * base].sum())


def smoothed(per_token: np.ndarray, kept: int = 2) -> np.ndarray:
    """The calibration's times per token at B = 1 … n, smoothed across B: the first ``kept`` as measured
    (llama.cpp's one-token decode takes a path of its own, and two busy slots are as often two lone forwards
    as one of two rows; :func:`server_steps` measures both on 4× the batches), B > ``kept`` on the
    least-squares line a + b·B through them (a forward over B tokens is fixed work plus work per token). On
    this VM one batch's time moves by ±20 % from one second to the next; the line pools the n − ``kept``
    batches."""
    b = np.arange(1, per_token.size + 1)
    if per_token.size < kept + 2:
        return per_token
    slope, intercept = np.polyfit(b[kept:], per_token[kept:], 1)
    return np.concatenate([per_token[:kept], intercept + slope * b[kept:]])


def server_check(args) -> None:
    """Part 2: the serving model against llama-server with ``args.slots`` slots, with and without the draft.

    The machine is shared and its forwards vary by ±30 % from one minute to the next, so the step costs
    and the load runs are interleaved: each server's costs are measured just before each of its load runs
    and predict that run; each of ``--repeats`` rounds runs every load on both servers, and prediction and
    measurement are each the median over the rounds.
    """
    import tempfile
    from pathlib import Path

    import pandas as pd

    from specviz.engine import bench as engine_bench
    from specviz.engine.models.gguf import export_pair_gguf
    from specviz.servers import llamacpp, loadgen
    from specviz.servers.fetch import FetchPolicy

    binary = llamacpp.find_binary()
    names = (
        "TPOT within ±20 % at every load",
        "throughput within ±20 % at every load",
        "where speculation stops paying",
    )
    if binary is None:
        for name in names:
            record(name, "llama-server missing", "scripts/build-llama-server", None)
        return
    k, slots, threads, g = args.k, args.slots, args.threads, args.tokens
    prompts = engine_bench.load_prompts()
    load_prompts, cal_prompts = prompts[: args.prompts], prompts[args.prompts : args.prompts + 3]
    p_tokens = len(load_prompts[0].encode())  # byte-level: one token per byte
    # every request a prompt of its own, so that no request finds its prompt in a slot's cache (llama-server
    # reuses a slot's cached prefix, and a user's traffic repeats no prompt): the first half of one load
    # prompt and the second half of another, both rotated by a shift; never a calibration prompt. No two
    # requests within len(load_prompts) × P of each other share a first half
    half = p_tokens // 2
    fresh = iter(
        (a[j:] + a[:j])[:half] + (b[j:] + b[:j])[half:]
        for b in load_prompts  # outermost: a (shift, first half) pair recurs only every len(load_prompts) × P requests
        for j in range(p_tokens)
        for a in load_prompts
    )
    # the calibration's prompts, from the same stream, never sent by the load: one of every len(load_prompts),
    # so that each ends differently (the stream's consecutive prompts share their second half, the text a
    # generation continues, and with it most of how many drafts are accepted)
    cal_stream = itertools.islice(fresh, 0, None, len(load_prompts))
    # no host-memory prompt cache (llama-server's --cache-ram, 8192 MiB by default in b11434): the stream's
    # first halves come back after len(load_prompts) × P prompts, and a request would then load half its
    # prompt from an earlier one's saved state, where a user's traffic repeats no prompt
    no_ram = ("--cache-ram", "0")
    # the stall calibration's new requests: calibration prompts reversed and rotated, each sent once
    cal_fresh = iter(p[::-1][j:] + p[::-1][:j] for j in range(p_tokens) for p in cal_prompts)
    # output lengths uniform over g/2 … 3g/2, drawn afresh for every request: with one fixed length, a
    # closed loop's users finish together and stay in lockstep (every prompt prefilled at once, every step
    # at the full batch), which no traffic does
    output = serving.Lengths.uniform(g // 2, g + g // 2, name="output tokens")
    depth = int(serving.decode_context(serving.Lengths.fixed(p_tokens), output))
    work = Path(tempfile.mkdtemp(prefix="specviz-serving-"))
    target, draft = export_pair_gguf("bundled", work)
    batches = list(range(1, slots + 1))
    print(f"\n2. llama-server ({binary}), {slots} slots, {threads} thread(s); bundled pair, K = {k}")
    print(f"   prompts of {p_tokens} tokens, {g} output tokens; {args.repeats} rounds of every load")
    policy = FetchPolicy(connect_timeout_s=5.0, read_timeout_s=120.0, total_timeout_s=600.0)
    log_dir = work / "logs"
    rows, rates = [], []
    # the servers on the last core and the load generator on the others (``--pin``): unpinned, the
    # scheduler moves them across the two cores, and a forward that shares a core with the client's
    # parsing is slower by as much as the model's error budget
    cores = sorted(os.sched_getaffinity(0))
    pin = args.pin and len(cores) > threads
    if pin:
        os.sched_setaffinity(0, set(cores[-threads:]))  # the servers started next inherit it, all their threads
        print(f"   servers pinned to cores {cores[-threads:]}, the load generator to {cores[:-threads]}")
    with (
        llamacpp.serve(
            binary, target, None, k, log_dir=log_dir, threads=threads, slots=slots, extra=no_ram
        ) as plain_srv,
        llamacpp.serve(
            binary, target, draft, k, log_dir=log_dir, threads=threads, slots=slots, extra=no_ram
        ) as spec_srv,
    ):
        if pin:
            os.sched_setaffinity(0, set(cores[:-threads]))  # this thread, and the client threads it starts
        # the calibration batches' slots: where the load puts them (one generator for the run), or 0 … B − 1;
        # uniform draws until a load's layouts are simulated
        draws = np.random.default_rng(0)
        uniform = None if args.contiguous else slot_plan({}, slots, draws)
        cal = dict(tokens=g, slots=slots)
        # E[N] from the draft counters of every calibration so far (never the load's): one calibration's
        # 8 prompts gave 1.90–2.56 for the same load, the pooled count settles as the run goes on
        counts = np.zeros(2, dtype=int)  # accepted, drafted
        # a fresh server's first batches run slow: their times discarded
        for srv, kk in ((plain_srv, 0), (spec_srv, k)):
            first = server_steps(srv.url, cal_stream, cal_fresh, cal_prompts[0], k=kk, repeats=1, layout=uniform, **cal)
            counts += (first["accepted"], first["drafted"])
        steps = server_steps(plain_srv.url, cal_stream, cal_fresh, cal_prompts[0], k=0, layout=uniform, **cal)
        before = {0: steps, k: first}  # each server's latest costs: the clock of the next load's simulated slots
        # the two rates: 35 % and 70 % of the capacity these costs predict without speculation (every slot
        # busy: one run of slots, whatever the layout)
        cap_rps = float(slots / ((g - 1) * smoothed(steps["per_token"])[-1] + slots * steps["prefill"]))
        rates = [round(0.35 * cap_rps, 1), round(0.7 * cap_rps, 1)]
        loads = [("closed", x) for x in args.concurrency] + [("open", x) for x in rates]
        print(
            f"   loads: {args.concurrency} users, {rates} requests/s; each server's costs measured just before its load"
        )
        for r in range(args.repeats):
            for i, (mode, load) in enumerate(loads):
                # a closed loop runs ``--per-user`` requests a user (its start and end, when fewer than N
                # decode, weigh less the longer it runs); an open loop ``--open-seconds`` of arrivals
                n_req = int(args.per_user * load) if mode == "closed" else int(load * args.open_seconds)
                asked = np.random.default_rng([r, i]).integers(g // 2, g + g // 2 + 1, n_req)  # both servers alike
                for kk, srv in ((0, plain_srv), (k, spec_srv)):
                    # the costs on prompts the load never sends, just before the load: this VM's speed drifts
                    # by ±20 % over minutes, so costs measured a round earlier mispredict a load by as much
                    en = mean_tokens(kk, *counts) if kk else 1.0
                    layout = None
                    if not args.contiguous:  # the slots this load keeps busy, simulated on the costs before
                        placed = serving.lru_slot_layouts(
                            slots,
                            output,
                            rng=draws,
                            **({"users": int(load)} if mode == "closed" else {"rate": float(load)}),
                            round_s=smoothed(before[kk]["per_round"]),
                            prefill_s=before[kk]["prefill"],
                            mean_tokens=en,
                            requests=2000,
                        )
                        layout = slot_plan(placed, slots, draws)
                    steps = server_steps(srv.url, cal_stream, cal_fresh, cal_prompts[0], k=kk, layout=layout, **cal)
                    before[kk] = steps
                    counts += (steps["accepted"], steps["drafted"])
                    en = mean_tokens(kk, *counts) if kk else 1.0
                    option = serving.Option(f"K = {kk}", kk, en, kk + 1)
                    rounds = smoothed(steps["per_round"])[:, None]  # (slots, 1) rounds at n busy slots
                    if args.contiguous:  # calibrated on slots 0 … B − 1: the model spreads them
                        rounds = serving.scattered_steps(rounds)
                    grid = serving.grid_from_steps(batches, rounds, [option], [steps["prefill"]], context=depth)
                    pred = serving.steady_state(grid, output, [load], mode=mode).iloc[0]
                    # how much a 10 % error in the step costs moves the prediction (its conditioning at this load)
                    slower = replace(grid, round_s=grid.round_s * 1.1, prefill_s=grid.prefill_s * 1.1)
                    pred_slow = serving.steady_state(slower, output, [load], mode=mode).iloc[0]
                    print(
                        f"   round {r + 1}, {mode} {load:g}, K = {kk}: ms a token at B = 1 … {slots}: "
                        f"{' '.join(f'{v * 1e3:.2f}' for v in steps['per_token'])}; E[N] {steps['mean_tokens']:.3f} "
                        f"(pooled {en:.3f}); "
                        f"prefill {steps['prefill'] * 1e3:.1f} ms"
                    )
                    spec = loadgen.LoadSpec(
                        srv.url,
                        [next(fresh) for _ in range(n_req)],
                        max_tokens=[int(x) for x in asked],
                        concurrency=int(load) if mode == "closed" else slots,
                        max_requests=n_req,
                        max_seconds=600.0,
                        rate=None if mode == "closed" else float(load),
                        seed=r,
                    )
                    got = loadgen.run_load(spec, policy)
                    print(
                        f"      TPOT predicted {pred['tpot_s'] * 1e3:.3f}, measured {got.tpot.mean * 1e3:.3f} ms "
                        f"(p50 {got.tpot.p50 * 1e3:.3f}); {got.succeeded} requests in {got.wall_s:.1f} s"
                    )
                    if got.failed:
                        print(f"   {mode} {load} K = {kk}: {got.summary()}; {got.errors[:2]}")
                    rows.append(
                        dict(
                            round=r,
                            mode=mode,
                            load=load,
                            k=kk,
                            tpot_pred=pred["tpot_s"] * 1e3,
                            tpot_meas=got.tpot.mean * 1e3,
                            tpot_sens=pred_slow["tpot_s"] / pred["tpot_s"] - 1,
                            tps_pred=pred["tokens_per_s"],
                            tps_meas=got.output_tokens_per_s,
                            batch_pred=pred["batch"],
                            en_pred=en,
                            en_meas=1 + kk * got.draft_acceptance if got.draft_acceptance is not None else 1.0,
                            failed=got.failed,
                        )
                    )
    os.sched_setaffinity(0, set(cores))
    frame = pd.DataFrame(rows)
    table = (
        frame.groupby(["mode", "load", "k"], sort=False).median(numeric_only=True).drop(columns="round").reset_index()
    )
    # how far the measurement itself moves between rounds of the same load: (max − min) / median of the rounds'
    # measured TPOT, beside the prediction's error (an error inside that spread is within the measurement's reach)
    by_load = frame.groupby(["mode", "load", "k"], sort=False)["tpot_meas"]
    table["tpot_spread"] = ((by_load.max() - by_load.min()) / by_load.median()).to_numpy()
    table["tpot_err"] = table["tpot_pred"] / table["tpot_meas"] - 1
    table["tps_err"] = table["tps_pred"] / table["tps_meas"] - 1
    print(f"   medians over {args.repeats} rounds (TPOT in ms, throughput in output tokens/s):")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    closed = table[table["mode"] == "closed"]

    def stops(col):  # the Serving view's rule: the first concurrency from which K's TPOT is no better than none
        frame = closed.rename(columns={col: "tpot_s"}).assign(overloaded=False, option=closed["k"].astype(str))
        load = serving.speculation_stops_paying(
            serving.best_by_load(frame[["load", "k", "option", "tpot_s", "overloaded"]])
        )
        return c_list.index(load) if load is not None else len(c_list)

    c_list = sorted(closed["load"].unique())
    s_pred, s_meas = stops("tpot_pred"), stops("tpot_meas")

    def shown(i):
        return f"c = {c_list[i]:g}" if i < len(c_list) else "never"

    print(f"   speculation stops paying: predicted {shown(s_pred)}, measured {shown(s_meas)}")
    worst_t, worst_x = float(table["tpot_err"].abs().max()), float(table["tps_err"].abs().max())
    record(names[0], f"worst {worst_t:.1%} (median {table['tpot_err'].abs().median():.1%})", "<= 20 %", worst_t <= 0.2)
    record(names[1], f"worst {worst_x:.1%} (median {table['tps_err'].abs().median():.1%})", "<= 20 %", worst_x <= 0.2)
    record(
        names[2], f"predicted {shown(s_pred)}, measured {shown(s_meas)}", "within one step", abs(s_pred - s_meas) <= 1
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", default="Llama-3.1 70B + 3.2 1B", help="a preset pair (sweep)")
    p.add_argument("--gpu", default="H100-SXM5-80GB")
    p.add_argument("--tp", type=int, default=4)
    p.add_argument("--engine", default="vllm")
    p.add_argument("--alpha", type=float, default=0.8)
    p.add_argument("--loads", type=int, default=12, help="rates in the sweep")
    p.add_argument("--sweep-only", action="store_true", help="skip the llama-server part")
    p.add_argument("--sim-requests", type=int, default=20_000, help="requests a simulated load (part 1b; 0 skips it)")
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads (one core left to the client)")
    p.add_argument("--k", type=int, default=2, help="the speculative server's fixed K")
    p.add_argument("--tokens", type=int, default=128, help="output tokens per request")
    p.add_argument("--prompts", type=int, default=9, help="prompts the load sends (the next 3 calibrate)")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    p.add_argument("--per-user", type=int, default=10, help="requests a user sends in a closed-loop run")
    p.add_argument(
        "--open-seconds",
        type=float,
        default=120.0,
        help="seconds of Poisson arrivals per open-loop run (its mean TPOT rests on the bursts it meets)",
    )
    p.add_argument("--repeats", type=int, default=3, help="rounds of costs then loads (medians over them)")
    p.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="servers on the last --threads cores, the load generator on the others (when there are more)",
    )
    p.add_argument(
        "--contiguous",
        action="store_true",
        help="calibrate on slots 0 … B − 1 and spread them with serving.scattered_steps (the Serving view's model)",
    )
    args = p.parse_args()
    print(machine_line())
    sweep_check(args.pair, args.gpu, args.tp, args.engine, args.alpha, args.loads)
    if args.sim_requests:
        model_check(args.sim_requests)
    if not args.sweep_only:
        server_check(args)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())
