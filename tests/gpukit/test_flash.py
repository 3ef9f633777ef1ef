"""gpukit.flash: our Triton FlashAttention forward against F.scaled_dot_product_attention.

Without a GPU the kernel runs in Triton's interpreter (tests/gpukit/conftest.py sets
TRITON_INTERPRET=1 before anything imports Triton), in fp32: the interpreter computes bf16
wrongly. The interpreter is slow, so the shapes are tiny.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import gpukit
from gpukit.flash import flash_attention

DEVICE = gpukit.try_gpu()
# A GPU computes fp32 products in TF32 (10 mantissa bits); the interpreter in exact fp32.
TOLERANCE = dict(atol=1e-2, rtol=0) if DEVICE.type == "cuda" else {}


def qkv(n: int, d: int = 16, batch: int = 1, heads: int = 2) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(n)
    return [torch.randn(batch, heads, n, d, generator=generator).to(DEVICE) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("n", "block_m", "block_n"),
    [
        (64, 32, 32),  # whole blocks only
        (50, 32, 16),  # a ragged last block: the bounds mask, and a diagonal of two key blocks
        (9, 16, 16),  # fewer tokens than one block
    ],
)
def test_matches_sdpa(causal: bool, n: int, block_m: int, block_n: int) -> None:
    q, k, v = qkv(n)
    out = flash_attention(q, k, v, causal=causal, block_m=block_m, block_n=block_n)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(out, expected, **TOLERANCE)


def test_batches_heads_and_strides() -> None:
    # Two batches of three heads, keys given as a transposed view: strides, not layout, count.
    q, k, v = qkv(24, d=32, batch=2, heads=3)
    k = k.transpose(1, 2).contiguous().transpose(1, 2)
    out = flash_attention(q, k, v, causal=True, block_m=16, block_n=16)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, expected, **TOLERANCE)


def test_causal_output_ignores_later_keys() -> None:
    # Changing the last token's key and value must not change any earlier output row.
    q, k, v = qkv(40)
    before = flash_attention(q, k, v, causal=True, block_m=16, block_n=16)
    k[..., -1, :], v[..., -1, :] = 100.0, -100.0
    after = flash_attention(q, k, v, causal=True, block_m=16, block_n=16)
    torch.testing.assert_close(after[..., :-1, :], before[..., :-1, :])
    assert not torch.allclose(after[..., -1, :], before[..., -1, :])


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"k": torch.zeros(1, 2, 8, 16)}, ValueError, r"q, k and v must have the same shape"),
        (
            {
                "q": torch.zeros(1, 2, 9, 48),
                "k": torch.zeros(1, 2, 9, 48),
                "v": torch.zeros(1, 2, 9, 48),
            },
            ValueError,
            r"q.shape\[-1\].*power of two.*got 48",
        ),
        ({"v": torch.zeros(1, 2, 9, 16, dtype=torch.float64)}, TypeError, r"one dtype"),
        ({"q": torch.zeros(2, 9, 16)}, ValueError, r"q must be 4-D"),
        ({"block_m": 48}, ValueError, r"block_m must be a power of two"),
        ({"block_m": 16, "block_n": 32}, ValueError, r"block_m must be a multiple of block_n"),
        ({"causal": 1}, TypeError, r"causal must be a bool"),
    ],
)
def test_bad_input_is_named(kwargs: dict, exc: type[Exception], message: str) -> None:
    arguments = dict(zip("qkv", (torch.zeros(1, 2, 9, 16) for _ in range(3)), strict=True))
    arguments.update(kwargs)
    with pytest.raises(exc, match=message):
        flash_attention(**arguments)


def test_cpu_tensors_need_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q = torch.zeros(1, 1, 16, 16)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1 before the first `import triton`"):
        flash_attention(q, q, q)


def test_importing_gpukit_leaves_triton_and_the_kernel_module_out() -> None:
    # A page imports gpukit first, then chooses Triton's interpreter: Triton must not be
    # imported yet (gpukit.flash_kernel imports it, and so is imported by name only).
    code = "import sys, gpukit; print(sorted({'triton', 'gpukit.flash_kernel'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert not hasattr(gpukit, "flash_forward_kernel")
