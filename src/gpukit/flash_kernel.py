"""The FlashAttention forward kernel in Triton, shown in full on the FlashAttention page.

:func:`gpukit.flash.flash_attention` checks its arguments and launches
:func:`flash_forward_kernel`: one program per block of ``BLOCK_M`` queries of one head keeps
its queries and a partial output on chip, and :func:`attend_blocks` streams the blocks of keys
and values past them with an online softmax (a running maximum and sum per row), so the
score matrix never reaches memory. The tensors are contiguous ``(batch, heads, n,
HEAD_DIM)``, the offsets int32.

Importing this module imports Triton, which chooses its interpreter (the only way to run a
kernel without a GPU) while it is first imported, if ``TRITON_INTERPRET=1`` is in the
environment: set it before. So ``import gpukit`` leaves this module out (its names are not in
``gpukit``'s namespace), and :func:`~gpukit.flash.flash_attention` imports it on its first
call.

Example (the launch that ``flash_attention`` makes; without a GPU, in the interpreter):
    >>> import math
    >>> import torch
    >>> import torch.nn.functional as F
    >>> import triton
    >>> from gpukit import try_gpu
    >>> from gpukit.flash_kernel import flash_forward_kernel
    >>> q, k, v = torch.randn(3, 1, 2, 40, 16, device=try_gpu()).unbind(0)  # 40 tokens
    >>> out = torch.empty_like(q)
    >>> _ = flash_forward_kernel[(triton.cdiv(40, 16), 1 * 2)](  # query blocks, heads
    ...     q, k, v, out, 40, math.log2(math.e) / math.sqrt(16),
    ...     HEAD_DIM=16, BLOCK_M=16, BLOCK_N=16, CAUSAL=True)
    >>> expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> torch.testing.assert_close(out, expected, atol=1e-2, rtol=0)  # TF32 products on a GPU
"""

import triton
import triton.language as tl

__all__ = ["attend_blocks", "flash_forward_kernel"]


@triton.jit
def attend_blocks(
    q,
    acc,
    m_i,
    l_i,
    k_ptr,
    v_ptr,
    rows,
    lo,
    hi,
    n,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    """Stream the key and value blocks from lo to hi past one block of queries."""
    dims = tl.arange(0, HEAD_DIM)
    for start in range(lo, hi, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        kt_ptrs = k_ptr + cols[None, :] * HEAD_DIM + dims[:, None]  # K^T: HEAD_DIM x BLOCK_N
        v_ptrs = v_ptr + cols[:, None] * HEAD_DIM + dims[None, :]  # V: BLOCK_N x HEAD_DIM
        if MASKED:  # only this stage meets the diagonal and the ragged end of the sequence
            kt = tl.load(kt_ptrs, mask=cols[None, :] < n, other=0.0)
            v = tl.load(v_ptrs, mask=cols[:, None] < n, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, kt) * qk_scale  # scores in base 2: exp(x) = exp2(x * log2(e))
        if MASKED:
            keep = cols[None, :] < n
            if CAUSAL:
                keep = keep & (cols[None, :] <= rows[:, None])
            s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # the running maximum of each row
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)  # rescales what was summed under the old maximum
        l_i = l_i * alpha + tl.sum(p, axis=1)  # the running sum of exponentials
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def flash_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    n,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    """One program: BLOCK_M queries of one head against that head's keys and values."""
    block = tl.program_id(0)
    head = n * HEAD_DIM * tl.program_id(1)  # where this (batch, head) starts: contiguous
    q_ptr, k_ptr, v_ptr, o_ptr = q_ptr + head, k_ptr + head, v_ptr + head, o_ptr + head
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_ptrs = q_ptr + rows[:, None] * HEAD_DIM + dims[None, :]
    q = tl.load(q_ptrs, mask=rows[:, None] < n, other=0.0)  # read once, kept on chip
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Stage 1, no mask: the key blocks that all queries of this block see in full. Causal:
    # those left of the diagonal; otherwise all but a last, partial block.
    if CAUSAL:
        lo, hi = block * BLOCK_M, tl.minimum((block + 1) * BLOCK_M, n)
    else:
        lo, hi = n - n % BLOCK_N, n
    acc, m_i, l_i = attend_blocks(
        q, acc, m_i, l_i, k_ptr, v_ptr, rows, 0, lo, n, qk_scale, HEAD_DIM, BLOCK_N, False, CAUSAL
    )
    # Stage 2, masked: the blocks on the diagonal (causal) and the ragged end, lo to hi.
    acc, m_i, l_i = attend_blocks(
        q, acc, m_i, l_i, k_ptr, v_ptr, rows, lo, hi, n, qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL
    )
    out = acc / l_i[:, None]  # divide by the sum once, at the end
    tl.store(
        o_ptr + rows[:, None] * HEAD_DIM + dims[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=rows[:, None] < n,
    )
