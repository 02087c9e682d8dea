"""Errors and notes of sampling, policies, trees and the n-gram drafter in English and Chinese.

Each case raises a :class:`specviz.base.i18n.Message`: its key, the input's own numbers in its fields, and
those numbers and the person's input read the same in English and in Chinese (tests/_messages.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from _messages import caught, expect, inner

from specviz.core import policies, trees
from specviz.engine import sampling
from specviz.engine.models import ngram

PQ = torch.tensor([0.5, 0.5])
Q = np.full((2, 3), 0.5)
HEADER = '{"format": "specviz trace 1", "k_max": 3, "positional": false}'
ROW = (
    '{"segment": 0, "accepted": 1, "q_token": [0.5, 0.5, 0.5], "q_top": [0.5, 0.5, 0.5], "p_token": [null, null, null]}'
)
BAD_ROW = ROW.replace('[0.5, 0.5, 0.5], "q_top', '[1.5, 0.5, 0.5], "q_top')  # q_token > 1


def _rounds(p=PQ, q=PQ, k=2, rounds=10, variant="exact"):
    return lambda: sampling.simulate_rounds(p, q, k, rounds, torch.Generator().manual_seed(0), variant)


#: (call, msgid, fields, what both the English and the Chinese text show: numbers and the person's input)
CASES = [
    # sampling
    (
        lambda: sampling.verify(
            torch.ones(1, 3, 2), torch.ones(1, 2, 2), torch.zeros(1, 2, dtype=torch.long), variant="x"
        ),
        "variant must be one of {allowed}; got {variant!r}",
        {"allowed": ["exact", "accept_first", "resample_p", "temperature_mismatch"], "variant": "x"},
        ("'x'", "'temperature_mismatch'"),
    ),
    (
        _rounds(variant="bogus"),
        "variant must be one of {allowed}; got {variant!r}",
        {"allowed": ["exact", "accept_first", "resample_p", "temperature_mismatch"], "variant": "bogus"},
        ("'bogus'",),
    ),
    (
        _rounds(p=torch.ones(2, 2)),
        "{name} must be a 1-D tensor of probabilities; got shape {shape}",
        {"name": "p", "shape": (2, 2)},
        ("p", "(2, 2)"),
    ),
    (
        _rounds(q=torch.tensor([-1.0, 1.0])),
        "{name} must hold finite, non-negative probabilities",
        {"name": "q"},
        ("q",),
    ),
    (_rounds(p=torch.zeros(2)), "{name} must not be all zero", {"name": "p"}, ("p",)),
    (
        _rounds(p=torch.tensor([0.3, 0.3, 0.4])),
        "p and q must have the same length; got {p_len} and {q_len}",
        {"p_len": 3, "q_len": 2},
        ("3", "2"),
    ),
    (_rounds(k=0), "k must be an integer >= 1; got {k!r}", {"k": 0}, ("k", "0")),
    (_rounds(k=2.5), "k must be an integer >= 1; got {k!r}", {"k": 2.5}, ("2.5",)),
    (_rounds(rounds=0), "rounds must be an integer >= 1; got {rounds!r}", {"rounds": 0}, ("rounds", "0")),
    (lambda: sampling.uniform(0), "V (vocabulary size) must be an integer >= 1; got {v!r}", {"v": 0}, ("V", "0")),
    (
        lambda: sampling.zipf(5, -1.0),
        "s (Zipf exponent) must be a finite number >= 0; got {s!r}",
        {"s": -1.0},
        ("-1.0",),
    ),
    (
        lambda: sampling.dirichlet(5, 0.0, 1),
        "beta (Dirichlet concentration) must be a finite number > 0; got {beta!r}",
        {"beta": 0.0},
        ("beta", "0.0"),
    ),
    (
        lambda: sampling.tempered(torch.zeros(3), -2.0),
        "temperature must be a finite number > 0; got {temperature!r}",
        {"temperature": -2.0},
        ("-2.0",),
    ),
    (
        lambda: sampling.parse_distribution(b"\xff\xfe\xfa", 3, "q"),
        "{name}: the file is not UTF-8 text",
        {"name": "q"},
        ("q", "UTF-8"),
    ),
    (
        lambda: sampling.parse_distribution("  ", 7, "p"),
        "{name}: no numbers found; enter V = {v} comma-separated non-negative numbers",
        {"name": "p", "v": 7},
        ("V = 7",),
    ),
    (
        lambda: sampling.parse_distribution("1, abc, 2", 3, "p"),
        "{name}: entry {i} is {cell!r}, not a number",
        {"name": "p", "i": 2, "cell": "abc"},
        ("2", "'abc'"),
    ),
    (
        lambda: sampling.parse_distribution("1, 2, inf", 3, "p"),
        "{name}: entry {i} is {value!r}; every entry must be a finite number >= 0",
        {"name": "p", "i": 3, "value": float("inf")},
        ("3", "inf"),
    ),
    (
        lambda: sampling.parse_distribution("1, -2.5, 2", 3, "q"),
        "{name}: entry {i} is {value!r}; every entry must be >= 0",
        {"name": "q", "i": 2, "value": -2.5},
        ("q", "-2.5"),
    ),
    (
        lambda: sampling.parse_distribution("1, 2", 5, "p"),
        "{name}: has {n} entries but V = {v}; enter exactly {v} numbers",
        {"name": "p", "n": 2, "v": 5},
        ("2", "V = 5"),
    ),
    (
        lambda: sampling.parse_distribution("0,0,0", 3, "p"),
        "{name}: all entries are zero; at least one must be > 0",
        {"name": "p"},
        ("p",),
    ),
    (
        lambda: sampling.build("tempered", 3, name="q"),
        "{name}: 'target at temperature τ' needs a target distribution",
        {"name": "q"},
        ("q", "τ"),
    ),
    (
        lambda: sampling.build("weird", 3, name="q"),
        "{name} builder must be one of {allowed}; got {kind!r}",
        {"name": "q", "allowed": ["zipf", "dirichlet", "uniform", "tempered", "custom"], "kind": "weird"},
        ("'weird'", "['zipf', 'dirichlet', 'uniform', 'tempered', 'custom']"),
    ),
    # policies
    (
        lambda: policies.Trace(Q, np.full((2, 2), 0.5), np.array([0, 1])),
        "q_token and q_top must both be (rounds, K_max); got {q_shape} and {top_shape}",
        {"q_shape": (2, 3), "top_shape": (2, 2)},
        ("(2, 3)", "(2, 2)"),
    ),
    (
        lambda: policies.Trace(Q, Q, np.array([0.0, 1.0])),
        "accepted must be (rounds,) integers in [0, K_max]; got shape {shape}, dtype {dtype}",
        {"shape": (2,), "dtype": "float64"},
        ("(2,)", "float64"),
    ),
    (
        lambda: policies.Trace(Q, Q, np.array([0, 4])),
        "accepted must be at most K_max = {k_max}; got {got}",
        {"k_max": 3, "got": 4},
        ("K_max = 3", "4"),
    ),
    (
        lambda: policies.Trace(Q, Q * 3, np.array([0, 1])),
        "{name} must hold probabilities in [0, 1]",
        {"name": "q_top"},
        ("q_top", "[0, 1]"),
    ),
    (
        lambda: policies.parse_trace("hello", "up.jsonl"),
        "{name}: line 1 must be a {fmt!r} header (written by python -m specviz bench --trace)",
        {"name": "up.jsonl", "fmt": "specviz trace 1"},
        ("up.jsonl", "'specviz trace 1'"),
    ),
    (
        lambda: policies.parse_trace('{"format": "specviz trace 1", "k_max": 0}', "up.jsonl"),
        "{name}: the header's k_max must be an integer from 1 to {most}; got {k!r}",
        {"name": "up.jsonl", "k": 0, "most": 64},
        ("up.jsonl", "k_max", "0", "64"),
    ),
    (
        lambda: policies.parse_trace(f"{HEADER}\n{ROW}\n{{}}", "t.jsonl"),
        "{name}: line {line} is not a trace row of K_max = {k} (segment, accepted, q_token, q_top, p_token)",
        {"name": "t.jsonl", "line": 3, "k": 3},
        ("t.jsonl", "K_max = 3"),
    ),
    (
        lambda: policies.parse_trace(HEADER, "t.jsonl"),
        "{name}: the trace has no rows",
        {"name": "t.jsonl"},
        ("t.jsonl",),
    ),
    (
        lambda: policies.parse_trace(f"{HEADER}\n{BAD_ROW}"),
        "{name}: {cause}",
        {"name": "trace", "cause": inner("{name} must hold probabilities in [0, 1]", name="q_token")},
        ("trace", "q_token", "[0, 1]"),
    ),
    (
        lambda: policies.synthetic_trace(0.5, 3, 10, np.random.default_rng(0), "calibrated", -1.0),
        "concentration must be > 0; got {concentration}",
        {"concentration": -1.0},
        ("-1.0",),
    ),
    (
        lambda: policies.synthetic_trace(0.5, 3, 10, np.random.default_rng(0), "warm"),
        "confidence must be 'calibrated' or 'flat'; got {confidence!r}",
        {"confidence": "warm"},
        ("'warm'", "'calibrated'"),
    ),
    (
        lambda: policies.llamacpp_pmin(0.5, 4, 5),
        "n_min must be an integer in [0, n_max = {n_max}]; got {n_min}",
        {"n_max": 4, "n_min": 5},
        ("n_max = 4", "5"),
    ),
    (
        lambda: policies.vllm_by_batch([[1, 4, 3], [5, 8, 2]], 16),
        "batch_size {b} is in no range of the schedule {schedule}",
        {"b": 16, "schedule": [[1, 4, 3], [5, 8, 2]]},
        ("16", "[[1, 4, 3], [5, 8, 2]]"),
    ),
    (
        lambda: policies.sweep("nope", [0.5], policies.Trace(Q, Q, np.array([0, 1])), 2.0),
        "sweep: {name!r} is not one of {allowed}",
        {"name": "nope", "allowed": ["llama.cpp p_min", "HF confidence threshold", "SpecDec++ threshold"]},
        ("'nope'", "'llama.cpp p_min'"),
    ),
    # trees
    (
        lambda: trees.check_p([[0.5], [0.2]]),
        "p must be a non-empty vector p_1, p_2, …; got shape {shape}",
        {"shape": (2, 1)},
        ("(2, 1)",),
    ),
    (
        lambda: trees.check_p([0.6, 0.5]),
        "p must sum to at most 1 (the ranks' acceptances are disjoint); got sum {total:.6g}",
        {"total": 1.1},
        ("1.1",),
    ),
    (
        lambda: trees.check_p_by_depth([0.6]),
        "p by depth must be a (depth, ranks) table with at least one row; got shape {shape}",
        {"shape": (1,)},
        ("(1,)",),
    ),
    (
        lambda: trees.best_tree_for_hardware([0.6], -1.0, lambda n: 1.0, 4, 2),
        "t_draft must be a finite number >= 0; got {t_draft}",
        {"t_draft": -1.0},
        ("t_draft", "-1.0"),
    ),
    (
        lambda: trees.best_tree_for_hardware([0.6], 0.1, lambda n: 0.0, 4, 2),
        "t_verify_of_size(1) must be a finite time > 0; got {t1}",
        {"t1": 0.0},
        ("t_verify_of_size(1)", "0.0"),
    ),
    (
        lambda: trees.parse_shape("bush:3"),
        "tree: {text!r} is not a draft shape; use chain:K, chains:N,D, topk:D,k,N or optimal:N,D (e.g. optimal:16,6), every number an integer >= 1",
        {"text": "bush:3"},
        ("'bush:3'", "optimal:16,6"),
    ),
    (
        lambda: trees.parse_shape("optimal:16,6"),
        "tree: {text!r} is built from a positional acceptance p; none was given",
        {"text": "optimal:16,6"},
        ("'optimal:16,6'",),
    ),
    (
        lambda: trees.parse_shape("chain:40"),
        "tree: {text!r} has depth {depth}; at most {max_depth} is allowed here",
        {"text": "chain:40", "depth": 40, "max_depth": 16},
        ("'chain:40'", "16"),
    ),
    (
        lambda: trees.p_from_measurements(pd.DataFrame({"x": [1]}), "run 3"),
        "{what} has no tree row with a measured p and no α: nothing to take p from",
        {"what": "run 3"},
        ("run 3", "α"),
    ),
    (
        lambda: trees.parse_p("0.5, x"),
        "p: {text!r} is not a comma-separated list of numbers (e.g. 0.6, 0.2, 0.1)",
        {"text": "0.5, x"},
        ("'0.5, x'", "0.6, 0.2, 0.1"),
    ),
    (
        lambda: trees.parse_p(" , "),
        "p: type at least one number p_1 (e.g. 0.6, 0.2, 0.1)",
        {},
        ("p_1", "0.6, 0.2, 0.1"),
    ),
    (
        lambda: trees.best_topk([0.6, 0.2], 100, 2, 2),
        "budget must be at most {most} for a top-k tree of depth ≤ {max_depth} and top-k ≤ {max_topk} (top-k + (depth − 1) · top-k² drafts); got {budget}",
        {"most": 6, "max_depth": 2, "max_topk": 2, "budget": 100},
        ("6", "≤ 2", "100"),
    ),
    # the n-gram drafter
    (
        lambda: ngram.NgramDraft("foo"),
        "n-gram rule must be one of {rules}; got {rule!r}",
        {"rules": ("hf", "vllm"), "rule": "foo"},
        ("'foo'", "('hf', 'vllm')"),
    ),
    (
        lambda: ngram.NgramDraft("vllm", 6, 5),
        "n-gram sizes must satisfy 1 <= min <= max; got {min_ngram}, {max_ngram}",
        {"min_ngram": 6, "max_ngram": 5},
        ("1 <= min <= max", "6, 5"),
    ),
    (
        lambda: ngram.replay_on_text([1, 2, 3], 2, "foo"),
        "n-gram rule must be one of {rules}; got {rule!r}",
        {"rules": ("hf", "vllm"), "rule": "foo"},
        ("'foo'", "('hf', 'vllm')"),
    ),
    (lambda: ngram.replay_on_text([1, 2, 3], 0), "K must be an integer >= 1; got {k!r}", {"k": 0}, ("K", "0")),
]


@pytest.mark.parametrize(("call", "msgid", "fields", "shows"), CASES, ids=[c[1][:60] for c in CASES])
def test_an_error_names_its_values_in_english_and_chinese(call, msgid, fields, shows):
    expect(caught(call), msgid, fields, shows)


def test_a_wrapped_trace_error_is_chinese_inside_too():
    """parse_trace quotes the Trace's own error: on a page the cause is in the same language."""
    exc = caught(policies.parse_trace, f"{HEADER}\n{BAD_ROW}", "up.jsonl")
    assert exc.__suppress_context__  # `from None`, as before
    cause = inner("{name} must hold probabilities in [0, 1]", name="q_token")
    expect(exc, "{name}: {cause}", {"name": "up.jsonl", "cause": cause}, ("up.jsonl", "q_token", "[0, 1]"))


def test_the_notes_a_page_shows_name_their_values():
    chain = trees.chain(3).describe()
    named = trees.parse_shape("optimal:16,6", [0.6, 0.2]).describe()
    frame = pd.DataFrame({"tree_p": [None, "0.6;0.2"], "tree": [None, "optimal:16,6"]})
    from_tree = trees.p_from_measurements(frame, "run 3")[1]
    from_alpha = trees.p_from_measurements(pd.DataFrame({"alpha_used": [None, 0.6]}), "run 3")[1]
    expect(chain, "{drafts} drafts, depth {depth}", {"drafts": 3, "depth": 3}, ("3",))
    expect(
        named,
        "{name} ({drafts} drafts, depth {depth})",
        {"name": "optimal:16,6", "drafts": 16, "depth": 6},
        ("optimal:16,6", "16"),
    )
    expect(
        from_tree,
        "{what}, row {row} (tree {shape})",
        {"what": "run 3", "row": 2, "shape": "optimal:16,6"},
        ("run 3", "2", "optimal:16,6"),
    )
    expect(
        from_alpha,
        "{what}, row {row} (a chain: only p_1 = α is measured)",
        {"what": "run 3", "row": 2},
        ("run 3", "2", "p_1 = α"),
    )
