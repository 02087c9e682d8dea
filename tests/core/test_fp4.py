"""4-bit floating-point weights: NVFP4 and MXFP4 bytes, and their compute path per GPU generation."""

from __future__ import annotations

import pytest

from specviz.core import hardware

L70 = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.mark.parametrize(("dtype", "bits"), [("nvfp4", 4 + 8 / 16), ("mxfp4", 4 + 8 / 32)])
def test_block_scaled_fp4_bytes_per_weight(dtype, bits):
    """NVFP4: E2M1 values, one E4M3 scale per 16; MXFP4: one E8M0 scale per 32 (OCP MX v1.0)."""
    assert hardware.DTYPE_BYTES[dtype] == bits / 8
    assert hardware.weight_bytes(L70, dtype) == pytest.approx(hardware.weight_bytes(L70, "bf16") * bits / 16)


def test_fp4_runs_on_blackwell_tensor_cores_and_weight_only_elsewhere():
    """Compute-bound (16 prompts of 512 tokens): on B200 the linear layers run at the FP4 peak, 4 x bf16's, so the
    forward is much faster (attention stays bf16); on H100, without FP4 tensor cores, it is bf16's forward."""
    b200, h100 = (
        [hardware.step_time(L70, gpu, 16, 0, 512, dtype=d, tp=8) for d in ("bf16", "nvfp4")]
        for gpu in ("B200-SXM-180GB", "H100-SXM5-80GB")
    )
    assert b200[1] < 0.75 * b200[0]
    assert h100[1] == pytest.approx(h100[0], rel=1e-9)


def test_fp4_at_batch_one_reads_a_quarter_of_the_weights():
    """Memory-bound decode: the step shrinks toward the byte ratio on any GPU; the KV cache stays bf16."""
    for gpu in ("H100-SXM5-80GB", "B200-SXM-180GB"):
        bf16, fp4 = (hardware.step_time(L70, gpu, 1, 512, 1, dtype=d, tp=4) for d in ("bf16", "nvfp4"))
        assert 0.2 < fp4 / bf16 < 0.6
    assert hardware.kv_bytes_per_token(L70, "nvfp4") == hardware.kv_bytes_per_token(L70, "bf16")
