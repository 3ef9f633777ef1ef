"""Beyond data parallelism: a small transformer on Fashion-MNIST (:class:`RowTransformer`) and
:func:`gpukit.parallel.launch` workers that shard it over processes, each checked against the
unsplit model: fully sharded data parallelism with FSDP2 (:func:`fsdp_worker`), tensor
parallelism with DTensor (:func:`tensor_parallel_worker`) and a pipeline
(:func:`pipeline_worker`).

The workers run on CPU processes talking through gloo (a device mesh of type ``"cpu"``) or on
one GPU per rank through NCCL, whichever :func:`gpukit.parallel.launch` chose.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from gpukit._checks import check_int, check_type
from gpukit.data import load_data_fashion_mnist
from gpukit.parallel import rank_device

__all__ = [
    "RowTransformer",
    "apply_fsdp",
    "apply_tensor_parallel",
    "bubble_fraction",
    "fashion_batches",
    "fsdp_worker",
    "in_sequence",
    "pipeline_worker",
    "reference_steps",
    "sharded_traffic",
    "tensor_parallel_ranks",
    "tensor_parallel_worker",
]

ROWS = 28  # a Fashion-MNIST image is 28 rows of 28 pixels: 28 tokens of 28 features


class Attention(nn.Module):
    """Multi-head self-attention with separate query, key, value and output projections.

    The heads are found from the projections' width (``view(..., -1, head_dim)``), so a
    tensor-parallel rank that holds only some columns of ``q``, ``k`` and ``v`` computes its
    own heads without knowing how many there are in all.
    """

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        # No bias for the keys: it adds the same number to all scores of a query, which the
        # softmax ignores. Its gradient is zero up to rounding, and Adam would turn that
        # rounding noise into full-size steps that differ from run to run.
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens = x.shape[:2]

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, tokens, -1, self.head_dim).transpose(1, 2)

        y = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)))
        return self.out(y.transpose(1, 2).reshape(batch, tokens, -1))


class MLP(nn.Module):
    """The feed-forward part of a block: ``d_model -> 4 d_model -> d_model`` with GELU."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, 4 * d_model)
        self.down = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """A pre-norm transformer block: ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class RowEmbedding(nn.Module):
    """Each row of an image becomes a token: a linear map of its 28 pixels plus a position."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.proj = nn.Linear(ROWS, d_model)
        self.pos = nn.Parameter(0.02 * torch.randn(ROWS, d_model))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.proj(X.reshape(len(X), ROWS, ROWS)) + self.pos


class ClassHead(nn.Module):
    """Layer norm, the mean over the tokens, and a linear map to the 10 class scores."""

    def __init__(self, d_model: int, num_classes: int = 10) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.linear = nn.Linear(d_model, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.norm(x).mean(dim=1))


