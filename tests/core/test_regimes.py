"""Regimes (engine × draft × target × load) and their bands: every row and setup falls in exactly one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.base import i18n
from specviz.core import bands, hardware, published, regimes

PARTS = st.builds(
    regimes.Regime,
    st.sampled_from(regimes.ENGINES),
    st.sampled_from(regimes.DRAFTS),
    st.sampled_from(regimes.TARGETS),
    st.sampled_from(regimes.LOADS),
)


@pytest.mark.parametrize(
    ("batch", "rate", "load"),
    [
        (1, None, "b1"),
        (2, None, "b2-16"),
        (16, None, "b2-16"),
        (17, None, "b17+"),
        (512, None, "b17+"),
        (1, 4.0, "b17+"),
    ],
)
def test_the_load_bins_follow_the_issue_and_a_request_rate_is_under_load(batch, rate, load):
    assert regimes.load_of(batch, rate) == load


@given(st.integers(1, 10**6))
def test_every_batch_falls_in_exactly_one_load_bin(batch):
    load = regimes.load_of(batch)
    lo, hi = {"b1": (1, 1), "b2-16": (2, 16), "b17+": (17, 10**6)}[load]
    assert lo <= batch <= hi


def test_stacks_and_methods_map_to_their_family_and_kind():
    stacks = ("hf-transformers", "gpt-fast", "vllm", "llama.cpp-cpu", "mlc-llm", "vllm-2023")
    assert [regimes.engine_of(s) for s in stacks] == [
        "hf-eager",
        "compiled-pytorch",
        "vllm",
        "llama.cpp",
        "other",
        "other",  # vLLM before CUDA graphs ran eagerly: not the vLLM deployed today
    ]
    assert [regimes.draft_of(m) for m in ("eagle2", "eagle3", "hydra", "suffix", None, "none", "dflash")] == [
        "eagle",
        "eagle3",
        "medusa",
        "ngram",
        "none",
        "none",
        "other",
    ]
    with pytest.raises(ValueError, match="batch must be"):
        regimes.load_of(0)


@given(PARTS)
def test_a_regime_round_trips_through_its_key_and_is_labelled_in_both_languages(r):
    assert regimes.Regime.from_key(r.key) == r
    for lang in i18n.LANGUAGES:
        text = regimes.label(r, lambda s, lang=lang: i18n.text(lang, s))
        assert text.count(" · ") == 3 and "{" not in text


def _table(cells: list[tuple[regimes.Regime, float]]) -> pd.DataFrame:
    frame = pd.DataFrame({"regime": [c for c, _ in cells], "ratio": [x for _, x in cells]})
    return regimes.summary(frame.assign(source_id=[f"s{i % 4}" for i in range(len(frame))]))


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(PARTS, st.integers(1, 20), st.floats(0.3, 3.0)), min_size=1, max_size=12),
    PARTS,
)
def test_a_band_is_its_own_where_validated_else_the_widest_and_the_nearest_is_validated(spec, asked):
    rng = np.random.default_rng(0)
    cells = [(r, float(x)) for r, n, centre in spec for x in centre * rng.uniform(0.8, 1.25, n)]
    table = _table(cells)
    band = regimes.band(asked, table)
    valid = table[table["validated"]]
    if valid.empty:
        assert band is None
        return
    assert band.lo <= band.hi
    if asked.key in valid.index:
        assert band.validated and band.nearest is None and band.rows == valid.loc[asked.key, "rows"]
    else:
        assert not band.validated and band.nearest.key in valid.index
        assert (band.lo, band.hi) == (valid["lo"].min(), valid["hi"].max())
        closest = min(regimes.distance(asked, v) for v in valid["regime"])
        assert regimes.distance(asked, band.nearest) == closest


def test_a_regime_with_seven_rows_is_unvalidated_and_eight_validate_it():
    r = regimes.Regime("vllm", "eagle3", "moe", "b17+")
    assert not _table([(r, 1.0)] * (regimes.MIN_ROWS - 1))["validated"].any()
    assert _table([(r, 1.0)] * regimes.MIN_ROWS)["validated"].all()


def test_the_shipped_predictions_carry_each_rows_regime():
    """predictions.csv's regime column is what the library computes from the published row today."""
    pred = pd.read_csv(published.PREDICTIONS).set_index("row_id")
    rows = published.load_measurements().set_index("row_id").loc[pred.index]
    want = published.regime_keys(rows.reset_index()).to_numpy()
    assert list(pred["regime"]) == list(want)
    moe = pred["regime"].str.contains("/moe/")
    assert moe.sum() == rows["target"].map(hardware.is_moe).sum() > 0


@pytest.mark.slow
def test_every_kind_of_profile_gets_a_band_from_the_shipped_predictions():
    for name in ("roofline", "vllm", "hf-transformers", "compiled", "eager", "my-own-profile"):
        for kind in bands.KINDS:
            band = bands.band_for(name, kind, "eagle3", True, 64)
            assert band is not None and band.lo <= band.hi, (name, kind)
