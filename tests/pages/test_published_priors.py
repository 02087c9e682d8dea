"""Acceptance priors by task domain: the published table grouped per method and domain, offered as the α to
start from on Hardware and Serving, restored from a link, a bad one named."""

from __future__ import annotations

import numpy as np
import pytest
from _apps import open_app

from specviz.core import acceptance, theory

PAGE = "pages/published-acceptance.py"


@pytest.fixture(scope="module")
def priors():
    return acceptance.domain_priors(acceptance.load_reference())


def test_each_prior_is_its_rows_median_alpha_and_that_alpha_gives_their_tau(priors):
    reference = acceptance.load_reference()
    chains = reference[np.isfinite(reference["alpha"])]
    assert priors["rows"].sum() == len(chains)  # every chain row in exactly one cell; trees have no α
    for p in priors.itertuples():
        rows = chains[(chains["method"] == p.method) & (chains["domain"] == p.domain)]
        assert p.alpha == pytest.approx(rows["alpha"].median()) and p.sources == rows["source_id"].nunique()
        assert p.alpha_lo <= p.alpha <= p.alpha_hi
        assert set(p.source_ids.split(", ")) == set(rows["source_id"])
    one = chains.iloc[0]  # α recovered from τ: E[N](α, K) gives τ back
    assert theory.expected_tokens(one["alpha"], int(one["k"])) == pytest.approx(one["mean_accepted_tokens"], 1e-6)


def test_published_eagle3_code_and_math_accept_more_than_chat(priors):
    """What the caption says, from the rows of four publishers (SpecBundle, vLLM blogs)."""
    at = priors.set_index(["method", "domain"])["alpha"]
    assert at["eagle3", "code"] > at["eagle3", "chat"] and at["eagle3", "math"] > at["eagle3", "chat"]


@pytest.mark.slow
def test_the_page_lists_the_priors_and_links_hardware_and_serving_at_the_chosen_alpha(priors):
    at = open_app(PAGE)
    assert not at.error
    first = priors.set_index(["method", "domain"]).loc[("eagle3", "chat"), "alpha"]
    links = at.get("page_link")
    assert [(link.proto.page, link.proto.query_string) for link in links] == [
        ("hardware", f"alpha={first:.3f}"),
        ("serving", f"alpha={first:.3f}"),
    ]
    at.selectbox(key="measured.prior").set_value("ngram/translation").run()
    want = priors.set_index(["method", "domain"]).loc[("ngram", "translation"), "alpha"]
    assert at.get("page_link")[1].proto.query_string == f"alpha={want:.3f}"
    assert at.query_params["prior"] == "ngram/translation"


@pytest.mark.slow
def test_a_link_restores_the_prior_and_a_bad_one_is_named():
    at = open_app(PAGE, prior="eagle3/code")
    assert at.selectbox(key="measured.prior").value == "eagle3/code"
    bad = open_app(PAGE, prior="eagle9/poetry")
    assert any("prior='eagle9/poetry'" in w.value for w in bad.warning)
    assert bad.selectbox(key="measured.prior").value == "eagle3/chat"


@pytest.mark.slow
def test_the_link_opens_serving_at_that_alpha():
    at = open_app("pages/serving.py", alpha="0.854")
    assert at.slider(key="serving.alpha").value == pytest.approx(0.854) and not at.error and not at.warning
