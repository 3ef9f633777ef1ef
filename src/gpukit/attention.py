"""Attention written out, and the memory that attention's key-value cache takes.

:func:`attention` computes ``softmax(Q K^T / sqrt(d)) V`` the way a textbook writes it: the
whole score matrix, one number per pair of positions, is made, kept and read again. PyTorch's
``F.scaled_dot_product_attention`` computes the same result with kernels that never hold that
matrix; the attention page compares the two. :func:`kv_cache_bytes` is the arithmetic of
generation: what a decoder keeps per token so that it never recomputes past keys and values.
"""

from __future__ import annotations

import math

import torch

from gpukit._checks import check_int, check_type

__all__ = ["attention", "kv_cache_bytes"]


def attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention written out: ``softmax(Q K^T / sqrt(d) + mask) V``.

    ``queries`` has shape ``(..., n, d)``, ``keys`` ``(..., m, d)`` and ``values``
    ``(..., m, d_v)``; the leading dimensions (batch, heads) are shared. ``mask`` is a boolean
    tensor broadcastable to ``(..., n, m)``, ``True`` where a query may look at a key (the
    convention of ``F.scaled_dot_product_attention``'s ``attn_mask``). The ``(..., n, m)``
    score matrix is materialized: memory grows with ``n * m``.

    Example:
        >>> import torch.nn.functional as F
        >>> q, k, v = torch.randn(3, 2, 4, 5, 8).unbind(0)  # batch 2, 4 heads, 5 tokens
        >>> causal = torch.ones(5, 5, dtype=torch.bool).tril()
        >>> torch.allclose(attention(q, k, v, causal),
        ...                F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-6)
        True
    """
    for name, tensor in (("queries", queries), ("keys", keys), ("values", values)):
        check_type(tensor, name, torch.Tensor, "a torch.Tensor")
        if tensor.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., tokens, features)")
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            "queries and keys must share their last dimension and keys and values their "
            f"number of tokens, got {tuple(queries.shape)}, {tuple(keys.shape)}, "
            f"{tuple(values.shape)}"
        )
    if mask is not None:
        check_type(mask, "mask", torch.Tensor, "a boolean torch.Tensor or None")
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a boolean tensor (True = attend), got {mask.dtype}")
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])  # (..., n, m)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values


def kv_cache_bytes(
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    tokens: int = 1,
    *,
    batch_size: int = 1,
    dtype: torch.dtype = torch.bfloat16,
) -> int:
    """Bytes of the key-value cache of a decoder after ``tokens`` tokens of ``batch_size`` texts.

    Every layer keeps one key and one value vector per head and token: ``2 * num_layers *
    num_kv_heads * head_dim`` numbers per token, in ``dtype``. With grouped-query attention
    ``num_kv_heads`` is the number of key-value heads, smaller than the number of query heads.

    Example:
        >>> kv_cache_bytes(32, 32, 128)  # a 7-billion-parameter model, bf16: 0.5 MiB a token
        524288
        >>> kv_cache_bytes(32, 8, 128, 4096, batch_size=8) / 2**30  # 8 KV heads, 8 x 4k tokens
        4.0
    """
    check_int(num_layers, "num_layers")
    check_int(num_kv_heads, "num_kv_heads")
    check_int(head_dim, "head_dim")
    check_int(tokens, "tokens", 0)
    check_int(batch_size, "batch_size")
    check_type(dtype, "dtype", torch.dtype, "a torch.dtype such as torch.bfloat16")
    per_token = 2 * num_layers * num_kv_heads * head_dim * dtype.itemsize
    return per_token * tokens * batch_size
