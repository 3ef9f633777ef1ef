"""Small GPTs trained once and kept on disk, for the pages that need a model that has learnt.

Decoding, caching and speculating only mean something with a model whose predictions are not
noise, and training one on every page would cost each page its time budget.
:func:`trained_gpt` trains :class:`gpukit.gpt.GPT` on Python's standard library
(:func:`gpukit.gpt.load_python_source`) the first time it is asked for, saves the weights under
``$XDG_CACHE_HOME/gpukit/models/`` (default ``~/.cache/gpukit/models/``), and loads them on
every later call. The file's name is a hash of everything the weights depend on: the recipe
(shape, steps, batch, learning rate, seed, amount of text), the profile, the device type, the
versions of Python (its standard library is the text) and PyTorch, and the source code of
``gpukit/gpt.py``, of the training loop's schedule (``gpukit/_loop.py``) and of this module, so
changing any of them trains a new model instead of loading a stale one.

Two sizes share the byte vocabulary and the context length: ``"target"``, the model the
serving pages decode, and ``"draft"``, a much smaller one, the draft model of speculative
decoding.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

from gpukit import profiles
from gpukit._checks import check_choice
from gpukit.devices import try_gpu
from gpukit.fast import auto_precision
from gpukit.gpt import GPT, load_python_source, text_batch
from gpukit.training import lr_factor

__all__ = ["gpt_recipe", "trained_gpt"]

SIZES = ("target", "draft")


def gpt_recipe(size: str = "target", *, profile: str | None = None) -> dict:
    """How :func:`trained_gpt` trains the model of ``size`` in ``profile`` (``"quick"`` or
    ``"full"``; ``None``: the current profile): the GPT's ``shape`` (its keyword arguments),
    ``steps``, ``lr``, ``batch_size``, ``text_bytes`` and ``seed``. Change a copy and pass it as
    ``trained_gpt(size, recipe=...)`` to train another.

    Example:
        >>> draft, target = gpt_recipe("draft"), gpt_recipe("target")
        >>> draft["shape"]["vocab_size"], draft["shape"]["max_len"] == target["shape"]["max_len"]
        (256, True)
        >>> gpt_recipe(profile="full")["shape"]["num_hiddens"]  # the GPU runners' model
        2048
    """
    check_choice(size, "size", SIZES)
    pick = functools.partial(profiles.pick, profile=profile)  # which checks ``profile``
    context = pick(quick=128, full=512)
    if size == "target":
        # full: ~400 M weights that multiply, so that decoding one text reads ~0.8 GB of bf16
        # weights per token, far more than the launch overhead of its ~100 kernels costs
        shape = dict(
            num_hiddens=pick(quick=128, full=2048),
            num_heads=pick(quick=4, full=16),
            num_blks=pick(quick=2, full=8),
        )
        steps, lr = pick(quick=200, full=500), pick(quick=5e-3, full=3e-4)
    else:  # the draft: a few percent of the target's arithmetic per token
        shape = dict(
            num_hiddens=pick(quick=64, full=512),
            num_heads=pick(quick=4, full=8),
            num_blks=pick(quick=1, full=2),
        )
        steps, lr = pick(quick=200, full=500), pick(quick=5e-3, full=1e-3)
    return dict(
        shape=dict(shape, vocab_size=256, max_len=context),
        steps=steps,
        lr=lr,
        batch_size=pick(quick=8, full=32),
        text_bytes=pick(quick=2_000_000, full=12_000_000),
        seed=0,
    )


def _key(size: str, recipe: dict, device: torch.device) -> str:
    """A hash of everything the trained weights depend on."""
    names = ("gpt.py", "_loop.py")  # the model, and the learning-rate schedule (lr_factor)
    sources = [pathlib.Path(__file__).with_name(name).read_bytes() for name in names]
    sources.append(pathlib.Path(__file__).read_bytes())
    parts = [
        size,
        repr(sorted((k, repr(v)) for k, v in recipe.items())),
        profiles.current_profile().name,
        device.type,
        torch.__version__,
        f"{sys.version_info.major}.{sys.version_info.minor}",
        *(hashlib.sha256(source).hexdigest() for source in sources),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / (
        "gpukit/models"
    )


def _train(recipe: dict, device: torch.device) -> tuple[GPT, dict]:
    """Train a GPT with AdamW, warm-up and cosine decay, bf16 where the device has it."""
    torch.manual_seed(recipe["seed"])
    data = load_python_source(recipe["text_bytes"]).to(device)
    train_data = data[: int(0.9 * len(data))]  # the last 10% stay unseen, for the pages
    net = GPT(**recipe["shape"]).to(device)
    steps, batch_size, num_steps = recipe["steps"], recipe["batch_size"], net.max_len
    optimizer = torch.optim.AdamW(
        net.parameters(),
        lr=recipe["lr"],
        betas=(0.9, 0.95),
        weight_decay=0.1,
        fused=device.type == "cuda",
    )
    # The training pages' schedule, with a tenth of the steps as the warm-up "epoch".
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda i: lr_factor("warmup-cosine", i, warmup, max(1, steps // warmup)),
    )
    # fp32 on every CPU: the same weights whatever instructions it has (bf16 is emulated on
    # some and not faster at this size on others)
    precision = auto_precision(device) if device.type == "cuda" else "fp32"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    generator = torch.Generator(device).manual_seed(recipe["seed"])
    start = time.perf_counter()
    losses = []
    net.train()
    for _ in range(steps):
        X, Y = text_batch(train_data, batch_size, num_steps, generator)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = F.cross_entropy(net(X).flatten(0, 1), Y.flatten())
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        schedule.step()
        losses.append(loss.detach())
    last = torch.stack(losses[-max(1, steps // 10) :]).float().mean().item()
    info = dict(
        steps=steps,
        tokens=steps * batch_size * num_steps,
        precision=precision,
        train_loss=last,
        train_seconds=time.perf_counter() - start,
        text_bytes=recipe["text_bytes"],
    )
    return net, info


def trained_gpt(size: str = "target", *, recipe: dict | None = None) -> GPT:
    """A :class:`~gpukit.gpt.GPT` trained on Python's standard library, in eval mode.

    ``size`` is ``"target"`` (the serving pages' model) or ``"draft"`` (a much smaller one with
    the same byte vocabulary and context length, for speculative decoding). Sizes follow the
    profile (``quick``: widths 128 and 64, a context of 128 bytes, 200 steps each, a few
    seconds on a laptop; ``full``: widths 2048 and 512, 8 and 2 blocks, a context of 512
    bytes). The text is the first ``info["text_bytes"]`` bytes of
    :func:`~gpukit.gpt.load_python_source`; training read only their first 90%, so the last
    10% are text the model has not seen.

    The first call trains (on :func:`~gpukit.devices.try_gpu`'s device, bf16 where it is
    native, AdamW with warm-up and cosine decay) and saves the weights in the user cache; later
    calls, in this process or another, load them. Each call returns a new model on
    ``try_gpu()``'s device in fp32 (cast it for serving), with ``net.info``, a dict of the
    training run: ``steps``, ``tokens``, ``precision``, ``train_loss`` (the mean of the last
    tenth of the steps, in nats per byte), ``train_seconds``, ``text_bytes``.

    ``recipe`` replaces the profile's (:func:`gpt_recipe`), e.g. a larger model or more steps;
    its weights are cached apart from the profile's.

    Example:
        >>> net = trained_gpt("draft")
        >>> net.training, net.max_len == trained_gpt("target").max_len
        (False, True)
        >>> import math
        >>> net.info["train_loss"] < math.log(256)  # better than a uniform guess
        True
    """
    check_choice(size, "size", SIZES)
    if recipe is None:
        recipe = gpt_recipe(size)
    else:
        expected = gpt_recipe(size).keys()
        missing, unknown = sorted(expected - recipe.keys()), sorted(recipe.keys() - expected)
        if missing or unknown:
            said = [f"lacks {', '.join(missing)}"] if missing else []
            said += [f"has the unknown key {', '.join(unknown)}"] if unknown else []
            raise ValueError(f"recipe {' and '.join(said)}; a recipe has {', '.join(expected)}")
    device = try_gpu()
    path = _cache_dir() / f"gpt-{size}-{_key(size, recipe, device)}.pt"
    if path.exists():
        saved = torch.load(path, map_location=device, weights_only=True)
        net = GPT(**recipe["shape"]).to(device)
        net.load_state_dict(saved["state_dict"])
        info = saved["info"]
    else:
        net, info = _train(recipe, device)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: two builds that train at once never read a half-written file.
        partial = path.with_suffix(f".{os.getpid()}.partial")
        torch.save({"state_dict": net.state_dict(), "info": info}, partial)
        os.replace(partial, path)
    net.info = info
    return net.eval()
