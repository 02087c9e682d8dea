"""A head draft from its ``config.json`` (EAGLE, EAGLE-3, P-EAGLE, DFlash, MTP, Medusa), as the catalogue's row.

The kind is read from the architecture's name as the training code writes it (SpecForge, EAGLE, Medusa, the
speculators library); the sizes with :func:`~specviz.core.hardware.hf_config.from_hf_config`'s generic reader.
A head drafts for the target it was trained on: its hidden size must be the target's. A drafter specviz does not
price (DSpark, Domino, …) is refused by its architecture's name.
"""

from __future__ import annotations

from specviz.base.i18n import Message
from specviz.core import heads
from specviz.core.hardware.catalog import model_spec
from specviz.core.hardware.hf_config import _hf_int, _parse, from_hf_config

#: architecture-name fragments → head kind, the most specific first (a name with "Eagle3" is not EAGLE-1)
_KIND_OF_ARCH = (
    ("PEagle", "peagle"),
    ("DFlash", "dflash"),
    ("Eagle3", "eagle3"),
    ("EagleSpeculator", "eagle3"),  # vllm-project/speculators' Eagle3Speculator / EagleSpeculator
    ("Eagle", "eagle"),
    ("Medusa", "medusa"),
    ("MTP", "mtp"),
    ("NextN", "mtp"),
)
#: fusion width per kind, in target hidden states: EAGLE 2 (embedding + feature), EAGLE-3 and P-EAGLE 3
#: (low, middle, high layers), MTP 2 (embedding + hidden, eh_proj); DFlash: its target_layer_ids
_FUSION = {"eagle": 2, "eagle3": 3, "peagle": 3, "mtp": 2}


def head_kind(config: dict) -> str | None:
    """The head kind of a parsed config.json (None: not a head's config)."""
    archs = config.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    kind = next((k for fragment, k in _KIND_OF_ARCH if fragment in arch), None)
    if kind is None and config.get("medusa_num_heads") is not None:
        return "medusa"
    return kind


def is_head_config(config: dict | str | bytes) -> bool:
    """Whether ``config`` (text or parsed) describes a drafter rather than a model: a head kind, or an architecture
    named as a drafter (``…DraftModel``, ``…Speculator``), which :func:`head_from_config` refuses if unpriced."""
    parsed = _parse(config)
    archs = parsed.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    return head_kind(parsed) is not None or any(word in arch for word in ("Draft", "Speculator"))


def head_from_config(config: dict | str | bytes, target, name: str = "uploaded head") -> dict:
    """The head of ``config`` for ``target`` (a catalogue name or model dict) as a dict of the head catalogue's
    columns (:func:`specviz.core.heads.head_spec` takes it); ValueError naming what does not fit."""
    config = _parse(config)
    kind = head_kind(config)
    if kind is None:
        archs = config.get("architectures") or ["?"]
        raise Message(
            "config.json of architecture {arch!r} is not a head specviz prices; the kinds priced are {kinds}",
            arch=archs[0] if isinstance(archs, list) and archs else archs,
            kinds=list(heads.KINDS),
        )
    t = model_spec(target)
    row = {"name": name, "kind": kind, "target": t.get("name", "?"), "source": "uploaded config.json"}
    row |= dict.fromkeys(("draft_vocab", "medusa_heads", "medusa_layers", "fc_in"), None)
    if kind == "medusa":
        row["medusa_heads"] = _hf_int(config, ("medusa_num_heads",), True, "n_layers")
        row["medusa_layers"] = _hf_int(config, ("medusa_num_layers",), False, "n_layers") or 1
        return row
    if kind == "mtp":  # a block of the target: its own sizes are the target's
        row |= {"n_layers": _hf_int(config, ("num_nextn_predict_layers", "num_hidden_layers"), False, "n_layers") or 1}
        row["fc_in"] = 2
        return row | dict.fromkeys(("hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size"))
    spec = from_hf_config({k: v for k, v in config.items() if k != "architectures"}, name=name)
    wide = _hf_int(config, ("target_hidden_size",), False, "hidden_size") or spec["hidden_size"]
    if wide != t["hidden_size"]:
        raise Message(
            "the head's hidden size {head} differs from its target's {target} ({model}): it was trained for another model",
            head=wide,
            target=t["hidden_size"],
            model=t.get("name", "?"),
        )
    row |= {f: spec[f] for f in ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size")}
    ids = (config.get("dflash_config") or {}).get("target_layer_ids") if kind == "dflash" else None
    row["fc_in"] = len(ids) if isinstance(ids, list) and ids else _FUSION.get(kind, spec["n_layers"])
    if kind == "dflash" and not 1 <= row["fc_in"] <= 8:
        raise Message(
            "config.json dflash_config.target_layer_ids must list 1 to 8 layers; got {count}", count=row["fc_in"]
        )
    row["draft_vocab"] = _hf_int(config, ("draft_vocab_size",), False, "vocab_size")
    return row
