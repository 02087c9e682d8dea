"""Compiled decode steps (specviz.engine.models.compiled) and the device-resident loops (decoding.resident).

The quick tier checks the shape-static forward against the model's own forwards and the eager
fallback; the slow tier compiles (seconds per shape) and checks compiled against eager: logits,
greedy tokens and round records for K = 1 … 8, chains and trees, one host read per round, and
losslessness at T = 1 (χ²).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from _models import build_gpt, check_lossless, noisy_copy

from specviz.core import trees
from specviz.engine import bench, decoding, sampling
from specviz.engine.decoding import resident
from specviz.engine.models import ByteTokenizer, GPTConfig, compiled, load_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=128)


@pytest.fixture(scope="module")
def pair():
    target = build_gpt(CFG, 2, std=0.1)
    return target, noisy_copy(target, 0.015, 3)  # accepts some drafts, rejects some


@pytest.fixture(scope="module")
def prompts():
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 256, (n,), generator=g) for n in (7, 30)]


def _prefilled(model, prompt):
    model.setup_cache(1)
    model(prompt[None, :-1], 0)
    return prompt.numel() - 1


# --- quick: the shape-static forward, and the fallback ----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("t", [1, 2, 5, 9])
def test_forward_at_equals_the_cached_forward(pair, prompts, t):
    """A chain's forward_at (slots = positions, mask = causal rows) gives the logits of model(idx, start)."""
    model = pair[0]
    idx = torch.randint(0, 256, (1, t), generator=torch.Generator().manual_seed(t))
    with torch.no_grad():
        pos = _prefilled(model, prompts[1])
        expected = model(idx, pos)
        pos = _prefilled(model, prompts[1])
        got = model.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("t", [1, 4])
def test_a_step_over_the_span_in_use_equals_one_over_the_whole_cache(pair, prompts, t):
    """Attending over the first S cache slots (S ≥ the last slot written + 1, as CompiledGPT.span rounds
    it) gives the logits of attending over every slot: the slots past the span are all masked."""
    model = pair[0]
    idx = torch.randint(0, 256, (1, t), generator=torch.Generator().manual_seed(t))
    with torch.no_grad():
        pos = _prefilled(model, prompts[1])
        whole = model.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
        for span in (pos + t, 48, CFG.block_size):
            pos = _prefilled(model, prompts[1])
            slots, positions, mask = model.chain_inputs(torch.tensor([pos]), t, span)
            assert mask.shape == (t, span)
            torch.testing.assert_close(model.forward_at(idx, slots, positions, mask), whole, atol=1e-5, rtol=0)


def test_the_span_is_the_slots_in_use_rounded_up_to_whole_vectors(pair):
    """CompiledGPT.span: the end rounded up to SPAN_STEP, never past the cache; the cache keeps slots
    beyond it, so a span is always a proper prefix (one compiled step serves them all)."""
    target = pair[0]
    target.setup_cache(1)
    ct = compiled.compile_steps(target)
    step = compiled.SPAN_STEP
    assert [ct.span(e) for e in (1, step, step + 1, 3 * step - 1)] == [step, step, 2 * step, 3 * step]
    assert ct.span(CFG.block_size) == ct.span(CFG.block_size - 1) == CFG.block_size
    assert target.blocks[0].attn.cache.k.shape[2] > CFG.block_size


