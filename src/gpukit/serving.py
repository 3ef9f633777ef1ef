"""Serving a GPT: the cost of a decode step, a static KV cache, and counting what a step launches.

Generation has two phases. *Prefill* reads the prompt in one forward pass, all its tokens at
once, and fills the key-value cache. *Decode* then produces one token per text per step: each
step multiplies every weight matrix by a batch of single tokens and reads the whole cache.
:func:`decode_cost` counts the FLOPs and the bytes of one decode step, whose ratio (the
arithmetic intensity) is about the batch size in bf16: decoding is memory-bound until the batch
reaches the device's ridge point.

:class:`StaticCacheDecoder` keeps the cache in buffers of a fixed shape, written in place at a
position held in a tensor, so that every decode step runs the same kernels on the same
addresses: what CUDA graphs (:func:`capture_cuda_graph`, or
``torch.compile(mode="reduce-overhead")``) need to replay a step without the CPU launching each
kernel. :func:`count_ops` counts the operations (on a GPU, about the kernels) a step dispatches.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from gpukit._checks import check_int, check_type
from gpukit.gpt import GPT

__all__ = [
    "StaticCacheDecoder",
    "capture_cuda_graph",
    "count_ops",
    "decode_cost",
]


def decode_cost(
    net: GPT, batch_size: int, context: int, *, element_size: int = 2
) -> tuple[int, int]:
    """FLOPs and the least bytes read by one decode step of ``batch_size`` texts.

    Each text feeds one token that attends to ``context`` cached tokens. The weights of the
    matrix products (every ``nn.Linear``, the output layer included) are read once for the whole
    batch and cost 2 FLOPs each per text; each text's cache, ``2 * L * H * context`` numbers for
    ``L`` blocks of width ``H``, is read once and costs 2 FLOPs per number (the scores ``q k``
    and the weighted sum of ``v``). Embeddings, layer norms and activations are left out: they
    are small next to these. ``element_size`` is the bytes per number (2 for bf16).

    Example:
        >>> net = GPT(num_hiddens=64, num_heads=4, num_blks=2, max_len=128)
        >>> flops, nbytes = decode_cost(net, batch_size=1, context=100)
        >>> flops, nbytes, flops / nbytes  # one FLOP per byte of bf16 at batch 1
        (280576, 280576, 1.0)
        >>> flops, nbytes = decode_cost(net, batch_size=64, context=100)
        >>> round(flops / nbytes, 1)  # the weights are shared by the batch, the caches are not
        5.1
    """
    check_type(net, "net", GPT, "a gpukit GPT")
    check_int(batch_size, "batch_size")
    check_int(context, "context", 0)
    check_int(element_size, "element_size")
    weights = sum(m.weight.numel() for m in net.modules() if isinstance(m, nn.Linear))
    cache = 2 * len(net.blks) * net.token.embedding_dim * context
    flops = 2 * batch_size * (weights + cache)
    return flops, element_size * (weights + batch_size * cache)


class StaticCacheDecoder(nn.Module):
    """Greedy decoding of ``net`` with a key-value cache of fixed shape, for CUDA graphs.

    The cache of each block is two buffers ``(batch_size, heads, max_len, head_dim)`` in
    ``dtype`` (default: the model's), allocated once. :meth:`prefill` runs the prompt through
    the model and copies its keys and values to the start of the buffers. A decode step,
    ``forward(tokens, position)``, takes ``(batch_size, 1)`` tokens and the position as a
    one-element tensor, writes the new keys and values in place at that position, and attends
    over all ``max_len`` slots with a mask that hides the slots after it. Every step thus has
    the same shapes and the same memory addresses, whatever its position: the condition for
    replaying it as a CUDA graph. The arithmetic over the masked slots is the price.

    Example:
        >>> from gpukit.gpt import generate
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=16).eval()
        >>> prompt = torch.tensor([[104, 105], [111, 107]])
        >>> decoder = StaticCacheDecoder(net, batch_size=2)
        >>> out = decoder.generate(prompt, 6)
        >>> out.shape, torch.equal(out, generate(net, prompt, 6))
        (torch.Size([2, 8]), True)
    """

    def __init__(
        self,
        net: GPT,
        batch_size: int,
        max_len: int | None = None,
    ) -> None:
        super().__init__()
        check_type(net, "net", GPT, "a gpukit GPT")
        check_int(batch_size, "batch_size")
        max_len = net.max_len if max_len is None else check_int(max_len, "max_len")
        if max_len > net.max_len:
            raise ValueError(f"max_len must be <= the model's max_len={net.max_len}, got {max_len}")
        weight = net.token.weight  # the cache takes the model's device and dtype
        dtype = weight.dtype
        self.net, self.batch_size, self.max_len = net, batch_size, max_len
        heads = net.blks[0].num_heads
        shape = (batch_size, heads, max_len, net.token.embedding_dim // heads)
        for i in range(len(net.blks)):
            self.register_buffer(f"k{i}", torch.zeros(shape, dtype=dtype, device=weight.device))
            self.register_buffer(f"v{i}", torch.zeros(shape, dtype=dtype, device=weight.device))
        self.register_buffer("slots", torch.arange(max_len, device=weight.device))

    @torch.no_grad()
    def prefill(self, prompt: torch.Tensor) -> torch.Tensor:
        """Read ``prompt`` ``(batch_size, steps)`` into the cache; the next token's logits."""
        check_type(prompt, "prompt", torch.Tensor, "a (batch_size, steps) tensor of token ids")
        if prompt.dim() != 2 or prompt.shape[0] != self.batch_size:
            raise ValueError(f"prompt must be (batch_size={self.batch_size}, steps)")
        if prompt.shape[1] >= self.max_len:
            raise ValueError(f"prompt must be shorter than max_len={self.max_len}")
        cache: list = []
        logits = self.net(prompt, cache)
        for i, (k, v) in enumerate(cache):
            getattr(self, f"k{i}")[:, :, : prompt.shape[1]] = k
            getattr(self, f"v{i}")[:, :, : prompt.shape[1]] = v
        return logits[:, -1]

    def forward(self, tokens: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """One decode step: ``(batch_size, 1)`` tokens at ``position`` -> next-token logits."""
        net, batch = self.net, tokens.shape[0]
        X = net.token(tokens) + net.position(position)
        # (1, 1, 1, max_len): the slots written so far, this one included, for every text
        visible = (self.slots <= position).view(1, 1, 1, -1)
        for i, blk in enumerate(net.blks):
            hiddens = X.shape[-1]
            q, k, v = (
                blk.qkv(blk.norm1(X))
                .view(batch, 1, 3, blk.num_heads, hiddens // blk.num_heads)
                .permute(2, 0, 3, 1, 4)
                .unbind(0)
            )
            K, V = getattr(self, f"k{i}"), getattr(self, f"v{i}")
            K.index_copy_(2, position, k)  # in place: the buffers never move
            V.index_copy_(2, position, v)
            Y = F.scaled_dot_product_attention(q, K, V, attn_mask=visible)
            X = X + blk.proj(Y.transpose(1, 2).reshape(batch, 1, hiddens))
            X = X + blk.mlp(blk.norm2(X))
        return net.head(net.norm(X))[:, -1]

    @torch.no_grad()
    def generate(
        self,
        prompt: torch.Tensor,
        num_tokens: int,
        step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Greedy continuation of ``prompt`` by ``num_tokens`` tokens, prompt included.

        ``step`` replaces ``self`` for the decode steps: a compiled or captured version of it.
        """
        check_int(num_tokens, "num_tokens")
        if prompt.dim() == 2 and prompt.shape[1] + num_tokens > self.max_len:
            raise ValueError(f"steps + num_tokens must be <= max_len={self.max_len}")
        step = self if step is None else step
        logits = self.prefill(prompt)
        out = [prompt]
        for i in range(num_tokens):
            token = logits.argmax(dim=-1, keepdim=True)
            out.append(token)
            if i + 1 < num_tokens:
                position = torch.tensor([prompt.shape[1] + i], device=prompt.device)
                logits = step(token, position)
        return torch.cat(out, dim=1)


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], object]) -> int:
    """How many ATen operations ``fn()`` dispatches: on a GPU, about the kernels it launches.

    Every operation PyTorch runs eagerly goes through its dispatcher once; on a GPU most of
    them launch one kernel (a few, such as views, launch none), each paying the launch overhead.

    Example:
        >>> x = torch.ones(4)
        >>> count_ops(lambda: (x * 2 + 1).sum())
        3
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable without arguments, got {type(fn).__name__}")
    with _OpCounter() as counter:
        fn()
    return counter.count


def capture_cuda_graph(
    fn: Callable[..., torch.Tensor], *inputs: torch.Tensor, warmup: int = 3
) -> Callable[..., torch.Tensor]:
    """Record ``fn(*inputs)`` as a CUDA graph; return a function that replays it.

    The replay function takes new inputs of the same shapes, copies them into the recorded
    input tensors, replays every kernel of the recording with one launch, and returns the
    recorded output tensor (overwritten by the next replay: copy it to keep it). ``fn`` must
    run the same kernels on the same addresses every time and never wait for the CPU (no
    ``.item()``). The calls before recording, on a side stream as PyTorch asks, let cuBLAS and
    the caching allocator settle.

    Example:
        >>> if torch.cuda.is_available():
        ...     x = torch.ones(3, device="cuda")
        ...     double = capture_cuda_graph(lambda t: t * 2, x)
        ...     print(double(torch.full((3,), 5.0, device="cuda")).tolist())
        ... else:
        ...     print([10.0, 10.0, 10.0])
        [10.0, 10.0, 10.0]
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable, got {type(fn).__name__}")
    for i, x in enumerate(inputs):
        check_type(x, f"inputs[{i}]", torch.Tensor, "a CUDA tensor")
        if x.device.type != "cuda":
            raise ValueError(f"inputs[{i}] must be on a GPU: CUDA graphs record CUDA kernels")
    check_int(warmup, "warmup")
    static = [x.clone() for x in inputs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(warmup):
            fn(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        output = fn(*static)

    def replay(*new: torch.Tensor) -> torch.Tensor:
        for buffer, x in zip(static, new, strict=True):
            buffer.copy_(x)
        graph.replay()
        return output

    return replay
