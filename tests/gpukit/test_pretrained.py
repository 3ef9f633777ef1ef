"""Tests of gpukit.pretrained: trained once, loaded later, retrained when the recipe changes."""

from __future__ import annotations

import math
import pathlib

import pytest
import torch

import gpukit
from gpukit.gpt import GPT, load_python_source


def small_recipe(size: str) -> dict:
    """A recipe of a few seconds, so that the tests train quickly."""
    width = 32 if size == "target" else 16
    return dict(
        shape=dict(num_hiddens=width, num_heads=4, num_blks=1, vocab_size=256, max_len=32),
        steps=40,
        lr=3e-3,
        batch_size=8,
        text_bytes=100_000,
        seed=0,
    )


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "gpukit" / "models"


def small_gpt(size: str = "target", **changes) -> GPT:
    return gpukit.trained_gpt(size, recipe=small_recipe(size) | changes)


def test_trains_once_then_loads(cache):
    net = small_gpt()
    assert isinstance(net, GPT) and not net.training
    (saved,) = cache.glob("gpt-target-*.pt")
    written = saved.stat().st_mtime_ns
    assert not list(cache.glob("*.partial"))
    assert net.info["steps"] == 40 and net.info["train_loss"] < math.log(256) - 1
    again = small_gpt("target")
    # Not trained again: the file is as written, and the run's record (its seconds) the same.
    assert saved.stat().st_mtime_ns == written
    assert again is not net and again.info == net.info
    for (name, a), b in zip(net.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_the_model_has_learnt_python(cache):
    net = small_gpt()
    data = load_python_source(100_000)[90_000:].long()  # the tenth training did not read
    X = data[:-1].view(1, -1)[:, :32]
    Y = data[1:].view(1, -1)[:, :32]
    with torch.no_grad():
        loss = torch.nn.functional.cross_entropy(net(X).flatten(0, 1), Y.flatten())
    assert loss.item() < math.log(256) - 1  # far better than a uniform guess (5.5)


def test_sizes_share_the_vocabulary_and_context(cache):
    target, draft = small_gpt("target"), small_gpt("draft")
    assert target.token.num_embeddings == draft.token.num_embeddings == 256
    assert target.max_len == draft.max_len
    count = lambda net: sum(p.numel() for p in net.parameters())  # noqa: E731
    assert count(draft) < count(target)
    assert len(list(cache.glob("gpt-*.pt"))) == 2


def test_a_changed_recipe_trains_a_new_model(cache):
    small_gpt("draft")
    assert small_gpt("draft", steps=41).info["steps"] == 41
    assert len(list(cache.glob("gpt-draft-*.pt"))) == 2


def test_the_cache_covers_the_profile_and_the_source(cache, monkeypatch):
    # Each change below trains a model of its own (a new file) instead of loading the last;
    # one step each, since only the files count here.
    def target_files() -> list:
        return sorted(cache.glob("gpt-target-*.pt"))

    small_gpt("target", steps=1)
    (first,) = target_files()
    small_gpt("target", steps=1)  # nothing changed: loaded
    assert target_files() == [first]
    monkeypatch.setenv("GPUKIT_PROFILE", "full")
    small_gpt("target", steps=1)
    assert len(target_files()) == 2
    monkeypatch.setenv("GPUKIT_PROFILE", "quick")
    real_read = pathlib.Path.read_bytes

    def edited(path):
        return real_read(path) + (b"# edited\n" if path.name == "gpt.py" else b"")

    monkeypatch.setattr(pathlib.Path, "read_bytes", edited)
    small_gpt("target", steps=1)
    assert len(target_files()) == 3


def test_bad_size_is_refused(cache):
    with pytest.raises(ValueError, match="size must be one of"):
        gpukit.trained_gpt("huge")
    with pytest.raises(ValueError, match="size"):
        gpukit.trained_gpt(3)


def test_a_recipe_without_its_keys_is_refused(cache):
    recipe = small_recipe("draft")
    del recipe["lr"]
    with pytest.raises(ValueError, match=r"recipe lacks lr; a recipe has .*batch_size"):
        gpukit.trained_gpt("draft", recipe=recipe)
    with pytest.raises(ValueError, match="unknown key warmup"):
        gpukit.trained_gpt("draft", recipe=small_recipe("draft") | {"warmup": 3})


def test_a_recipe_for_another_profile(monkeypatch):
    monkeypatch.setenv("GPUKIT_PROFILE", "quick")
    full = gpukit.gpt_recipe(profile="full")
    assert full["shape"]["num_hiddens"] > gpukit.gpt_recipe()["shape"]["num_hiddens"]
    monkeypatch.setenv("GPUKIT_PROFILE", "full")
    assert gpukit.gpt_recipe() == full
    with pytest.raises(ValueError, match=r"profile must be one of \['full', 'quick'\]"):
        gpukit.gpt_recipe(profile="fast")
