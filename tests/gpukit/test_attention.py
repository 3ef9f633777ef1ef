"""Tests of gpukit.attention: the written-out attention against SDPA, and the cache's bytes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpukit.attention import attention, kv_cache_bytes
from gpukit.memory import measure_memory


def test_matches_sdpa_with_and_without_a_causal_mask():
    q, k, v = torch.randn(3, 2, 3, 7, 8, generator=torch.Generator().manual_seed(0)).unbind(0)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    assert torch.allclose(attention(q, k, v), F.scaled_dot_product_attention(q, k, v), atol=1e-6)
    assert torch.allclose(
        attention(q, k, v, causal),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        atol=1e-6,
    )


def test_a_masked_key_changes_nothing():
    q, k, v = torch.randn(3, 1, 4, 8).unbind(0)
    mask = torch.tensor([True, True, True, False])
    changed_v = v.clone()
    changed_v[:, -1] += 100  # the masked key's value
    assert torch.allclose(attention(q, k, v, mask), attention(q, k, changed_v, mask))


def test_written_out_memory_grows_with_the_square_of_the_tokens():
    def peak(n: int) -> int:
        q = k = v = torch.randn(1, 2, n, 16)
        return measure_memory(lambda: attention(q, k, v)).peak

    # Twice the tokens: the score matrix takes four times the bytes.
    assert peak(512) / peak(256) > 3


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((torch.ones(2, 3), torch.ones(2, 4), torch.ones(2, 4)), ValueError),
        ((torch.ones(2, 3), torch.ones(5, 3), torch.ones(4, 3)), ValueError),
        ((torch.ones(3), torch.ones(3), torch.ones(3)), ValueError),
        (([[1.0]], torch.ones(1, 1), torch.ones(1, 1)), TypeError),
    ],
)
def test_bad_shapes_are_refused(args, error):
    with pytest.raises(error):
        attention(*args)


def test_a_float_mask_is_refused():
    q = torch.ones(2, 3)
    with pytest.raises(TypeError, match="mask"):
        attention(q, q, q, torch.ones(2, 2))


def test_kv_cache_bytes():
    # 2 (key and value) x layers x heads x head_dim x bytes, per token and text
    assert kv_cache_bytes(2, 3, 4, 5, batch_size=6, dtype=torch.float32) == 2 * 2 * 3 * 4 * 4 * 30
    assert kv_cache_bytes(1, 1, 1, 0) == 0
    with pytest.raises(ValueError, match="num_layers"):
        kv_cache_bytes(0, 1, 1)
    with pytest.raises(TypeError, match="dtype"):
        kv_cache_bytes(1, 1, 1, dtype="bf16")