@pytest.mark.slow
def test_forward_at_equals_the_tree_forward(pair, prompts):
    """A tree's nodes through forward_at (own slots, depths and ancestry) equal GPT.forward_tree."""
    model = pair[0]
    tree = trees.parse_shape("topk:3,2,6", [0.6, 0.2])
    parents = torch.tensor(tree.parents)
    nodes = torch.arange(len(tree))
    idx = torch.randint(0, 256, (1, len(tree)), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        start = _prefilled(model, prompts[1])
        expected = model.forward_tree(idx, start, nodes, parents)
        start = _prefilled(model, prompts[1])
        got = model.forward_at(idx, *model.tree_inputs(start, nodes, parents))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_a_failed_compile_falls_back_to_eager_and_says_why_once(pair, prompts, monkeypatch):
    """torch.compile failing (no C++ compiler, say) leaves eager steps, the reason, one warning, same tokens."""
    target, draft = (build_gpt(CFG, s, std=0.1) for s in (5, 6))  # fresh models: no compiled steps yet

    def broken(*args, **kwargs):
        def fn(*a):
            raise RuntimeError("no working C++ compiler found")

        return fn

    monkeypatch.setattr(torch, "compile", broken)
    monkeypatch.setattr(compiled, "_warned", set())
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    with pytest.warns(UserWarning, match="running eagerly: RuntimeError: no working C\\+\\+ compiler found"):
        out, _ = decoding.speculative_generate(ct, cd, prompts[0], 3, max_new_tokens=24, calibration_steps=0)
    assert ct.fallback == cd.fallback == "RuntimeError: no working C++ compiler found"
    assert ct.compile_s == {} and bench.compile_seconds(ct, cd) == 0
    base, _ = decoding.generate_target_only(target, prompts[0], 24)
    assert torch.equal(out, base)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the next run is silent
        decoding.speculative_generate(ct, cd, prompts[0], 3, max_new_tokens=8, calibration_steps=0)
    row = bench.engine_columns(ct, cd, 0.0)
    assert row["compiled"] is False and "compiler" in row["notes"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "what"), [("Chain", "greedy chain"), ("Verify", "greedy verification")], ids=["chain", "verify"]
)
def test_a_greedy_module_that_fails_to_compile_runs_step_by_step(pair, prompts, monkeypatch, module, what):
    """A draft chain or greedy verification whose compile fails leaves the single compiled steps (no
    fallback to eager for the model), one warning, and the same tokens."""
    target, draft = (build_gpt(CFG, s, std=0.1) for s in (7, 8))  # fresh models: no compiled steps yet
    real, broken = torch.compile, getattr(compiled, module)

    def module_breaks(fn, **kwargs):
        if isinstance(fn, broken):
            raise RuntimeError("graph rejected")
        return real(fn, **kwargs)

    monkeypatch.setattr(torch, "compile", module_breaks)
    monkeypatch.setattr(compiled, "_warned", set())
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    with pytest.warns(UserWarning, match=f"{what} unavailable as one call.*graph rejected"):
        out, _ = decoding.speculative_generate(ct, cd, prompts[0], 3, max_new_tokens=24, calibration_steps=0)
    assert ct.fallback is None and cd.fallback is None and 1 in cd.compile_s and 4 in ct.compile_s
    base, _ = decoding.generate_target_only(target, prompts[0], 24)
    assert torch.equal(out, base)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, and the key holds the step-by-step chain
        again, _ = decoding.speculative_generate(ct, cd, prompts[0], 3, max_new_tokens=24, calibration_steps=0)
    assert torch.equal(again, base)


def test_compile_steps_wraps_each_model_once_and_only_our_gpt(pair):
    target, _ = pair
    assert compiled.compile_steps(target) is compiled.compile_steps(target)  # steps reused across runs
    wrapped = compiled.compile_steps(target)
    assert compiled.compile_steps(wrapped) is wrapped and compiled.eager(wrapped) is target
    other = object()
    assert compiled.compile_steps(other) is other  # no shape-static step: stays as it is
    with pytest.raises(ValueError, match="engine must be one of"):
        bench.with_engine(target, target, "turbo")


def test_the_resident_loops_apply_only_to_compiled_pairs(pair):
    target, draft = pair
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    assert resident.supports(ct, cd) and resident.supports(ct)
    assert not resident.supports(target, cd) and not resident.supports(ct, draft)


# --- slow: compiled against eager ---------------------------------------------------------


@pytest.fixture(scope="module")
def bundled():
    target, draft, tok = load_pair("bundled")
    texts = bench.load_prompts()[:2]
    return target, draft, [torch.tensor(tok.encode(t)) for t in texts]


