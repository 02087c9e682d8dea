"""llama-server's speculative flags: common/arg.cpp of llama.cpp b11434 (``llama-server --help``).

Fixed K: ``--spec-draft-n-max K --spec-draft-n-min K --spec-draft-p-min 0`` (no early stop); ``--spec-type
draft-simple`` drafts with ``-md``; ``-np N`` sets the slots, ``--kv-unified`` one KV cache for them all.
"""

from __future__ import annotations

from pathlib import Path

from specviz.base.i18n import Phrase

DRAFT_TYPE = "draft-simple"  #: the ``--spec-type`` that drafts with a draft model


def no_draft() -> Phrase:
    """The note where speculation does not pay."""
    return Phrase("# speculation does not pay here: run without --model-draft")


def draft_flags(k: int, *, slots: int | None = None, kv: str = "unified") -> str:
    """Flags for a fixed K (≤ 0: :func:`no_draft`); ``slots``: ``-np`` first, ``--kv-unified`` if ``kv`` is unified."""
    server = "" if slots is None else f"-np {int(slots)} " + ("--kv-unified " if kv == "unified" else "")
    if k <= 0:
        return server + str(no_draft())
    return server + " ".join(fixed_k_args(k))


def fixed_k_args(k: int, *, p_min: bool = True) -> list[str]:
    """``--spec-draft-n-max K --spec-draft-n-min K`` and, with ``p_min``, ``--spec-draft-p-min 0``."""
    args = ["--spec-draft-n-max", str(k), "--spec-draft-n-min", str(k)]
    return args + (["--spec-draft-p-min", "0"] if p_min else [])


def server_spec_args(draft: Path | str | None, k: int, spec_type: str = DRAFT_TYPE) -> list[str]:
    """argv of a fixed K: a draft model (``-md``, ``--spec-type``) or a draftless ``spec_type`` (n-gram kinds)
    capped at K; [] for no draft and ``draft-simple``."""
    if draft is not None:
        return ["-md", str(draft), "--spec-type", spec_type, *fixed_k_args(k)]
    if spec_type != DRAFT_TYPE:
        return ["--spec-type", spec_type, *fixed_k_args(k, p_min=False)]
    return []


def command(target, draft, k: int, *, port: int = 8080) -> str:
    """A llama-server command line serving ``target`` with ``draft`` at a fixed K, with its metrics."""
    return f"llama-server -m {target} " + " ".join([*server_spec_args(draft, k), "--metrics", "--port", str(port)])