class RowTransformer(nn.Module):
    """A small transformer that classifies Fashion-MNIST images read as 28 tokens (rows).

    ``embed``, the ``blocks`` (a ``ModuleDict`` keyed ``"0"``, ``"1"``, ...) and ``head`` may
    each be removed (set to ``None``, or a block deleted): what is left is a pipeline stage
    whose parameters keep the names they have in the whole model. The weights are drawn from
    ``seed``, so two models made alike are equal.

    Example:
        >>> net = RowTransformer(d_model=32, n_heads=4, n_blocks=2)
        >>> net(torch.rand(5, 1, 28, 28)).shape
        torch.Size([5, 10])
        >>> sum(p.numel() for p in net.parameters())
        27562
    """

    def __init__(self, d_model: int = 64, n_heads: int = 4, n_blocks: int = 2, seed: int = 0):
        super().__init__()
        check_int(d_model, "d_model")
        check_int(n_heads, "n_heads")
        check_int(n_blocks, "n_blocks")
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads ({n_heads}), got {d_model}")
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.embed: RowEmbedding | None = RowEmbedding(d_model)
            self.blocks = nn.ModuleDict({str(i): Block(d_model, n_heads) for i in range(n_blocks)})
            self.head: ClassHead | None = ClassHead(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores for images ``(B, 1, 28, 28)``; a stage takes and gives what it has."""
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks.values():
            x = block(x)
        return x if self.head is None else self.head(x)


def fashion_batches(
    n_steps: int, batch_size: int, root: str | Path | None = None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The first ``n_steps`` minibatches of ``batch_size`` Fashion-MNIST training images, in a
    fixed order: every rank and the one-process reference see the same examples.

    Example:
        >>> from gpukit.data import DataNotFoundError
        >>> try:
        ...     batches = fashion_batches(3, 8)
        ... except DataNotFoundError:
        ...     pass  # no data here and no network
        ... else:
        ...     assert len(batches) == 3 and batches[0][0].shape == (8, 1, 28, 28)
    """
    check_int(n_steps, "n_steps")
    check_int(batch_size, "batch_size")
    train_iter, _ = load_data_fashion_mnist(batch_size, root=root, n_train=n_steps * batch_size)
    X, y = train_iter.dataset.tensors
    return list(zip(X.split(batch_size), y.split(batch_size), strict=True))


def reference_steps(
    net: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], lr: float
) -> list[float]:
    """Train ``net`` in this one process with AdamW, one step per batch; return the losses.

    The yardstick of the workers: a sharded run must end with the same weights.

    Example:
        >>> net = RowTransformer(d_model=16, n_heads=2, n_blocks=1)
        >>> X, y = torch.rand(4, 1, 28, 28), torch.arange(4)
        >>> losses = reference_steps(net, [(X, y)] * 3, lr=0.01)
        >>> losses[-1] < losses[0]
        True
    """
    check_type(net, "net", nn.Module, "a torch.nn.Module")
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    losses = []
    for X, y in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(net(X), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def sharded_traffic(
    n_params: int, world_size: int, param_bytes: int = 4, grad_bytes: int = 4
) -> dict[str, float]:
    """Bytes each rank sends per training step: DDP's all-reduce against FSDP's collectives.

    A ring all-reduce of the gradients sends ``2 (n - 1) / n`` times their size; FSDP instead
    all-gathers the parameters in the forward pass, again in the backward pass (after
    ``reshard_after_forward`` freed them), and reduce-scatters the gradients: three times
    ``(n - 1) / n``. The gathers carry ``param_bytes`` a parameter (2 when a
    ``MixedPrecisionPolicy`` computes in bf16), the reductions ``grad_bytes``. In one dtype
    FSDP sends 1.5 times DDP's bytes, without resharding as many; bf16 gathers with fp32
    reductions send as many as DDP in fp32.

    Example:
        >>> t = sharded_traffic(1_000_000, 4)
        >>> t["ddp all-reduce"], t["fsdp"] / t["ddp all-reduce"]
        (6000000.0, 1.5)
        >>> sharded_traffic(1_000_000, 4, param_bytes=2)["fsdp"] / t["ddp all-reduce"]
        1.0
    """
    check_int(n_params, "n_params")
    check_int(world_size, "world_size")
    check_int(param_bytes, "param_bytes")
    check_int(grad_bytes, "grad_bytes")
    share = (world_size - 1) / world_size * n_params
    return {
        "ddp all-reduce": 2 * share * grad_bytes,
        "fsdp": share * (2 * param_bytes + grad_bytes),
        "fsdp, no reshard": share * (param_bytes + grad_bytes),
    }


def tensor_parallel_ranks(n_heads: int, gpus: int, cpu_ranks: int = 2) -> int:
    """How many ranks to split a model of ``n_heads`` heads over by tensor parallelism: one per
    GPU, as many as divide the heads (each rank must compute whole heads), else ``cpu_ranks``
    CPU processes when there are fewer than two GPUs.

    Example:
        >>> [tensor_parallel_ranks(4, gpus) for gpus in (0, 1, 2, 3, 4, 8)]
        [2, 2, 2, 2, 4, 4]
    """
    check_int(n_heads, "n_heads")
    check_int(gpus, "gpus", 0)
    check_int(cpu_ranks, "cpu_ranks")
    if n_heads % cpu_ranks:
        raise ValueError(f"cpu_ranks ({cpu_ranks}) must divide n_heads ({n_heads})")
    if gpus < 2:
        return cpu_ranks
    return max(d for d in range(1, gpus + 1) if n_heads % d == 0)


def bubble_fraction(n_stages: int, n_microbatches: int) -> float:
    """The idle share of a pipeline step (GPipe and 1F1B alike): ``(p - 1) / (m + p - 1)``.

    Each of ``p`` stages works on ``m`` microbatches and waits ``p - 1`` slots while the
    pipeline fills and drains, out of ``m + p - 1`` slots in all, forward and backward alike.

    Example:
        >>> bubble_fraction(4, 4), bubble_fraction(4, 32)
        (0.42857142857142855, 0.08571428571428572)
    """
    check_int(n_stages, "n_stages")
    check_int(n_microbatches, "n_microbatches")
    return (n_stages - 1) / (n_microbatches + n_stages - 1)


# --------------------------------------------------------------------------- workers


def _mesh(shape: tuple[int, ...], names: tuple[str, ...] | None = None) -> Any:
    """A device mesh over all ranks, of the type of this rank's device (``"cpu"`` under gloo:
    ``init_device_mesh`` would otherwise assume CUDA)."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(rank_device().type, shape, mesh_dim_names=names)


def _local_bytes(tensors: Any) -> int:
    """Bytes of this rank's pieces of ``tensors`` (the local shard of a DTensor)."""
    from torch.distributed.tensor import DTensor

    total = 0
    for t in tensors:
        local = t.to_local() if isinstance(t, DTensor) else t
        total += local.numel() * local.element_size()
    return total


def _full_state(net: nn.Module) -> dict[str, torch.Tensor]:
    """The whole model's weights on this rank's CPU, DTensors gathered (a collective)."""
    import logging

    from torch.distributed.tensor import DTensor

    # On a 2-D mesh DTensor warns that it gathers in two steps, one per mesh dimension: true,
    # and irrelevant for a check that runs once, so the ranks' output stays free of it.
    redistribute_log = logging.getLogger("torch.distributed.tensor._redistribute")
    level = redistribute_log.level
    redistribute_log.setLevel(logging.ERROR)
    try:
        return {
            name: (p.full_tensor() if isinstance(p, DTensor) else p).detach().cpu()
            for name, p in net.named_parameters()
        }
    finally:
        redistribute_log.setLevel(level)


def _profiled(on: bool) -> Any:
    """A CPU profiler recording shapes when ``on`` (one step is enough), else nothing."""
    from torch.profiler import ProfilerActivity, profile

    if not on:
        return contextlib.nullcontext()
    return profile(activities=[ProfilerActivity.CPU], record_shapes=True)


DTYPE_BYTES = {"float": 4, "double": 8, "c10::BFloat16": 2, "c10::Half": 2, "unsigned char": 1}


def _collectives(prof: Any, gather_group: int = 1) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The collectives a profiled step issued: kind -> the elements of each call's full tensor,
    and kind -> the bytes of all calls' full tensors (their dtypes as recorded).

    FSDP2 calls c10d's all-gather and reduce-scatter (arguments: output, input); DTensor calls
    the functional all-reduce, reduce-scatter (arguments: the full tensor) and all-gather
    (argument: one rank's piece, of a group of ``gather_group`` ranks).
    """
    kinds = {
        "c10d::_allgather_base_": ("all-gather", 0, 1),
        "c10d::_reduce_scatter_base_": ("reduce-scatter", 1, 1),
        "_c10d_functional::all_reduce": ("all-reduce", 0, 1),
        "_c10d_functional::reduce_scatter_tensor": ("reduce-scatter", 0, 1),
        "_c10d_functional::all_gather_into_tensor": ("all-gather", 0, gather_group),
    }
    found: dict[str, list[int]] = {}
    nbytes: dict[str, int] = {}
    # The profiler's raw (kineto) events: each input's shape and dtype, in torch 2.11 as in
    # later releases (the summaries of ``prof.events()`` hold dtypes from torch 2.12 on).
    for event in prof.profiler.kineto_results.events():
        if event.name() in kinds:
            kind, which, pieces = kinds[event.name()]
            elements = pieces * math.prod(event.shapes()[which])
            found.setdefault(kind, []).append(elements)
            dtypes = event.dtypes()
            dtype = dtypes[which] if dtypes else "float"
            nbytes[kind] = nbytes.get(kind, 0) + elements * DTYPE_BYTES.get(dtype, 4)
    return found, nbytes


def _check_config(config: object, required: tuple[str, ...]) -> dict[str, Any]:
    """A worker's ``config``: a dict that holds at least the keys ``required``."""
    check_type(config, "config", dict, "a dict")
    missing = [key for key in required if key not in config]  # type: ignore[operator]
    if missing:
        raise ValueError(f"config must hold {', '.join(required)}; missing: {', '.join(missing)}")
    return config  # type: ignore[return-value]


def apply_fsdp(
    net: RowTransformer, mesh: Any, *, reshard_after_forward: bool = True, mixed: bool = False
) -> RowTransformer:
    """Shard ``net`` in place with FSDP2 over the ranks of ``mesh`` (a 1-D device mesh) and
    return it: one unit per block, whose weights are gathered and freed together, then the root
    with what is left (the embedding and the head).

    ``reshard_after_forward`` frees each block's gathered weights after its forward pass (and
    gathers them again for the backward pass); the root keeps its weights, since the backward
    pass begins with the head. ``mixed`` computes in bf16 on fp32 master shards. Call it in a
    process group, as :func:`fsdp_worker` does.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    check_type(net, "net", RowTransformer, "a RowTransformer")
    # [fsdp-core]
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if mixed else None,  # what the gathered weights compute in
        reduce_dtype=torch.float32 if mixed else None,  # what the gradients are summed in
    )
    for block in net.blocks.values():
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard_after_forward, mp_policy=policy)
    # The root: freed after forward, it would be gathered again at once for the head's backward.
    fully_shard(net, mesh=mesh, reshard_after_forward=False, mp_policy=policy)
    # [/fsdp-core]
    return net


def _check_split(batches: Any, parts: int, what: str, accepted: str) -> None:
    """Each minibatch of ``batches`` must cut into ``parts`` equal slices: each slice's loss is
    a mean, and the mean of unequal slices' means is not the minibatch's mean."""
    sizes = sorted({len(X) for X, _ in batches})
    uneven = [size for size in sizes if size % parts]
    if uneven:
        raise ValueError(
            f"{what} ({parts}) must divide the minibatch size ({uneven[0]}): "
            f"each of the equal slices computes a mean loss; {accepted}"
        )


def fsdp_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any]:
    """A :func:`gpukit.parallel.launch` worker: train :class:`RowTransformer` with FSDP2.

    ``config`` holds ``model`` (keyword arguments of :class:`RowTransformer`), ``batches``
    (from :func:`fashion_batches`; each rank takes its slice of every minibatch), ``lr``, and
    ``variants``: a list of dicts with ``reshard_after_forward`` (bool) and ``mixed`` (bool:
    bf16 parameters in forward and backward, gradients reduced in fp32). For each variant a
    fresh model is sharded by :func:`apply_fsdp` on a 1-D mesh and trained with AdamW, one step
    per batch.

    Returns, per variant: ``losses`` (averaged over the ranks), this rank's ``param_bytes``,
    ``grad_bytes`` and ``optimizer_bytes``, ``unsharded_after_forward`` (parameters held
    whole between forward and backward), the ``collectives`` of one profiled step (kind -> the
    elements of each call's full tensor) and their ``collective_bytes`` (kind -> bytes, in the
    dtypes they moved), and on rank 0 the full trained ``state``. The ranks must divide every
    minibatch evenly.

    Example:
        >>> from gpukit.parallel import launch
        >>> X = torch.rand(8, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        >>> y = torch.arange(8) % 10
        >>> config = {"model": {"d_model": 16, "n_heads": 2, "n_blocks": 1}, "lr": 0.01,
        ...           "batches": [(X, y)] * 2, "variants": [{"reshard_after_forward": True}]}
        >>> (run,) = launch(fsdp_worker, 2, config, run_timeout_s=300)[0]
        >>> reference = RowTransformer(16, 2, 1)
        >>> _ = reference_steps(reference, config["batches"], 0.01)
        >>> max((run["state"][k] - p).abs().max().item()
        ...     for k, p in reference.named_parameters()) < 1e-4
        True
    """
    _check_config(config, ("model", "batches", "lr", "variants"))
    _check_split(config["batches"], world_size, "world_size", "any world size that divides it")
    from torch.distributed.tensor import DTensor

    device = rank_device()
    mesh = _mesh((world_size,))
    results = []
    for variant in config["variants"]:
        net = apply_fsdp(
            RowTransformer(**config["model"]).to(device),
            mesh,
            reshard_after_forward=variant["reshard_after_forward"],
            mixed=bool(variant.get("mixed")),
        )
        optimizer = torch.optim.AdamW(net.parameters(), lr=config["lr"])
        losses = []
        unsharded = 0
        collectives: dict[str, list[int]] = {}
        collective_bytes: dict[str, int] = {}
        for step, (X, y) in enumerate(config["batches"]):
            X, y = X.tensor_split(world_size)[rank].to(device), y.tensor_split(world_size)[rank]
            optimizer.zero_grad()
            with _profiled(step == 0) as prof:
                loss = F.cross_entropy(net(X).float(), y.to(device))
                if step == 0:  # what stays whole between forward and backward
                    unsharded = sum(
                        p.numel() * p.element_size()
                        for block in net.blocks.values()
                        for p in block.parameters()
                        if not isinstance(p, DTensor)
                    )
                loss.backward()
            if step == 0:
                collectives, collective_bytes = _collectives(prof)
            optimizer.step()
            # Each rank saw its slice: the minibatch's loss is the mean over the ranks.
            total = loss.detach().reshape(1)
            dist.all_reduce(total)
            losses.append(total.item() / world_size)
        state_tensors = [t for s in optimizer.state.values() for t in s.values() if t.dim() > 0]
        result = {
            "losses": losses,
            "param_bytes": _local_bytes(net.parameters()),
            "grad_bytes": _local_bytes(p.grad for p in net.parameters()),
            "optimizer_bytes": _local_bytes(state_tensors),
            "unsharded_after_forward": unsharded,
            "collectives": collectives,
            "collective_bytes": collective_bytes,
        }
        state = _full_state(net)  # every rank takes part in the gathering
        if rank == 0:
            result["state"] = state
        results.append(result)
    return results


def _sequence_parallel_plan() -> dict[str, Any]:
    """The parts of a block's plan that sequence parallelism changes: the layer norms work on
    each rank's slice of the tokens; the slices are all-gathered before attention and the MLP,
    whose row-wise layers end in a reduce-scatter over the tokens instead of an all-reduce."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
    )

    def gather() -> Any:
        return PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))

    return {
        "norm1": SequenceParallel(),
        "attn": gather(),
        "attn.out": RowwiseParallel(output_layouts=Shard(1)),
        "norm2": SequenceParallel(),
        "mlp": gather(),
        "mlp.down": RowwiseParallel(output_layouts=Shard(1)),
    }


