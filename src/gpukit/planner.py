"""A layout planner: for a transformer (:class:`ModelSpec`) and a cluster (:class:`Cluster`),
the ways to split training over its GPUs (:class:`Layout`) that fit in memory, with their
memory per GPU, bytes sent per GPU and step, and pipeline bubble (:func:`plan_layouts`,
:func:`evaluate_layout`).

Every number comes from a formula that a page of the "Beyond one GPU" part checks against a
measurement: the state of training from :func:`gpukit.memory.training_memory` (16 bytes a
parameter with Adam in mixed precision, divided by the sharded data-parallel degree), FSDP's
and DDP's traffic from :func:`gpukit.sharding.sharded_traffic`, the bubble from
:func:`gpukit.sharding.bubble_fraction`, and tensor parallelism's all-reduces of one activation
each (the sequence-parallel count of the tensor-parallelism page: four all-reduces' worth per
layer and step). Activations follow Korthikanti et al. (2022), "Reducing Activation
Recomputation in Large Transformer Models": 34 bytes per token, feature and layer in 16 bits,
the attention scores not kept (FlashAttention recomputes them).

A layout has five degrees whose product is the number of GPUs: ``dp`` (replicas, DDP),
``fsdp`` (sharded data parallelism), ``tp`` (tensor parallelism with sequence parallelism),
``pp`` (pipeline stages, 1F1B) and ``cp`` (context parallelism, the sequence split over ranks,
keys and values passed around a ring). Ranks are numbered with ``tp`` innermost, then ``cp``,
``fsdp``, ``dp`` and ``pp`` outermost: a group whose ranks fit in one node talks over its
fast links (NVLink), a larger one over the network.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from gpukit._checks import check_int, check_number, check_type
from gpukit.memory import format_bytes, training_memory
from gpukit.sharding import bubble_fraction, sharded_traffic

__all__ = [
    "ACTIVATION_BYTES",
    "Cluster",
    "Layout",
    "ModelSpec",
    "evaluate_layout",
    "layout_table",
    "plan_layouts",
]

#: Bytes the backward pass keeps per token, feature and layer in 16-bit training (Korthikanti
#: et al. 2022, Table 2 without the ``5as/h`` of the attention scores, which FlashAttention
#: does not keep): 11 for attention, 19 for the MLP, 4 for the two layer norms.
ACTIVATION_BYTES = 34
#: With full activation checkpointing a layer keeps only its 16-bit input: 2 bytes per token
#: and feature; one layer at a time is recomputed whole.
CHECKPOINT_BYTES = 2
HALF = 2  # bytes of a bf16 number: weights gathered, activations sent
FULL = 4  # bytes of an fp32 number: gradients reduced


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer and the batch it trains on.

    ``n_params`` counts all parameters; ``12 d_model**2`` of them sit in each of the
    ``n_layers`` layers (attention's four ``d x d`` projections, the MLP's ``d x 4d`` and
    ``4d x d``), the rest (:attr:`other_params`) outside. ``kv_heads`` (default: ``n_heads``)
    is fewer under grouped-query attention. A step trains on ``global_batch`` sequences of
    ``seq_len`` tokens, each GPU computing ``micro_batch`` sequences at a time.

    Example (Llama 2 7B, sequences of 4,096 tokens, a step of 256 of them: 1M tokens):
        >>> llama7b = ModelSpec(6_740_000_000, n_layers=32, d_model=4096, n_heads=32,
        ...                     seq_len=4096, micro_batch=1, global_batch=256)
        >>> f"{llama7b.layer_params:,}", f"{llama7b.other_params:,}"
        ('201,326,592', '297,549,056')
    """

    n_params: int
    n_layers: int
    d_model: int
    n_heads: int
    seq_len: int
    micro_batch: int
    global_batch: int
    kv_heads: int | None = None

    def __post_init__(self) -> None:
        for name in ("n_params", "n_layers", "d_model", "n_heads", "seq_len", "micro_batch"):
            check_int(getattr(self, name), name)
        check_int(self.global_batch, "global_batch")
        if self.kv_heads is not None:
            check_int(self.kv_heads, "kv_heads")
            if self.n_heads % self.kv_heads:
                raise ValueError(f"kv_heads ({self.kv_heads}) must divide n_heads ({self.n_heads})")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})"
            )
        if self.other_params < 0:
            raise ValueError(
                f"n_params ({self.n_params:,}) is less than the {self.n_layers} layers' "
                f"12 * d_model**2 = {self.n_layers * self.layer_params:,} parameters: "
                "check n_layers and d_model"
            )
        if self.global_batch % self.micro_batch:
            raise ValueError(
                f"micro_batch ({self.micro_batch}) must divide global_batch ({self.global_batch})"
            )

    @property
    def layer_params(self) -> int:
        """The parameters of one layer, ``12 d_model**2`` (norms and biases left out)."""
        return 12 * self.d_model**2

    @property
    def other_params(self) -> int:
        """The parameters beyond the layers' ``12 d_model**2`` each, counted outside the layers.

        Mostly the embedding and the output head, but also what a model's layers hold beyond
        ``12 d_model**2`` (Llama's SwiGLU MLP, three matrices, is wider than ``8 d_model**2``;
        the norms) and the rounding of ``n_params``.
        """
        return self.n_params - self.n_layers * self.layer_params

    @property
    def kv_dim(self) -> int:
        """The features of the keys (and of the values), ``d_model * kv_heads / n_heads``."""
        return self.d_model * (self.kv_heads or self.n_heads) // self.n_heads


