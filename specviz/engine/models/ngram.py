"""Prompt-lookup / n-gram drafting: a weightless :class:`specviz.engine.models.Decodable` draft.

It proposes what followed the earliest earlier occurrence of the text's last n tokens, longest n
first. ``"hf"``: transformers' ``PromptLookupCandidateGenerator`` (n from 2 to 1, at most 10 tokens);
``"vllm"``: vLLM's ``ngram`` proposer (n in [5, 5] unless set, at most K). A proposal is one-hot
(q = 1 on it); with no match q is uniform and :meth:`NgramDraft.draft_policy` stops drafting.
"""

from __future__ import annotations

import pandas as pd
import torch

from specviz.base.i18n import Message
from specviz.core import policies
from specviz.engine.models.gpt import VOCAB_SIZE

RULES = ("hf", "vllm")


def find_match(seq: list[int], rule: str, min_ngram: int, max_ngram: int) -> int | None:
    """Where in ``seq`` the proposal starts, or None: longest n first, earliest occurrence."""
    length = len(seq)
    for n in range(min(max_ngram, length - 1), min_ngram - 1, -1):
        suffix = seq[length - n :]
        for i in range(0, length - n):  # occurrences ending before the suffix itself
            if seq[i : i + n] == suffix:
                return i + n
    return None


class NgramDraft:
    """The n-gram drafter as a Decodable: logits (1, T, V), +1e4 on the proposal or zeros."""

    def __init__(
        self,
        rule: str = "hf",
        min_ngram: int | None = None,
        max_ngram: int | None = None,
        num_tokens: int = 10,
        context_length: int = 512,
        vocab_size: int = VOCAB_SIZE,
        device: str | torch.device = "cpu",
    ):
        if rule not in RULES:
            raise Message("n-gram rule must be one of {rules}; got {rule!r}", rules=RULES, rule=rule)
        lo, hi = (1, 2) if rule == "hf" else (5, 5)
        num_tokens = num_tokens if rule == "hf" else 10**9  # vLLM: only K caps a proposal
        self.rule, self.min_ngram, self.max_ngram = rule, int(min_ngram or lo), int(max_ngram or hi)
        if not 1 <= self.min_ngram <= self.max_ngram:
            raise Message(
                "n-gram sizes must satisfy 1 <= min <= max; got {min_ngram}, {max_ngram}",
                min_ngram=self.min_ngram,
                max_ngram=self.max_ngram,
            )
        self.num_tokens, self.vocab_size = int(num_tokens), int(vocab_size)
        self._context, self._device = int(context_length), torch.device(device)
        self.name = f"ngram ({rule}, n {self.min_ngram}..{self.max_ngram})"
        self.setup_cache()

    @property
    def context_length(self) -> int:
        return self._context

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        if batch != 1:
            raise ValueError("the n-gram drafter decodes one sequence at a time (batch 1)")
        self.text: list[int] = []
        self._next: int | None = None  # where the current match continues in the text
        self._expect: tuple[int, int] | None = None  # (position, token) a continuation call feeds

    def draft_policy(self, k: int) -> policies.Policy:
        """Draft while there is a proposal (q_top = 1), at most ``k`` tokens a round."""
        return policies.while_proposing(k)

    def __call__(self, idx: torch.Tensor, start: int | None = None) -> torch.Tensor:
        tokens = idx[0].tolist()
        start = 0 if start is None else int(start)
        del self.text[start:]
        self.text.extend(tokens)
        continuing = len(tokens) == 1 and self._expect == (start, tokens[0]) and self._next is not None
        if continuing:
            self._next += 1
        else:
            self._next = find_match(self.text, self.rule, self.min_ngram, self.max_ngram)
            self._chunk_end = None if self._next is None else min(self._next + self.num_tokens, len(self.text))
        logits = torch.zeros(1, len(tokens), self.vocab_size, device=self._device)
        if self._next is not None and self._next < min(self._chunk_end, start + len(tokens)):
            proposal = self.text[self._next]
            logits[0, -1, proposal] = 1e4
            self._expect = (start + len(tokens), proposal)
        else:
            self._next, self._expect = None, None
        return logits


def replay_on_text(tokens: list[int], k: int, rule: str = "hf", prompt_length: int = 1) -> list[tuple[int, int]]:
    """(drafted, accepted) per round of prompt lookup on ``tokens`` after ``prompt_length``, no model run."""
    if rule not in RULES:
        raise Message("n-gram rule must be one of {rules}; got {rule!r}", rules=RULES, rule=rule)
    if int(k) != k or k < 1:
        raise Message("K must be an integer >= 1; got {k!r}", k=k)
    lo, hi, cap = (1, 2, 10) if rule == "hf" else (5, 5, 10**9)
    out, pos = [], max(1, int(prompt_length))
    while pos < len(tokens):
        start = find_match(tokens[:pos], rule, lo, hi)
        proposal = [] if start is None else tokens[start : min(start + min(k, cap), pos)]
        accepted = 0
        while (
            accepted < len(proposal) and pos + accepted < len(tokens) and proposal[accepted] == tokens[pos + accepted]
        ):
            accepted += 1
        out.append((len(proposal), accepted))
        pos += accepted + 1
    return out


def lookup_table(texts: list[list[int]], ks, c: float, v: float = 0.0) -> pd.DataFrame:
    """:func:`replay_on_text` per rule and K: α̂, E[N], speedup E[N] / (1 + v·K̄ + K̄/c)."""
    rows = []
    for rule in RULES:
        for k in ks:
            rounds = [r for t in texts for r in replay_on_text(t, k, rule)]
            drafted = [d for d, _ in rounds]
            accepted = sum(a for _, a in rounds)
            rejected = sum(1 for d, a in rounds if d and a < d)
            mean_k = sum(drafted) / len(rounds)
            tokens = 1 + accepted / len(rounds)
            rows.append(
                {
                    "rule": rule,
                    "k": int(k),
                    "rounds": len(rounds),
                    "proposal_share": sum(1 for d in drafted if d) / len(rounds),
                    "alpha": accepted / (accepted + rejected) if accepted + rejected else float("nan"),
                    "tokens_per_round": tokens,
                    "speedup": tokens / (1 + v * mean_k + mean_k / c),
                }
            )
    return pd.DataFrame(rows)
