"""Tests of gpukit.serving: the cost of a decode step, the static cache, counting operations."""

from __future__ import annotations

import pytest
import torch

from gpukit.gpt import GPT, generate
from gpukit.serving import StaticCacheDecoder, capture_cuda_graph, count_ops, decode_cost


def tiny(max_len: int = 24) -> GPT:
    torch.manual_seed(0)
    return GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=max_len).eval()


def test_decode_cost_counts_weights_once_and_caches_per_text():
    net = tiny()
    weights = 2 * (32 * 96 + 32 * 32 + 32 * 128 + 128 * 32) + 256 * 32
    cache = 2 * 2 * 32 * 10  # keys and values of 2 blocks of width 32, 10 tokens
    assert decode_cost(net, 1, 10) == (2 * (weights + cache), 2 * (weights + cache))
    flops, nbytes = decode_cost(net, 8, 10, element_size=4)
    assert flops == 2 * 8 * (weights + cache) and nbytes == 4 * (weights + 8 * cache)
    # without a cache the intensity of the matrix products is the batch (bf16)
    flops, nbytes = decode_cost(net, 50, 0)
    assert flops / nbytes == 50


def test_decode_cost_refuses_bad_input():
    with pytest.raises(TypeError, match="net"):
        decode_cost(torch.nn.Linear(2, 2), 1, 1)
    with pytest.raises(ValueError, match="batch_size"):
        decode_cost(tiny(), 0, 1)
    with pytest.raises(ValueError, match="context"):
        decode_cost(tiny(), 1, -1)


def test_static_cache_decodes_as_the_growing_cache():
    net = tiny()
    prompt = torch.randint(256, (3, 5))
    decoder = StaticCacheDecoder(net, batch_size=3)
    assert decoder.k0.shape == (3, 4, 24, 8)
    address = decoder.k0.data_ptr()
    out = decoder.generate(prompt, 12)
    assert torch.equal(out, generate(net, prompt, 12))
    assert decoder.k0.data_ptr() == address  # written in place: the buffers never move


def test_static_cache_steps_match_the_whole_sequence():
    net = tiny()
    tokens = torch.randint(256, (2, 9))
    decoder = StaticCacheDecoder(net, batch_size=2, max_len=16)
    decoder.prefill(tokens[:, :5])
    with torch.no_grad():
        for t in range(5, 9):
            logits = decoder(tokens[:, t : t + 1], torch.tensor([t]))
        assert torch.allclose(logits, net(tokens)[:, -1], atol=1e-5)


def test_static_cache_refuses_bad_input():
    net = tiny()
    with pytest.raises(ValueError, match="max_len"):
        StaticCacheDecoder(net, batch_size=1, max_len=25)
    decoder = StaticCacheDecoder(net, batch_size=2)
    with pytest.raises(ValueError, match="batch_size=2"):
        decoder.prefill(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len"):
        decoder.generate(torch.zeros(2, 20, dtype=torch.long), 5)
    with pytest.raises(TypeError, match="net"):
        StaticCacheDecoder("gpt", batch_size=1)


def test_count_ops_counts_each_dispatched_operation():
    x = torch.ones(8)
    assert count_ops(lambda: x + 1) == 1
    assert count_ops(lambda: ((x + 1) * 2).sum()) == 3
    net = tiny()
    decoder = StaticCacheDecoder(net, batch_size=1)
    ops = count_ops(lambda: decoder(torch.zeros(1, 1, dtype=torch.long), torch.tensor([0])))
    assert ops > 10 * len(net.blks)  # a step is many small operations
    with pytest.raises(TypeError, match="fn"):
        count_ops(3)


def test_capture_refuses_cpu_tensors():
    with pytest.raises(ValueError, match="GPU"):
        capture_cuda_graph(lambda t: t * 2, torch.ones(2))
    with pytest.raises(TypeError, match="fn"):
        capture_cuda_graph(None, torch.ones(2))


@pytest.mark.gpus(1)
def test_a_captured_step_decodes_as_eager():
    net = tiny().cuda()
    prompt = torch.randint(256, (2, 5), device="cuda")
    decoder = StaticCacheDecoder(net, batch_size=2)
    token = torch.zeros(2, 1, dtype=torch.long, device="cuda")
    step = capture_cuda_graph(decoder, token, torch.tensor([5], device="cuda"))
    assert torch.equal(decoder.generate(prompt, 10, step=step), generate(net, prompt, 10))
