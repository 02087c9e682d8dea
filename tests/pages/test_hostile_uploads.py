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
from _tiers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from specviz.core import hardware, policies

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
HW_VIEWS = ("step", "costs", "speedup", "map", "memory", "engine")

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
    """The i18n.Message ``fn()`` raises, checked to be the message ``key``."""
    exc = _caught(fn)
    assert getattr(exc, "msgid", None) == key, repr(exc)
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
    exc = caught(
        lambda: hardware.from_hf_config(config_text(LLAMA | {key: value})),
        "config.json {name} must be an integer from {lo} to {hi}; got {value}",
    )
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
        caught(
            lambda past=past: hardware.from_hf_config(config_text(SMALL | {key: past})),
            "config.json {name} must be an integer from {lo} to {hi}; got {value}",
        )


def test_sizes_within_range_whose_product_overflows_are_refused_naming_the_parameter_count():
    huge = LLAMA | {"num_hidden_layers": 1024, "hidden_size": 131_072, "num_attention_heads": 1024}
    huge |= {"num_key_value_heads": 1024, "intermediate_size": 1_048_576, "vocab_size": 16_777_216}
    exc = caught(
        lambda: hardware.from_hf_config(config_text(huge)),
        "{model} implies {count} parameters; at most {most} are modelled (check the sizes in its config)",
    )
    assert "4.97e+14" in str(exc) and "1e+14" in str(exc)


def test_a_config_nested_too_deep_or_too_large_is_refused_before_parsing():
    caught(lambda: hardware.from_hf_config(b"[" * 200_000), "config.json is not valid JSON: {cause}")
    big = b'{"architectures": ["LlamaForCausalLM"], "pad": "' + b"x" * hardware.CONFIG_MAX_BYTES + b'"}'
    exc = caught(
        lambda: hardware.from_hf_config(big),
        "config.json holds {size} bytes; at most {most} are read (a model's config.json is a few kB)",
    )
    assert f"{hardware.CONFIG_MAX_BYTES:,}" in str(exc)


@settings(max_examples=examples(400), deadline=None)
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
@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    view=st.sampled_from(HW_VIEWS),
    which=st.sampled_from(("target", "draft")),
    changes=st.dictionaries(st.sampled_from(SIZE_KEYS), HOSTILE, max_size=3),
    junk=st.one_of(st.none(), st.sampled_from(["[" * 50_000, "1e309", '{"architectures": 5}', "null", "", "\x00\xff"])),
)
@example(view="memory", which="target", changes={"num_hidden_layers": 1e308}, junk=None)
@example(view="speedup", which="target", changes={"hidden_size": 10**400}, junk=None)
def test_the_hardware_page_shows_no_exception_for_any_uploaded_config(view, which, changes, junk):
    at = hardware_app(view)
    data = junk.encode("utf-8", "surrogatepass") if junk is not None else config_text(LLAMA | changes)
    at.file_uploader(key=f"hardware.upload_{which}").upload("config.json", data, "application/json")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value  # the page went on drawing after the message


def test_the_hardware_page_names_the_field_of_a_bad_upload_in_chinese():
    at = open_app("pages/hardware.py", lang="zh", view="memory")
    at.file_uploader(key="hardware.upload_target").upload("config.json", config_text(LLAMA | {"hidden_size": 1e308}))
    at.run()
    assert not at.exception
    errors = shown_errors(at)
    assert any("hidden_size" in e and "1e+308" in e and "131,072" in e and "整数" in e for e in errors), errors


# --------------------------------------------------------------------------------------
# what one figure sends to the browser
# --------------------------------------------------------------------------------------


