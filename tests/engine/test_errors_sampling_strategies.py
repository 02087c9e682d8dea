"""Errors and notes of sampling, policies, trees and the n-gram drafter in English and Chinese.

Each case raises a :class:`specviz.base.i18n.Message` whose English text is what the library always said
(the command line, logs and other tests read it), filled with the input's own numbers, and whose Chinese
text keeps the numbers and the person's input.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch

from specviz.base import i18n
from specviz.core import policies, trees
from specviz.engine import sampling
from specviz.engine.models import ngram

CJK = re.compile(r"[\u4e00-\u9fff]")
PQ = torch.tensor([0.5, 0.5])
Q = np.full((2, 3), 0.5)
HEADER = '{"format": "specviz trace 1", "k_max": 3, "positional": false}'
ROW = (
    '{"segment": 0, "accepted": 1, "q_token": [0.5, 0.5, 0.5], "q_top": [0.5, 0.5, 0.5], "p_token": [null, null, null]}'
)
BAD_ROW = ROW.replace('[0.5, 0.5, 0.5], "q_top', '[1.5, 0.5, 0.5], "q_top')  # q_token > 1


def _rounds(p=PQ, q=PQ, k=2, rounds=10, variant="exact"):
    return lambda: sampling.simulate_rounds(p, q, k, rounds, torch.Generator().manual_seed(0), variant)


#: (call, the English text, what the Chinese text must keep: numbers and the person's input)
CASES = [
    # sampling
    (
        lambda: sampling.verify(
            torch.ones(1, 3, 2), torch.ones(1, 2, 2), torch.zeros(1, 2, dtype=torch.long), variant="x"
        ),
        "variant must be one of ['exact', 'accept_first', 'resample_p', 'temperature_mismatch']; got 'x'",
        ["'x'", "'temperature_mismatch'"],
    ),
    (
        _rounds(variant="bogus"),
        "variant must be one of ['exact', 'accept_first', 'resample_p', 'temperature_mismatch']; got 'bogus'",
        ["'bogus'"],
    ),
    (_rounds(p=torch.ones(2, 2)), "p must be a 1-D tensor of probabilities; got shape (2, 2)", ["p", "(2, 2)"]),
    (_rounds(q=torch.tensor([-1.0, 1.0])), "q must hold finite, non-negative probabilities", ["q"]),
    (_rounds(p=torch.zeros(2)), "p must not be all zero", ["p"]),
    (_rounds(p=torch.tensor([0.3, 0.3, 0.4])), "p and q must have the same length; got 3 and 2", ["3", "2"]),
    (_rounds(k=0), "k must be an integer >= 1; got 0", ["k", "0"]),
    (_rounds(k=2.5), "k must be an integer >= 1; got 2.5", ["2.5"]),
    (_rounds(rounds=0), "rounds must be an integer >= 1; got 0", ["rounds", "0"]),
    (lambda: sampling.uniform(0), "V (vocabulary size) must be an integer >= 1; got 0", ["V", "0"]),
    (lambda: sampling.zipf(5, -1.0), "s (Zipf exponent) must be a finite number >= 0; got -1.0", ["-1.0"]),
    (
        lambda: sampling.dirichlet(5, 0.0, 1),
        "beta (Dirichlet concentration) must be a finite number > 0; got 0.0",
        ["beta", "0.0"],
    ),
    (lambda: sampling.tempered(torch.zeros(3), -2.0), "temperature must be a finite number > 0; got -2.0", ["-2.0"]),
    (lambda: sampling.parse_distribution(b"\xff\xfe\xfa", 3, "q"), "q: the file is not UTF-8 text", ["q", "UTF-8"]),
    (
        lambda: sampling.parse_distribution("  ", 7, "p"),
        "p: no numbers found; enter V = 7 comma-separated non-negative numbers",
        ["V = 7"],
    ),
    (lambda: sampling.parse_distribution("1, abc, 2", 3, "p"), "p: entry 2 is 'abc', not a number", ["2", "'abc'"]),
    (
        lambda: sampling.parse_distribution("1, 2, inf", 3, "p"),
        "p: entry 3 is inf; every entry must be a finite number >= 0",
        ["3", "inf"],
    ),
    (
        lambda: sampling.parse_distribution("1, -2.5, 2", 3, "q"),
        "q: entry 2 is -2.5; every entry must be >= 0",
        ["q", "2", "-2.5"],
    ),
    (
        lambda: sampling.parse_distribution("1, 2", 5, "p"),
        "p: has 2 entries but V = 5; enter exactly 5 numbers",
        ["2", "V = 5"],
    ),
    (lambda: sampling.parse_distribution("0,0,0", 3, "p"), "p: all entries are zero; at least one must be > 0", ["p"]),
    (
        lambda: sampling.build("tempered", 3, name="q"),
        "q: 'target at temperature τ' needs a target distribution",
        ["q", "τ"],
    ),
    (
        lambda: sampling.build("weird", 3, name="q"),
        "q builder must be one of ['zipf', 'dirichlet', 'uniform', 'tempered', 'custom']; got 'weird'",
        ["'weird'", "'custom'"],
    ),
    # policies
    (
        lambda: policies.Trace(Q, np.full((2, 2), 0.5), np.array([0, 1])),
        "q_token and q_top must both be (rounds, K_max); got (2, 3) and (2, 2)",
        ["(2, 3)", "(2, 2)"],
    ),
    (
        lambda: policies.Trace(Q, Q, np.array([0.0, 1.0])),
        "accepted must be (rounds,) integers in [0, K_max]; got shape (2,), dtype float64",
        ["(2,)", "float64"],
    ),
    (lambda: policies.Trace(Q, Q, np.array([0, 4])), "accepted must be at most K_max = 3; got 4", ["K_max = 3", "4"]),
    (
        lambda: policies.Trace(Q, Q * 3, np.array([0, 1])),
        "q_top must hold probabilities in [0, 1]",
        ["q_top", "[0, 1]"],
    ),
    (
        lambda: policies.parse_trace("hello", "up.jsonl"),
        "up.jsonl: line 1 must be a 'specviz trace 1' header (written by python -m specviz bench --trace)",
        ["up.jsonl", "1", "'specviz trace 1'"],
    ),
    (
        lambda: policies.parse_trace('{"format": "specviz trace 1", "k_max": 0}', "up.jsonl"),
        "up.jsonl: the header's k_max must be an integer from 1 to 64; got 0",
        ["up.jsonl", "k_max", "0"],
    ),
    (
        lambda: policies.parse_trace(f"{HEADER}\n{ROW}\n{{}}", "t.jsonl"),
        "t.jsonl: line 3 is not a trace row of K_max = 3 (segment, accepted, q_token, q_top, p_token)",
        ["t.jsonl", "3", "K_max = 3"],
    ),
    (lambda: policies.parse_trace(HEADER, "t.jsonl"), "t.jsonl: the trace has no rows", ["t.jsonl"]),
    (
        lambda: policies.parse_trace(f"{HEADER}\n{BAD_ROW}"),
        "trace: q_token must hold probabilities in [0, 1]",
        ["trace", "q_token", "[0, 1]"],
    ),
    (
        lambda: policies.synthetic_trace(0.5, 3, 10, np.random.default_rng(0), "calibrated", -1.0),
        "concentration must be > 0; got -1.0",
        ["-1.0"],
    ),
    (
        lambda: policies.synthetic_trace(0.5, 3, 10, np.random.default_rng(0), "warm"),
        "confidence must be 'calibrated' or 'flat'; got 'warm'",
        ["'warm'", "'calibrated'"],
    ),
    (
        lambda: policies.llamacpp_pmin(0.5, 4, 5),
        "n_min must be an integer in [0, n_max = 4]; got 5",
        ["n_max = 4", "5"],
    ),
    (
        lambda: policies.vllm_by_batch([[1, 4, 3], [5, 8, 2]], 16),
        "batch_size 16 is in no range of the schedule [[1, 4, 3], [5, 8, 2]]",
        ["16", "[[1, 4, 3], [5, 8, 2]]"],
    ),
    (
        lambda: policies.sweep("nope", [0.5], policies.Trace(Q, Q, np.array([0, 1])), 2.0),
        "sweep: 'nope' is not one of ['llama.cpp p_min', 'HF confidence threshold', 'SpecDec++ threshold']",
        ["'nope'", "'llama.cpp p_min'"],
    ),
    # trees
    (lambda: trees.check_p([[0.5], [0.2]]), "p must be a non-empty vector p_1, p_2, …; got shape (2, 1)", ["(2, 1)"]),
    (
        lambda: trees.check_p([0.6, 0.5]),
        "p must sum to at most 1 (the ranks' acceptances are disjoint); got sum 1.1",
        ["1.1"],
    ),
    (
        lambda: trees.check_p_by_depth([0.6]),
        "p by depth must be a (depth, ranks) table with at least one row; got shape (1,)",
        ["(1,)"],
    ),
    (
        lambda: trees.best_tree_for_hardware([0.6], -1.0, lambda n: 1.0, 4, 2),
        "t_draft must be a finite number >= 0; got -1.0",
        ["t_draft", "-1.0"],
    ),
    (
        lambda: trees.best_tree_for_hardware([0.6], 0.1, lambda n: 0.0, 4, 2),
        "t_verify_of_size(1) must be a finite time > 0; got 0.0",
        ["t_verify_of_size(1)", "0.0"],
    ),
    (
        lambda: trees.parse_shape("bush:3"),
        "tree: 'bush:3' is not a draft shape; use chain:K, chains:N,D, topk:D,k,N or optimal:N,D (e.g. optimal:16,6), "
        "every number an integer >= 1",
        ["'bush:3'", "optimal:16,6"],
    ),
    (
        lambda: trees.parse_shape("optimal:16,6"),
        "tree: 'optimal:16,6' is built from a positional acceptance p; none was given",
        ["'optimal:16,6'"],
    ),
    (
        lambda: trees.parse_shape("chain:40"),
        "tree: 'chain:40' has depth 40; at most 16 is allowed here",
        ["'chain:40'", "40", "16"],
    ),
    (
        lambda: trees.p_from_measurements(pd.DataFrame({"x": [1]}), "run 3"),
        "run 3 has no tree row with a measured p and no α: nothing to take p from",
        ["run 3", "α"],
    ),
    (
        lambda: trees.parse_p("0.5, x"),
        "p: '0.5, x' is not a comma-separated list of numbers (e.g. 0.6, 0.2, 0.1)",
        ["'0.5, x'", "0.6, 0.2, 0.1"],
    ),
    (lambda: trees.parse_p(" , "), "p: type at least one number p_1 (e.g. 0.6, 0.2, 0.1)", ["p_1", "0.6, 0.2, 0.1"]),
    (
        lambda: trees.best_topk([0.6, 0.2], 100, 2, 2),
        "budget must be at most 6 for a top-k tree of depth ≤ 2 and top-k ≤ 2 (top-k + (depth − 1) · top-k² drafts); "
        "got 100",
        ["6", "≤ 2", "100"],
    ),
    # the n-gram drafter
    (
        lambda: ngram.NgramDraft("foo"),
        "n-gram rule must be one of ('hf', 'vllm'); got 'foo'",
        ["'foo'", "('hf', 'vllm')"],
    ),
    (
        lambda: ngram.NgramDraft("vllm", 6, 5),
        "n-gram sizes must satisfy 1 <= min <= max; got 6, 5",
        ["1 <= min <= max", "6, 5"],
    ),
    (
        lambda: ngram.replay_on_text([1, 2, 3], 2, "foo"),
        "n-gram rule must be one of ('hf', 'vllm'); got 'foo'",
        ["'foo'"],
    ),
    (lambda: ngram.replay_on_text([1, 2, 3], 0), "K must be an integer >= 1; got 0", ["K", "0"]),
]


@pytest.mark.parametrize(("call", "english", "kept"), CASES, ids=[c[1][:60] for c in CASES])
def test_an_error_reads_as_before_in_english_and_in_chinese_keeps_the_numbers(call, english, kept):
    with pytest.raises(ValueError) as info:
        call()
    exc = info.value
    assert isinstance(exc, i18n.Message)
    assert str(exc) == english
    zh = exc.text("zh")
    assert CJK.search(zh), zh
    assert all(k in zh for k in kept), (zh, kept)
    assert i18n.translated("zh", exc.msgid)


def test_a_wrapped_trace_error_is_chinese_inside_too():
    """parse_trace quotes the Trace's own error: on a page the cause is in the same language."""
    bad = f"{HEADER}\n{BAD_ROW}"
    with pytest.raises(ValueError, match=r"^up\.jsonl: q_token must hold probabilities in \[0, 1\]$") as info:
        policies.parse_trace(bad, "up.jsonl")
    assert info.value.__suppress_context__  # `from None`, as before
    assert info.value.text("zh") == "轨迹 up.jsonl：" + i18n.text(
        "zh", "{name} must hold probabilities in [0, 1]", name="q_token"
    )


def test_the_notes_a_page_shows_read_as_before_and_translate():
    chain = trees.chain(3).describe()
    named = trees.parse_shape("optimal:16,6", [0.6, 0.2]).describe()
    frame = pd.DataFrame({"tree_p": [None, "0.6;0.2"], "tree": [None, "optimal:16,6"]})
    from_tree = trees.p_from_measurements(frame, "run 3")[1]
    from_alpha = trees.p_from_measurements(pd.DataFrame({"alpha_used": [None, 0.6]}), "run 3")[1]
    for note, english, kept in (
        (chain, "3 drafts, depth 3", ["3"]),
        (named, "optimal:16,6 (16 drafts, depth 6)", ["optimal:16,6", "16", "6"]),
        (from_tree, "run 3, row 2 (tree optimal:16,6)", ["run 3", "2", "optimal:16,6"]),
        (from_alpha, "run 3, row 2 (a chain: only p_1 = α is measured)", ["run 3", "2", "p_1 = α"]),
    ):
        assert isinstance(note, i18n.Phrase) and note == english
        zh = i18n.localized(note, "zh")
        assert CJK.search(zh) and all(k in zh for k in kept), zh
        assert i18n.translated("zh", note.msgid)
