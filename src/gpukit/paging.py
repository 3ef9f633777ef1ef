"""A paged KV cache and a continuous-batching scheduler, the ideas of vLLM's PagedAttention.

A server decodes many requests of unknown lengths at once. Giving each request a contiguous
cache of the longest length it might reach wastes most of the memory. :class:`BlockTable`
instead cuts the cache into fixed-size *blocks* and gives a request one block at a time, as an
operating system gives a process pages: the request's *block table* lists its blocks, in
order, anywhere in the pool. :class:`PagedKVCache` holds the keys and values of a
:class:`gpukit.gpt.GPT` in such blocks and decodes a batch of requests of different lengths,
gathering each request's pages for attention. :func:`serve` runs a list of requests through
it with *static batching* (a batch starts together and ends when its longest request ends) or
*continuous batching* (a finished request leaves at once and a waiting one takes its place).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from gpukit._checks import check_choice, check_int, check_type
from gpukit.gpt import GPT

__all__ = ["BlockTable", "PagedKVCache", "Request", "ServeStats", "serve"]


class BlockTable:
    """Hands out ``num_blocks`` blocks of ``block_size`` token slots to requests.

    :meth:`allocate` gives a new request enough blocks for its first ``num_tokens`` tokens,
    :meth:`append` one more token (and a new block when the last one is full), :meth:`free`
    returns all its blocks to the pool. A block belongs to at most one live request.
    :meth:`slots` lists where each of a request's tokens lives: ``block * block_size +
    offset`` in a pool of ``num_blocks * block_size`` slots.

    Example:
        >>> table = BlockTable(num_blocks=8, block_size=4)
        >>> table.allocate("a", 6)  # 6 tokens: two blocks, the second half full
        [0, 1]
        >>> table.allocate("b", 3), table.num_free
        ([2], 5)
        >>> for _ in range(3):
        ...     _ = table.append("a")  # tokens 7 and 8 fill block 1, token 9 opens a block
        >>> table.blocks("a"), table.slots("b")
        ([0, 1, 3], [8, 9, 10])
        >>> table.free("a"); table.num_free  # b keeps its block
        7
    """

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.num_blocks = check_int(num_blocks, "num_blocks")
        self.block_size = check_int(block_size, "block_size")
        self._free = deque(range(num_blocks))  # the lowest free blocks first
        self._blocks: dict[object, list[int]] = {}
        self._lengths: dict[object, int] = {}

    @property
    def num_free(self) -> int:
        """Blocks not held by any request."""
        return len(self._free)

    def blocks_for(self, num_tokens: int) -> int:
        """Blocks needed for ``num_tokens`` tokens: ``ceil(num_tokens / block_size)``."""
        return -(-num_tokens // self.block_size)

    def can_allocate(self, num_tokens: int) -> bool:
        """Whether :meth:`allocate` of ``num_tokens`` tokens would succeed now."""
        return self.blocks_for(num_tokens) <= self.num_free

    def allocate(self, request: object, num_tokens: int) -> list[int]:
        """Blocks for a new ``request``'s first ``num_tokens`` tokens; returns them."""
        check_int(num_tokens, "num_tokens")
        if request in self._blocks:
            raise ValueError(f"request {request!r} already holds blocks: free it first")
        capacity = self.num_blocks * self.block_size
        if num_tokens > capacity:
            raise ValueError(
                f"num_tokens={num_tokens} is longer than the whole cache "
                f"({self.num_blocks} blocks of {self.block_size} = {capacity} tokens)"
            )
        needed = self.blocks_for(num_tokens)
        if needed > self.num_free:
            raise RuntimeError(
                f"out of blocks: {needed} needed, {self.num_free} free; "
                "wait for a request to finish (check can_allocate first)"
            )
        self._blocks[request] = [self._free.popleft() for _ in range(needed)]
        self._lengths[request] = num_tokens
        return list(self._blocks[request])

    def append(self, request: object) -> int | None:
        """Room for one more token of ``request``; the new block if one was needed, else None."""
        blocks = self._get(request)
        new = None
        if self._lengths[request] == len(blocks) * self.block_size:
            if not self._free:
                raise RuntimeError("out of blocks: no free block for the next token")
            new = self._free.popleft()
            blocks.append(new)
        self._lengths[request] += 1
        return new

    def free(self, request: object) -> None:
        """Return every block of ``request`` to the pool."""
        self._free.extend(self._get(request))
        del self._blocks[request], self._lengths[request]

    def blocks(self, request: object) -> list[int]:
        """The blocks of ``request``, in the order of its tokens (its block table)."""
        return list(self._get(request))

    def length(self, request: object) -> int:
        """The tokens ``request`` holds."""
        self._get(request)
        return self._lengths[request]

    def slots(self, request: object) -> list[int]:
        """The slot of each of ``request``'s tokens in the pool, in order."""
        blocks, size = self._get(request), self.block_size
        return [blocks[i // size] * size + i % size for i in range(self._lengths[request])]

    def _get(self, request: object) -> list[int]:
        if request not in self._blocks:
            raise KeyError(f"request {request!r} holds no blocks")
        return self._blocks[request]


class PagedKVCache:
    """The keys and values of ``net`` in blocks, and decode steps over a batch of requests.

    ``capacity`` token slots, cut into blocks of ``block_size`` (which must divide it), hold
    each block's keys and values as ``(slots, heads, head_dim)`` tensors on the model's device,
    in its dtype. :meth:`prefill` reads a request's prompt and writes its keys and values into
    the blocks its ``table`` gives it; :meth:`decode` runs one step for a batch of
    requests of different lengths: each request's new keys and values go to its next slot,
    and its attention reads its own slots only, gathered through its block table and padded
    to the longest request of the batch with a mask.

    Example:
        >>> from gpukit.gpt import generate
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=32).eval()
        >>> cache = PagedKVCache(net, capacity=64, block_size=8)
        >>> a, b = torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6, 7, 8])
        >>> la, lb = cache.prefill("a", a), cache.prefill("b", b)
        >>> tokens = torch.stack([la.argmax(), lb.argmax()])
        >>> logits = cache.decode(["a", "b"], tokens)  # two lengths in one step
        >>> reference = generate(net, b.view(1, -1), 2)[0, -1]
        >>> bool(logits[1].argmax() == reference), cache.table.length("b")
        (True, 6)
    """

    def __init__(self, net: GPT, capacity: int, block_size: int) -> None:
        check_type(net, "net", GPT, "a gpukit GPT")
        check_int(capacity, "capacity")
        check_int(block_size, "block_size")
        if capacity % block_size:
            raise ValueError(
                f"block_size={block_size} does not divide capacity={capacity}: the cache is "
                "a whole number of blocks"
            )
        self.net = net
        self.table = BlockTable(capacity // block_size, block_size)
        weight = net.token.weight
        heads = net.blks[0].num_heads
        shape = (capacity, heads, net.token.embedding_dim // heads)
        self.keys = [weight.new_zeros(shape) for _ in net.blks]
        self.values = [weight.new_zeros(shape) for _ in net.blks]

    @torch.no_grad()
    def prefill(self, request: object, prompt: torch.Tensor) -> torch.Tensor:
        """Read ``prompt`` (1-D token ids) into new blocks; the next token's logits."""
        check_type(prompt, "prompt", torch.Tensor, "a 1-D tensor of token ids")
        if prompt.dim() != 1 or not 0 < len(prompt) <= self.net.max_len:
            raise ValueError(f"prompt must be 1-D with 1 to max_len={self.net.max_len} tokens")
        self.table.allocate(request, len(prompt))
        slots = torch.tensor(self.table.slots(request), device=self.keys[0].device)
        cache: list = []
        logits = self.net(prompt.view(1, -1).to(slots.device), cache)
        for i, (k, v) in enumerate(cache):  # (1, heads, tokens, head_dim) -> the slots
            self.keys[i][slots] = k[0].transpose(0, 1)
            self.values[i][slots] = v[0].transpose(0, 1)
        return logits[0, -1]

    @torch.no_grad()
    def decode(self, requests: Sequence[object], tokens: torch.Tensor) -> torch.Tensor:
        """One step: ``tokens[i]`` is request ``requests[i]``'s new token; next-token logits."""
        net, device = self.net, self.keys[0].device
        if len(requests) != len(tokens):
            raise ValueError("tokens must hold one token per request")
        for request in requests:
            if self.table.length(request) >= net.max_len:
                raise ValueError(f"request {request!r} has reached max_len={net.max_len}")
            self.table.append(request)
        slots = [self.table.slots(r) for r in requests]
        lengths = [len(s) for s in slots]
        longest = max(lengths)
        # Each request's slots, padded with slot 0 (masked) to the longest request
        index = torch.tensor([s + [0] * (longest - len(s)) for s in slots], device=device)
        new_slot = torch.tensor([s[-1] for s in slots], device=device)
        positions = torch.tensor(lengths, device=device) - 1
        mask = torch.arange(longest, device=device) < torch.tensor(lengths, device=device)[:, None]
        mask = mask[:, None, None, :]  # (batch, 1, 1, longest): every head, the one query
        X = (net.token(tokens.to(device)) + net.position(positions))[:, None]  # (batch, 1, H)
        batch, hiddens = len(requests), X.shape[-1]
        for blk, K, V in zip(net.blks, self.keys, self.values, strict=True):
            q, k, v = (
                blk.qkv(blk.norm1(X))
                .view(batch, 3, blk.num_heads, hiddens // blk.num_heads)
                .unbind(1)
            )
            K[new_slot], V[new_slot] = k, v  # write first: the token attends to itself too
            q = q[:, :, None]  # (batch, heads, 1, head_dim)
            Y = F.scaled_dot_product_attention(
                q, K[index].transpose(1, 2), V[index].transpose(1, 2), attn_mask=mask
            )
            X = X + blk.proj(Y.transpose(1, 2).reshape(batch, 1, hiddens))
            X = X + blk.mlp(blk.norm2(X))
        return net.head(net.norm(X))[:, -1]


@dataclass
class Request:
    """A request: its ``prompt`` (1-D token ids) and how many tokens to generate.

    :func:`serve` fills ``output`` (the generated tokens) and ``finished_at``.

    Example:
        >>> Request(torch.tensor([1, 2, 3]), max_new_tokens=4).max_new_tokens
        4
    """

    prompt: torch.Tensor
    max_new_tokens: int
    output: list[int] = field(default_factory=list)
    finished_at: float = 0.0  # seconds after the start of serve()

    def __post_init__(self) -> None:
        check_type(self.prompt, "prompt", torch.Tensor, "a 1-D tensor of token ids")
        if self.prompt.dim() != 1 or not len(self.prompt):
            raise ValueError(
                f"prompt must be 1-D and not empty, got shape {tuple(self.prompt.shape)}"
            )
        check_int(self.max_new_tokens, "max_new_tokens")


@dataclass(frozen=True)
class ServeStats:
    """What :func:`serve` measured: seconds in all, tokens generated, each request's latency.

    ``prefill_seconds`` is the part of ``seconds`` spent in the prefills, and ``rows`` the
    requests decoded, summed over the decode steps (a padding request counts).

    Example:
        >>> stats = ServeStats(seconds=2.0, tokens=100, latencies=[1.0], steps=50, peak_blocks=3)
        >>> stats.tokens_per_second
        50.0
    """

    seconds: float
    tokens: int
    latencies: list[float]
    steps: int
    peak_blocks: int
    prefill_seconds: float = 0.0
    rows: int = 0

    @property
    def tokens_per_second(self) -> float:
        """Tokens generated per second of serving."""
        return self.tokens / self.seconds

    @property
    def decode_seconds_per_step(self) -> float:
        """The seconds of a decode step with the prefills left out, which is what one step of
        the batch costs, however many steps a policy spread its prefills over."""
        return (self.seconds - self.prefill_seconds) / self._decode_steps()

    @property
    def requests_per_step(self) -> float:
        """The requests decoded per step, padding included, which says how full the batch
        ran."""
        return self.rows / self._decode_steps()

    def _decode_steps(self) -> int:
        if self.steps == 0:
            raise ValueError(
                "no decode steps: every request ended with its prefill's token "
                "(max_new_tokens=1), so there is no time or batch per step"
            )
        return self.steps


def serve(
    cache: PagedKVCache,
    requests: Sequence[Request],
    max_batch: int,
    policy: str = "continuous",
) -> ServeStats:
    """Generate every request's tokens greedily, ``max_batch`` requests at a time.

    All requests arrive at time 0, in the order given, and are admitted in that order (first
    come, first served). ``"static"`` batching admits ``max_batch`` requests, decodes until the
    longest of them is done (the others decode on, their tokens thrown away, as a padded batch
    does), then admits the next ones. ``"continuous"`` batching admits a waiting request as
    soon as a place in the batch and the blocks for its prompt and its tokens are free, and a
    request leaves the batch the step it finishes. Returns the time, the tokens kept, each
    request's latency (seconds from the start to its last token), the decode steps, the
    most blocks in use at once, the prefills' seconds and the requests decoded in all steps.

    Example:
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=1, max_len=32).eval()
        >>> reqs = [Request(torch.tensor([1, 2]), n) for n in (2, 9, 3, 3)]
        >>> serve(PagedKVCache(net, 64, 4), reqs, max_batch=2, policy="static").steps  # 8 + 2
        10
        >>> reqs = [Request(torch.tensor([1, 2]), n) for n in (2, 9, 3, 3)]
        >>> serve(PagedKVCache(net, 64, 4), reqs, max_batch=2).steps  # the long one's 8
        8
    """
    check_type(cache, "cache", PagedKVCache, "a PagedKVCache")
    check_int(max_batch, "max_batch")
    check_choice(policy, "policy", ("static", "continuous"))
    table, max_len = cache.table, cache.net.max_len
    for i, r in enumerate(requests):
        check_type(r, f"requests[{i}]", Request, "a Request")
        need = len(r.prompt) + r.max_new_tokens - 1
        if need > max_len or table.blocks_for(need) > table.num_blocks:
            raise ValueError(
                f"requests[{i}] needs {need} tokens: more than max_len={max_len} or than the "
                f"cache's {table.num_blocks * table.block_size} slots"
            )
    for r in requests:  # a list of requests can be served again
        r.output, r.finished_at = [], 0.0
    waiting, running = deque(range(len(requests))), []
    next_token: dict[int, torch.Tensor] = {}
    steps, rows, peak, prefill_seconds = 0, 0, 0, 0.0
    start = time.perf_counter()
    while waiting or running:
        if policy == "continuous" or not running:
            # Admit in arrival order; static batching pads every request to its batch's longest
            pad = max((requests[i].max_new_tokens for i in list(waiting)[:max_batch]), default=0)
            while waiting and len(running) < max_batch:
                r = requests[waiting[0]]
                new = r.max_new_tokens if policy == "continuous" else pad
                if not table.can_allocate(len(r.prompt) + new - 1) or (
                    policy == "continuous" and not _fits(table, running, requests, r)
                ):
                    break
                i = waiting.popleft()
                prefill_start = time.perf_counter()
                logits = cache.prefill(i, r.prompt)
                next_token[i] = logits.argmax()
                r.output = [int(next_token[i])]  # int() waits for the device
                prefill_seconds += time.perf_counter() - prefill_start
                running.append(i)
        if not running:
            raise RuntimeError("no request fits the cache: give it more blocks")
        peak = max(peak, table.num_blocks - table.num_free)
        # A request whose last token came from the prefill needs no decode step
        active = [i for i in running if _wants(requests[i], policy, running, requests)]
        if active:
            tokens = torch.stack([next_token[i] for i in active])
            logits = cache.decode(active, tokens)
            steps, rows = steps + 1, rows + len(active)
            for i, row in zip(active, logits, strict=True):
                next_token[i] = row.argmax()
                if len(requests[i].output) < requests[i].max_new_tokens:
                    requests[i].output.append(int(next_token[i]))
        now = time.perf_counter() - start
        for i in list(running):
            r = requests[i]
            if len(r.output) == r.max_new_tokens and not r.finished_at:
                r.finished_at = now
            batch_done = all(len(requests[j].output) == requests[j].max_new_tokens for j in running)
            if (policy == "continuous" and r.finished_at) or (policy == "static" and batch_done):
                running.remove(i)
                table.free(i)
    seconds = time.perf_counter() - start
    return ServeStats(
        seconds=seconds,
        tokens=sum(r.max_new_tokens for r in requests),
        latencies=[r.finished_at for r in requests],
        steps=steps,
        peak_blocks=peak,
        prefill_seconds=prefill_seconds,
        rows=rows,
    )


def _wants(r: Request, policy: str, running: list[int], requests: Sequence[Request]) -> bool:
    """Whether request ``r`` decodes this step: unfinished, or padding a static batch."""
    if len(r.output) < r.max_new_tokens:
        return True
    return policy == "static" and any(
        len(requests[j].output) < requests[j].max_new_tokens for j in running
    )


def _fits(table: BlockTable, running: list[int], requests: Sequence[Request], r: Request) -> bool:
    """Whether the blocks left after reserving every running request's future tokens fit ``r``.

    A simple admission rule: a request is admitted only if every running request can still
    reach its last token, so that no request ever waits for a block in the middle of decoding.
    """
    reserved = sum(
        table.blocks_for(len(requests[j].prompt) + requests[j].max_new_tokens - 1)
        - len(table.blocks(j))
        for j in running
    )
    return table.blocks_for(len(r.prompt) + r.max_new_tokens - 1) <= table.num_free - reserved
