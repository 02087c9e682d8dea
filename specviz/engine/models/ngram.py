"""Prompt-lookup / n-gram drafting: a "draft model" with no weights, proposing what followed an earlier
occurrence of the text's last n tokens. It satisfies :class:`specviz.engine.models.Decodable`, so the engine
runs it as any draft; its forward time is measured like a model's.

Both engines search the same way — the longest n first, from ``max_ngram`` down to ``min_ngram``,
and for that n the earliest earlier occurrence of the text's last n tokens whose continuation is
not empty — with different settings:

* ``"hf"`` — transformers' prompt lookup (``PromptLookupCandidateGenerator``): n from 2
  (``max_matching_ngram_size``) down to 1; a proposal is at most ``num_tokens`` =
  ``prompt_lookup_num_tokens`` (10) tokens, further capped by K here;
* ``"vllm"`` — vLLM's ``ngram`` proposer: n in [``prompt_lookup_min``, ``prompt_lookup_max``], 5 and
  5 when unset; a proposal is at most K (``num_speculative_tokens``) tokens.

A proposal is one-hot: q = 1 on the proposed token (so the lossless rule accepts it with
probability p(x) at T > 0, and greedy output stays the target's). With no match the drafter has
nothing to say: its q is uniform and :meth:`NgramDraft.draft_policy` stops drafting there (the round
is then a plain target step, as in both engines).
"""

from __future__ import annotations

import pandas as pd
import torch

from specviz.base.i18n import Message
from specviz.core import policies
from specviz.engine.models.gpt import VOCAB_SIZE

RULES = ("hf", "vllm")


def find_match(seq: list[int], rule: str, min_ngram: int, max_ngram: int) -> int | None:
    """Index in ``seq`` where the proposal starts (the token after the matched occurrence), or None.

    For n from max_ngram down to min_ngram, the earliest earlier occurrence of the last n tokens with
    a non-empty continuation (``rule`` only names whose defaults were used; the search is the same).
    """
    length = len(seq)
    for n in range(min(max_ngram, length - 1), min_ngram - 1, -1):
        suffix = seq[length - n :]
        for i in range(0, length - n):  # occurrences ending before the suffix itself
            if seq[i : i + n] == suffix:
                return i + n
    return None


class NgramDraft:
    """The n-gram drafter as a :class:`~specviz.engine.models.Decodable` (module docstring).

    ``forward(idx, start)`` writes ``idx`` into the text at positions start.. (overwriting, as a
    cache would) and returns logits (1, T, V) whose last row proposes the next token: +1e4 on it
    (one-hot after softmax) or zeros (uniform: no proposal). A call that feeds back the token it
    just proposed, at the next position, continues the same match; any other call matches anew.
    """

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
    """Prompt lookup against a text, as if the target wrote exactly ``tokens`` after its first
    ``prompt_length`` tokens: (drafted, accepted) per round.

    Each round drafts up to ``k`` tokens as :class:`NgramDraft` would from the text so far (one match,
    its continuation capped by the rule's proposal length) and accepts the leading ones equal to the
    text's next tokens; the round then emits accepted + 1 tokens. No model runs, so this measures how
    much the text repeats itself — what prompt lookup can accept on it — not a particular target.
    """
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
    """:func:`replay_on_text` over ``texts`` for each rule and K: rounds, share with a proposal, α̂ =
    A / (A + R) over rounds that drafted, tokens per round E[N], and the speedup E[N] / (1 + v·K̄ + K̄/c)
    at the mean drafts K̄ (the lookup's cost 1/c of a target step per drafted token)."""
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
