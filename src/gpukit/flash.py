"""FlashAttention's forward pass as a Triton kernel of our own, and the traffic it saves.

:func:`flash_attention` computes ``softmax(Q K^T / sqrt(d)) V`` the way FlashAttention does:
one Triton program per block of queries of one head keeps its queries and a partial output on
chip and streams the blocks of keys and values past them, with an online softmax (a running
maximum and sum per row), so the score matrix never reaches memory. The kernel itself is in
:mod:`gpukit.flash_kernel`; the FlashAttention page shows it and explains each line.

Triton must be imported after ``TRITON_INTERPRET`` is set: Triton's interpreter (the only way
to run the kernel on a CPU) is chosen while Triton defines its own functions. ``import
gpukit`` does not import Triton; the first call of :func:`flash_attention` does.
"""

from __future__ import annotations

import math
import os
import sys

import torch

from gpukit._checks import check_int, check_qkv, check_type

__all__ = ["flash_attention"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _power_of_two(value: int) -> bool:
    return value & (value - 1) == 0


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    block_m: int = 64,
    block_n: int = 64,
    num_warps: int = 4,
    num_stages: int = 3,
) -> torch.Tensor:
    """Attention by our Triton FlashAttention kernel: ``F.scaled_dot_product_attention``'s result.

    ``q``, ``k`` and ``v`` have the same shape ``(batch, heads, n, d)``, dtype (fp32, fp16 or
    bf16) and device, with ``d`` a power of two from 16 to 256 (``tl.dot`` and ``tl.arange``
    need it). ``causal=True`` lets position ``i`` see only positions ``<= i``. Each program
    takes ``block_m`` queries and streams keys and values ``block_n`` at a time (powers of two
    from 16, ``block_m`` a multiple of ``block_n``); ``num_warps`` and ``num_stages`` go to
    the compiler on a GPU (warps per program, depth of the load pipeline). Softmax and
    accumulation run in fp32; the output has the inputs' dtype.

    On a CPU the kernel runs in Triton's interpreter, which needs ``TRITON_INTERPRET=1`` in
    the environment before Triton is first imported (fp32 only there: it computes bf16
    wrongly). It raises a ``RuntimeError`` saying so otherwise.

    In the example a CPU runs the kernel in the interpreter (with ``TRITON_INTERPRET=1``) and
    a GPU computes the fp32 products in TF32, hence the tolerance.

    Example:
        >>> import torch.nn.functional as F
        >>> from gpukit import try_gpu
        >>> q, k, v = torch.randn(3, 1, 2, 40, 16, device=try_gpu()).unbind(0)  # 40 tokens
        >>> out = flash_attention(q, k, v, causal=True, block_m=16, block_n=16)
        >>> expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> torch.testing.assert_close(out, expected, atol=1e-2, rtol=0)
        >>> out.shape
        torch.Size([1, 2, 40, 16])
    """
    check_qkv(q, k, v)
    if not q.dtype == k.dtype == v.dtype or q.dtype not in _DTYPES:
        raise TypeError(
            f"q, k and v must share one dtype of float32, float16, bfloat16, got {q.dtype}, "
            f"{k.dtype}, {v.dtype}"
        )
    if not q.device == k.device == v.device:
        raise ValueError(
            f"q, k and v must be on one device, got {q.device}, {k.device}, {v.device}"
        )
    if q.numel() >= 2**31:
        raise ValueError(f"q, k and v must have fewer than 2**31 elements each, got {q.numel():,}")
    d = q.shape[-1]
    if not 16 <= d <= 256 or not _power_of_two(d):
        raise ValueError(
            f"q.shape[-1], the head dimension d, must be a power of two from 16 to 256, got {d}"
        )
    check_type(causal, "causal", bool, "a bool")
    for value, name in ((block_m, "block_m"), (block_n, "block_n")):
        if check_int(value, name, 16) and not _power_of_two(value):
            raise ValueError(f"{name} must be a power of two from 16, got {value}")
    if block_m % block_n:
        raise ValueError(f"block_m must be a multiple of block_n, got {block_m} and {block_n}")
    check_int(num_warps, "num_warps")
    check_int(num_stages, "num_stages")
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if q.device.type == "cpu" and not interpreted:
        raise RuntimeError(
            "CPU tensors run in Triton's interpreter only: set TRITON_INTERPRET=1 before the "
            "first `import triton`"
            + (" (Triton is already imported)" if "triton" in sys.modules else "")
        )
    # Triton is imported here, not before: see the module's documentation
    import triton

    from gpukit.flash_kernel import flash_forward_kernel

    # The kernel computes offsets for contiguous (batch, heads, n, d) tensors, in int32.
    q, k, v = (t.contiguous() for t in (q, k, v))
    out = torch.empty_like(q)
    batch, heads, n, _ = q.shape
    grid = (triton.cdiv(n, block_m), batch * heads)  # one program per block of queries and head
    flash_forward_kernel[grid](
        q,
        k,
        v,
        out,
        n,
        math.log2(math.e) / math.sqrt(d),
        HEAD_DIM=d,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        CAUSAL=causal,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return out
