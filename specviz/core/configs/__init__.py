"""Serving-stack configuration: the only place that turns a decision (K, a K schedule by batch, a tree, a head,
a draft model) into a serving stack's flags, YAML or JSON, one module per stack."""

from specviz.core.configs import llamacpp, sglang, switching, transformers, trtllm, vllm

__all__ = ["llamacpp", "sglang", "switching", "transformers", "trtllm", "vllm"]
