"""A tune over prompt lengths: each context fitted on its own, K*(C, L) read from those fits, and the acceptance
measured at each context as E[N] and the α of the chapter's geometric model."""

from __future__ import annotations

import pytest
from _tune_points import LONG, SHORT, two_contexts

from specviz.core import theory, tuning


def test_each_context_is_fitted_on_its_own_and_a_point_without_one_is_the_prompts_as_given():
    points = two_contexts()
    answers = tuning.analyse_by_context(points)
    assert list(answers) == [64, 2048]
    alone = tuning.analyse(tuning.at_context(points, 2048))
    assert [c.k for c in answers[2048].choices] == [c.k for c in alone.choices]
    assert tuning.contexts([{"k": 0, "concurrency": 1}]) == [0]


def test_k_by_context_drafts_deeper_where_acceptance_is_high_and_the_draft_cheap():
    points = two_contexts()
    frame = tuning.k_by_context(points, tuning.analyse_by_context(points)).set_index(["context", "concurrency"])
    assert frame.loc[(64, 1), "k"] > frame.loc[(2048, 1), "k"]
    assert frame.loc[(64, 1), "gain"] > 0 and frame.loc[(2048, 8), "gain"] >= 0
    assert frame.loc[(64, 1), "prompt_tokens"] == 66.0


def test_acceptance_by_context_is_one_plus_the_shares_and_its_alpha_gives_it_back():
    table = tuning.acceptance_by_context(two_contexts()).set_index("context")
    assert table.loc[64, "mean_tokens"] == pytest.approx(1 + sum(SHORT))
    assert table.loc[2048, "mean_tokens"] == pytest.approx(1 + sum(LONG))
    for n in (64, 2048):
        k, alpha = int(table.loc[n, "k"]), table.loc[n, "alpha"]
        assert theory.expected_tokens(alpha, k) == pytest.approx(table.loc[n, "mean_tokens"], rel=1e-9)
    assert table.loc[2048, "alpha"] < table.loc[64, "alpha"]