@pytest.mark.slow
def test_compiled_logits_equal_eager_for_every_shape_and_read_the_live_cache(bundled):
    """T = 1 … 9 on the bundled target (T ≥ 2 share one dynamic graph there) and the draft, after a
    second prompt is prefilled: the compiled step reads the cache as it is now, not as it was compiled."""
    target, draft, prompts = bundled
    for model in (target, draft):
        wrapped = compiled.compile_steps(model)
        for prompt in prompts:  # compile on the first prompt's cache, check on both
            for t in range(1, 10):
                idx = torch.randint(0, 256, (1, t), generator=torch.Generator().manual_seed(t))
                with torch.inference_mode():
                    pos = _prefilled(model, prompt)
                    expected = model.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
                    pos = _prefilled(model, prompt)
                    got = wrapped.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
                torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
        assert wrapped.fallback is None


@pytest.mark.slow
@pytest.mark.parametrize("k", range(1, 9))
def test_compiled_greedy_equals_eager_with_identical_records(bundled, k):
    """The resident loop on compiled steps: the target's own greedy tokens, and round for round the
    records the eager host loop writes (drafts, accepted, emitted, tests; Σ min(p, q) within float error)."""
    target, draft, prompts = bundled
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    for prompt in prompts:
        base, _ = decoding.generate_target_only(target, prompt, 96)
        c_base, _ = decoding.generate_target_only(ct, prompt, 96)
        out_e, eager = decoding.speculative_generate(target, draft, prompt, k, max_new_tokens=96)
        out_c, comp = decoding.speculative_generate(ct, cd, prompt, k, max_new_tokens=96)
        assert torch.equal(c_base, base) and torch.equal(out_c, base) and torch.equal(out_e, base)
        assert len(comp.rounds) == len(eager.rounds)
        for a, b in zip(eager.rounds, comp.rounds, strict=True):
            assert (a.drafted, a.accepted, a.emitted, a.accept_mask) == (
                b.drafted,
                b.accepted,
                b.emitted,
                b.accept_mask,
            )
            assert a.overlap == pytest.approx(b.overlap, abs=1e-4)
        assert comp.alpha_hat == eager.alpha_hat and comp.t_target_ms > 0 and comp.t_verify_ms > 0


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["chain:4", "chains:2,3", "topk:3,2,6", "optimal:8,4"])
def test_compiled_trees_decode_the_targets_greedy_output(bundled, shape):
    target, draft, prompts = bundled
    tree = trees.parse_shape(shape, [0.6, 0.2, 0.1])
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    base, _ = decoding.generate_target_only(target, prompts[0], 64)
    out_e, eager = decoding.tree_generate(target, draft, prompts[0], tree, 0.0, 64)
    out_c, comp = decoding.tree_generate(ct, cd, prompts[0], tree, 0.0, 64)
    assert torch.equal(out_c, base) and torch.equal(out_e, base)
    assert [r.path for r in comp.rounds] == [r.path for r in eager.rounds]


