"""Hostile uploads and typed text: a config.json with sizes at the number limits, traces over their caps,
text over its box's limit. Each is refused (or cut) with a message naming the field, the value and what
is allowed, before any arithmetic or full parse; the page shows no exception element, ever.
"""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import pytest
from _apps import open_app, shown_errors
from _messages import caught as _caught
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from specviz import hardware

LLAMA = {  # Llama-2-7B's config.json, the sizes that matter
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
}
SIZE_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "num_local_experts",
    "num_experts",
)
HW_VIEWS = ("Step time", "c and v", "Speedup by batch", "Batch × context", "Memory", "Engine configs")

#: Values a careless or hostile config.json may hold: the number limits, non-finite, wrong JSON types.
LIMIT_NUMBERS = st.sampled_from(
    [0, 1, -1, 2**31, 2**53 + 1, 2**63, 2**64, 10**400, 1e308, -1e308, 5e-324, 1.5, 1024, 1025, 131_072, 131_073]
)
HOSTILE = st.one_of(
    LIMIT_NUMBERS,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def caught(fn, key: str):
    """The i18n.Message ``fn()`` raises, checked to be the catalogue entry ``key``."""
    exc = _caught(fn)
    assert getattr(exc, "key", None) == key, repr(exc)
    return exc


def config_text(config: dict) -> bytes:
    """JSON as Python writes it: NaN and Infinity as bare words, big integers in full (both parse back)."""
    return json.dumps(config).encode()


@cache
def hardware_app(view: str) -> AppTest:
    """The Hardware & batch page on ``view`` (one per view, reused: its caches make a rerun take ~0.1 s)."""
    return open_app("pages/hardware.py", view=view)


# --------------------------------------------------------------------------------------
# config.json
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("num_hidden_layers", 1e308, "1e+308"),
        ("hidden_size", 10**400, "~10^400"),
        ("num_attention_heads", -4, "-4"),
        ("vocab_size", float("nan"), "nan"),
        ("intermediate_size", float("inf"), "inf"),
        ("num_key_value_heads", "8", "'8'"),
        ("max_position_embeddings", [4096], "[4096]"),
        ("head_dim", {"a": 1}, "{'a': 1}"),
        ("num_experts", 10**6, "1000000"),
        ("num_hidden_layers", True, "True"),
    ],
)
def test_a_config_size_out_of_range_is_refused_naming_key_value_and_range(key, value, shown):
    exc = caught(lambda: hardware.from_hf_config(config_text(LLAMA | {key: value})), "err.hardware.config_int")
    lo, hi = hardware.SIZE_LIMITS[hardware._FIELD_OF.get(key, "experts")]
    assert key in str(exc) and shown in str(exc) and f"{hi:,}" in str(exc) and f"from {lo}" in str(exc), str(exc)


SMALL = LLAMA | {"num_hidden_layers": 1, "hidden_size": 128, "num_attention_heads": 128, "num_key_value_heads": 1}
SMALL |= {"intermediate_size": 1, "vocab_size": 1, "head_dim": 1}


@pytest.mark.parametrize(
    ("key", "field"), [("num_hidden_layers", "n_layers"), ("hidden_size", "hidden_size"), ("vocab_size", "vocab_size")]
)
def test_every_size_at_its_limits_is_accepted_and_one_past_them_refused(key, field):
    lo, hi = hardware.SIZE_LIMITS[field]
    for edge in (lo, hi):
        assert hardware.from_hf_config(config_text(SMALL | {key: edge}))[field] == edge
    for past in (lo - 1, hi + 1):
        caught(lambda past=past: hardware.from_hf_config(config_text(SMALL | {key: past})), "err.hardware.config_int")


def test_sizes_within_range_whose_product_overflows_are_refused_naming_the_parameter_count():
    huge = LLAMA | {"num_hidden_layers": 1024, "hidden_size": 131_072, "num_attention_heads": 1024}
    huge |= {"num_key_value_heads": 1024, "intermediate_size": 1_048_576, "vocab_size": 16_777_216}
    exc = caught(lambda: hardware.from_hf_config(config_text(huge)), "err.hardware.too_many_parameters")
    assert "4.97e+14" in str(exc) and "1e+14" in str(exc)


def test_a_config_nested_too_deep_or_too_large_is_refused_before_parsing():
    caught(lambda: hardware.from_hf_config(b"[" * 200_000), "err.hardware.config_json")
    big = b'{"architectures": ["LlamaForCausalLM"], "pad": "' + b"x" * hardware.CONFIG_MAX_BYTES + b'"}'
    exc = caught(lambda: hardware.from_hf_config(big), "err.hardware.config_size")
    assert f"{hardware.CONFIG_MAX_BYTES:,}" in str(exc)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(SIZE_KEYS), HOSTILE, max_size=4))
def test_from_hf_config_raises_only_messages_and_what_it_accepts_prices_without_overflow(changes):
    try:
        spec = hardware.from_hf_config(config_text(LLAMA | changes))
    except ValueError as exc:
        assert type(exc).__name__ == "Message", repr(exc)
        return
    bytes_ = hardware.weight_bytes(spec, "fp32")
    assert math.isfinite(bytes_) and spec["params"] <= hardware.MAX_PARAMETERS
    step = hardware.step_breakdown(spec, "H100-SXM5-80GB", 512, 131072, 9)["seconds"].sum()
    assert np.isfinite(step) and step > 0


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    view=st.sampled_from(HW_VIEWS),
    which=st.sampled_from(("target", "draft")),
    changes=st.dictionaries(st.sampled_from(SIZE_KEYS), HOSTILE, max_size=3),
    junk=st.one_of(st.none(), st.sampled_from(["[" * 50_000, "1e309", '{"architectures": 5}', "null", "", "\x00\xff"])),
)
@example(view="Memory", which="target", changes={"num_hidden_layers": 1e308}, junk=None)
@example(view="Speedup by batch", which="target", changes={"hidden_size": 10**400}, junk=None)
def test_the_hardware_page_shows_no_exception_for_any_uploaded_config(view, which, changes, junk):
    at = hardware_app(view)
    data = junk.encode("utf-8", "surrogatepass") if junk is not None else config_text(LLAMA | changes)
    at.file_uploader(key=f"hardware.upload_{which}").upload("config.json", data, "application/json")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value  # the page went on drawing after the message


def test_the_hardware_page_names_the_field_of_a_bad_upload_in_chinese():
    at = open_app("pages/hardware.py", lang="zh", view="Memory")
    at.file_uploader(key="hardware.upload_target").upload("config.json", config_text(LLAMA | {"hidden_size": 1e308}))
    at.run()
    assert not at.exception
    errors = shown_errors(at)
    assert any("hidden_size" in e and "1e+308" in e and "131,072" in e and "整数" in e for e in errors), errors
