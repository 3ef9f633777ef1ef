"""Speculative decoding: a small draft model guesses, the target model checks them all at once.

Decoding one token at a time reads every weight of the target model for each token.
Speculative decoding (Leviathan et al. 2023, Chen et al. 2023) lets a much smaller *draft
model* propose ``draft_len`` tokens, one after another, then runs the target once over all of
them: one pass gives the target's probabilities at every proposed position. :func:`accept_draft`
keeps the longest prefix the rule accepts and adds one token of the target's own, so every
round yields between 1 and ``draft_len + 1`` tokens. The rule keeps the target's distribution
exactly: greedy output is the target's greedy output, token for token, and sampled output is
distributed as the target's samples. :func:`speculative_generate` runs the rounds with a
key-value cache for each model and counts what was drafted and accepted; :func:`extend_cache`
is the pass over several new tokens that checks a draft.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gpukit._checks import check_int, check_number, check_type
from gpukit.gpt import GPT

__all__ = ["SpeculativeResult", "accept_draft", "extend_cache", "speculative_generate"]


def accept_draft(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
) -> tuple[int, int]:
    """How many draft tokens to keep, and the token that follows them.

    ``draft_tokens`` holds ``k`` tokens the draft model drew, the ``i``-th from
    ``draft_probs[i]`` (``(k, vocab)``); ``target_probs`` (``(k + 1, vocab)``) holds the target's
    probabilities at the same positions, plus one after the last draft token. Draft token ``x``
    at position ``i`` is accepted with probability ``min(1, p(x) / q(x))`` (``p`` the target's,
    ``q`` the draft's row ``i``); at the first rejection the next token is drawn from the
    leftover ``max(0, p - q)``, normalized, and the rest of the draft is dropped. If all ``k``
    are accepted, the next token is drawn from the target's last row. Either way the kept
    tokens plus the next one are distributed exactly as ``k``-or-fewer draws from the target.

    Greedy decoding is the special case of one-hot rows (all probability on the argmax): a
    draft token is then accepted exactly when it is the target's argmax, and the next token is
    the target's argmax where they first differ. Returns ``(accepted, next_token)``.

    Example:
        >>> p = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        >>> q = torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
        >>> accept_draft(p, q, torch.tensor([1, 1]))  # the target agrees with the first only
        (1, 2)
    """
    check_type(target_probs, "target_probs", torch.Tensor, "a (k + 1, vocab) tensor")
    check_type(draft_probs, "draft_probs", torch.Tensor, "a (k, vocab) tensor")
    check_type(draft_tokens, "draft_tokens", torch.Tensor, "a (k,) tensor of token ids")
    k = draft_tokens.numel()
    if (
        draft_tokens.dim() != 1
        or draft_probs.dim() != 2
        or draft_probs.shape[0] != k
        or target_probs.shape != (k + 1, draft_probs.shape[1])
    ):
        raise ValueError(
            "draft_tokens must be (k,), draft_probs (k, vocab) and target_probs (k + 1, vocab), "
            f"got {tuple(draft_tokens.shape)}, {tuple(draft_probs.shape)} and "
            f"{tuple(target_probs.shape)}"
        )
    return _accept(target_probs, draft_probs, draft_tokens, generator)


def _accept(
    p: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, generator: torch.Generator | None
) -> tuple[int, int]:
    k = drafted.numel()
    rows = torch.arange(k)
    p_x, q_x = p[rows, drafted], q[rows, drafted]
    u = torch.rand(k, generator=generator, dtype=p.dtype, device=p.device)
    # Accept x with probability min(1, p(x) / q(x)), written without a division: u * q < p.
    # The draft drew x, so q(x) > 0; a one-hot p gives 1 or 0, so greedy uses no chance.
    rejected = (u * q_x >= p_x).nonzero()
    if len(rejected) == 0:  # all accepted: one more token from the target, for free
        return k, int(torch.multinomial(p[k], 1, generator=generator))
    n = int(rejected[0])
    leftover = (p[n] - q[n]).clamp(min=0)  # where the target wants more than the draft gave
    return n, int(torch.multinomial(leftover, 1, generator=generator))


@dataclass(frozen=True)
class SpeculativeResult:
    """What :func:`speculative_generate` produced and how much of the draft the target kept.

    ``tokens`` is the prompt and its continuation, ``(1, steps)``; ``rounds`` the target's
    passes; ``drafted`` and ``accepted`` count draft tokens proposed and kept.

    Example:
        >>> r = SpeculativeResult(torch.zeros(1, 9), rounds=2, drafted=8, accepted=6)
        >>> r.acceptance_rate, r.tokens_per_round
        (0.75, 4.0)
    """

    tokens: torch.Tensor
    rounds: int
    drafted: int
    accepted: int

    @property
    def acceptance_rate(self) -> float:
        """The share of draft tokens the target accepted."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_round(self) -> float:
        """The new tokens per pass of the target (accepted draft tokens, plus one per round)."""
        return (self.accepted + self.rounds) / self.rounds if self.rounds else 0.0


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Next-token probabilities; one-hot on the argmax for greedy (temperature 0)."""
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).float()
    return torch.softmax(logits.float() / temperature, dim=-1)


def _extend(net: GPT, tokens: torch.Tensor, cache: list) -> torch.Tensor:
    """:func:`extend_cache` without checks: GPT's blocks, the causal mask shifted by the cache."""
    start = _length(cache)
    filled = bool(cache)  # checked once: the loop below fills an empty cache
    batch, steps = tokens.shape
    positions = torch.arange(start, start + steps, device=tokens.device)
    mask = torch.ones(steps, start + steps, dtype=torch.bool, device=tokens.device)
    mask = mask.tril(diagonal=start)  # new token i sees the cache and new tokens 0..i
    X = net.token(tokens) + net.position(positions)
    for i, blk in enumerate(net.blks):
        hiddens = X.shape[-1]
        q, k, v = (
            blk.qkv(blk.norm1(X))
            .view(batch, steps, 3, blk.num_heads, hiddens // blk.num_heads)
            .permute(2, 0, 3, 1, 4)
            .unbind(0)
        )
        if filled:
            k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)
        Y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        X = X + blk.proj(Y.transpose(1, 2).reshape(batch, steps, hiddens))
        X = X + blk.mlp(blk.norm2(X))
        cache[i : i + 1] = [(k.contiguous(), v.contiguous())]
    return net.head(net.norm(X))


@torch.no_grad()
def extend_cache(net: GPT, tokens: torch.Tensor, cache: list) -> torch.Tensor:
    """``net``'s logits for ``tokens`` (``(batch, steps)``) that follow the tokens in ``cache``.

    ``GPT.forward`` takes one new token per call once its cache is filled; checking a draft
    needs several in one pass, each attending to the cached tokens and to the new tokens before
    it. This runs ``net``'s blocks with that mask and appends the new keys and values to
    ``cache`` (a list as ``GPT.forward`` fills it; an empty list starts a new text). Returns
    ``(batch, steps, vocab_size)`` logits, as ``net`` over the whole text would at those
    positions.

    Example:
        >>> net = GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=16).eval()
        >>> text = torch.randint(256, (1, 10))
        >>> cache = []
        >>> _ = extend_cache(net, text[:, :6], cache)
        >>> torch.allclose(extend_cache(net, text[:, 6:], cache), net(text)[:, 6:], atol=1e-5)
        True
    """
    check_type(net, "net", GPT, "a gpukit GPT")
    check_type(tokens, "tokens", torch.Tensor, "a (batch, steps) tensor of token ids")
    check_type(cache, "cache", list, "a list (empty, or filled by GPT.forward or this function)")
    if tokens.dim() != 2 or _length(cache) + tokens.shape[1] > net.max_len:
        raise ValueError(
            f"tokens must be (batch, steps) with cached + steps <= max_len={net.max_len}, "
            f"got {tuple(tokens.shape)} after {_length(cache)} cached"
        )
    return _extend(net, tokens, cache)


def _length(cache: list) -> int:
    """How many tokens ``cache`` holds keys and values for."""
    return cache[0][0].shape[2] if cache else 0


def _truncate(cache: list, length: int) -> None:
    """Forget cached keys and values past ``length`` tokens (the rejected draft's)."""
    cache[:] = [(k[:, :, :length], v[:, :, :length]) for k, v in cache]


@torch.no_grad()
def speculative_generate(
    target: GPT,
    draft: GPT,
    prompt: torch.Tensor,
    num_tokens: int,
    *,
    draft_len: int = 4,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> SpeculativeResult:
    """Continue ``prompt`` (``(1, steps)``) by ``num_tokens`` tokens of ``target``'s.

    Each round the draft model proposes up to ``draft_len`` tokens (one pass each, with its own
    cache), the target scores them all in one pass over its cache, and :func:`accept_draft`
    keeps a prefix and adds one token. The caches then forget the rejected tokens. With
    ``temperature`` 0 the output is :func:`gpukit.gpt.generate`'s greedy output (up to
    rounding of near ties); above 0 it is distributed as ``generate``'s samples. Both models
    must read the same vocabulary.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> target = GPT(num_hiddens=64, num_heads=4, num_blks=2, max_len=32).eval()
        >>> draft = GPT(num_hiddens=32, num_heads=4, num_blks=1, max_len=32).eval()
        >>> prompt = torch.tensor([[104, 105]])
        >>> r = speculative_generate(target, draft, prompt, 10, draft_len=3)
        >>> from gpukit.gpt import generate
        >>> torch.equal(r.tokens, generate(target, prompt, 10))
        True
    """
    check_type(target, "target", GPT, "a gpukit GPT")
    check_type(draft, "draft", GPT, "a gpukit GPT")
    check_type(prompt, "prompt", torch.Tensor, "a (1, steps) tensor of token ids")
    check_int(num_tokens, "num_tokens")
    check_int(draft_len, "draft_len")
    check_number(temperature, "temperature", zero=True)
    if target.head.out_features != draft.head.out_features:
        raise ValueError(
            "target and draft must share a vocabulary, got sizes "
            f"{target.head.out_features} and {draft.head.out_features}"
        )
    max_len = min(target.max_len, draft.max_len)
    if prompt.dim() != 2 or prompt.shape[0] != 1 or prompt.shape[1] + num_tokens > max_len:
        raise ValueError(
            f"prompt must be (1, steps) with steps + num_tokens <= max_len={max_len}, "
            f"got {tuple(prompt.shape)} and num_tokens={num_tokens}"
        )
    out = prompt
    # Both caches hold every token of `out` but the last, which each round feeds first.
    target_cache: list = []
    draft_cache: list = []
    if prompt.shape[1] > 1:
        _extend(target, prompt[:, :-1], target_cache)
        _extend(draft, prompt[:, :-1], draft_cache)
    rounds = drafted = accepted = 0
    while out.shape[1] < prompt.shape[1] + num_tokens:
        left = prompt.shape[1] + num_tokens - out.shape[1]
        k = min(draft_len, left - 1)  # the round's extra token makes up the last one
        # Draft: k passes of the small model, each feeding what its cache lacks.
        new = out[:, _length(draft_cache) :]
        q_rows, proposal = [], []
        for _ in range(k):
            q = _probs(_extend(draft, new, draft_cache)[0, -1], temperature)
            new = torch.multinomial(q, 1, generator=generator).view(1, 1)
            q_rows.append(q)
            proposal.append(new)
        # Verify: one pass of the target over the last token and all k proposals.
        proposed = torch.cat([out[:, -1:], *proposal], dim=1)
        p = _probs(_extend(target, proposed, target_cache)[0], temperature)
        drafted_tokens = proposed[0, 1:]
        q = torch.stack(q_rows) if q_rows else p.new_zeros(0, p.shape[1])
        n, next_token = _accept(p, q, drafted_tokens, generator)
        out = torch.cat([out, drafted_tokens[:n].view(1, n), out.new_tensor([[next_token]])], 1)
        _truncate(target_cache, out.shape[1] - 1)
        _truncate(draft_cache, min(out.shape[1] - 1, _length(draft_cache)))
        rounds, drafted, accepted = rounds + 1, drafted + k, accepted + n
    return SpeculativeResult(out, rounds=rounds, drafted=drafted, accepted=accepted)