def _count_reads(monkeypatch) -> list[str]:
    """Every device → host read a tensor can make (item, tolist, int, float, bool, index), recorded by name."""
    reads: list[str] = []
    for name in ("item", "tolist", "__int__", "__float__", "__bool__", "__index__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name):
            reads.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return reads


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_one_host_read_per_round(pair, prompts, monkeypatch, temperature):
    """Counting every read a tensor can make: one per round in the loop, plus the four buffers copied
    once after it (calibration off, so nothing else runs)."""
    target, draft = pair
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    g = torch.Generator().manual_seed(0)
    decoding.speculative_generate(ct, cd, prompts[1], 4, temperature, 48, g, calibration_steps=0)  # compile first
    reads = _count_reads(monkeypatch)
    _, stats = decoding.speculative_generate(ct, cd, prompts[1], 4, temperature, 48, g, calibration_steps=0)
    monkeypatch.undo()
    assert len(stats.rounds) >= 10
    assert reads.count("tolist") == len(stats.rounds) + 4, reads
    assert len(reads) == len(stats.rounds) + 4, reads
    reads = _count_reads(monkeypatch)
    decoding.speculative_generate(target, draft, prompts[1], 4, temperature, 48, g, calibration_steps=0)
    monkeypatch.undo()
    assert len(reads) > 2 * len(stats.rounds)  # the eager host loop reads several times a round: the count can tell


@pytest.mark.slow
def test_the_compiled_path_is_lossless():
    """χ² of the first token and pair at T = 1 on the resident loop with compiled steps (tests/_models.py)."""

    def generate(target, draft, prompt, g):
        ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
        assert resident.supports(ct, cd)
        return decoding.speculative_generate(ct, cd, prompt, 2, 1.0, 2, generator=g, calibration_steps=0)

    check_lossless("cpu", generate=generate)


@pytest.mark.slow
def test_bench_rows_say_which_engine_and_how_long_it_compiled(bundled):
    target, draft, _ = bundled
    tok = ByteTokenizer()
    texts = bench.load_prompts()[:1]
    rows = []
    for engine in bench.ENGINES:
        frame = bench.sweep(target, draft, tok, texts, [3], [0.0], 32, 1, engine=engine)
        rows.extend(frame.to_dict("records"))
    eager, comp = rows
    assert eager["compiled"] is False and eager["compile_s"] == 0
    assert comp["compiled"] is True and comp["compile_s"] >= 0
    assert eager["greedy_exact"] and comp["greedy_exact"]
    assert eager["alpha"] == comp["alpha"]  # same rounds, greedy


@pytest.mark.slow
def test_the_one_token_step_generates_its_matrix_vector_products():
    """The fenced Inductor switch of inductor.inductor_config still does what it is there for: on the CPU,
    the T = 1 step's one-row matmuls become generated reductions (Inductor counts each rewrite), the T ≥ 2
    steps' do not, and both equal the eager step."""
    if not compiled.tested_torch():
        pytest.skip(f"torch {torch.__version__} is not in compiled.TESTED_TORCH: the switch is off there")
    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters

    model = build_gpt(CFG, 11, std=0.1)
    wrapped = compiled.compile_steps(model)
    prompt = torch.randint(0, 256, (20,), generator=torch.Generator().manual_seed(0))
    rewrites = {}
    # a graph from Inductor's on-disk cache skips the passes, and with them the counts
    with inductor_config.patch(fx_graph_cache=False), torch.inference_mode():
        for t in (1, 3):
            counters.clear()
            pos = _prefilled(model, prompt)
            idx = torch.randint(0, 256, (1, t), generator=torch.Generator().manual_seed(t))
            got = wrapped.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
            expected = model.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
            torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
            rewrites[t] = sum(counters["inductor"][k] for k in ("decompose_mm", "decompose_addmm"))
    assert wrapped.fallback is None
    # every linear of the step: q/k/v and the projection, the MLP's two, per layer, and the head
    assert rewrites[1] >= 4 * CFG.n_layer + 1 and rewrites[3] == 0, rewrites


@pytest.mark.slow
@pytest.mark.parametrize("feed", [1, 2])
def test_the_greedy_draft_chain_equals_k_steps_and_writes_the_same_cache(pair, prompts, feed):
    """CompiledGPT.greedy_chain (the known tokens fed one a forward, then K − 1 of its own, in one compiled
    call) drafts the argmax tokens of K eager forward_at steps (the first over the known tokens) and leaves
    the draft's cache as they do, at every K, from one known token (a target-only step's form) or two (a
    greedy round's)."""
    model = pair[1]
    wrapped = compiled.compile_steps(model)
    with torch.inference_mode():
        for k in (1, 3, 6):
            pos = _prefilled(model, prompts[1])
            seq = torch.zeros(CFG.block_size, dtype=torch.long)
            seq[: pos + 1] = prompts[1]
            at = torch.tensor([pos - feed + 1])
            logits = model.forward_at(seq[pos - feed + 1 : pos + 1][None], *model.chain_inputs(at, feed))
            steps = [logits[0, -1].argmax(-1, keepdim=True)]
            for i in range(1, k):
                logits = model.forward_at(steps[-1].view(1, 1), *model.chain_inputs(torch.tensor([pos + i]), 1))
                steps.append(logits[0, -1].argmax(-1, keepdim=True))
            caches = [x.clone() for x in model.buffers() if x.dim() == 4]
            _prefilled(model, prompts[1])
            for x in model.buffers():  # what the eager steps wrote there must be written again (finite:
                if x.dim() == 4:  # a masked slot's value still meets a zero weight, and 0 · NaN is NaN)
                    x[..., pos - feed + 1 :, :] = 1e3
            drafts = wrapped.greedy_chain(seq[pos - feed + 1 : pos + 1], torch.tensor([pos - feed]), k, pos + k)
            assert torch.equal(drafts, torch.cat(steps))
            for a, b in zip(caches, [x for x in model.buffers() if x.dim() == 4], strict=True):
                torch.testing.assert_close(b[..., : pos + k, :], a[..., : pos + k, :], atol=1e-5, rtol=0)
    assert wrapped.fallback is None


@pytest.mark.slow
def test_greedy_verification_equals_the_eager_forward_and_rule_and_writes_the_same_cache(pair, prompts):
    """CompiledGPT.greedy_verify (the forward over K + 1 tokens, the greedy rule and the commit in one compiled
    call) gives sampling.verify's a, next token and tests on the eager forward's distributions, the next
    round's feed and slot, for every accepted count 0 … K, and leaves the target's cache as the eager
    forward does."""
    model = pair[0]
    wrapped = compiled.compile_steps(model)
    with torch.inference_mode():
        pos = _prefilled(model, prompts[1])
        pending = prompts[1][-1:]
        own = []  # the target's own greedy continuation: drafts that would all be accepted
        for i in range(6):
            idx = (own[-1] if own else pending).view(1, 1)
            own.append(
                model.forward_at(idx, *model.chain_inputs(torch.tensor([pos + i]), 1))[0, -1].argmax(-1, keepdim=True)
            )
        own = torch.cat(own)  # (6,)
        for k in (1, 3, 6):
            for a in range(k + 1):
                drafts = own[:k].clone()
                if a < k:
                    drafts[a] = (drafts[a] + 1) % CFG.vocab_size  # the first rejected draft
                _prefilled(model, prompts[1])
                at = torch.tensor([pos])
                logits = model.forward_at(torch.cat([pending, drafts])[None], *model.chain_inputs(at, k + 1))[0]
                caches = [x.clone() for x in model.buffers() if x.dim() == 4]
                p = torch.nn.functional.one_hot(logits.argmax(-1), CFG.vocab_size).float()  # Sampler.probs at T = 0
                q = torch.nn.functional.one_hot(drafts, CFG.vocab_size).float()
                expected = sampling.verify(p[None], q[None], drafts[None], greedy=True)
                _prefilled(model, prompts[1])
                for x in model.buffers():  # the slots the verify writes, overwritten first (finite: 0 · NaN)
                    if x.dim() == 4:
                        x[..., pos:, :] = 1e3
                got = wrapped.greedy_verify(pending, drafts, at, pos + k + 1)
                assert got[0].tolist() == [a] and expected.accepted.tolist() == [a], (k, a)
                assert torch.equal(got[1], expected.next_token) and torch.equal(got[2], expected.accept_mask[0])
                block = torch.cat([pending, drafts])  # the next round's feed: the tokens at slots pos + a, pos + a + 1
                assert got[3].tolist() == [block[a].item(), expected.next_token.item()], (k, a)
                assert got[4].tolist() == [pos + a + 1], (k, a)
                for x, y in zip(caches, [b for b in model.buffers() if b.dim() == 4], strict=True):
                    torch.testing.assert_close(y[..., : pos + k + 1, :], x[..., : pos + k + 1, :], atol=1e-5, rtol=0)
    assert wrapped.fallback is None


@pytest.mark.slow
@pytest.mark.parametrize("t", [1, 3])
def test_one_compiled_step_serves_every_span(t):
    """The span is a dynamic size of the compiled step (inductor.span_dynamic): compiled once at one
    span, the step runs at every other one with Dynamo's guards skipped, as the resident loops run it
    (a step specialised to its first span would be refused there, or read the wrong slots), and equals
    the eager step each time."""
    if not compiled.tested_torch():
        pytest.skip(f"torch {torch.__version__} is not in compiled.TESTED_TORCH: every span is the whole cache there")
    from torch._dynamo.utils import counters

    model = build_gpt(CFG, 12, std=0.1)
    wrapped = compiled.compile_steps(model)
    prompt = torch.randint(0, 256, (90,), generator=torch.Generator().manual_seed(1))
    graphs = counters["stats"]["unique_graphs"]
    idx = torch.randint(0, 256, (1, t), generator=torch.Generator().manual_seed(t))
    with torch.inference_mode():
        pos = _prefilled(model, prompt)
        wrapped.forward_at(idx, *wrapped.chain_inputs(torch.tensor([pos]), t, wrapped.span(pos + t)))  # compiles
        for end in (pos + t, 100, CFG.block_size):
            pos = _prefilled(model, prompt)
            inputs = wrapped.chain_inputs(torch.tensor([pos]), t, wrapped.span(end))
            with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
                got = wrapped.forward_at(idx, *inputs)
            pos = _prefilled(model, prompt)
            expected = model.forward_at(idx, *model.chain_inputs(torch.tensor([pos]), t))
            torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
    assert wrapped.fallback is None and counters["stats"]["unique_graphs"] == graphs + 1


# --- slow: the one-token step compiled ahead of time (AOTInductor) ---------------------------


def _packaged(model):
    return [f for key, f in compiled.compile_steps(model)._steps.items() if key[0] == "packaged"]


@pytest.mark.slow
def test_the_packaged_one_token_step_gives_the_targets_greedy_tokens(pair, prompts, ahead_of_time):
    """Target-only greedy decoding through the AOTInductor package: the eager model's tokens, its build
    timed under T = 1, a package on disk; and after the caches are replaced (as setup_cache does when the
    inference mode changes) the runner reads and writes the new ones."""
    target = pair[0]
    ct = compiled.compile_steps(target)
    for prompt in prompts:
        expected, _ = decoding.generate_target_only(target, prompt, 40)
        got, _ = decoding.generate_target_only(ct, prompt, 40)
        assert torch.equal(got, expected)
    (step,) = _packaged(target)
    assert isinstance(step, compiled.Packaged) and ct.compile_s.get(1, 0) > 0
    assert list((ahead_of_time / "specviz" / "aoti").glob("one-token-*.pt2"))
    old = step.bound
    for blk in target.blocks:
        c = blk.attn.cache
        blk.attn.cache = type(c)(*c.k.shape, c.k.dtype, c.k.device)
    expected, _ = decoding.generate_target_only(target, prompts[1], 40)
    got, _ = decoding.generate_target_only(ct, prompts[1], 40)
    assert torch.equal(got, expected) and step.bound is not old and step.bound is target.blocks[0].attn.cache.k


@pytest.mark.slow
def test_a_new_process_loads_the_package_instead_of_compiling(pair, prompts, ahead_of_time, monkeypatch):
    """A second build of the same model shape (a new process's) finds the package on disk."""
    import torch._inductor

    target = pair[0]
    decoding.generate_target_only(compiled.compile_steps(target), prompts[0], 4)  # built (or found) once

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", refuse)
    with torch.inference_mode():
        pos = torch.tensor([_prefilled(target, prompts[1]) - 1])
        window = target._causal[:, :32]
        token = prompts[1][-1:]
        again = compiled.Packaged(target, token, pos, window)(token, pos, window)
        pos = torch.tensor([_prefilled(target, prompts[1]) - 1])
        expected = target.forward_at(token.view(1, 1), pos + 1, pos + 1, window[pos + 1])[0, -1].argmax(
            -1, keepdim=True
        )
    assert torch.equal(again, expected)


@pytest.mark.slow
def test_a_packaged_step_that_fails_to_build_runs_compiled_and_says_why_once(prompts, ahead_of_time, monkeypatch):
    target = build_gpt(CFG, 5, std=0.1)
    ct = compiled.compile_steps(target)

    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler\nmore")

    monkeypatch.setattr(compiled, "Packaged", broken)
    expected = [decoding.generate_target_only(target, p, 24)[0] for p in prompts]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [decoding.generate_target_only(ct, p, 24)[0] for p in prompts]
    said = [str(w.message) for w in caught if "ahead of time" in str(w.message)]
    assert all(map(torch.equal, got, expected)) and said == [
        "the one-token step unavailable ahead of time, running it compiled: RuntimeError: no C++ compiler"
    ]
    assert _packaged(target) == [ct._chain_of_one] and ct.fallback is None  # the compiled chain from then on
