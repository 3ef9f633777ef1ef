"""Tests of gpukit.speculative: the acceptance rule keeps the target's output and distribution."""

from __future__ import annotations

import pytest
import torch

from gpukit.gpt import GPT, generate
from gpukit.speculative import SpeculativeResult, accept_draft, speculative_generate


def models(max_len: int = 48) -> tuple[GPT, GPT]:
    torch.manual_seed(0)
    target = GPT(num_hiddens=64, num_heads=4, num_blks=2, max_len=max_len).eval()
    draft = GPT(num_hiddens=32, num_heads=4, num_blks=1, max_len=max_len).eval()
    return target, draft


@pytest.mark.parametrize("draft_len", [1, 2, 4, 7])
@pytest.mark.parametrize("prompt_len", [1, 5])
def test_greedy_output_is_the_targets_alone(draft_len, prompt_len):
    target, draft = models()
    prompt = torch.randint(256, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    r = speculative_generate(target, draft, prompt, 30, draft_len=draft_len)
    assert torch.equal(r.tokens, generate(target, prompt, 30))
    assert r.tokens.shape == (1, prompt_len + 30)
    assert r.accepted <= r.drafted <= draft_len * r.rounds


def test_a_perfect_draft_is_always_accepted():
    target, _ = models()
    prompt = torch.tensor([[1, 2, 3]])
    r = speculative_generate(target, target, prompt, 21, draft_len=4)
    assert r.acceptance_rate == 1.0
    assert r.rounds == 5  # 4 drafted + 1 of the target's per round: 21 tokens in 5 rounds
    assert r.tokens_per_round == 21 / 5
    assert torch.equal(r.tokens, generate(target, prompt, 21))


def test_rejections_happen_and_still_give_the_targets_tokens():
    target, draft = models()
    prompt = torch.tensor([[7, 8]])
    r = speculative_generate(target, draft, prompt, 40, draft_len=3)
    assert 0 < r.accepted < r.drafted  # the test above checked output with rejections in it
    assert torch.equal(r.tokens, generate(target, prompt, 40))


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = counts.sum() * probs
    keep = expected > 0
    assert counts[~keep].sum() == 0  # nothing outside the target's support
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())


# chi-square's 99.9% quantiles for 5 and 7 degrees of freedom
CHI2_999 = {5: 20.52, 7: 24.32}


def rule_samples(p: torch.Tensor, q: torch.Tensor, trials: int, rule=accept_draft) -> torch.Tensor:
    """The first token after one round with one draft token, ``trials`` times."""
    g = torch.Generator().manual_seed(0)
    firsts = []
    for _ in range(trials):
        x = torch.multinomial(q[0], 1, generator=g)
        n, nxt = rule(p, q, x, generator=g)
        firsts.append(int(x) if n == 1 else nxt)
    return torch.bincount(torch.tensor(firsts), minlength=p.shape[1]).float()


def test_the_rule_samples_from_the_target_distribution():
    p = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1, 0.0], [1 / 6] * 6])
    q = torch.tensor([[0.1, 0.1, 0.1, 0.2, 0.2, 0.3]])  # a poor draft, even off p's support
    counts = rule_samples(p, q, 4000)
    assert chi_square(counts, p[0]) < CHI2_999[5]


def test_the_check_catches_a_rule_that_trusts_the_draft():
    p = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1, 0.0], [1 / 6] * 6])
    q = torch.tensor([[0.1, 0.1, 0.1, 0.2, 0.2, 0.3]])

    def always_accept(p, q, x, generator=None):
        return 1, 0

    with pytest.raises(AssertionError):
        assert chi_square(rule_samples(p, q, 4000, always_accept), p[0]) < CHI2_999[5]


@pytest.fixture
def one_thread():
    """Thousands of tiny passes: on a shared CPU, threads' synchronization costs more than
    it saves (measured here: 60 times slower with 2 threads on 2 busy cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_sampled_output_has_the_targets_distribution(one_thread):
    """The second new token, over many runs, is distributed as the target's own samples."""
    torch.manual_seed(0)
    # A vocabulary of 8 and sharp, different distributions: few bins, each expecting many
    # samples, and a draft that the rule must correct often.
    target = GPT(vocab_size=8, num_hiddens=16, num_heads=2, num_blks=1, max_len=8).eval()
    draft = GPT(vocab_size=8, num_hiddens=16, num_heads=2, num_blks=1, max_len=8).eval()
    with torch.no_grad():
        target.token.weight.mul_(8)
        draft.token.weight.mul_(8)
    prompt = torch.tensor([[3, 5]])
    with torch.no_grad():  # the target's distribution of the second token: sum over the first
        p1 = torch.softmax(target(prompt)[0, -1], -1)
        seqs = torch.cat([prompt.expand(8, 2), torch.arange(8).view(8, 1)], dim=1)
        p2 = (p1.view(8, 1) * torch.softmax(target(seqs)[:, -1], -1)).sum(0)
        q1 = torch.softmax(draft(prompt)[0, -1], -1)
    assert 0.5 * (p1 - q1).abs().sum() > 0.2  # the draft is a poor guess of the target
    g = torch.Generator().manual_seed(0)
    trials = 1500
    seconds = [
        int(
            speculative_generate(
                target, draft, prompt, 2, draft_len=2, temperature=1.0, generator=g
            ).tokens[0, -1]
        )
        for _ in range(trials)
    ]
    counts = torch.bincount(torch.tensor(seconds), minlength=8).float()
    assert chi_square(counts, p2) < CHI2_999[7]


def test_result_counts():
    r = SpeculativeResult(torch.zeros(1, 3), rounds=0, drafted=0, accepted=0)
    assert r.acceptance_rate == 0.0 and r.tokens_per_round == 0.0


def test_bad_input():
    target, draft = models()
    prompt = torch.tensor([[1, 2]])
    with pytest.raises(TypeError, match="target must be a gpukit GPT"):
        speculative_generate(object(), draft, prompt, 4)
    with pytest.raises(TypeError, match="draft must be a gpukit GPT"):
        speculative_generate(target, object(), prompt, 4)
    with pytest.raises(ValueError, match="draft_len must be >= 1"):
        speculative_generate(target, draft, prompt, 4, draft_len=0)
    with pytest.raises(ValueError, match="temperature"):
        speculative_generate(target, draft, prompt, 4, temperature=-1.0)
    with pytest.raises(ValueError, match=r"prompt must be \(1, steps\)"):
        speculative_generate(target, draft, torch.tensor([[1, 2], [3, 4]]), 4)
    with pytest.raises(ValueError, match="max_len=48"):
        speculative_generate(target, draft, prompt, 47)
    small_vocab = GPT(vocab_size=100, num_hiddens=32, num_heads=4, num_blks=1, max_len=48)
    with pytest.raises(ValueError, match="share a vocabulary"):
        speculative_generate(target, small_vocab, prompt, 4)
    with pytest.raises(ValueError, match="draft_tokens must be"):
        accept_draft(torch.ones(2, 3), torch.ones(2, 3), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="draft_tokens"):
        accept_draft(torch.ones(2, 3), torch.ones(1, 3), [0])