def apply_tensor_parallel(
    net: RowTransformer, mesh: Any, *, sequence_parallel: bool = False
) -> RowTransformer:
    """Split every block of ``net`` in place by tensor parallelism over the ranks of ``mesh``
    (a 1-D device mesh) and return it.

    ``q``, ``k``, ``v`` and ``mlp.up`` are split by columns (``ColwiseParallel``: each rank
    computes some heads and some hidden units), ``attn.out`` and ``mlp.down`` by rows
    (``RowwiseParallel``: partial sums, added by an all-reduce); the embedding, the head and
    the layer norms stay whole on every rank. The ranks must divide the heads. With
    ``sequence_parallel``, the layer norms and the residual stream between the blocks hold
    each rank's slice of the tokens instead (the ranks must divide the 28 tokens). Call it in
    a process group, as :func:`tensor_parallel_worker` does.
    """
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        PrepareModuleOutput,
        RowwiseParallel,
        parallelize_module,
    )

    check_type(net, "net", RowTransformer, "a RowTransformer")
    n_heads = next(iter(net.blocks.values())).attn.n_heads if len(net.blocks) else 1
    _check_heads(n_heads, mesh.size())
    if sequence_parallel:
        _check_tokens(mesh.size())
    # [tp-core]
    plan = {
        "attn.q": ColwiseParallel(),
        "attn.k": ColwiseParallel(),
        "attn.v": ColwiseParallel(),
        "attn.out": RowwiseParallel(),
        "mlp.up": ColwiseParallel(),
        "mlp.down": RowwiseParallel(),
    }
    # [/tp-core]
    if sequence_parallel:
        plan.update(_sequence_parallel_plan())
        # Between the blocks each rank holds a slice of the tokens: cut after the embedding,
        # gathered again before the head.
        parallelize_module(
            net,
            mesh,
            {
                "embed": PrepareModuleOutput(
                    output_layouts=Replicate(), desired_output_layouts=Shard(1)
                ),
                "head": PrepareModuleInput(
                    input_layouts=(Shard(1),),
                    desired_input_layouts=(Replicate(),),
                    use_local_output=True,
                ),
            },
        )
    # [tp-apply]
    for block in net.blocks.values():
        parallelize_module(block, mesh, plan)
    # [/tp-apply]
    return net


