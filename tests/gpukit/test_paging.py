"""Tests of gpukit.paging: the block table, the paged cache's decoding, the two schedulers."""

from __future__ import annotations

import pytest
import torch

from gpukit.gpt import GPT, generate
from gpukit.paging import BlockTable, PagedKVCache, Request, serve


def tiny(max_len: int = 32) -> GPT:
    torch.manual_seed(0)
    return GPT(num_hiddens=32, num_heads=4, num_blks=2, max_len=max_len).eval()


def test_blocks_are_allocated_grown_and_freed():
    table = BlockTable(num_blocks=6, block_size=4)
    assert table.allocate("a", 5) == [0, 1] and table.length("a") == 5
    assert table.allocate("b", 4) == [2]
    assert table.append("b") == 3  # block 2 was full
    assert [table.append("a") for _ in range(3)] == [None, None, None]
    assert table.append("a") == 4 and table.slots("a")[-1] == 16
    assert table.num_free == 1
    table.free("a")
    assert table.num_free == 4
    with pytest.raises(KeyError, match="holds no blocks"):
        table.blocks("a")
    assert table.allocate("c", 12) == [5, 0, 1]  # freed blocks are reused


def test_no_block_is_shared_by_two_live_requests():
    table = BlockTable(num_blocks=20, block_size=3)
    generator = torch.Generator().manual_seed(0)
    live: set[int] = set()
    for step in range(300):
        choice = int(torch.randint(3, (1,), generator=generator))
        if choice == 0 and table.can_allocate(5):
            table.allocate(step, 5)
            live.add(step)
        elif choice == 1 and live and table.num_free:
            table.append(min(live))
        elif live:
            table.free(max(live))
            live.remove(max(live))
        held = [b for r in live for b in table.blocks(r)]
        assert len(held) == len(set(held))  # no block twice
        assert len(held) + table.num_free == 20  # and none lost


def test_block_table_refuses_bad_input():
    table = BlockTable(num_blocks=2, block_size=4)
    with pytest.raises(ValueError, match="longer than the whole cache"):
        table.allocate("a", 9)
    table.allocate("a", 5)
    with pytest.raises(ValueError, match="already holds"):
        table.allocate("a", 1)
    with pytest.raises(RuntimeError, match="out of blocks"):
        table.allocate("b", 5)
    with pytest.raises(ValueError, match="block_size"):
        BlockTable(num_blocks=2, block_size=0)


def test_paged_cache_refuses_a_block_size_that_does_not_divide():
    with pytest.raises(ValueError, match="does not divide"):
        PagedKVCache(tiny(), capacity=100, block_size=8)


def test_paged_decoding_matches_generate_for_mixed_lengths():
    net = tiny()
    cache = PagedKVCache(net, capacity=128, block_size=4)
    prompts = {i: torch.randint(256, (n,)) for i, n in enumerate((3, 7, 1))}
    tokens = {i: cache.prefill(i, p).argmax() for i, p in prompts.items()}
    outputs = {i: [int(t)] for i, t in tokens.items()}
    for _ in range(9):
        ids = list(prompts)
        logits = cache.decode(ids, torch.stack([tokens[i] for i in ids]))
        for i, row in zip(ids, logits, strict=True):
            tokens[i] = row.argmax()
            outputs[i].append(int(tokens[i]))
    for i, p in prompts.items():
        expected = generate(net, p.view(1, -1), 10)[0, len(p) :].tolist()
        assert outputs[i] == expected


def make_requests(lengths: list[int]) -> list[Request]:
    generator = torch.Generator().manual_seed(1)
    return [Request(torch.randint(256, (4,), generator=generator), n) for n in lengths]


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_every_request_finishes_with_the_tokens_of_generate(policy):
    net = tiny()
    requests = make_requests([3, 12, 1, 7, 2, 9])
    cache = PagedKVCache(net, capacity=64, block_size=4)
    stats = serve(cache, requests, max_batch=3, policy=policy)
    assert stats.tokens == 34 and cache.table.num_free == 16  # all blocks returned
    for r in requests:
        assert r.output == generate(net, r.prompt.view(1, -1), r.max_new_tokens)[0, 4:].tolist()
        assert r.finished_at > 0


def test_continuous_batching_admits_in_arrival_order_and_takes_fewer_steps():
    net = tiny()
    lengths = [2, 14, 2, 2, 2, 2, 2, 14]
    static = serve(PagedKVCache(net, 128, 4), make_requests(lengths), max_batch=2, policy="static")
    requests = make_requests(lengths)
    continuous = serve(PagedKVCache(net, 128, 4), requests, max_batch=2)
    assert continuous.steps < static.steps
    # first come, first served: among requests of the same length, earlier ones finish first
    short = [r.finished_at for r in requests if r.max_new_tokens == 2]
    assert short == sorted(short)


def test_serve_counts_the_requests_of_each_step_and_times_the_prefills():
    lengths = [3, 12, 1, 7, 2, 9]
    for policy, rows in (("static", 3 * 11 + 3 * 8), ("continuous", sum(lengths) - 6)):
        # static pads every request of a batch to its longest; continuous decodes each request
        # for all its tokens but the one of its prefill
        stats = serve(PagedKVCache(tiny(), 64, 4), make_requests(lengths), 3, policy=policy)
        assert stats.rows == rows, policy
        assert 0 < stats.prefill_seconds < stats.seconds, policy
        assert stats.requests_per_step == rows / stats.steps, policy
        decode = (stats.seconds - stats.prefill_seconds) / stats.steps
        assert stats.decode_seconds_per_step == decode, policy


def test_serve_without_decode_steps_has_no_time_per_step():
    stats = serve(PagedKVCache(tiny(), 64, 4), make_requests([1, 1]), max_batch=2)
    assert stats.steps == 0 and stats.tokens == 2
    for per_step in ("decode_seconds_per_step", "requests_per_step"):
        with pytest.raises(ValueError, match="no decode steps"):
            getattr(stats, per_step)


def test_serve_refuses_requests_longer_than_the_cache():
    net = tiny()
    with pytest.raises(ValueError, match=r"requests\[1\] needs"):
        serve(PagedKVCache(net, 16, 4), make_requests([2, 20]), max_batch=2)
    with pytest.raises(ValueError, match="policy"):
        serve(PagedKVCache(net, 64, 4), make_requests([2]), max_batch=2, policy="greedy")


@pytest.mark.gpus(1)
def test_serving_on_a_gpu_gives_the_tokens_of_generate():
    net = tiny().cuda()
    requests = [Request(r.prompt.cuda(), r.max_new_tokens) for r in make_requests([3, 9, 1, 5])]
    serve(PagedKVCache(net, capacity=64, block_size=4), requests, max_batch=2)
    for r in requests:
        expected = generate(net, r.prompt.view(1, -1), r.max_new_tokens)[0, 4:].tolist()
        assert r.output == expected
