"""Tests of specviz.engine.models.hf: the Hugging Face adapter and the GPT-2 exporter.

A small random pair of ours is exported to transformers' GPT2LMHeadModel format and
loaded back through ``load_pair("TARGET,DRAFT")``; the wrapped models must give our
logits (full and cached, including re-writing at an earlier position), our engine's
greedy tokens, and transformers' own assisted generation must agree with our greedy
target-only output. Everything is local: no test touches the network.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from specviz.engine import decoding  # noqa: E402  (after the importorskip above)
from specviz.engine.models import GPT, Decodable, GPTConfig, hf, load_pair  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NEW = 48  # tokens generated per comparison


# Each test loads or exports a transformers model (the module fixture alone takes 1-2 s): the slow tier.
pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.slow]


def _pair() -> tuple[GPT, GPT]:
    """A seeded random target (2 layers) and a 1-layer draft that shares the target's first layer.

    Weights use std 0.05 (not the 0.02 init) so greedy choices are clear: the smallest top-1/top-2
    logit gap along the test sequence is ~5e-3, far above float32 noise. Sharing the first layer
    makes the draft agree with the target about half the time, so speculative rounds see both
    rejections and all-accepted rounds (seed 0: α̂ ≈ 0.5).
    """
    torch.manual_seed(0)
    target = GPT(GPTConfig(2, 2, 64, block_size=256)).eval()
    draft = GPT(GPTConfig(1, 2, 64, block_size=256)).eval()
    with torch.no_grad():
        for p in target.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.05)
        draft.load_state_dict({k: v for k, v in target.state_dict().items() if not k.startswith("blocks.1.")})
    return target, draft


@pytest.fixture(scope="module")
def ours():
    return _pair()


@pytest.fixture(scope="module")
def exported(ours, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf_pair")
    hf.export_pair(ours, out)
    return out


@pytest.fixture(scope="module")
def theirs(exported):
    return load_pair(f"{exported}/target,{exported}/draft", device="cpu", dtype=torch.float32)


PROMPT = "def speculative(target, draft):\n    "


# --- export format -------------------------------------------------------------------------


@pytest.mark.slow
def test_export_writes_a_gpt2_checkpoint(exported, ours):
    for part, model in zip(("target", "draft"), ours, strict=True):
        folder = exported / part
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            assert (folder / name).is_file(), f"{part}/{name} missing"
        assert not list(folder.glob("*.bin")), "pickle weights written"
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
        assert config.model_type == "gpt2"
        assert config.activation_function == "gelu"
        assert (config.n_positions, config.n_inner, config.n_layer) == (256, 4 * 64, model.cfg.n_layer)
        assert config.eos_token_id is None and config.bos_token_id is None  # GPT-2's 50256 would be out of range
    from transformers.activations import ACT2FN

    x = torch.linspace(-4, 4, 101)
    assert torch.equal(ACT2FN["gelu"](x), torch.nn.GELU()(x))  # exact erf, like our MLP


@pytest.mark.slow
def test_exported_weights_are_ours(exported, ours):
    model = transformers.AutoModelForCausalLM.from_pretrained(exported / "target", local_files_only=True)
    target = ours[0]
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()  # tied
    torch.testing.assert_close(model.transformer.h[1].attn.c_attn.weight, target.blocks[1].attn.qkv.weight.t())
    torch.testing.assert_close(model.transformer.h[0].mlp.c_proj.weight, target.blocks[0].mlp[2].weight.t())
    assert all(not b.detach().any() for n, b in model.named_parameters() if n.endswith(".bias") and ".ln_" not in n)


# --- logits ----------------------------------------------------------------------------------


def test_full_forward_matches(ours, theirs):
    x = torch.randint(0, 256, (2, 64), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for mine, wrapped in zip(ours, theirs[:2], strict=True):
            got = wrapped(x)
            assert got.dtype == torch.float32 and got.shape == (2, 64, 256)
            torch.testing.assert_close(got, mine(x), atol=1e-4, rtol=0)


def test_cached_steps_and_rewrite_match(ours, theirs):
    x = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(2))
    y = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        for mine, wrapped in zip(ours, theirs[:2], strict=True):
            ref_x, ref_y = mine(x), mine(torch.cat([x[:, :12], y[:, 12:]], 1))
            wrapped.setup_cache(2, 256)
            torch.testing.assert_close(wrapped(x[:, :10], 0), ref_x[:, :10], atol=1e-4, rtol=0)  # prefill
            for i in range(10, 30):  # one token at a time
                torch.testing.assert_close(wrapped(x[:, i : i + 1], i), ref_x[:, i : i + 1], atol=1e-4, rtol=0)
            torch.testing.assert_close(wrapped(x[:, 30:35], 30), ref_x[:, 30:35], atol=1e-4, rtol=0)  # a block
            # write different tokens at an earlier position: everything cached from 12 on is discarded
            torch.testing.assert_close(wrapped(y[:, 12:20], 12), ref_y[:, 12:20], atol=1e-4, rtol=0)
            torch.testing.assert_close(wrapped(y[:, 20:21], 20), ref_y[:, 20:21], atol=1e-4, rtol=0)
            # the same position twice (the engine's timing loop does this)
            torch.testing.assert_close(wrapped(y[:, 20:21], 20), ref_y[:, 20:21], atol=1e-4, rtol=0)
            with pytest.raises(ValueError, match="only positions 0..20 are cached"):
                wrapped(y[:, 25:26], 25)  # a gap would put tokens at the wrong positions
            with pytest.raises(ValueError, match="cache holds 256"):
                wrapped(y[:, :1], 256)


def test_wrapper_interface(ours, theirs):
    target, _, tok = theirs
    assert isinstance(target, hf.HFCausalLM) and isinstance(tok, hf.HFTokenizer)
    assert target.cfg.block_size == 256 and target.cfg.vocab_size == 256 and tok.vocab_size == 256
    assert target.dtype == torch.float32 and target.device == torch.device("cpu")
    # ours has no biases; the GPT-2 copy carries zero biases
    assert target.num_params() > ours[0].num_params()


def test_padded_vocab_is_sliced(tmp_path):
    """A draft whose embedding has padding rows beyond the tokenizer: logits are cut to 256."""
    torch.manual_seed(5)
    target = GPT(GPTConfig(1, 2, 32, block_size=64)).eval()
    draft = GPT(GPTConfig(1, 2, 32, block_size=64, vocab_size=320)).eval()
    hf.export_pair((target, draft), tmp_path)
    _, wrapped, _ = load_pair(f"{tmp_path}/target,{tmp_path}/draft", dtype=torch.float32)
    x = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        torch.testing.assert_close(wrapped(x), draft(x)[..., :256], atol=1e-4, rtol=0)


# --- generation --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(ours):
    """Our target-only greedy output on our own model (the ground truth for everything below)."""
    prompt = torch.tensor(list(PROMPT.encode()))
    tokens, _ = decoding.generate_target_only(ours[0], prompt, NEW)
    with torch.no_grad():
        logits = ours[0](torch.cat([prompt, tokens])[None])[0, prompt.numel() - 1 : -1]
    top2 = logits.topk(2, -1).values
    assert float((top2[:, 0] - top2[:, 1]).min()) > 1e-3, "near-tie in the reference: greedy comparisons are fragile"
    return prompt, tokens


@pytest.mark.slow
def test_engine_on_wrapped_pair_gives_our_greedy_tokens(ours, theirs, reference):
    prompt, tokens = reference
    target, draft, tok = theirs
    assert tok.encode(PROMPT) == prompt.tolist()
    only, _ = decoding.generate_target_only(target, prompt, NEW)
    assert only.tolist() == tokens.tolist()
    for k in (1, 4):
        spec_ours, stats_ours = decoding.speculative_generate(*ours, prompt, k, max_new_tokens=NEW)
        spec_hf, stats_hf = decoding.speculative_generate(target, draft, prompt, k, max_new_tokens=NEW)
        assert spec_hf.tolist() == spec_ours.tolist() == tokens.tolist()
        assert [r.drafted for r in stats_hf.rounds] == [r.drafted for r in stats_ours.rounds]
        accepted = [r.accepted for r in stats_hf.rounds]
        assert 0 in accepted and k in accepted, f"K={k}: rounds should include rejections and bonuses: {accepted}"


@pytest.mark.slow
def test_transformers_assisted_generation_matches(theirs, reference):
    """transformers' own speculative decoding on the exported pair = our greedy target-only output."""
    prompt, tokens = reference
    target, draft, _ = theirs
    assert target.model.generation_config.eos_token_id is None  # no EOS: exactly NEW tokens, no padding needed
    ids = prompt[None]
    with torch.no_grad():
        out = target.model.generate(
            ids, attention_mask=torch.ones_like(ids), assistant_model=draft.model, do_sample=False, max_new_tokens=NEW
        )
        plain = target.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=NEW)
    assert out[0, ids.shape[1] :].tolist() == tokens.tolist()
    assert plain[0, ids.shape[1] :].tolist() == tokens.tolist()