@dataclass(frozen=True)
class Cluster:
    """``nodes`` machines of ``gpus_per_node`` GPUs with ``memory`` bytes each.

    ``intra_bandwidth`` and ``inter_bandwidth`` are the bytes per second one GPU can send to
    the GPUs of its node (NVLink) and to other nodes (its network port); ``peak_flops`` is
    one GPU's dense bf16 peak, used only to rank the layouts.

    Eight nodes of 8 H100 SXM: NVIDIA's data sheet gives 80 GB, NVLink 900 GB/s counting both
    directions, 989.5 TFLOP/s bf16 dense; each GPU has a 400 Gb/s InfiniBand port.

    Example:
        >>> h100 = Cluster(gpus_per_node=8, nodes=8, memory=80e9, intra_bandwidth=450e9,
        ...                inter_bandwidth=50e9, peak_flops=989.5e12)
        >>> h100.gpus
        64
    """

    gpus_per_node: int
    nodes: int
    memory: float
    intra_bandwidth: float
    inter_bandwidth: float
    peak_flops: float

    def __post_init__(self) -> None:
        check_int(self.gpus_per_node, "gpus_per_node")
        check_int(self.nodes, "nodes")
        for name in ("memory", "intra_bandwidth", "inter_bandwidth", "peak_flops"):
            check_number(getattr(self, name), name)

    @property
    def gpus(self) -> int:
        """All GPUs of the cluster."""
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Layout:
    """One way to split training: five degrees, and what the formulas say it costs.

    Attributes:
        dp: replicas (DDP), each holding the whole state of its shard.
        fsdp: ranks sharing the state by FSDP.
        tp: ranks splitting each layer by tensor (and sequence) parallelism.
        pp: pipeline stages. The product of the five degrees is the number of GPUs.
        cp: ranks splitting each sequence by context parallelism.
        checkpointing: full activation checkpointing (each layer recomputed in the backward
            pass).
        microbatches: microbatches each GPU runs per step, ``global_batch / (dp * fsdp *
            micro_batch)``: the pipeline's ``m``, else gradient accumulation.
        memory: bytes per GPU by part (``parameters``, ``gradients``, ``optimizer state``,
            ``gathered weights``, ``activations``), on the busiest pipeline stage.
        traffic: bytes each GPU sends per step by kind (``data``, ``tensor``, ``context``,
            ``pipeline``); only the kinds whose degree is above 1.
        seconds: each kind's bytes over the link its group spans (NVLink inside a node, the
            network across nodes).
        bubble: the pipeline's idle share, ``(pp - 1) / (microbatches + pp - 1)``.
        compute_seconds: ``6 n_params`` FLOPs per token (8 with checkpointing) over all
            GPUs at their peak: a lower bound of a step's computing.
    """

    dp: int
    fsdp: int
    tp: int
    pp: int
    cp: int
    checkpointing: bool
    microbatches: int
    memory: dict[str, float] = field(compare=False)
    traffic: dict[str, float] = field(compare=False)
    seconds: dict[str, float] = field(compare=False)
    bubble: float
    compute_seconds: float

    @property
    def memory_per_gpu(self) -> float:
        """All parts of :attr:`memory` together."""
        return sum(self.memory.values())

    @property
    def step_seconds(self) -> float:
        """A step's estimate, by which the planner ranks layouts. It is the computing, stretched
        by the bubble, plus the communication it waits for. Tensor parallelism's all-reduces and
        the pipeline's sends sit between the computations that need them; data parallelism's
        collectives and the ring of context parallelism can overlap with computing (FSDP
        prefetches, DDP reduces in buckets during the backward pass), so only their time beyond
        the computing's counts."""
        waited = self.seconds.get("tensor", 0.0) + self.seconds.get("pipeline", 0.0)
        hidden = self.seconds.get("data", 0.0) + self.seconds.get("context", 0.0)
        compute = self.compute_seconds / (1 - self.bubble)
        return compute + waited + max(0.0, hidden - self.compute_seconds)

    @property
    def degrees(self) -> str:
        """The degrees above 1, e.g. ``'fsdp 8'`` or ``'tp 8 x pp 8'``."""
        named = [(n, getattr(self, n)) for n in ("dp", "fsdp", "tp", "pp", "cp")]
        return " x ".join(f"{n} {d}" for n, d in named if d > 1) or "one GPU"

    def __str__(self) -> str:
        ckpt = ", checkpointing" if self.checkpointing else ""
        return (
            f"{self.degrees}{ckpt}: {format_bytes(int(self.memory_per_gpu))} per GPU, "
            f"{format_bytes(int(sum(self.traffic.values())))} sent per step, "
            f"bubble {self.bubble:.2f}, about {self.step_seconds:.2f} s a step"
        )