def _check_heads(n_heads: int, ranks: int) -> None:
    """Column-wise sharding gives each rank ``n_heads / ranks`` whole heads, or fails."""
    if n_heads % ranks:
        accepted = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
        raise ValueError(
            f"tensor parallelism over {ranks} ranks needs n_heads ({n_heads}) to be a multiple "
            f"of the ranks (each rank computes whole heads): accepted tensor-parallel sizes "
            f"{accepted}; tensor_parallel_ranks() picks one for a number of GPUs"
        )


def _check_tokens(ranks: int) -> None:
    """Sequence parallelism cuts the 28 tokens into equal slices (gloo's collectives need them
    equal), or fails."""
    if ROWS % ranks:
        accepted = [d for d in range(1, ROWS + 1) if ROWS % d == 0]
        raise ValueError(
            f"sequence parallelism over {ranks} ranks needs the {ROWS} tokens of an image to "
            f"cut into equal slices: accepted sizes {accepted}"
        )


def tensor_parallel_worker(
    rank: int, world_size: int, config: dict[str, Any]
) -> dict[str, Any] | None:
    """A :func:`gpukit.parallel.launch` worker: train :class:`RowTransformer` split by tensor
    parallelism (:func:`apply_tensor_parallel`) over all ranks.

    Every rank sees the whole minibatch. ``config`` holds ``model``, ``batches`` and ``lr`` as
    for :func:`fsdp_worker`; ``model["n_heads"]`` must be a multiple of the tensor-parallel
    ranks. Returns, on rank 0: ``losses``, this rank's ``param_bytes``, the ``collectives`` of
    one profiled step, and the full trained ``state``.

    With ``config["data_parallel"] = d`` (default 1), the ranks form a 2-D mesh of ``d`` rows
    (``"dp"``) by ``world_size // d`` columns (``"tp"``): tensor parallelism within a row, and
    FSDP2 (``fully_shard`` on the ``"dp"`` dimension) across the rows, each row training on its
    slice of every minibatch (``d`` must divide ``world_size`` and the minibatch size). With
    ``config["sequence_parallel"] = True`` (and one row), the layer norms and the residual
    stream between the blocks hold each rank's slice of the tokens (``SequenceParallel``): the
    row-wise layers end in a reduce-scatter over the tokens, and the slices are all-gathered
    before attention, the MLP and the head.

    Example:
        >>> from gpukit.parallel import launch
        >>> X = torch.rand(8, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        >>> y = torch.arange(8) % 10
        >>> config = {"model": {"d_model": 16, "n_heads": 2, "n_blocks": 1}, "lr": 0.01,
        ...           "batches": [(X, y)] * 2}
        >>> run = launch(tensor_parallel_worker, 2, config, run_timeout_s=300)[0]
        >>> reference = RowTransformer(16, 2, 1)
        >>> _ = reference_steps(reference, config["batches"], 0.01)
        >>> max((run["state"][k] - p).abs().max().item()
        ...     for k, p in reference.named_parameters()) < 1e-4
        True
    """
    _check_config(config, ("model", "batches", "lr"))
    from torch.distributed.fsdp import fully_shard

    dp = config.get("data_parallel", 1)
    if world_size % dp:
        divisors = [d for d in range(1, world_size + 1) if world_size % d == 0]
        raise ValueError(
            f"data_parallel ({dp}) must divide world_size ({world_size}): accepted {divisors}"
        )
    _check_heads(config["model"].get("n_heads", 4), world_size // dp)
    if config.get("sequence_parallel"):
        _check_tokens(world_size // dp)
    _check_split(config["batches"], dp, "data_parallel", "the rows split every minibatch")
    device = rank_device()
    mesh = _mesh((dp, world_size // dp), ("dp", "tp"))
    net = apply_tensor_parallel(
        RowTransformer(**config["model"]).to(device),
        mesh["tp"],
        sequence_parallel=bool(config.get("sequence_parallel")),
    )
    if dp > 1:
        # [tp-2d]
        for block in net.blocks.values():  # each already split within its row
            fully_shard(block, mesh=mesh["dp"])  # FSDP2 shards the pieces across the rows
        fully_shard(net, mesh=mesh["dp"], reshard_after_forward=False)
        # [/tp-2d]
    row = mesh.get_local_rank("dp")
    optimizer = torch.optim.AdamW(net.parameters(), lr=config["lr"])
    losses = []
    collectives: dict[str, list[int]] = {}
    for step, (X, y) in enumerate(config["batches"]):
        X, y = X.tensor_split(dp)[row].to(device), y.tensor_split(dp)[row].to(device)
        optimizer.zero_grad()
        with _profiled(step == 0) as prof:
            loss = F.cross_entropy(net(X), y)
            loss.backward()
        if step == 0:
            collectives, _ = _collectives(prof, world_size // dp)
        optimizer.step()
        total = loss.detach().reshape(1)  # the rows' losses: the minibatch's is their mean
        dist.all_reduce(total)
        losses.append(total.item() / world_size)
    param_bytes = _local_bytes(net.parameters())
    state = _full_state(net)
    if rank != 0:
        return None
    return {
        "losses": losses,
        "param_bytes": param_bytes,
        "collectives": collectives,
        "state": state,
    }


def pipeline_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any]:
    """A :func:`gpukit.parallel.launch` worker: train :class:`RowTransformer` as a pipeline of
    ``world_size`` stages, one per rank, with ``torch.distributed.pipelining``.

    Stage 0 keeps the embedding and the first blocks, the last stage the last blocks and the
    head (``config["model"]["n_blocks"]`` must be a multiple of ``world_size``). ``config``
    holds ``model``, ``batches`` and ``lr`` as for :func:`fsdp_worker`, ``schedule``
    (``"gpipe"`` or ``"1f1b"``) and ``n_microbatches`` (at least ``world_size``, dividing
    every minibatch). Returns this stage's ``state`` (its
    trained parameters, named as in the whole model), ``losses`` (the last stage: the mean over
    the microbatches of each step), and ``busy_seconds`` and ``step_seconds``: per step, the
    seconds this stage spent computing (forward and backward) and the seconds the step took,
    from which its idle share follows.

    Example:
        >>> from gpukit.parallel import launch
        >>> X = torch.rand(8, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        >>> y = torch.arange(8) % 10
        >>> config = {"model": {"d_model": 16, "n_heads": 2, "n_blocks": 2}, "lr": 0.01,
        ...           "batches": [(X, y)] * 2, "schedule": "gpipe", "n_microbatches": 4}
        >>> stages = launch(pipeline_worker, 2, config, run_timeout_s=300)
        >>> state = {**stages[0]["state"], **stages[1]["state"]}
        >>> reference = RowTransformer(16, 2, 2)
        >>> _ = reference_steps(reference, config["batches"], 0.01)
        >>> max((state[k] - p).abs().max().item() for k, p in reference.named_parameters()) < 1e-4
        True
    """
    _check_config(config, ("model", "batches", "lr", "schedule", "n_microbatches"))
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    n_blocks = config["model"].get("n_blocks", 2)
    if n_blocks % world_size:
        accepted = [d for d in range(1, n_blocks + 1) if n_blocks % d == 0]
        raise ValueError(
            f"n_blocks ({n_blocks}) must be a multiple of world_size ({world_size}), as many "
            f"blocks per stage: accepted world sizes {accepted}"
        )
    if config["n_microbatches"] < world_size:
        raise ValueError(
            f"n_microbatches ({config['n_microbatches']}) must be at least the number of stages "
            f"({world_size}): torch's schedules refuse fewer; accepted {world_size} or more"
        )
    _check_split(
        config["batches"], config["n_microbatches"], "n_microbatches", "equal microbatches"
    )
    device = rank_device()
    net = RowTransformer(**config["model"])
    per_stage = n_blocks // world_size
    for i in range(n_blocks):  # keep this stage's blocks, named as in the whole model
        if i // per_stage != rank:
            del net.blocks[str(i)]
    if rank != 0:
        net.embed = None
    if rank != world_size - 1:
        net.head = None
    net.to(device)

    # [pp-stage]
    stage = PipelineStage(net, rank, world_size, device)  # net: this rank's part of the model
    # [/pp-stage]
    busy = [0.0]  # seconds this stage computed in the current step

    def wait_for_device() -> None:
        # A GPU computes after the call has returned: the clock may only be read once it is done.
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def timed(method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            wait_for_device()
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                wait_for_device()
                busy[0] += time.perf_counter() - start

        return run

    # A microbatch's forward and backward pass on this stage: the computing, without the
    # schedule's waiting for activations and gradients from the neighbouring stages.
    stage.forward_one_chunk = timed(stage.forward_one_chunk)  # type: ignore[method-assign]
    stage.backward_one_chunk = timed(stage.backward_one_chunk)  # type: ignore[method-assign]

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(output, target)

    # [pp-schedule]
    kind = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[config["schedule"]]
    schedule = kind(stage, n_microbatches=config["n_microbatches"], loss_fn=loss_fn)
    # [/pp-schedule]
    optimizer = torch.optim.AdamW(net.parameters(), lr=config["lr"])
    losses = []
    step_seconds = []
    busy_seconds = []
    for X, y in config["batches"]:
        optimizer.zero_grad()
        busy[0] = 0.0
        dist.barrier()  # start together: the first stage's clock must not include a wait
        start = time.perf_counter()
        # [pp-step]
        if rank == 0:
            schedule.step(X.to(device))  # cut into microbatches, each sent on when done
        elif rank == world_size - 1:  # the last stage computes the loss
            microbatch_losses: list[torch.Tensor] = []
            schedule.step(target=y.to(device), losses=microbatch_losses)
            losses.append(torch.stack(microbatch_losses).mean().item())
        else:
            schedule.step()
        # [/pp-step]
        wait_for_device()
        step_seconds.append(time.perf_counter() - start)
        busy_seconds.append(busy[0])
        optimizer.step()
    return {
        "state": {name: p.detach().cpu() for name, p in net.named_parameters()},
        "losses": losses,
        "busy_seconds": busy_seconds,
        "step_seconds": step_seconds,
    }


def in_sequence(rank: int, world_size: int, jobs: Sequence[tuple[Any, Any]]) -> list[Any]:
    """A :func:`gpukit.parallel.launch` worker that runs several workers one after the other in
    the same processes: ``jobs`` holds ``(worker, config)`` pairs; returns their results.

    Starting processes costs seconds (each imports PyTorch); a page that runs several
    experiments starts them once.

    Example:
        >>> from gpukit.parallel import launch, ring_allreduce_demo
        >>> runs = launch(in_sequence, 2, [(ring_allreduce_demo, 10)] * 2, run_timeout_s=300)
        >>> [run["max_abs_diff"] for run in runs[0]]
        [0.0, 0.0]
    """
    pairs = isinstance(jobs, Sequence) and not isinstance(jobs, str)
    if not pairs or not all(isinstance(job, tuple | list) and len(job) == 2 for job in jobs):
        raise TypeError(f"jobs must be a sequence of (worker, config) pairs, got {jobs!r}")
    for worker, _ in jobs:
        if not callable(worker):
            raise TypeError(f"jobs must pair a worker function with its config, got {worker!r}")
    return [worker(rank, world_size, config) for worker, config in jobs]
