"""Expert parallelism: a mixture-of-experts layer in one process, and its experts spread over
processes.

:class:`MoE` sends each token to ``top_k`` of its ``n_experts`` MLPs, chosen by a router (a
linear layer and a softmax). Each expert takes at most :func:`expert_capacity` tokens; the
rest are dropped (their output is 0, so a residual connection passes them on unchanged), in
the order of the tokens (:func:`keep_within_capacity`). :func:`balance_loss` is the Switch
Transformer's auxiliary loss, which pushes the router towards an even load.

:func:`expert_parallel_worker` gives each rank ``n_experts / world_size`` experts and a slice
of the tokens. Each rank sends every token to the ranks of its experts and gets the outputs
back with two ``dist.all_to_all_single`` calls of uneven splits, and the result is the
one-process layer's. :func:`moe_training_run` trains a small classifier with such a layer on
Fashion-MNIST rows, with or without the balance loss, and records the load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from gpukit._checks import check_int, check_number, check_type
from gpukit.parallel import rank_device

__all__ = [
    "MoE",
    "Routing",
    "RowMoE",
    "balance_loss",
    "expert_capacity",
    "expert_parallel_worker",
    "keep_within_capacity",
    "moe_training_run",
]


def expert_capacity(n_tokens: int, n_experts: int, top_k: int, capacity_factor: float) -> int:
    """How many tokens each expert takes: ``ceil(capacity_factor * n_tokens * top_k / n_experts)``.

    With an even load every expert gets ``n_tokens * top_k / n_experts`` tokens; the capacity
    factor is the slack above that (1.25: a quarter more).

    Example:
        >>> expert_capacity(1024, 8, 2, 1.25)
        320
    """
    check_int(n_tokens, "n_tokens")
    check_int(n_experts, "n_experts")
    check_int(top_k, "top_k")
    check_number(capacity_factor, "capacity_factor")
    return math.ceil(capacity_factor * n_tokens * top_k / n_experts)


def keep_within_capacity(experts: torch.Tensor, n_experts: int, capacity: int) -> torch.Tensor:
    """For a 1-D sequence of expert numbers (one per assignment, in order of priority), which
    assignments fit: each expert keeps its first ``capacity`` and drops the rest.

    Example:
        >>> keep_within_capacity(torch.tensor([0, 1, 0, 0, 1]), 2, 2).tolist()
        [True, True, True, False, True]
    """
    check_type(experts, "experts", torch.Tensor, "a 1-D integer tensor")
    if experts.dim() != 1 or experts.is_floating_point():
        raise ValueError(
            f"experts must be a 1-D integer tensor, got {experts.dtype} {tuple(experts.shape)}"
        )
    check_int(n_experts, "n_experts")
    check_int(capacity, "capacity", 0)
    one_hot = F.one_hot(experts, n_experts)
    # the place of each assignment in its expert's queue: 0 for the first, 1 for the next...
    place = (one_hot.cumsum(dim=0) * one_hot).sum(dim=1) - 1
    return place < capacity


@dataclass(frozen=True)
class Routing:
    """A router's decision for ``T`` tokens: ``probs`` ``(T, n_experts)`` (softmax of the
    router's logits), ``experts`` and ``weights`` ``(T, top_k)`` (the chosen experts and their
    probabilities, renormalized to sum to 1 per token), ``keep`` ``(T, top_k)`` (within
    capacity) and ``counts`` ``(n_experts,)`` (assignments per expert before any is dropped)."""

    probs: torch.Tensor
    experts: torch.Tensor
    weights: torch.Tensor
    keep: torch.Tensor
    counts: torch.Tensor


def balance_loss(probs: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
    """The Switch Transformer's auxiliary balance loss ``n_experts * sum_i f_i * P_i``.

    ``f_i`` is the share of the assignments that went to expert ``i`` (``experts``, any shape of
    expert numbers), ``P_i`` the mean router probability of expert ``i`` over the tokens
    (``probs``, ``(T, n_experts)``). It is 1 when both are even, and grows as the router
    favours some experts; only ``P`` carries a gradient.

    Example:
        >>> probs = torch.full((4, 2), 0.5)
        >>> balance_loss(probs, torch.tensor([[0], [1], [0], [1]])).item()
        1.0
        >>> everything_to_0 = torch.zeros(4, 1, dtype=torch.long)
        >>> round(balance_loss(torch.tensor([[0.9, 0.1]] * 4), everything_to_0).item(), 4)
        1.8
    """
    check_type(probs, "probs", torch.Tensor, "a (tokens, n_experts) tensor")
    check_type(experts, "experts", torch.Tensor, "an integer tensor of expert numbers")
    if probs.dim() != 2:
        raise ValueError(f"probs must be (tokens, n_experts), got {tuple(probs.shape)}")
    n_experts = probs.shape[1]
    share = torch.bincount(experts.flatten(), minlength=n_experts).float() / experts.numel()
    return n_experts * (share * probs.mean(dim=0)).sum()


class MoE(nn.Module):
    """A mixture-of-experts layer: ``n_experts`` MLPs of ``d_model -> d_hidden -> d_model``
    (GELU, no biases), a router (a linear layer without bias, then a softmax), top-k routing
    and a capacity per expert.

    ``forward(x)`` takes tokens ``(T, d_model)`` and returns ``(T, d_model)``: the sum over
    each token's chosen experts of the expert's output (:meth:`expert`) times its weight,
    without the assignments dropped for capacity. The experts' weights are stacked, ``w1``
    ``(n_experts, d_hidden, d_model)`` and ``w2`` ``(n_experts, d_model, d_hidden)``, so that a
    rank can take a slice of experts and a GPU can multiply them in one grouped matrix
    product. After each call, ``routing`` holds the :class:`Routing` and ``aux_loss`` the
    :func:`balance_loss`. Initialized from ``seed``, so that every process builds the same
    layer.

    Example:
        >>> moe = MoE(d_model=8, d_hidden=16, n_experts=4, top_k=2, capacity_factor=1.0)
        >>> y = moe(torch.randn(10, 8))
        >>> y.shape, moe.routing.counts.sum().item(), int((~moe.routing.keep).sum()) >= 0
        (torch.Size([10, 8]), 20, True)
    """

    def __init__(
        self,
        d_model: int = 32,
        d_hidden: int = 64,
        n_experts: int = 8,
        top_k: int = 2,
        capacity_factor: float = 1.25,
        seed: int = 0,
    ) -> None:
        super().__init__()
        check_int(d_model, "d_model")
        check_int(d_hidden, "d_hidden")
        check_int(n_experts, "n_experts")
        check_int(top_k, "top_k")
        if top_k > n_experts:
            raise ValueError(f"top_k ({top_k}) must be <= n_experts ({n_experts})")
        self.top_k = top_k
        self.capacity_factor = check_number(capacity_factor, "capacity_factor")
        g = torch.Generator().manual_seed(check_int(seed, "seed", 0))
        self.router = nn.Linear(d_model, n_experts, bias=False)
        with torch.no_grad():
            self.router.weight.copy_(torch.randn(n_experts, d_model, generator=g) / d_model**0.5)
        self.w1 = nn.Parameter(
            torch.randn(n_experts, d_hidden, d_model, generator=g) / d_model**0.5
        )
        self.w2 = nn.Parameter(
            torch.randn(n_experts, d_model, d_hidden, generator=g) / d_hidden**0.5
        )
        self.routing: Routing | None = None
        self.aux_loss: torch.Tensor | None = None

    @property
    def n_experts(self) -> int:
        return self.w1.shape[0]

    def expert(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """Expert ``e``'s MLP on tokens ``x`` ``(T, d_model)``: ``gelu(x W1[e]^T) W2[e]^T``."""
        return F.gelu(x @ self.w1[e].T) @ self.w2[e].T

    def route(self, x: torch.Tensor) -> Routing:
        """The router's decision for tokens ``x`` ``(T, d_model)``, capacity applied."""
        probs = torch.softmax(self.router(x), dim=-1)
        weights, experts = probs.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        capacity = expert_capacity(len(x), self.n_experts, self.top_k, self.capacity_factor)
        # priority: token by token, in order (the flattening is token-major)
        keep = keep_within_capacity(experts.flatten(), self.n_experts, capacity).view_as(experts)
        counts = torch.bincount(experts.flatten(), minlength=self.n_experts)
        return Routing(probs, experts, weights, keep, counts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's output for tokens ``x`` ``(T, d_model)``; sets ``routing`` and
        ``aux_loss``."""
        if x.dim() != 2 or x.shape[1] != self.w1.shape[2]:
            raise ValueError(f"x must be (tokens, {self.w1.shape[2]}), got {tuple(x.shape)}")
        routing = self.route(x)
        self.routing = routing
        self.aux_loss = balance_loss(routing.probs, routing.experts)
        y = torch.zeros_like(x)
        for e in range(self.n_experts):
            token, slot = torch.nonzero((routing.experts == e) & routing.keep, as_tuple=True)
            out = self.expert(e, x[token])
            y = y.index_add(0, token, routing.weights[token, slot, None] * out)
        return y


class RowMoE(nn.Module):
    """A Fashion-MNIST classifier around one :class:`MoE` layer: each row of pixels is a token
    (28 of 28 features), embedded with its position, then ``x + moe(norm(x))``, averaged over
    the tokens and classified. ``tokens(X)`` gives the MoE layer's input ``(B * 28, d_model)``.

    Example:
        >>> net = RowMoE(d_model=16, d_hidden=32, n_experts=4)
        >>> net(torch.rand(3, 1, 28, 28)).shape, net.tokens(torch.rand(3, 1, 28, 28)).shape
        (torch.Size([3, 10]), torch.Size([84, 16]))
    """

    def __init__(self, d_model: int = 32, seed: int = 0, **moe: Any) -> None:
        super().__init__()
        check_int(d_model, "d_model")
        torch.manual_seed(check_int(seed, "seed", 0))
        self.embed = nn.Linear(28, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(28, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.moe = MoE(d_model=d_model, seed=seed, **moe)
        self.head = nn.Linear(d_model, 10)

    def tokens(self, X: torch.Tensor) -> torch.Tensor:
        """The MoE layer's input for images ``X`` ``(B, 1, 28, 28)``: ``(B * 28, d_model)``."""
        h = self.embed(X.reshape(len(X), 28, 28)) + self.position
        return self.norm(h).reshape(-1, h.shape[-1])

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """The class scores ``(B, 10)`` of images ``X`` ``(B, 1, 28, 28)``."""
        h = self.embed(X.reshape(len(X), 28, 28)) + self.position
        h = h + self.moe(self.norm(h).reshape(-1, h.shape[-1])).view_as(h)
        return self.head(h.mean(dim=1))


def moe_training_run(
    batches: list[tuple[torch.Tensor, torch.Tensor]],
    *,
    aux_weight: float = 0.0,
    lr: float = 3e-3,
    **model: Any,
) -> dict[str, Any]:
    """Train a :class:`RowMoE` (built from ``model``) with Adam on ``batches``, adding
    ``aux_weight`` times the balance loss, and record at every step the loss, the balance
    loss, the load of the busiest expert over the mean load, and the share of the assignments
    dropped. Returns those lists and the trained ``net``.

    Example:
        >>> batches = [(torch.rand(8, 1, 28, 28), torch.arange(8)) for _ in range(3)]
        >>> run = moe_training_run(batches, aux_weight=0.01, d_model=8, d_hidden=8, n_experts=4)
        >>> len(run["max_load"]), min(run["max_load"]) >= 1
        (3, True)
    """
    pairs = isinstance(batches, list | tuple) and batches
    if not pairs or not all(isinstance(b, tuple | list) and len(b) == 2 for b in batches):
        raise TypeError(f"batches must be a non-empty list of (X, y) pairs, got {batches!r:.80}")
    check_number(aux_weight, "aux_weight", zero=True)
    check_number(lr, "lr")
    net = RowMoE(**model)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    history: dict[str, Any] = {"loss": [], "aux_loss": [], "max_load": [], "dropped": []}
    threads = torch.get_num_threads()
    # Small matrices, many small operations: a second thread only waits for the first (on a
    # busy 2-core machine one step took 47 times as long with two threads as with one).
    torch.set_num_threads(1)
    try:
        _train(net, optimizer, batches, aux_weight, history)
    finally:
        torch.set_num_threads(threads)
    history["net"] = net
    return history


def _train(
    net: RowMoE,
    optimizer: torch.optim.Optimizer,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
    aux_weight: float,
    history: dict[str, Any],
) -> None:
    for X, y in batches:
        loss = F.cross_entropy(net(X), y)
        routing = net.moe.routing
        optimizer.zero_grad()
        (loss + aux_weight * net.moe.aux_loss).backward()
        optimizer.step()
        history["loss"].append(loss.item())
        history["aux_loss"].append(net.moe.aux_loss.item())
        history["max_load"].append((routing.counts.max() / routing.counts.float().mean()).item())
        history["dropped"].append((~routing.keep).float().mean().item())


# --------------------------------------------------------------------------- expert parallelism


def expert_parallel_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any]:
    """A :func:`gpukit.parallel.launch` worker: the :class:`MoE` layer of ``config["model"]``
    (its keyword arguments) with ``config["state"]`` (a state dict, optional) applied to the
    tokens ``config["x"]`` ``(T, d_model)``, its experts spread over the ranks.

    Rank ``r`` holds experts ``r * E/W`` to ``(r + 1) * E/W - 1`` and routes tokens ``r * T/W``
    to ``(r + 1) * T/W - 1``. It sends each assignment (the token's features and the expert's
    number) to the rank of its expert, grouped by destination: an uneven split, exchanged
    first. Each rank then drops, per expert, the assignments past the capacity, in the order
    they arrived (rank 0's first, each rank's in token order: the one-process order), runs its
    experts and sends the outputs back the same way; the sender weights them and adds them up.
    Returns this rank's output rows (``y``), the rows it ``sent`` to each rank, the assignments
    it ``received`` for each of its experts, and how many of those it ``dropped``.

    ``world_size`` must divide the number of experts and of tokens; the error names the sizes
    that do, before any collective.
    """
    check_type(config, "config", dict, "a dict")
    for key in ("model", "x"):
        if key not in config:
            raise ValueError(f"config lacks {key!r} (see the docstring)")
    moe = MoE(**config["model"])
    if "state" in config:
        moe.load_state_dict(config["state"])
    x = config["x"]
    n_experts, n_tokens = moe.n_experts, len(x)
    if n_experts % world_size or n_tokens % world_size:
        accepted = [w for w in range(1, n_experts + 1) if n_experts % w == 0 and n_tokens % w == 0]
        raise ValueError(
            f"world_size ({world_size}) must divide n_experts ({n_experts}) and the tokens "
            f"({n_tokens}); accepted world sizes {accepted}"
        )
    device = rank_device()
    moe = moe.to(device)
    per_rank, mine = n_experts // world_size, n_tokens // world_size
    x = x[rank * mine : (rank + 1) * mine].to(device)

    # [ep-all-to-all]
    def all_to_all(tensor: torch.Tensor, send: list[int], receive: list[int]) -> torch.Tensor:
        """``dist.all_to_all_single`` with uneven splits: ``send[r]`` rows to rank ``r``,
        ``receive[r]`` rows from it."""
        out = tensor.new_empty((sum(receive), *tensor.shape[1:]))
        dist.all_to_all_single(
            out, tensor.contiguous(), output_split_sizes=receive, input_split_sizes=send
        )
        return out

    # [/ep-all-to-all]
    with torch.no_grad():
        # [ep-dispatch]
        probs = torch.softmax(moe.router(x), dim=-1)
        weights, experts = probs.topk(moe.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        token = torch.arange(mine, device=device).repeat_interleave(moe.top_k)
        experts, weights = experts.flatten(), weights.flatten()  # token-major, like route()
        # grouped by destination rank; a stable sort keeps the token order within a group
        order = torch.sort(experts // per_rank, stable=True).indices
        send = torch.bincount(experts // per_rank, minlength=world_size)
        receive = torch.empty_like(send)
        dist.all_to_all_single(receive, send)  # first the sizes: each rank learns what comes
        send, receive = send.tolist(), receive.tolist()
        rows = all_to_all(x[token[order]], send, receive)
        arrived = all_to_all(experts[order], send, receive)
        # [/ep-dispatch]
        # [ep-compute]
        capacity = expert_capacity(n_tokens, n_experts, moe.top_k, moe.capacity_factor)
        keep = keep_within_capacity(arrived, n_experts, capacity)
        out = torch.zeros_like(rows)
        for e in range(rank * per_rank, (rank + 1) * per_rank):
            here = (arrived == e) & keep
            out[here] = moe.expert(e, rows[here])
        back = all_to_all(out, receive, send)  # the outputs return the way they came
        y = torch.zeros_like(x).index_add(0, token[order], weights[order, None] * back)
        # [/ep-compute]
    local = arrived - rank * per_rank
    in_range = (local >= 0) & (local < per_rank)
    return {
        "y": y.cpu(),
        "sent": send,
        "received": torch.bincount(local[in_range], minlength=per_rank).tolist(),
        "dropped": int((~keep).sum()),
    }