def _groups(cluster: Cluster, degrees: dict[str, int]) -> dict[str, float]:
    """Each degree's link: ranks numbered tp innermost, then cp, fsdp, dp, pp. A group lies
    in one node when the degrees up to it multiply to at most a node's GPUs."""
    bandwidth = {}
    span = 1
    for name in ("tp", "cp", "fsdp", "dp", "pp"):
        span *= degrees[name]
        inside = span <= cluster.gpus_per_node and cluster.gpus_per_node % span == 0
        bandwidth[name] = cluster.intra_bandwidth if inside else cluster.inter_bandwidth
    return bandwidth


def _check_layout(model: ModelSpec, cluster: Cluster, degrees: dict[str, int]) -> str | None:
    """Why these degrees cannot split this model on this cluster, or ``None``."""
    product = 1
    for d in degrees.values():
        product *= d
    if product != cluster.gpus:
        return f"dp * fsdp * tp * pp * cp ({product}) must equal the cluster's {cluster.gpus} GPUs"
    heads = model.kv_heads or model.n_heads
    if heads % degrees["tp"]:
        return (
            f"tp ({degrees['tp']}) must divide the {heads} key-value heads (whole heads per rank)"
        )
    if model.n_layers % degrees["pp"]:
        return f"pp ({degrees['pp']}) must divide the {model.n_layers} layers (as many per stage)"
    if model.seq_len % degrees["cp"]:
        return f"cp ({degrees['cp']}) must divide seq_len ({model.seq_len})"
    replicas = degrees["dp"] * degrees["fsdp"] * model.micro_batch
    if model.global_batch % replicas:
        return (
            f"dp * fsdp * micro_batch ({replicas}) must divide global_batch "
            f"({model.global_batch}): each replica takes whole microbatches"
        )
    if model.global_batch // replicas < degrees["pp"]:
        return (
            f"pp ({degrees['pp']}) must be at most the microbatches per step, global_batch / "
            f"(dp * fsdp * micro_batch) = {model.global_batch // replicas}: a pipeline needs "
            "a microbatch per stage"
        )
    return None