# --- tokenizer ---------------------------------------------------------------------------------


def test_exported_tokenizer_is_bytes(exported, theirs):
    auto = transformers.AutoTokenizer.from_pretrained(exported / "draft", local_files_only=True)
    tok = theirs[2]
    rng = random.Random(0)
    alphabet = [chr(c) for c in range(0x250)] + list(" \n\t  ,.:;'\"\\ 日本語 ünïcødé 😀🚀 \u200b\ufeff")
    texts = ["", " leading space", "trailing space ", "a  b", "x ,y . z", "\r\n", "\x00\x7f\x80"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(200)]
    for text in texts:
        ids = list(text.encode("utf-8"))
        assert auto.encode(text, add_special_tokens=False) == ids, repr(text)
        assert tok.encode(text) == ids, repr(text)
        assert tok.decode(ids) == text, repr(text)
    assert tok.decode([0xE6, 0x97]) == "\ufffd"  # invalid UTF-8 → U+FFFD, like ByteTokenizer
    assert hf.bytes_to_unicode()[ord("A")] == "A" and len(set(hf.bytes_to_unicode().values())) == 256


def test_different_tokenizers_are_refused(exported, tmp_path):
    import shutil

    other = tmp_path / "draft"
    shutil.copytree(exported / "draft", other)
    tok = transformers.AutoTokenizer.from_pretrained(other, local_files_only=True)
    tok.add_tokens(["<extra>"])
    tok.save_pretrained(other)
    with pytest.raises(ValueError, match="different tokenizers"):
        load_pair(f"{exported}/target,{other}")


