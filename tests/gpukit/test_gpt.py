"""Tests of gpukit.gpt: the model, its cache, its text, its FLOPs, and that it learns."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from gpukit.gpt import (
    GPT,
    decode_bytes,
    generate,
    gpt_flops_per_token,
    load_python_source,
    text_batch,
)


def tiny(max_len: int = 32) -> GPT:
    torch.manual_seed(0)
    return GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=max_len)


def test_the_model_is_causal():
    net = tiny().eval()
    tokens = torch.randint(256, (1, 10))
    changed = tokens.clone()
    changed[0, 6] = (changed[0, 6] + 1) % 256
    before = net(tokens)
    after = net(changed)
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)  # no look ahead
    assert not torch.allclose(before[:, 6:], after[:, 6:])


def test_the_cache_gives_the_same_logits_as_the_whole_sequence():
    net = tiny().eval()
    tokens = torch.randint(256, (2, 9))
    cache: list = []
    net(tokens[:, :5], cache)
    for t in range(5, 9):
        step = net(tokens[:, t : t + 1], cache)
    assert len(cache) == 2 and cache[0][0].shape == (2, 4, 9, 8)
    assert torch.allclose(step[:, -1], net(tokens)[:, -1], atol=1e-5)


def test_generation_with_and_without_the_cache_agrees():
    net = tiny().eval()
    prompt = torch.randint(256, (2, 4))
    out = generate(net, prompt, 10)
    assert out.shape == (2, 14) and torch.equal(out[:, :4], prompt)
    assert torch.equal(out, generate(net, prompt, 10, use_cache=False))


def test_sampling_follows_the_generator():
    net = tiny().eval()
    prompt = torch.randint(256, (1, 4))

    def sample(seed: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        return generate(net, prompt, 12, temperature=1.0, generator=generator)

    assert torch.equal(sample(0), sample(0))
    assert not torch.equal(sample(0), sample(1))  # an untrained model: nearly uniform choices
    with pytest.raises(ValueError, match="temperature"):
        generate(net, prompt, 2, temperature=-1.0)


def test_too_long_is_refused():
    net = tiny(max_len=8)
    with pytest.raises(ValueError, match="max_len"):
        net(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len"):
        generate(net, torch.zeros(1, 4, dtype=torch.long), 5)
    with pytest.raises(ValueError, match="num_heads"):
        GPT(num_hiddens=30, num_heads=4)


def test_python_source_is_deterministic_text():
    data = load_python_source(20_000)
    assert data.dtype == torch.uint8 and data.numel() == 20_000
    assert torch.equal(data, load_python_source(20_000))
    assert "def " in decode_bytes(data)


def test_batches_are_windows_and_their_next_tokens():
    data = torch.arange(50) * 3
    X, Y = text_batch(data, 4, 6, torch.Generator().manual_seed(1))
    assert X.shape == Y.shape == (4, 6) and X.dtype == torch.int64
    assert torch.equal(Y[:, :-1], X[:, 1:]) and torch.equal(Y[:, -1], X[:, -1] + 3)
    with pytest.raises(ValueError, match="num_steps"):
        text_batch(data, 1, 50)


def test_flops_per_token():
    net = tiny()
    weights = 2 * (32 * 96 + 32 * 32 + 32 * 128 + 128 * 32) + 256 * 32
    assert gpt_flops_per_token(net, 16) == 6 * weights + 12 * 2 * 32 * 16


def test_the_loss_falls_on_python_source():
    # A few dozen steps on real text: the loss must fall well below ln(256) = 5.5, the loss of
    # a uniform guess, whatever CPU kernels run (float32 throughout).
    net = tiny(max_len=32)
    data = load_python_source(50_000)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(net.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        X, Y = text_batch(data, 16, 32, generator)
        loss = F.cross_entropy(net(X).flatten(0, 1), Y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 5
    assert sum(losses[-10:]) / 10 < 3.5


def test_a_bf16_training_step_runs_on_avx2_cpu_kernels():
    # With the CPU kernels restricted to AVX2, the flash kernel's bf16 backward raises; the
    # model must train in bf16 autocast on such a CPU all the same (a fresh process: the
    # setting is read when torch starts).
    code = (
        "import torch, torch.nn.functional as F; from gpukit.gpt import GPT\n"
        "net = GPT(num_hiddens=64, num_heads=4, num_blks=1, max_len=64)\n"
        "X = torch.randint(256, (4, 64))\n"
        "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "    loss = F.cross_entropy(net(X).flatten(0, 1), X.flatten())\n"
        "loss.backward()\n"
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
