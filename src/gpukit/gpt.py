"""A small GPT: a decoder-only transformer, its text, its generation loop and its FLOPs.

:class:`GPT` is the model of the "small GPT" page in D2L's style and names (``num_hiddens``,
``num_heads``, ``num_blks``): token and position embeddings, ``num_blks`` pre-norm blocks of
causal self-attention (PyTorch's fused ``F.scaled_dot_product_attention``) and an MLP, and an
output layer that shares its weights with the token embedding. It reads bytes: a vocabulary of
256, no tokenizer to train or download.

The text is Python's own standard library, which every Python installation ships:
:func:`load_python_source` reads its ``.py`` files as UTF-8 bytes. :func:`text_batch` draws
random windows from them. :func:`generate` continues a prompt, with or without a key-value
cache. :func:`gpt_flops_per_token` counts the model's arithmetic per token, which
:func:`gpukit.roofline.mfu` turns into the share of the device's peak that training used (MFU).
"""

from __future__ import annotations

import pathlib
import sysconfig

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpukit._checks import check_int, check_number, check_type

__all__ = [
    "GPT",
    "decode_bytes",
    "generate",
    "gpt_flops_per_token",
    "load_python_source",
    "text_batch",
]

# One layer's cached keys and values, each (batch, heads, tokens so far, head_dim).
KVCache = list[tuple[torch.Tensor, torch.Tensor]]


class _Block(nn.Module):
    """Pre-norm transformer block: X + attention(norm(X)), then X + MLP(norm(X))."""

    def __init__(self, num_hiddens: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.norm1 = nn.LayerNorm(num_hiddens)
        self.norm2 = nn.LayerNorm(num_hiddens)
        self.qkv = nn.Linear(num_hiddens, 3 * num_hiddens, bias=False)
        self.proj = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(num_hiddens, 4 * num_hiddens),
            nn.GELU(),
            nn.Linear(4 * num_hiddens, num_hiddens),
        )

    def forward(
        self, X: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        batch, tokens, hiddens = X.shape
        # (batch, tokens, 3 * hiddens) -> three (batch, heads, tokens, head_dim)
        q, k, v = (
            self.qkv(self.norm1(X))
            .view(batch, tokens, 3, self.num_heads, hiddens // self.num_heads)
            .permute(2, 0, 3, 1, 4)
            .unbind(0)
        )
        if past is not None:  # generation: the new token attends to every cached one
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        if q.device.type == "cpu" and q.dtype == torch.bfloat16 and torch.is_grad_enabled():
            # The CPU flash kernel's bf16 backward (torch 2.13) fails where the CPU kernels are
            # restricted below AVX-512 ("pack_vnni2 is only supported when avx512 is
            # supported"); the math kernel computes the same on every CPU.
            with sdpa_kernel(SDPBackend.MATH):
                Y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
        else:
            Y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
        X = X + self.proj(Y.transpose(1, 2).reshape(batch, tokens, hiddens))
        return X + self.mlp(self.norm2(X)), (k, v)


class GPT(nn.Module):
    """A decoder-only transformer over bytes (GPT-2's layout, pre-norm, tied embeddings).

    ``forward(tokens)`` maps ``(batch, steps)`` token ids to ``(batch, steps, vocab_size)``
    logits for the next token at every position, attending only to earlier positions.
    ``forward(tokens, cache)`` is for generation: ``cache`` is a list, empty at first, that
    the call fills with each block's keys and values; later calls pass one new token per text
    and the same list, and attend to everything cached. Weights start as in GPT-2: normal with
    standard deviation 0.02, biases zero.

    Example:
        >>> net = GPT(vocab_size=256, num_hiddens=32, num_heads=4, num_blks=2, max_len=16)
        >>> net(torch.zeros(3, 10, dtype=torch.long)).shape
        torch.Size([3, 10, 256])
        >>> sum(p.numel() for p in net.parameters())  # the head shares the embedding's weights
        33920
    """

    def __init__(
        self,
        vocab_size: int = 256,
        num_hiddens: int = 128,
        num_heads: int = 4,
        num_blks: int = 2,
        max_len: int = 256,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_hiddens", num_hiddens),
            ("num_heads", num_heads),
            ("num_blks", num_blks),
            ("max_len", max_len),
        ):
            check_int(value, name)
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_hiddens must be a multiple of num_heads, got {num_hiddens} and {num_heads}"
            )
        self.max_len = max_len
        self.token = nn.Embedding(vocab_size, num_hiddens)
        self.position = nn.Embedding(max_len, num_hiddens)
        self.blks = nn.ModuleList(_Block(num_hiddens, num_heads) for _ in range(num_blks))
        self.norm = nn.LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, vocab_size, bias=False)
        self.head.weight = self.token.weight  # tied: one matrix embeds and predicts
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Logits for the next token at every position; fills ``cache`` if one is given."""
        filled = bool(cache)  # a cache from earlier calls (an empty one gets filled here)
        start = cache[0][0].shape[2] if filled else 0  # tokens already cached
        if filled and tokens.shape[1] != 1:
            raise ValueError("with a filled cache, tokens must hold one new token per text")
        if start + tokens.shape[1] > self.max_len:
            raise ValueError(
                f"at most max_len={self.max_len} tokens, got {start + tokens.shape[1]}"
            )
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        X = self.token(tokens) + self.position(positions)
        for i, blk in enumerate(self.blks):
            X, kv = blk(X, cache[i] if filled else None)
            if cache is not None:
                # Contiguous copies: after the prompt, k and v are views of the whole q-k-v
                # product, which the cache would otherwise keep alive, queries included.
                cache[i : i + 1] = [(kv[0].contiguous(), kv[1].contiguous())]
        return self.head(self.norm(X))


def load_python_source(max_bytes: int = 1_000_000) -> torch.Tensor:
    """The first ``max_bytes`` bytes of Python's standard library, as a ``uint8`` tensor.

    The ``.py`` files under ``sysconfig.get_paths()["stdlib"]`` (without the test suites), in
    sorted order of their paths, are read as bytes and joined: a text that every Python
    installation ships, so nothing is downloaded. Each byte is a token (UTF-8, vocabulary 256).
    Other Python versions ship other sources, so the text differs between them.

    Example:
        >>> data = load_python_source(1000)
        >>> data.dtype, data.shape
        (torch.uint8, torch.Size([1000]))
    """
    check_int(max_bytes, "max_bytes")
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    chunks = []
    size = 0
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in ("test", "site-packages") or "tests" in parts:
            continue
        chunks.append(path.read_bytes())
        size += len(chunks[-1])
        if size >= max_bytes:
            break
    data = b"".join(chunks)[:max_bytes]
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def text_batch(
    data: torch.Tensor,
    batch_size: int,
    num_steps: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of ``num_steps`` tokens of ``data``, and their targets.

    Returns ``(X, Y)``, both ``(batch_size, num_steps)`` int64 on ``data``'s device; ``Y`` is
    ``X`` shifted by one token (the next token at every position). The window starts are drawn
    with ``generator`` (on ``data``'s device), so keeping ``data`` on the GPU keeps the whole
    batch there.

    Example:
        >>> X, Y = text_batch(torch.arange(100), 2, 5, torch.Generator().manual_seed(0))
        >>> X.shape, bool((Y == X + 1).all())
        (torch.Size([2, 5]), True)
    """
    check_type(data, "data", torch.Tensor, "a 1-D tensor of token ids")
    check_int(batch_size, "batch_size")
    check_int(num_steps, "num_steps")
    if data.dim() != 1 or data.numel() <= num_steps:
        raise ValueError(f"data must be 1-D and longer than num_steps={num_steps}")
    starts = torch.randint(
        data.numel() - num_steps, (batch_size, 1), device=data.device, generator=generator
    )
    index = starts + torch.arange(num_steps + 1, device=data.device)
    windows = data[index].long()
    return windows[:, :-1], windows[:, 1:]