# --- errors and safety ---------------------------------------------------------------------------


def test_missing_folder_is_a_clear_error(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(ValueError, match=re.escape(missing)) as info:
        load_pair(f"{missing},{missing}")
    assert "no such folder" in str(info.value)
    with pytest.raises(ValueError, match="TARGET,DRAFT"):
        load_pair(f"{missing},")


def test_unknown_hub_id_offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match="specviz-no-such-org/no-such-model") as info:
        load_pair("specviz-no-such-org/no-such-model,specviz-no-such-org/no-such-draft")
    assert not isinstance(info.value, ImportError)
    assert "HF_HUB_OFFLINE" in str(info.value)


def test_unknown_hub_id_unreachable(monkeypatch):
    """No network: fail at once with the id and the reason, instead of a minute of retries."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf, "_hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(ValueError, match=r"specviz-no-such-org/no-such-model.*cannot be reached"):
        load_pair("specviz-no-such-org/no-such-model,gpt2")


def test_local_folders_can_be_disallowed(exported):
    with pytest.raises(ValueError, match="local folders are not allowed"):
        hf.load_hf_pair(str(exported / "target"), str(exported / "draft"), allow_local=False)


def test_trust_remote_code_is_never_enabled(exported, monkeypatch):
    source = (ROOT / "specviz" / "engine" / "models" / "hf.py").read_text()
    assert not re.search(r"trust_remote_code\s*=\s*True", source)
    calls = []

    def recording(cls):
        inner = cls.from_pretrained.__func__  # a classmethod

        def from_pretrained(klass, name, *args, **kwargs):
            calls.append((cls.__name__, kwargs))
            return inner(klass, name, *args, **kwargs)

        return classmethod(from_pretrained)

    # patch the classes, not the module: importing transformers' modeling code re-executes
    # transformers/__init__.py (processing_utils → direct_transformers_import) and replaces
    # sys.modules["transformers"], so the module object this file imported goes stale
    for cls in (transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        monkeypatch.setattr(cls, "from_pretrained", recording(cls))
    load_pair(f"{exported}/target,{exported}/draft", dtype=torch.float32)
    assert len(calls) == 4  # two tokenizers, two models
    for cls, kwargs in calls:
        assert kwargs["trust_remote_code"] is False and kwargs["local_files_only"] is True, (cls, kwargs)
        if cls == "AutoModelForCausalLM":
            assert kwargs["use_safetensors"] is True


def test_missing_transformers_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ValueError, match=r"optional package transformers: pip install transformers==") as info:
        hf.require_transformers()
    assert not isinstance(info.value, ImportError)
    with pytest.raises(ValueError, match="pip install transformers"):
        load_pair("some/target,some/draft")
    pin = re.search(r"^transformers==(\S+)", (ROOT / "requirements-dev.txt").read_text(), re.MULTILINE)
    assert pin and pin.group(1) == hf.TRANSFORMERS_PIN


def test_both_model_kinds_are_decodable(ours, theirs, exported):
    """The engine's interface: our GPT and the wrapper satisfy it; the wrapper fakes nothing else."""
    for model in (*ours, *theirs[:2]):
        assert isinstance(model, Decodable)
        assert model.context_length == 256 and model.device == torch.device("cpu")
    assert not hasattr(theirs[0], "wte")  # the engine gets the device through the protocol
    assert not isinstance(theirs[2], Decodable)  # the check has teeth: a tokenizer is not a model
    auto = transformers.AutoModelForCausalLM
    half = hf.HFCausalLM(auto.from_pretrained(exported / "draft", local_files_only=True, dtype=torch.float16))
    assert half.dtype == torch.float16  # read from the model, not assumed


def test_a_hugging_face_target_with_ngram_drafts_gives_our_greedy_tokens(exported, reference):
    """`TARGET+ngram` with a transformers target: the n-gram drafter works with any target."""
    prompt, tokens = reference
    target, draft, tok = load_pair(f"{exported}/target+ngram", device="cpu", dtype=torch.float32)
    assert type(draft).__name__ == "NgramDraft" and draft.vocab_size == 256
    out, stats = decoding.speculative_generate(target, draft, prompt, 4, 0.0, NEW)
    assert out.tolist() == tokens.tolist() and tok.encode(PROMPT) == prompt.tolist()
    assert any(r.drafted for r in stats.rounds)  # the prompt repeats itself: lookup proposed something
