"""Tests of gpukit.pretrained: trained once, loaded later, retrained when the recipe changes."""

from __future__ import annotations

import math

import pytest
import torch

import gpukit
from gpukit import pretrained
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
    monkeypatch.setattr(pretrained, "_recipe", small_recipe)
    return tmp_path / "gpukit" / "models"


def test_trains_once_then_loads(cache, monkeypatch):
    net = gpukit.trained_gpt()
    assert isinstance(net, GPT) and not net.training
    assert len(list(cache.glob("gpt-target-*.pt"))) == 1
    assert not list(cache.glob("*.partial"))
    assert net.info["steps"] == 40 and net.info["train_loss"] < math.log(256) - 1

    def no_training(*args, **kwargs):
        raise AssertionError("trained again although the weights were cached")

    monkeypatch.setattr(pretrained, "_train", no_training)
    again = gpukit.trained_gpt("target")
    assert again is not net and again.info == net.info
    for (name, a), b in zip(net.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_the_model_has_learnt_python(cache):
    net = gpukit.trained_gpt()
    data = load_python_source(100_000)[90_000:].long()  # the tenth training did not read
    X = data[:-1].view(1, -1)[:, :32]
    Y = data[1:].view(1, -1)[:, :32]
    with torch.no_grad():
        loss = torch.nn.functional.cross_entropy(net(X).flatten(0, 1), Y.flatten())
    assert loss.item() < math.log(256) - 1  # far better than a uniform guess (5.5)


def test_sizes_share_the_vocabulary_and_context(cache):
    target, draft = gpukit.trained_gpt("target"), gpukit.trained_gpt("draft")
    assert target.token.num_embeddings == draft.token.num_embeddings == 256
    assert target.max_len == draft.max_len
    count = lambda net: sum(p.numel() for p in net.parameters())  # noqa: E731
    assert count(draft) < count(target)
    assert len(list(cache.glob("gpt-*.pt"))) == 2


def test_a_changed_recipe_trains_a_new_model(cache, monkeypatch):
    gpukit.trained_gpt("draft")

    def longer(size: str) -> dict:
        return dict(small_recipe(size), steps=41)

    monkeypatch.setattr(pretrained, "_recipe", longer)
    assert gpukit.trained_gpt("draft").info["steps"] == 41
    assert len(list(cache.glob("gpt-draft-*.pt"))) == 2


def test_the_cache_covers_the_profile_and_the_source(cache, monkeypatch):
    # Each change below trains a model of its own (a new file) instead of loading the last;
    # one step each, since only the files count here.
    monkeypatch.setattr(pretrained, "_recipe", lambda size: dict(small_recipe(size), steps=1))

    def target_files() -> list:
        return sorted(cache.glob("gpt-target-*.pt"))

    gpukit.trained_gpt("target")
    (first,) = target_files()
    gpukit.trained_gpt("target")  # nothing changed: loaded
    assert target_files() == [first]
    monkeypatch.setenv("GPUKIT_PROFILE", "full")
    gpukit.trained_gpt("target")
    assert len(target_files()) == 2
    monkeypatch.setenv("GPUKIT_PROFILE", "quick")
    real_read = pretrained.pathlib.Path.read_bytes

    def edited(path):
        return real_read(path) + (b"# edited\n" if path.name == "gpt.py" else b"")

    monkeypatch.setattr(pretrained.pathlib.Path, "read_bytes", edited)
    gpukit.trained_gpt("target")
    assert len(target_files()) == 3


def test_bad_size_is_refused(cache):
    with pytest.raises(ValueError, match="size must be one of"):
        gpukit.trained_gpt("huge")
    with pytest.raises(ValueError, match="size"):
        gpukit.trained_gpt(3)