def decode_bytes(tokens: torch.Tensor) -> str:
    """Byte tokens as text (UTF-8; an incomplete character becomes U+FFFD).

    Example:
        >>> decode_bytes(torch.tensor([104, 105]))
        'hi'
    """
    check_type(tokens, "tokens", torch.Tensor, "a tensor of byte values")
    return bytes(tokens.flatten().tolist()).decode("utf-8", errors="replace")


@torch.no_grad()
def generate(
    net: GPT,
    prompt: torch.Tensor,
    num_tokens: int,
    *,
    use_cache: bool = True,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Continue ``prompt`` (``(batch, steps)`` ids) by ``num_tokens`` tokens.

    With ``use_cache`` the prompt is read once and every later step feeds only the newest
    token, attending to the keys and values cached so far. Without it, every step runs the
    whole sequence again, recomputing every past key and value. With ``temperature`` 0 (the
    default) each step takes the most likely token (greedy), so the two agree up to rounding;
    above 0 it draws the token from ``softmax(logits / temperature)`` with ``generator``,
    which repeats itself less. Returns prompt and continuation.

    Example:
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=16).eval()
        >>> prompt = torch.tensor([[104, 105]])
        >>> out = generate(net, prompt, 5)
        >>> out.shape, torch.equal(out, generate(net, prompt, 5, use_cache=False))
        (torch.Size([1, 7]), True)
    """
    check_type(net, "net", GPT, "a gpukit GPT")
    check_type(prompt, "prompt", torch.Tensor, "a (batch, steps) tensor of token ids")
    check_int(num_tokens, "num_tokens")
    check_number(temperature, "temperature", zero=True)
    if prompt.dim() != 2 or prompt.shape[1] + num_tokens > net.max_len:
        raise ValueError(
            f"prompt must be (batch, steps) with steps + num_tokens <= max_len={net.max_len}"
        )
    out = prompt
    cache = [] if use_cache else None
    logits = net(prompt, cache)
    for i in range(num_tokens):
        if temperature == 0:
            token = logits[:, -1].argmax(dim=-1, keepdim=True)
        else:
            probs = torch.softmax(logits[:, -1].float() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator)
        out = torch.cat([out, token], dim=1)
        if i + 1 < num_tokens:
            logits = net(out[:, -1:], cache) if use_cache else net(out)
    return out


def gpt_flops_per_token(net: nn.Module, num_steps: int) -> int:
    """Floating-point operations of one training step per token: ``6 N + 12 L H T``.

    ``N`` counts the weights that take part in matrix products (those of every ``nn.Linear``,
    the output layer included; not the embeddings' look-ups): each costs a multiply and an
    add in the forward pass and twice that in the backward pass, so ``6 N``. Attention adds
    ``Q K^T`` and the product with ``V``, ``12 L H T`` for ``L`` blocks of width ``H`` over
    ``T = num_steps`` tokens, counted in full as PaLM's paper does, though causal kernels skip
    the masked half.

    Example:
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=16)
        >>> gpt_flops_per_token(net, 16)  # 6 * (2 * 12 * 32 * 32 + 256 * 32) + 12 * 2 * 32 * 16
        208896
    """
    check_type(net, "net", GPT, "a gpukit GPT")
    check_int(num_steps, "num_steps")
    matmul_weights = sum(m.weight.numel() for m in net.modules() if isinstance(m, nn.Linear))
    width = net.token.embedding_dim
    return 6 * matmul_weights + 12 * len(net.blks) * width * num_steps
