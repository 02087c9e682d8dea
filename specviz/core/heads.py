"""Head drafts (EAGLE-1/2, EAGLE-3, DeepSeek MTP, Medusa) as the roofline prices them, from their architecture.

* EAGLE-1/2 (arXiv:2401.15077 §3): fusion linear 2h → h, one decoder layer, the target's LM head.
* EAGLE-3 (arXiv:2503.01840 §3): fusion 3h → h, one decoder layer, its own LM head over ``draft_vocab``.
* MTP (DeepSeek-V3, arXiv:2412.19437 §2.2): one target block, eh_proj 2h → h, the shared LM head; K forwards.
* Medusa (arXiv:2401.10774 §2.1): K heads of ``medusa_layers`` h × h blocks and an h × V LM head each, one pass
  on the verify forward's hidden states: K·(L·h² + h·V) weights, no forward of its own.
* P-EAGLE and DFlash (SpecForge ``PEagleDraftModel``, ``DFlashDraftModel``): several layers drafting all K
  positions in one forward (DFlash: a non-causal block of K + 1 read by the target's LM head).

A head is a catalogue name or a dict of the catalogue's columns (:mod:`specviz.core.hardware.head_config`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd

from specviz.base.i18n import Message
from specviz.base.paths import DATA

HEADS_CSV = DATA / "catalog" / "heads.csv"
KINDS = ("eagle", "eagle3", "mtp", "medusa", "peagle", "dflash")  #: the head types the cost model prices
#: each kind as people write it
KIND_NAMES = {
    "eagle": "EAGLE",
    "eagle3": "EAGLE-3",
    "mtp": "MTP",
    "medusa": "Medusa",
    "peagle": "P-EAGLE",
    "dflash": "DFlash",
}
PARALLEL = ("medusa",)  #: heads that draft every position in one pass inside the verify forward
#: heads with a forward of their own that drafts all K positions at once: P-EAGLE over K positions, DFlash over
#: the block of K + 1 (the last accepted token and K masks)
ONE_PASS = {"peagle": 0, "dflash": 1}
_DENSE_ONLY = (
    "n_experts",
    "experts_per_token",
    "expert_size",
    "n_shared_experts",
    "shared_expert_size",
    "dense_layers",
)
_LATENT = ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "nope_head_dim", "v_head_dim")
_SPARSE = ("sparse_topk", "index_heads", "index_head_dim")


@cache
def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path).set_index("name", drop=False)


def load_heads(path: Path = HEADS_CSV) -> pd.DataFrame:
    """The head catalogue: one row per published head (name, kind, target, its sizes, source)."""
    return _read(str(path))


def is_head(name) -> bool:
    """Whether ``name`` is a head: a name in the catalogue, or a head's dict (its ``kind`` one of :data:`KINDS`).
    A model name or a model's spec dict is not one."""
    if isinstance(name, dict):
        return name.get("kind") in KINDS
    return isinstance(name, str) and name in load_heads().index


def heads_for(target: str) -> tuple[str, ...]:
    """The catalogue's heads trained for the model named ``target`` (a head drafts for no other)."""
    heads = load_heads()
    return tuple(heads.index[heads["target"] == target])


def check_target(head: str, target: str) -> None:
    """Raise a Message unless ``head`` (a name or a head's dict) was trained for the model named ``target``."""
    trained = head_spec(head)["target"]
    if trained != target:
        raise Message(
            "the head {head} was trained for {trained}; it cannot draft for {target}: choose a head of {target} or a draft model",
            head=head_spec(head)["name"],
            trained=trained,
            target=target,
        )


def head_spec(name: str | dict) -> dict:
    """The catalogue row of head ``name`` as a dict (empty cells as None); a head's dict as it is."""
    if isinstance(name, dict) and is_head(name):
        return dict(name)
    heads = load_heads()
    if name not in heads.index:
        raise Message(
            "head {head!r} is not in the catalogue; choose one of {choices}", head=name, choices=list(heads.index)
        )
    row = heads.loc[name].to_dict()
    return {k: (None if v != v else v) for k, v in row.items()}


def draft_model(head: dict, target: dict) -> dict:
    """A sequential head (EAGLE, EAGLE-3, MTP) as the model spec of one forward: EAGLE's own dense GQA layer(s),
    ``draft_vocab`` or the target's, fusion fc_in·h → h (EAGLE-3's 2h-wide q/k/v priced at h: < 10 % of its
    weights); MTP one target block, fc_in = 2. Message for a head with no draft forward. Every layer of the head
    attends to the whole context (an MTP block is a full-attention block of its target)."""
    kind = head["kind"]
    if kind not in KINDS or kind in PARALLEL:
        raise Message("head {head!r}: kind {kind!r} has no draft forward of its own", head=head["name"], kind=kind)
    spec = dict(target, name=head["name"], n_layers=int(head.get("n_layers") or 1), fc_in=int(head.get("fc_in") or 2))
    spec["tied_embeddings"] = False
    spec.update(sliding_layers=0, sliding_window=0, linear_layers=0)
    if kind == "mtp":
        spec["dense_layers"] = 0
        return spec
    for field in ("hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size"):
        if head.get(field) is not None:
            spec[field] = int(head[field])
    spec.update(dict.fromkeys(_DENSE_ONLY + _LATENT + _SPARSE, 0), moe_every=1, mlp="gated", expert_bits=None)
    spec["vocab_size"] = int(head["draft_vocab"]) if head.get("draft_vocab") else target["vocab_size"]
    return spec


def medusa_weights(head: dict, target: dict, n_heads: int | None = None) -> int:
    """Parameters one Medusa pass reads: n·(L·h² + h·V) (Cai et al. 2024 eq. 1), ``n_heads`` or the head's own."""
    n = int(n_heads or head["medusa_heads"])
    d, v = target["hidden_size"], target["vocab_size"]
    return n * (int(head.get("medusa_layers") or 1) * d * d + d * v)
