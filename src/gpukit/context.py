"""Context parallelism: one sequence's attention split over processes by its tokens.

Every rank holds the queries, keys and values of some of the sequence's tokens. Ring attention
(:func:`ring_attention`) passes the keys and values around the ranks with point-to-point sends,
one neighbour to the next, and each rank folds every block that arrives into its queries'
output with the online softmax of the FlashAttention page (a running maximum and sum per row),
so that after ``world_size`` steps each rank holds the exact attention of its own queries.

With a causal mask the work is uneven: the rank that holds the first tokens has almost nothing
to attend to, the one with the last tokens almost everything. :func:`sequence_layout` cuts the
sequence into ``2 * world_size`` chunks and gives each rank two of them, either side by side
(``"contiguous"``) or one from each end (``"zigzag"``), which evens the work out;
:func:`causal_work` counts it. :func:`context_parallel_worker` runs both layouts in a process
group started by :func:`gpukit.parallel.launch` and, on GPUs, PyTorch's own
``context_parallel``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
import torch.distributed as dist

from gpukit._checks import check_choice, check_int, check_qkv, check_type
from gpukit.parallel import rank_device, time_collective
from gpukit.timing import Timer

__all__ = [
    "causal_work",
    "context_parallel_ranks",
    "context_parallel_worker",
    "ring_attention",
    "ring_attention_demo",
    "sequence_chunks",
    "sequence_layout",
]

LAYOUTS = ("contiguous", "zigzag")


def _accepted_sizes(n_tokens: int, largest: int = 16) -> list[int]:
    return [w for w in range(1, largest + 1) if n_tokens % (2 * w) == 0]


def _check_split(n_tokens: int, world_size: int) -> None:
    if n_tokens % (2 * world_size):
        raise ValueError(
            f"world_size ({world_size}) must be such that 2 * world_size divides n_tokens "
            f"({n_tokens}), each rank taking two equal chunks; accepted world sizes "
            f"{_accepted_sizes(n_tokens)}"
        )


def sequence_chunks(world_size: int, layout: str = "zigzag") -> list[tuple[int, int]]:
    """The two chunks (of ``2 * world_size``, numbered in sequence order) that each rank holds.

    ``"contiguous"`` gives rank ``r`` chunks ``2r`` and ``2r + 1``: the sequence in order.
    ``"zigzag"`` gives it chunk ``r`` from the front and chunk ``2 * world_size - 1 - r`` from
    the back, so that under a causal mask every rank has one cheap and one dear chunk
    (PyTorch's ``context_parallel`` calls this a head-tail split).

    Example:
        >>> sequence_chunks(4, "contiguous")
        [(0, 1), (2, 3), (4, 5), (6, 7)]
        >>> sequence_chunks(4, "zigzag")
        [(0, 7), (1, 6), (2, 5), (3, 4)]
    """
    check_int(world_size, "world_size")
    check_choice(layout, "layout", LAYOUTS)
    if layout == "contiguous":
        return [(2 * r, 2 * r + 1) for r in range(world_size)]
    return [(r, 2 * world_size - 1 - r) for r in range(world_size)]


def sequence_layout(n_tokens: int, world_size: int, layout: str = "zigzag") -> list[torch.Tensor]:
    """The positions of the tokens that each rank holds, one 1-D int64 tensor per rank.

    ``2 * world_size`` must divide ``n_tokens`` (each rank takes two equal chunks, see
    :func:`sequence_chunks`); the error names the world sizes that ``n_tokens`` accepts.
    ``X[..., positions[r], :]`` is rank ``r``'s part of a sequence ``X``.

    Example:
        >>> [p.tolist() for p in sequence_layout(8, 2, "zigzag")]
        [[0, 1, 6, 7], [2, 3, 4, 5]]
        >>> sequence_layout(8, 3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: world_size (3) must be such that ...; accepted world sizes [1, 2, 4]
    """
    check_int(n_tokens, "n_tokens")
    check_int(world_size, "world_size")
    check_choice(layout, "layout", LAYOUTS)
    _check_split(n_tokens, world_size)
    size = n_tokens // (2 * world_size)
    return [
        torch.cat([torch.arange(c * size, (c + 1) * size) for c in chunks])
        for chunks in sequence_chunks(world_size, layout)
    ]


def causal_work(n_tokens: int, world_size: int, layout: str = "zigzag") -> list[int]:
    """How many (query, key) pairs each rank computes under a causal mask.

    The query at position ``p`` attends to the ``p + 1`` keys at positions ``0..p``; a rank's
    work is the sum over its queries. Contiguous chunks give the last rank about
    ``2 * world_size - 1`` times the work of the first; the zigzag gives every rank the same.

    Example:
        >>> causal_work(8, 2, "contiguous"), causal_work(8, 2, "zigzag")
        ([10, 26], [18, 18])
    """
    return [int((p + 1).sum()) for p in sequence_layout(n_tokens, world_size, layout)]


def context_parallel_ranks(gpus: int, cpu_ranks: int = 2) -> int:
    """How many ranks to split a sequence over: the most GPUs out of 2, 4 and 8 that the
    machine has, else ``cpu_ranks`` CPU processes when it has fewer than two GPUs.

    Example:
        >>> [context_parallel_ranks(gpus) for gpus in (0, 1, 2, 3, 4, 6, 8, 16)]
        [2, 2, 2, 2, 4, 4, 8, 8]
    """
    check_int(gpus, "gpus", 0)
    check_int(cpu_ranks, "cpu_ranks")
    if gpus < 2:
        return cpu_ranks
    return max(w for w in (2, 4, 8) if w <= gpus)


# --------------------------------------------------------------------------- ring attention


def ring_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = "zigzag",
    causal: bool = True,
    stats: dict[str, Any] | None = None,
) -> torch.Tensor:
    """This rank's part of ``softmax(Q K^T / sqrt(d)) V`` by ring attention, in a process group.

    ``q``, ``k`` and ``v`` are this rank's tokens ``(batch, heads, n_local, d)``, the
    positions ``sequence_layout(n_local * world_size, world_size, layout)[rank]``. In
    ``world_size`` steps each rank sends the keys and values it holds to rank ``rank + 1``
    and receives those of rank ``rank - 1`` (``dist.isend`` and ``dist.irecv``, posted together
    by ``dist.batch_isend_irecv``), computing on one block while the next is on its way.
    Every block is cut into its two chunks, and a tile of (query chunk, key chunk) is computed
    whole, with the causal mask (on the diagonal), or not at all (keys after every query).
    Softmax and sums run in fp32; the output has ``q``'s dtype. ``stats``, a dict, receives
    ``tiles`` (tiles computed) and ``compute_seconds`` (time spent in them, the waiting for
    blocks left out: on a CPU the process's CPU time, on a GPU the wall time, synchronized).

    In the example two CPU processes run :func:`ring_attention_demo`, which compares each rank's
    part with one process's attention:

        >>> from gpukit.parallel import launch
        >>> runs = launch(ring_attention_demo, 2, 16, run_timeout_s=300)
        >>> [run["max_abs_diff"] < 1e-5 for run in runs]
        [True, True]
    """
    check_qkv(q, k, v, layout="(batch, heads, n_local, d)")
    check_choice(layout, "layout", LAYOUTS)
    check_type(causal, "causal", bool, "a bool")
    if stats is not None:
        check_type(stats, "stats", dict, "a dict or None")
    if not dist.is_initialized():
        raise RuntimeError("ring_attention runs in a process group: start it with gpukit's launch")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    n_local = q.shape[2]
    if n_local % 2:
        raise ValueError(f"q must hold two equal chunks of tokens, got n_local={n_local}")
    stats = {} if stats is None else stats

    # [fold]
    def fold(
        scores: torch.Tensor,
        v: torch.Tensor,
        m: torch.Tensor,
        ell: torch.Tensor,
        out: torch.Tensor,
    ) -> None:
        """Fold one tile of ``scores`` (masked ones at -inf) and its values into the running row
        maximum ``m``, row sum ``ell`` and unnormalized output ``out``, in place: the online
        softmax of the FlashAttention page, with ``exp`` instead of its ``exp2``."""
        m_new = torch.maximum(m, scores.amax(dim=-1))
        alpha = torch.exp(m - m_new)  # rescales what was summed under the old maximum
        p = torch.exp(scores - m_new.unsqueeze(-1))
        ell.mul_(alpha).add_(p.sum(dim=-1))
        out.mul_(alpha.unsqueeze(-1)).add_(p @ v)
        m.copy_(m_new)

    # [/fold]
    chunks = sequence_chunks(world_size, layout)
    size = q.shape[2] // 2
    scale = 1 / math.sqrt(q.shape[-1])
    queries = (q.float() * scale).split(size, dim=2)  # scaled once, not in every tile
    m = torch.full(q.shape[:-1], -math.inf, device=q.device)
    ell = torch.zeros(q.shape[:-1], device=q.device)
    out = torch.zeros(q.shape, device=q.device)
    diagonal = torch.ones(size, size, dtype=torch.bool, device=q.device).tril()
    block = torch.stack([k, v]).float().contiguous()  # one message per step: keys and values
    tiles, busy = 0, 0.0
    # On a CPU the process's CPU time: what this rank computed, which other programs on a busy
    # machine do not inflate (they only delay it). On a GPU the wall time, synchronized.
    clock = time.perf_counter if q.is_cuda else time.process_time
    # [ring-step]
    for step in range(world_size):
        source = (rank - step) % world_size  # whose keys and values arrived at this step
        requests = []
        if step < world_size - 1:
            incoming = torch.empty_like(block)
            # One batch: NCCL posts the send and the receive together. Two separate calls on
            # two ranks that both send first would each wait for the other's receive.
            requests = dist.batch_isend_irecv(
                [
                    dist.P2POp(dist.isend, block, (rank + 1) % world_size),
                    dist.P2POp(dist.irecv, incoming, (rank - 1) % world_size),
                ]
            )
        start = clock()
        keys, values = block[0].split(size, dim=2), block[1].split(size, dim=2)
        for i, q_chunk in enumerate(chunks[rank]):
            rows = slice(i * size, (i + 1) * size)
            for j, k_chunk in enumerate(chunks[source]):
                if causal and k_chunk > q_chunk:
                    continue  # every key comes after every query: nothing to compute
                scores = queries[i] @ keys[j].transpose(-2, -1)
                if causal and k_chunk == q_chunk:
                    scores = scores.masked_fill(~diagonal, -math.inf)
                fold(scores, values[j], m[..., rows], ell[..., rows], out[..., rows, :])
                tiles += 1
        if q.is_cuda:
            torch.cuda.synchronize(q.device)  # the kernels' time, not the launches'
        busy += clock() - start
        for request in requests:
            request.wait()
        if requests:
            block = incoming
    # [/ring-step]
    stats.update(tiles=tiles, compute_seconds=busy)
    return (out / ell.unsqueeze(-1)).to(q.dtype)


def ring_attention_demo(rank: int, world_size: int, n_tokens: int) -> dict[str, Any]:
    """A :func:`gpukit.parallel.launch` worker for :func:`ring_attention`'s example: causal
    ring attention on ``n_tokens`` tokens (zigzag), compared on each rank with one process's
    SDPA: the largest difference of this rank's part.

    Example:
        >>> from gpukit.parallel import launch
        >>> runs = launch(ring_attention_demo, 4, 32, run_timeout_s=300)
        >>> [run["max_abs_diff"] < 1e-5 for run in runs]
        [True, True, True, True]
    """
    q, k, v = torch.randn(3, 1, 2, n_tokens, 8, generator=torch.Generator().manual_seed(0))
    positions = sequence_layout(n_tokens, world_size)[rank]
    mine = ring_attention(q[:, :, positions], k[:, :, positions], v[:, :, positions])
    whole = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return {"max_abs_diff": (mine - whole[:, :, positions]).abs().max().item()}


# --------------------------------------------------------------------------- the worker


def _torch_context_parallel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, world_size: int, repeats: int
) -> dict[str, Any]:
    """PyTorch's ``context_parallel`` on the whole causal attention: which positions this rank
    got, its part of the output, and the least seconds of ``repeats`` calls after a warm-up,
    each started together on every rank, as the ring's are
    (:func:`~gpukit.parallel.time_collective`). Raises on a CPU (see the page)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel

    mesh = init_device_mesh(q.device.type, (world_size,))
    # The positions travel as one more buffer: after the split they say which tokens this rank
    # holds, whatever order torch's load balancer chose.
    positions = torch.arange(q.shape[2], device=q.device).unsqueeze(0)
    q, k, v = (t.clone() for t in (q, k, v))  # context_parallel shards its buffers in place
    with context_parallel(mesh, buffers=[q, k, v, positions], buffer_seq_dims=[2, 2, 2, 1]):
        out, seconds = time_collective(
            lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
            repeats,
        )
        mine = positions[0].cpu()
    return {"positions": mine, "out": out.cpu(), "seconds": min(seconds)}


def context_parallel_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any]:
    """A :func:`gpukit.parallel.launch` worker: causal ring attention on one sequence, split by
    each of ``config["layouts"]`` and timed; then PyTorch's ``context_parallel`` on it when
    ``config["torch"]`` is true.

    ``config["qkv"]`` holds the whole sequence's queries, keys and values, stacked
    ``(3, batch, heads, n_tokens, d)`` (every rank gets all of it and keeps its part);
    ``config["repeats"]`` is the number of timed calls per layout, after one warm-up. Returns
    per layout this rank's ``positions``, ``out`` (its part of the output, on the CPU),
    ``tiles``, and the least ``compute_seconds`` and ``seconds`` (a whole call) of the calls;
    under ``"torch"``, PyTorch's result (``seconds`` the least of as many calls, also each after
    a barrier and a warm-up) or, on a CPU where it fails, its error message. Runs under NCCL
    (one GPU per rank, bf16) or gloo (CPU processes, fp32). ``2 * world_size`` must divide
    ``n_tokens``; the error names the sizes that do, before any collective.
    """
    check_type(config, "config", dict, "a dict")
    missing = [key for key in ("qkv", "repeats", "layouts") if key not in config]
    if missing:
        raise ValueError(f"config lacks {missing} (see the docstring)")
    qkv = config["qkv"]
    check_type(qkv, 'config["qkv"]', torch.Tensor, "a tensor (3, batch, heads, n_tokens, d)")
    if qkv.dim() != 5 or len(qkv) != 3:
        raise ValueError(
            f'config["qkv"] must be (3, batch, heads, n_tokens, d), got {tuple(qkv.shape)}'
        )
    n_tokens = qkv.shape[3]
    _check_split(n_tokens, world_size)
    device = rank_device()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    q, k, v = qkv.to(device=device, dtype=dtype).unbind(0)
    result: dict[str, Any] = {"dtype": str(dtype).removeprefix("torch.")}
    layouts = list(config["layouts"])
    positions = {layout: sequence_layout(n_tokens, world_size, layout)[rank] for layout in layouts}
    local = {
        layout: [t[:, :, positions[layout].to(device)].contiguous() for t in (q, k, v)]
        for layout in layouts
    }
    runs: dict[str, list[tuple[float, dict[str, Any]]]] = {layout: [] for layout in layouts}
    outs = {}
    # The layouts take turns, so that a busy machine slows them alike; the first round warms up.
    repeats = check_int(config["repeats"], 'config["repeats"]')
    for _ in range(repeats + 1):
        for layout in layouts:
            stats: dict[str, Any] = {}
            dist.barrier()  # every rank starts together: the ring waits for the slowest
            timer = Timer()  # the wall clock, stopped after the GPU has finished
            outs[layout] = ring_attention(*local[layout], layout=layout, stats=stats)
            runs[layout].append((timer.stop(), stats))
    for layout in layouts:
        timed = runs[layout][1:]
        result[layout] = {
            "positions": positions[layout],
            "out": outs[layout].cpu(),
            "tiles": timed[-1][1]["tiles"],
            # the fastest of the calls: the others only add what other programs took from us
            "compute_seconds": min(s["compute_seconds"] for _, s in timed),
            "seconds": min(t for t, _ in timed),
        }
    if config.get("torch"):
        try:
            result["torch"] = _torch_context_parallel(q, k, v, world_size, repeats)
        except Exception as err:
            if device.type == "cuda":
                raise  # on GPUs it must work: a failure there is a bug to see
            result["torch"] = {"error": f"{type(err).__name__}: {err}"}
        dist.barrier()
    return result