def test_a_scatter_over_the_point_budget_is_thinned_evenly_keeping_its_ends_and_its_hover_data():
    import plotly.graph_objects as go

    from specviz.app import figures

    n = 200_000
    x = np.arange(n)
    fig = go.Figure(go.Scatter(x=x, y=x * 2.0, customdata=x * 3, marker=dict(color=x % 7)))
    thinned, total, sent = figures.within_budget(fig)
    assert total == n and figures.MAX_POINTS // 2 <= sent <= figures.MAX_POINTS
    trace = thinned.data[0]
    xs, ys, cd = np.asarray(trace.x), np.asarray(trace.y), np.asarray(trace.customdata).ravel()
    assert xs[0] == 0 and xs[-1] == n - 1 and np.array_equal(ys, xs * 2.0) and np.array_equal(cd, xs * 3)
    assert np.array_equal(np.asarray(trace.marker.color), xs % 7)
    steps = np.diff(xs)
    assert steps.max() - steps.min() <= 1  # evenly spaced
    small = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    assert figures.within_budget(small)[0] is small


def test_a_heatmap_over_the_budget_keeps_a_thinned_grid_with_its_axes():
    import plotly.graph_objects as go

    from specviz.app import figures

    z = np.arange(600 * 500, dtype=float).reshape(600, 500)
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(500), y=np.arange(600) * 10))
    thinned, total, sent = figures.within_budget(fig)
    assert total == 300_000 and sent <= figures.MAX_POINTS
    t = thinned.data[0]
    zt, xt, yt = np.asarray(t.z), np.asarray(t.x), np.asarray(t.y)
    assert zt.shape == (len(yt), len(xt))
    assert np.array_equal(zt, z[np.ix_(yt // 10, xt)])  # each cell is still at its (x, y)


def test_every_chart_of_every_page_goes_through_the_budget():
    from _apps import ROOT

    direct = [p.name for p in (ROOT / "pages").glob("*.py") if "st.plotly_chart(" in p.read_text()]
    assert not direct, f"pages calling st.plotly_chart instead of ui.chart: {direct}"


def test_a_thinned_chart_says_so_under_it():
    def script():
        import numpy as np
        import plotly.graph_objects as go

        from specviz.app import ui

        ui.chart(go.Figure(go.Scatter(x=np.arange(120_000), y=np.zeros(120_000))), key="big")
        ui.chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])), key="small")

    at = AppTest.from_function(script).run()
    assert not at.exception
    assert [c.value for c in at.caption] == [
        "Drawn: 50,000 of 120,000 values, evenly thinned so that the browser "
        "stays responsive; the tables and downloads hold them all."
    ]


# --------------------------------------------------------------------------------------
# traces (Drafting strategies → Draft-length policies)
# --------------------------------------------------------------------------------------

HEADER = '{"format": "specviz trace 1", "k_max": %d, "positional": false}'


def trace_row(k: int) -> str:
    return json.dumps({"segment": 0, "accepted": 1, "q_token": [0.5] * k, "q_top": [0.5] * k, "p_token": [None] * k})


def test_a_trace_over_the_k_max_cap_is_refused_at_its_header():
    k = policies.MAX_TRACE_K + 1
    exc = caught(
        lambda: policies.parse_trace(HEADER % k + "\n" + trace_row(k), "big.jsonl"),
        "{name}: the header's k_max must be an integer from 1 to {most}; got {k!r}",
    )
    assert f"{k}" in str(exc) and f"{policies.MAX_TRACE_K}" in str(exc) and "big.jsonl" in str(exc)
    assert policies.parse_trace(HEADER % policies.MAX_TRACE_K + "\n" + trace_row(policies.MAX_TRACE_K)).k_max == 64


@pytest.mark.slow  # parses 200,000 rows twice (~4 s)
def test_a_trace_over_the_row_cap_is_refused_at_the_first_row_past_it():
    cap = policies.MAX_TRACE_ROUNDS
    row = trace_row(1)
    text = "\n".join([HEADER % 1, *[row] * cap])
    assert policies.parse_trace(text).rounds == cap
    exc = caught(
        lambda: policies.parse_trace(text + "\n" + row + "\nnot even json", "long.jsonl"),
        "{name}: line {line} is past the most rows a trace may hold ({most}); replay a shorter run",
    )
    assert f"line {cap + 2}" in str(exc) and f"{cap:,}" in str(exc)  # the row past the cap, not the junk after it


