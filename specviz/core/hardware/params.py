"""Parameter counts of an architecture: total, active (MoE), and the dense model of equal active size."""

from __future__ import annotations

from specviz.base.i18n import Message
from specviz.core import moe
from specviz.core.hardware.catalog import MAX_PARAMETERS, model_spec


def parameter_count(model: str | dict) -> int:
    """Parameters of the architecture: embeddings, per layer attention, MLP and norms, final norm, untied LM head;
    "plain" (GPT-2) adds learned positions and LayerNorm biases. Linear biases left out (< 0.1 % of any model)."""
    m = model_spec(model)
    d, ffn, layers = m["hidden_size"], m["intermediate_size"], m["n_layers"]
    gpt2 = m["mlp"] == "plain"
    mlp = (2 if gpt2 else 3) * d * ffn
    norms = (4 if gpt2 else 2) * d  # two norms per layer; LayerNorm has a bias, RMSNorm none
    embed = m["vocab_size"] * d * (1 if m["tied_embeddings"] else 2)
    positions = int(m.get("max_context") or 0) * d if gpt2 else 0
    n_moe = _n_moe_layers(m)
    linear = m["linear_layers"]
    count = int(
        (layers - linear) * _attention_parameters(m)
        + linear * _linear_attention_parameters(m)
        + layers * norms
        + (layers - n_moe) * mlp
        + n_moe * _moe_layer_parameters(m, m["n_experts"])
        + norms // 2
        + embed
        + positions
    )
    if count > MAX_PARAMETERS:
        raise Message(
            "{model} implies {count} parameters; at most {most} are modelled (check the sizes in its config)",
            model=m.get("name", "?"),
            count=f"{count:.3g}",
            most="1e+14",
        )
    return count


def active_parameter_count(model: str | dict) -> int:
    """Parameters a token passes through: :func:`parameter_count` with k of E routed experts per MoE layer."""
    m = model_spec(model)
    n_moe = _n_moe_layers(m)
    if not n_moe:
        return parameter_count(m)
    routed = n_moe * _expert_parameters(m, m["n_experts"] - m["experts_per_token"])
    return parameter_count(m) - routed


def dense_comparator(model: str | dict) -> dict:
    """A dense spec with ``model``'s active parameter count: everything but the MLPs kept, one gated MLP of width

    .. math::  f = \\frac{(n_{layers} - n_{moe})\\,ffn + n_{moe}\\,(k\\,d_e + n_s d_s + E / 3)}{n_{layers}}

    (rounded), so :func:`parameter_count` of it is :func:`active_parameter_count` of ``model`` within
    3·d·n_layers / 2; weights at the dtype (no ``expert_bits``). A dense ``model`` comes back as its spec.
    """
    m = model_spec(model)
    n_moe = _n_moe_layers(m)
    if not n_moe:
        return m
    layers = m["n_layers"]
    routed = m["experts_per_token"] * m["expert_size"] + m["n_shared_experts"] * m["shared_expert_size"]
    width = ((layers - n_moe) * m["intermediate_size"] + n_moe * (routed + m["n_experts"] / 3)) / layers
    spec = {k: v for k, v in m.items() if k != "params"}  # the catalogue's count is the MoE's total
    spec |= dict.fromkeys(("n_experts", "experts_per_token", "expert_size", "n_shared_experts"), 0)
    spec |= dict(shared_expert_size=0, dense_layers=0, moe_every=1, expert_bits=None, mlp="gated")
    active = active_parameter_count(m)
    spec |= dict(intermediate_size=round(width), name=f"dense {active / 1e9:.3g}B like {m.get('name', '?')}")
    return model_spec(spec)


def with_routing_skew(model, skew: float):
    """``model`` with a Zipf(``skew``) ``expert_load`` (:func:`specviz.core.moe.zipf_load`); dense or 0: as is."""
    m = model_spec(model)
    if not m["n_experts"] or not skew:
        return model
    return m | {"expert_load": tuple(float(x) for x in moe.zipf_load(m["n_experts"], skew))}


def _n_moe_layers(m: dict) -> int:
    return moe.moe_layers(m["n_layers"], m["dense_layers"], m["moe_every"]) if m["n_experts"] else 0


def _attention_parameters(m: dict) -> int:
    """Weights of one layer's attention: q, k, v, o (GQA); latent attention (MLA): d·q_r + q_r·H·(nope + rope)
    (d·H·(nope + rope) without q_lora_rank), d·(kv_r + rope), kv_r·H·(nope + v), H·v·d, two latent norms; with
    sparse attention, its indexer."""
    d, h = m["hidden_size"], m["n_heads"]
    if not m["kv_lora_rank"]:
        return d * m["head_dim"] * (2 * h + 2 * m["n_kv_heads"])
    r, qr, rope, nope, v = (
        m[f] for f in ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "nope_head_dim", "v_head_dim")
    )
    q = d * qr + qr * h * (nope + rope) + qr if qr else d * h * (nope + rope)
    # DSA's indexer (DeepSeek-V3.2): wq_b q_r·H_i·d_i, wk d·d_i, its key LayerNorm 2·d_i, weights_proj d·H_i
    hi, di = m["index_heads"], m["index_head_dim"]
    indexer = (qr or d) * hi * di + d * di + 2 * di + d * hi if m["sparse_topk"] else 0
    return q + d * (r + rope) + r + r * h * (nope + v) + h * v * d + indexer


def linear_attention_dims(m: dict) -> tuple[int, int, int]:
    """(key width n_k·d_k, value width n_v·d_v, convolved width 2·key + value) of a Gated DeltaNet layer."""
    key = m["linear_k_heads"] * m["linear_k_dim"]
    value = m["linear_v_heads"] * m["linear_v_dim"]
    return key, value, 2 * key + value


def _linear_attention_parameters(m: dict) -> int:
    """Weights of one Gated DeltaNet layer (transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz d·(2·key + 2·value),
    in_proj_ba d·2·n_v, the depthwise conv (2·key + value)·kernel, out_proj value·d, A_log, dt_bias, the gated
    norm d_v."""
    d, nv = m["hidden_size"], m["linear_v_heads"]
    key, value, conv = linear_attention_dims(m)
    return d * (2 * key + 2 * value) + d * 2 * nv + conv * m["linear_conv"] + value * d + 2 * nv + m["linear_v_dim"]


def _expert_parameters(m: dict, experts) -> int:
    """Weights of ``experts`` routed experts of one MoE layer: 3·d·d_e each (gated)."""
    return 3 * m["hidden_size"] * m["expert_size"] * experts


def _moe_layer_parameters(m: dict, experts) -> int:
    """Weights of one MoE layer's MLP: ``experts`` routed (3·d·d_e each), the shared experts, the router d·E."""
    d = m["hidden_size"]
    shared = 3 * d * m["n_shared_experts"] * m["shared_expert_size"]
    return int(_expert_parameters(m, experts) + shared + d * m["n_experts"])