def _evaluate(
    model: ModelSpec, cluster: Cluster, degrees: dict[str, int], checkpointing: bool
) -> Layout:
    """The costs of checked degrees (see :func:`evaluate_layout`)."""
    dp, fsdp, tp, pp, cp = (degrees[n] for n in ("dp", "fsdp", "tp", "pp", "cp"))
    m = model.global_batch // (dp * fsdp * model.micro_batch)
    layers = model.n_layers // pp  # on each stage
    # The busiest stage: its layers split by tp, plus the embedding (first stage) or the head
    # (last), each half of the parameters outside the layers, kept whole on every tp rank.
    outside = model.other_params if pp == 1 else model.other_params / 2
    params = layers * model.layer_params // tp + int(outside)
    memory: dict[str, float] = dict(training_memory(params, "adam", "mixed", shards=fsdp))
    # FSDP gathers a layer's weights (bf16) before it computes and prefetches the next one.
    memory["gathered weights"] = 2 * HALF * model.layer_params / tp if fsdp > 1 else 0
    # A layer's activations for one microbatch: tokens of this rank's slice of the sequence,
    # features split by tensor (and sequence) parallelism. Under 1F1B the first stage holds
    # pp microbatches of its n_layers / pp layers: n_layers layers' worth, with or without
    # a pipeline.
    tokens = model.micro_batch * model.seq_len // cp
    per_layer = tokens * model.d_model * ACTIVATION_BYTES / tp
    if checkpointing:
        kept = tokens * model.d_model * CHECKPOINT_BYTES / tp
        memory["activations"] = model.n_layers * kept + per_layer
    else:
        memory["activations"] = model.n_layers * per_layer

    traffic: dict[str, float] = {}
    link = _groups(cluster, degrees)
    seconds: dict[str, float] = {}
    activation = tokens * model.d_model * HALF / tp  # one rank's slice, in bf16
    if tp > 1:
        # 4 all-reduces' worth per layer and microbatch (2 forward, 2 backward; as
        # reduce-scatter + all-gather pairs under sequence parallelism), each sending
        # 2 (tp - 1) / tp of the whole activation; checkpointing repeats the forward's 2.
        per_layer_calls = 6 if checkpointing else 4
        whole = activation * tp
        traffic["tensor"] = m * layers * per_layer_calls * 2 * (tp - 1) / tp * whole
        seconds["tensor"] = traffic["tensor"] / link["tp"]
    if cp > 1:
        # Ring attention: each rank sends its keys and values to the cp - 1 others in the
        # forward pass, and again with their gradients in the backward pass (3 times).
        kv = 2 * tokens * model.kv_dim * HALF / tp
        traffic["context"] = m * layers * 3 * (cp - 1) * kv
        seconds["context"] = traffic["context"] / link["cp"]
    if pp > 1:
        # Per microbatch an activation goes forward and its gradient back.
        traffic["pipeline"] = m * 2 * activation
        seconds["pipeline"] = traffic["pipeline"] / link["pp"]
    data = 0.0
    data_seconds = 0.0
    if fsdp > 1:
        # FSDP2's defaults, per microbatch: gather (bf16) before forward and again before
        # backward, reduce-scatter the gradients (fp32).
        sharded = m * sharded_traffic(params, fsdp, HALF, FULL)["fsdp"]
        data += sharded
        data_seconds += sharded / link["fsdp"]
    replicas = dp * cp  # ranks that hold the same shard of the same weights
    if replicas > 1:
        # Once per step (DDP's no_sync over the microbatches): an fp32 all-reduce.
        replicated = sharded_traffic(-(-params // fsdp), replicas, HALF, FULL)["ddp all-reduce"]
        data += replicated
        data_seconds += replicated / link["dp" if dp > 1 else "cp"]
    if data:
        traffic["data"] = data
        seconds["data"] = data_seconds

    tokens_per_step = model.global_batch * model.seq_len
    flops = (8 if checkpointing else 6) * model.n_params * tokens_per_step
    return Layout(
        dp=dp,
        fsdp=fsdp,
        tp=tp,
        pp=pp,
        cp=cp,
        checkpointing=checkpointing,
        microbatches=m,
        memory=memory,
        traffic=traffic,
        seconds=seconds,
        bubble=bubble_fraction(pp, m),
        compute_seconds=flops / (cluster.gpus * cluster.peak_flops),
    )


def evaluate_layout(
    model: ModelSpec,
    cluster: Cluster,
    *,
    dp: int = 1,
    fsdp: int = 1,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    checkpointing: bool = False,
) -> Layout:
    """The memory per GPU, traffic per step and bubble of one layout, fitting or not.

    Memory, on the busiest pipeline stage: its parameters (``n_layers / pp`` layers split by
    ``tp``, plus half of the parameters outside the layers when ``pp > 1``, all of them
    otherwise) cost 16 bytes each with Adam in mixed precision
    (:func:`gpukit.memory.training_memory`), divided by ``fsdp``; FSDP adds two layers'
    gathered bf16 weights (the one computing and the one prefetched). Activations: ``34``
    bytes per token, feature and layer (:data:`ACTIVATION_BYTES`), divided by ``tp`` and, as
    the tokens are, by ``cp``; under 1F1B the first stage holds ``pp`` microbatches of its
    ``n_layers / pp`` layers, ``n_layers`` layers' worth. With ``checkpointing`` each layer
    keeps its 2-byte input, plus one layer recomputed whole.

    Traffic per GPU and step, each kind a ring collective of :mod:`gpukit.sharding`'s
    arithmetic: ``tensor``, 4 all-reduces of one activation per layer and microbatch
    (6 with checkpointing); ``context``, keys and values passed ``cp - 1`` times, 3 times
    over; ``pipeline``, an activation and its gradient per microbatch; ``data``, FSDP's
    gathers and reduce-scatters per microbatch (:func:`gpukit.sharding.sharded_traffic`) and
    an fp32 all-reduce of the shard across the ``dp * cp`` replicas once per step.

    Raises ``ValueError`` naming the degree that does not divide what it splits.

    Example (Llama 2 7B on one node of 8 H100s, FSDP over all 8):
        >>> llama7b = ModelSpec(6_740_000_000, n_layers=32, d_model=4096, n_heads=32,
        ...                     seq_len=4096, micro_batch=1, global_batch=256)
        >>> node = Cluster(8, 1, 80e9, 450e9, 50e9, 989.5e12)
        >>> plan = evaluate_layout(llama7b, node, fsdp=8)
        >>> print(plan)
        fsdp 8: 30.3 GiB per GPU, 1.4 TiB sent per step, bubble 0.00, about 5.36 s a step
        >>> evaluate_layout(llama7b, node, tp=3)
        Traceback (most recent call last):
        ...
        ValueError: dp * fsdp * tp * pp * cp (3) must equal the cluster's 8 GPUs
    """
    check_type(model, "model", ModelSpec, "a ModelSpec")
    check_type(cluster, "cluster", Cluster, "a Cluster")
    degrees = {"dp": dp, "fsdp": fsdp, "tp": tp, "pp": pp, "cp": cp}
    for name, degree in degrees.items():
        check_int(degree, name)
    check_type(checkpointing, "checkpointing", bool, "True or False")
    why = _check_layout(model, cluster, degrees)
    if why is not None:
        raise ValueError(why)
    return _evaluate(model, cluster, degrees, checkpointing)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plan_layouts(model: ModelSpec, cluster: Cluster) -> list[Layout]:
    r"""Every layout of the cluster's GPUs that fits in their memory, fastest first.

    Tries all degrees ``dp, fsdp, tp, pp, cp`` that multiply to the number of GPUs and divide
    what they split (heads, layers, tokens, the global batch), with and without activation
    checkpointing, evaluates each with :func:`evaluate_layout`, and keeps those whose memory
    per GPU is at most the GPU's. They are sorted by :attr:`Layout.step_seconds`, a step's
    estimate in which the tensor and pipeline traffic is waited for and the data and context
    traffic counts only beyond the computing, then by memory per GPU: a ranking from
    arithmetic, to be confirmed by measuring the first few.

    Raises ``ValueError`` when no layout fits, naming the one that needs the least memory and
    what that is.

    Example:
        >>> llama7b = ModelSpec(6_740_000_000, n_layers=32, d_model=4096, n_heads=32,
        ...                     seq_len=4096, micro_batch=1, global_batch=256)
        >>> node = Cluster(8, 1, 80e9, 450e9, 50e9, 989.5e12)
        >>> [layout.degrees for layout in plan_layouts(llama7b, node)[:3]]
        ['fsdp 8', 'dp 2 x fsdp 4', 'dp 2 x fsdp 2 x cp 2']
        >>> try:
        ...     plan_layouts(llama7b, Cluster(1, 1, 80e9, 450e9, 50e9, 989.5e12))
        ... except ValueError as err:
        ...     print(str(err).replace(": ", ":\n").replace("; ", ";\n"))
        no layout of 1 GPU fits in 74.5 GiB:
        the smallest, one GPU, checkpointing, needs 102.0 GiB per GPU;
        add GPUs or lower micro_batch or seq_len
    """
    check_type(model, "model", ModelSpec, "a ModelSpec")
    check_type(cluster, "cluster", Cluster, "a Cluster")
    every = []
    for dp, fsdp, tp, pp in itertools.product(_divisors(cluster.gpus), repeat=4):
        if cluster.gpus % (dp * fsdp * tp * pp):
            continue
        rest = cluster.gpus // (dp * fsdp * tp * pp)
        degrees = {"dp": dp, "fsdp": fsdp, "tp": tp, "pp": pp, "cp": rest}
        if _check_layout(model, cluster, degrees) is None:
            every += [_evaluate(model, cluster, degrees, ckpt) for ckpt in (False, True)]
    if not every:
        raise ValueError(
            f"no layout splits this model over {cluster.gpus} GPUs: the degrees must divide "
            "the key-value heads, the layers, seq_len and global_batch / micro_batch"
        )
    fitting = [layout for layout in every if layout.memory_per_gpu <= cluster.memory]
    if not fitting:
        least = min(every, key=lambda layout: layout.memory_per_gpu)
        gpus = f"{cluster.gpus} GPU" + ("s" if cluster.gpus > 1 else "")
        ckpt = ", checkpointing" if least.checkpointing else ""
        raise ValueError(
            f"no layout of {gpus} fits in {format_bytes(int(cluster.memory))}: the smallest, "
            f"{least.degrees}{ckpt}, needs {format_bytes(int(least.memory_per_gpu))} per GPU; "
            "add GPUs or lower micro_batch or seq_len"
        )
    return sorted(fitting, key=lambda layout: (layout.step_seconds, layout.memory_per_gpu))


def layout_table(layouts: list[Layout]) -> str:
    """``layouts`` as a table: degrees, memory per GPU, traffic per step by kind, bubble and
    the step estimate.

    Example:
        >>> llama7b = ModelSpec(6_740_000_000, n_layers=32, d_model=4096, n_heads=32,
        ...                     seq_len=4096, micro_batch=1, global_batch=256)
        >>> node = Cluster(8, 1, 80e9, 450e9, 50e9, 989.5e12)
        >>> print(layout_table(plan_layouts(llama7b, node)[:1]))
        layout  ckpt    memory      data    tensor   context  pipeline bubble  step s
        fsdp 8    no  30.3 GiB   1.4 TiB         -         -         -   0.00    5.36
    """
    if not isinstance(layouts, list | tuple) or not all(isinstance(x, Layout) for x in layouts):
        raise TypeError("layouts must be a list of Layout (from plan_layouts)")
    kinds = ("data", "tensor", "context", "pipeline")
    width = max([len(x.degrees) for x in layouts] + [6]) + 1
    lines = [
        f"{'layout':<{width}}{'ckpt':>5}{'memory':>10}"
        + "".join(f"{k:>10}" for k in kinds)
        + f"{'bubble':>7}{'step s':>8}"
    ]
    for x in layouts:
        sent = "".join(
            f"{format_bytes(int(x.traffic[k])) if k in x.traffic else '-':>10}" for k in kinds
        )
        lines.append(
            f"{x.degrees:<{width}}{'yes' if x.checkpointing else 'no':>5}"
            f"{format_bytes(int(x.memory_per_gpu)):>10}{sent}{x.bubble:>7.2f}{x.step_seconds:>8.2f}"
        )
    return "\n".join(lines)