def test_a_trace_file_over_the_byte_cap_is_refused_before_it_is_read():
    data = (HEADER % 1 + "\n").encode() + b" " * policies.MAX_TRACE_BYTES
    exc = caught(
        lambda: policies.parse_trace(data, "huge.jsonl"),
        "{name}: the trace holds {size} bytes; at most {most} are read",
    )
    assert f"{policies.MAX_TRACE_BYTES:,}" in str(exc)


def test_the_trace_byte_cap_is_the_uploaders():
    from specviz.data.measurements import load

    assert policies.MAX_TRACE_BYTES == load.MAX_BYTES


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.one_of(HOSTILE, st.lists(HOSTILE, max_size=3)), min_size=1, max_size=5))
def test_a_trace_row_of_any_json_raises_only_a_message_naming_the_file(values):
    keys = ("segment", "accepted", "q_token", "q_top", "p_token")
    good = dict(zip(keys, (0, 0, [0.5], [0.5], [None]), strict=True))
    row = json.dumps(good | dict(zip(keys, values, strict=False)))
    try:
        policies.parse_trace(HEADER % 1 + "\n" + row, "t.jsonl")
    except ValueError as exc:
        assert type(exc).__name__ == "Message" and "t.jsonl" in str(exc), repr(exc)


def test_the_strategies_page_refuses_a_trace_over_a_cap_with_a_message():
    at = open_app("pages/strategies.py", view="policies", trace_src="upload")
    k = policies.MAX_TRACE_K * 40
    at.file_uploader(key="strategies.trace_file").upload("wide.jsonl", (HEADER % k + "\n" + trace_row(k)).encode())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("wide.jsonl" in e and "64" in e and f"{k}" in e for e in shown_errors(at)), shown_errors(at)


# --------------------------------------------------------------------------------------
# typed text over its box's limit
# --------------------------------------------------------------------------------------


def test_text_over_a_box_limit_keeps_its_first_characters_and_names_the_limit():
    from specviz.app import share

    p = share.Param("ng_text", "", "text", hi=20_000)
    cut, note = share.clean_text(p, "ab" * 500_000)
    assert cut == "ab" * 10_000 and "ng_text" in note and "20,000" in note and "1,000,000" in note
    assert share.clean_text(p, "x" * 20_000) == ("x" * 20_000, None)


@pytest.mark.slow  # the n-gram table of 20,000 characters: about 2 s
def test_a_megabyte_pasted_into_the_ngram_box_is_cut_to_its_limit_with_a_note_not_emptied():
    at = open_app("pages/strategies.py", view="ngram", ng_src="text")
    box = at.text_area(key="strategies.ng_text")
    pasted = ("def f(x):\n    return x + 1\n" * 40_000)[:1_000_000]
    box.input(pasted).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key="strategies.ng_text").value == pasted[:20_000]
    assert any("20,000" in w.value and "1,000,000" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not shown_errors(at)  # not "type at least two characters"
    assert at.get("plotly_chart")  # the lookup ran on the kept text


def test_a_weight_file_far_longer_than_its_vocabulary_needs_is_refused_before_parsing():
    from specviz.engine import sampling

    data = b"p\n" + b"0.001\n" * 3_000_000  # an 18 MB one-column CSV for V = 100
    exc = caught(
        lambda: sampling.parse_distribution(data, 100, "p"),
        "{name}: {size} characters is more than a vector of V = {v} weights needs (at most {most})",
    )
    assert "18,000,002" in str(exc) and "7,424" in str(exc) and "V = 100" in str(exc)
    assert float(sampling.parse_distribution(b"p\n" + b"0.01\n" * 100, 100).sum()) == pytest.approx(1.0)


def test_an_endpoint_list_over_its_limit_is_cut_with_a_note_on_the_server_monitor():
    at = open_app("pages/server-monitor.py")
    at.text_area(key="server-monitor.endpoints").input("http://127.0.0.1:9/metrics\n" * 400).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.text_area(key="server-monitor.endpoints").value) == 4000
    assert any("4,000" in w.value and "10,800" in w.value for w in at.warning), [w.value for w in at.warning]
