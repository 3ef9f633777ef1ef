"""What the prose says about the outputs agrees with those outputs.

The multi-GPU pages type no number that an executed cell produced: they glue them from the
outputs (myst-nb's ``glue``; in the HTML each one is a ``span.pasted-text``), and
tests/browser/test_glued_numbers.py checks that none is typed. What can still go wrong, and
what these tests check:

* a glue call that quotes the wrong variable: the glued numbers and words of the concise page
  must be the ones its table, its target lines and its batch-norm replay print;
* a page that no longer teaches: on a CPU-only quick build every row of the concise page's
  table must clear chance (0.1) by far, at least 0.5 (issue 13), so that comparing one device,
  ``nn.DataParallel`` and DDP means something there;
* the from-scratch page's claim that its CPU replicas agree exactly;
* the solutions and sentences that quote a number, an order or a word chosen from an output
  (speculative decoding, quantization, the paged KV cache, expert parallelism, the slower
  device's share, the ring's rates): the glued values are the printed ones, and the word is
  the one the printed numbers call for;
* every multi-process page's sentence on its world size: the number is the one its outputs
  print, and the ranks are CPU processes exactly where the outputs say gloo.

An unrelated change to gpukit can move the outputs (an argument check that drew one random
number once did), and nothing else would notice that the text no longer describes them.
"""

from __future__ import annotations

import ast
import re

import pytest
from browsing import LANGUAGES, ratio_fits, read

PAGE = "multiple-gpus-concise"
QUICK_CPU = {"en": ("CPU only", "profile quick"), "zh": ("仅 CPU", "快速配置")}
ROWS = re.compile(
    r"^(DataParallel, 1 device|DataParallel, 2 devices|DDP, \d process(?:es)?)\s+"
    r"[\d.]+ [a-zµ]+\s+([\d.]+)\s+(\d+)\s+([\d.]+)",
    re.MULTILINE,
)
TARGETS = re.compile(
    r"^(DataParallel, 2 devices|DDP, \d process(?:es)?)\s+[\d.]+x\s+[+-][\d.]+\s+(yes|no)\b", re.M
)
DATA = re.compile(r"^profile \w+: ([\d,]+) training / [\d,]+ test images, (\d+) epochs?$", re.M)
TRUE_VAR = re.compile(r"variance of its input on a test batch ([\d.e+-]+)")
BATCH_ACC = re.compile(r"test acc with each test batch's own statistics: ([\d.]+)")
REPLAY = re.compile(r"^\s*(\d+)\s+([\d.e+-]+)\s+([\d.e+-]+)\s+([\d.]+)$", re.MULTILINE)
# The glued words for "both met", "met by neither", "met by one of them".
TARGET_WORDS = {
    "en": ("both met", "met by neither", "met by one of them"),
    "zh": ("都达到了", "都没有达到", "中只有一次达到了"),
}
MIN_ACCURACY = 0.5
DP_SPEEDUP = re.compile(r"^DataParallel, 2 devices\s+([\d.]+)x .*\(not on 2 GPUs", re.M)
# The glued clause that says the one-device speed-up beat what half as many steps can give.
MORE_THAN_STEPS = {"en": "more than twice as fast", "zh": "快了不止两倍"}


def glued_paragraphs(tab) -> list[list[str]]:
    """The glued values of each paragraph of the page that has some, in order."""
    paragraphs = tab.locator("article p").filter(has=tab.locator("span.pasted-text")).all()
    return [
        [text.strip() for text in p.locator("span.pasted-text").all_text_contents()]
        for p in paragraphs
    ]


def same(quoted: str, expected: object) -> bool:
    """A glued value and an output's, as numbers where both are ("1,536" == 1536)."""
    try:
        return number(quoted) == float(expected)
    except (TypeError, ValueError):
        return quoted == str(expected)


def quoting(tab, expected: list[object], read_here: set[int] = frozenset()) -> list[str]:
    """The glued values of the paragraph that quotes ``expected``: the one agreeing with it in
    the most places. Found by what it quotes, not by its words, so that rewording the prose
    changes nothing here. ``read_here``: places whose words the test reads from the paragraph
    itself."""
    paragraphs = [q for q in glued_paragraphs(tab) if len(q) >= len(expected)]
    assert paragraphs, "no paragraph glues that many values"

    def agreeing(quoted: list[str]) -> int:
        return sum(
            same(q, e)
            for i, (q, e) in enumerate(zip(quoted, expected, strict=False))
            if i not in read_here
        )

    return max(paragraphs, key=agreeing)


def number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_concise_page_quotes_its_table(desktop_tab, site, lang: str) -> None:
    provenance, outputs = read(desktop_tab, site, f"{lang}/{PAGE}")
    rows = ROWS.findall(outputs)
    assert len(rows) == 3, outputs
    n_train, epochs = DATA.search(outputs).groups()
    n_train, epochs = int(n_train.replace(",", "")), int(epochs)
    steps = [epochs * -(-n_train // int(batch)) for _, _, batch, _ in rows]
    accuracies = [float(acc) for _, acc, _, _ in rows]
    # "the one-device run made N optimizer steps, the two-device run N and the DDP run N; their
    # test accuracies lie between A and B (chance is 0.1), and the target for two GPUs is ..."
    quoted = quoting(desktop_tab, [*steps, min(accuracies), max(accuracies)])
    assert [number(q) for q in quoted[:5]] == [*steps, min(accuracies), max(accuracies)], (
        f"{lang}: the prose quotes {quoted}, the table shows {rows}"
    )
    met = [yes == "yes" for _, yes in TARGETS.findall(outputs)]
    assert len(met) == 2, outputs
    both, neither, one = TARGET_WORDS[lang]
    word = both if all(met) else neither if not any(met) else one
    assert word in quoted[5], f"{lang}: the prose says {quoted[5]!r}, the target lines {met}"
    one_device = DP_SPEEDUP.search(outputs)
    if one_device:  # nn.DataParallel had one device: only the batch can explain the speed-up
        speedup = float(one_device.group(1))
        steps_ratio = int(rows[1][2]) / int(rows[0][2])  # half as many steps: 2x at most
        said = quoting(desktop_tab, [f"{speedup:.2f}"])
        assert number(said[0]) == speedup, (lang, said, speedup)
        assert (MORE_THAN_STEPS[lang] in said[1]) == (speedup > steps_ratio), (
            f"{lang}: a speed-up of {speedup} with {steps_ratio:g}x fewer steps, said as {said}"
        )
    if all(marker in provenance for marker in QUICK_CPU[lang]):
        # Every row, not only the one-device run: with too few optimizer steps the two-device
        # rows once evaluated at chance (batch norm's running averages had not caught up).
        assert min(accuracies) >= MIN_ACCURACY, (
            f"{lang}: a row of the CPU table ends at {min(accuracies)}: {rows}"
        )
        assert not any(met), f"{lang}: a CPU build met the target for two GPUs: {outputs}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_concise_page_quotes_its_batch_norm_replay(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/{PAGE}")
    true_var = TRUE_VAR.search(outputs).group(1)
    batch_acc = BATCH_ACC.search(outputs).group(1)
    replay = REPLAY.findall(outputs[outputs.index("updates k") :])[:3]
    assert len(replay) == 3, outputs
    (k1, w1, _, a1), (k2, w2, _, a2), (k3, w3, _, a3) = replay

    # The true variance, a phrase, then k, weight and accuracy after the fewest updates, a
    # phrase, the batch-statistics accuracy, and k, weight and accuracy twice more. The output
    # prints two significant digits as 1.2e-03, the prose as 0.0012.
    def expected_with(quoted: list[str]) -> list[str]:
        return [
            *(f"{float(true_var):.2g}", quoted[1]),
            *(k1, f"{float(w1):.2g}", a1, quoted[5], batch_acc),
            *(k2, f"{float(w2):.2g}", a2, k3, f"{float(w3):.2g}", a3),
        ]

    quoted = quoting(desktop_tab, expected_with([""] * 13), read_here={1, 5})
    expected = expected_with(quoted) if len(quoted) > 5 else []
    assert quoted == expected, (
        f"{lang}: the prose quotes {quoted}, the output shows {true_var}, {batch_acc}, {replay}"
    )
    # The phrases: the true variance "small next to" 1 (below 0.1), and the accuracy after the
    # fewest updates "far below" (0.2 or more under), "below" (0.05 or more) or "close to" the
    # batch-statistics one. The cell compares unrounded values: near a threshold either word
    # fits the printed ones.
    not_small = {"en": "not small", "zh": "并不算小"}[lang]
    if abs(float(true_var) - 0.1) > 0.01:
        assert (not_small in quoted[1]) == (float(true_var) >= 0.1), (lang, quoted[1], true_var)
    gap = float(batch_acc) - float(a1)
    words = {"en": ("far below", "below", "close to"), "zh": ("远低于", "低于", "接近")}[lang]
    fitting = {
        word
        for g in (gap - 0.01, gap, gap + 0.01)
        for word in [words[0] if g >= 0.2 else words[1] if g >= 0.05 else words[2]]
    }
    assert any(quoted[5].startswith(word) for word in fitting), (lang, quoted[5], gap)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_from_scratch_page_replicas_agree_exactly_on_a_cpu(desktop_tab, site, lang: str) -> None:
    # "The two replicas agree exactly" and, in exercise 4, the two accuracies differ only where the
    # devices round differently (TF32 on a GPU): on one CPU, in float32, they are equal.
    provenance, outputs = read(desktop_tab, site, f"{lang}/multiple-gpus")
    if QUICK_CPU[lang][0] not in provenance:
        pytest.skip(f"not a CPU-only build: {provenance}")
    assert re.search(r"replica 0 vs replica 1:\s+0\.0e\+00", outputs), outputs
    multi, alone = re.search(
        r"test acc on 2 devices: ([\d.]+), on cpu alone: ([\d.]+)", outputs
    ).groups()
    assert multi == alone


# The attention page's memory table: tokens, one score matrix (computed), the written-out
# peak, SDPA's peak, their ratio.
SCORE_ROWS = re.compile(
    r"^\s*([\d,]+)\s+([\d.]+ [KMG]?i?B)\s+([\d.]+ [KMG]?i?B)\s+([\d.]+ [KMG]?i?B)\s+\d+x$", re.M
)
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def size(text: str) -> float:
    value, unit = text.split()
    return float(value) * UNITS[unit]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_attention_page_solutions_hold_for_its_outputs(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/attention")
    rows = SCORE_ROWS.findall(outputs)
    assert len(rows) >= 2, outputs
    # Exercise 1's solution: the written-out attention holds "two n x n matrices per head"
    # (the scores and the softmax's output), "a factor of about two over one matrix".
    _, scores, written, fused = rows[-1]
    assert 1.6 <= size(written) / size(scores) <= 2.4, rows[-1]
    # ... and SDPA's peak grows about linearly: far below one score matrix at the longest.
    assert size(fused) < size(scores) / 4, rows[-1]
    # Exercise 3's solution: 8 key-value heads instead of 32 make the cache "a quarter".
    full, grouped = re.search(
        r"([\d.]+) GiB with 32 KV heads, ([\d.]+) GiB with 8", outputs
    ).groups()
    assert float(full) == 4 * float(grouped), (full, grouped)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_attention_page_adds_up_the_printed_shares(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/attention")
    line = re.search(r"^MATH: (.*)$", outputs, re.M)
    assert line, outputs
    printed = dict((op, int(share)) for op, share in re.findall(r"(\w+) (\d+)%", line.group(1)))
    # "Those three operators took S% of its time here (their printed shares added up)"
    words = {"en": "Those three operators took", "zh": "这三个算子在这里占了它"}
    share = paragraph_quoting(desktop_tab, words, lang)[0]
    expected = sum(printed.get(op, 0) for op in ("isneginf", "all", "where"))
    assert number(share.removesuffix("%")) == expected, (lang, share, line.group(0))
    # "... in which MATH took R times as long as d2l.attention": the timed calls, as printed
    ratio = paragraph_quoting(desktop_tab, words, lang)[1]
    written, math = (
        float(re.search(rf"^ +{name} +([\d.]+) sec", outputs, re.M).group(1))
        for name in ("written out", "MATH")
    )
    assert ratio_fits(ratio, math, written, 0.00005), (lang, ratio, written, math)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_triton_page_solutions_hold_for_its_outputs(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/triton")
    # Exercise 1's solution: "P programs; they cover L lanes, so the last program masks M of
    # its 64 lanes", glued from the cell that prints P and M.
    programs, masked = re.search(r"^(\d+) (\d+)$", outputs, re.M).groups()
    lanes = 64 * int(programs)
    assert quoting(desktop_tab, [programs, lanes, masked])[:3] == [programs, f"{lanes:,}", masked]
    assert lanes - int(masked) == 10_000 and 0 <= int(masked) < 64, (programs, masked)
    # Exercise 2's solution: without other=-inf "every row's result is wrong": no row sums to 1.
    sums = re.search(r"row sums: \[([^\]]*)\]", outputs).group(1).split(",")
    assert sums and all(abs(float(s) - 1) > 0.01 for s in sums), sums


# The FlashAttention page's roofline cell prints each kernel's bytes per call in MiB.
FLASH_TRAFFIC = re.compile(r"^\s*(written out|flash): +([\d,]+) MiB,", re.M)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_flash_attention_traffic_ratio_is_its_printed_sizes(desktop_tab, site, lang: str) -> None:
    # "The written-out attention moves R times the bytes of our kernel", beside the two sizes
    # the cell prints (once a glued 4.9 beside 5.1 GiB and 1.0 GiB, rounded apart)
    _, outputs = read(desktop_tab, site, f"{lang}/flash-attention")
    sizes = {kind: number(mib) for kind, mib in FLASH_TRAFFIC.findall(outputs)}
    assert set(sizes) == {"written out", "flash"}, outputs
    ratio = f"{sizes['written out'] / sizes['flash']:.1f}"
    assert quoting(desktop_tab, [ratio])[0] == ratio, (ratio, sizes)


# A sweep line's size, the ring's time and rate; with dist.all_reduce's time after them
SWEEP = re.compile(r"^\s*([\d,]+) numbers: ring_allreduce ([\d.]+) sec \(([\d.]+) MB/s\)", re.M)
SWEEP_BOTH = re.compile(SWEEP.pattern + r", dist\.all_reduce ([\d.]+) sec", re.M)
# The glued words for dist.all_reduce taking longer than, less time than, as long as the ring
BUILTIN_WAY = {
    "en": ("longer than", "less time than", "as long as"),
    "zh": ("比我们的环更长", "比我们的环更短", "与我们的环相同"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_parameter_server_solutions_hold_for_their_outputs(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/parameterserver")
    # Exercise 4: the smallest tensor's rate is "tiny" next to the largest's, and the time of
    # the largest grows with its size.
    sweep = [(number(n), float(sec), float(rate)) for n, sec, rate in SWEEP.findall(outputs)]
    assert len(sweep) >= 3, outputs
    (_, t_small, r_small), (_, t_large, r_large) = sweep[0], sweep[-1]
    assert r_small < r_large / 10 and t_large > t_small, sweep
    # Exercise 6: equal ranges "balance the load to within one number per server", one key
    # per tensor does not.
    by_key = re.search(r"key % 4: \[([^\]]*)\]", outputs).group(1)
    by_range = re.search(r"flattened parameters: \[([^\]]*)\]", outputs).group(1)
    keys = [number(x.strip(" '")) for x in by_key.split("', '")]
    ranges = [number(x.strip(" '")) for x in by_range.split("', '")]
    assert max(ranges) - min(ranges) <= 1 < max(keys) - min(keys), (keys, ranges)


def paragraph_quoting(tab, words: dict[str, str], lang: str) -> list[str]:
    """The glued values that follow ``words[lang]`` in the paragraph holding them."""
    paragraph = tab.locator("article p").filter(has_text=words[lang]).first
    return paragraph.evaluate(
        """(p, words) => [...p.querySelectorAll("span.pasted-text")].filter(span => {
             const before = document.createRange();
             before.setStart(p, 0);
             before.setEndBefore(span);
             return before.toString().includes(words);
           }).map(span => span.textContent.trim())""",
        words[lang],
    )


def one_of(word: str, choices: tuple[str, ...], chosen: int) -> bool:
    """Whether a glued word is the choice ``chosen`` of ``choices`` (and no other)."""
    return choices[chosen] in word and not any(c in word for c in choices if c != choices[chosen])


def word_beside_values(tab, values: list[str], choices: tuple[str, ...], chosen: int) -> None:
    """The paragraph that glues a word and then ``values``: the values as printed, and the word
    the choice ``chosen`` of ``choices``."""
    quoted = quoting(tab, ["", *values], read_here={0})
    assert quoted[1 : 1 + len(values)] == values, (quoted, values)
    assert one_of(quoted[0], choices, chosen), (quoted[0], values)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_speculative_decoding_exercise_3_quotes_its_cell(desktop_tab, site, lang: str) -> None:
    # "at c = 0.05 a draft of K tokens, for a speed-up of S; at c = 0.5 only K tokens, for S.
    # The cheaper draft's best length is longer."
    _, outputs = read(desktop_tab, site, f"{lang}/speculative-decoding")
    best = re.findall(r"^c = ([\d.]+): best draft_len (\d+), speed-up ([\d.]+)$", outputs, re.M)
    found = {c: (k, s) for c, k, s in best}
    (cheap_k, cheap_s), (dear_k, dear_s) = found["0.05"], found["0.5"]
    quoted = quoting(desktop_tab, [cheap_k, cheap_s, dear_k, dear_s])
    assert quoted[:4] == [cheap_k, cheap_s, dear_k, dear_s], (lang, quoted, found)
    longer = int(cheap_k) > int(dear_k)
    negative = {"en": "not longer", "zh": "并不更长"}[lang]
    assert (negative in quoted[4]) != longer, (lang, quoted[4], found)
    # What the solution teaches: the cheap draft is worth a longer draft, for a larger gain.
    assert int(cheap_k) > int(dear_k) and float(cheap_s) > float(dear_s), found


@pytest.mark.parametrize("lang", LANGUAGES)
def test_quantization_solutions_quote_their_cell(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/quantization")
    # Exercise 1: "Here the error grows: E with one scale for the tensor, E with one per row."
    row, tensor = re.search(
        r"int8 error, one scale per row ([\d.]+), one for the tensor ([\d.]+)", outputs
    ).groups()
    words = {"en": ("does not grow", "grows"), "zh": ("没有变大", "变大了")}[lang]
    word_beside_values(desktop_tab, [tensor, row], words, float(tensor) > float(row))
    # Exercise 3: MXFP4's and NVFP4's bits per weight from the format table, then the gigabytes
    # of a 7 B model in bf16, int8, MXFP4 and NVFP4, as printed.
    bits = dict(re.findall(r"^(MXFP4|NVFP4)\s+([\d.]+)\s+[\d.]+\s+[\d.]+$", outputs, re.M))
    sizes = dict(re.findall(r"^7 B parameters in (\w+): ([\d.]+) GB$", outputs, re.M))
    expected = [bits["MXFP4"], bits["NVFP4"]]
    expected += [sizes[name] for name in ("bf16", "int8", "MXFP4", "NVFP4")]
    assert quoting(desktop_tab, expected)[:6] == expected, (lang, bits, sizes)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_paged_kv_cache_quotes_the_block_tables_share(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/paged-kv-cache")
    share = re.search(r"of which the block table methods [\d.]+ s \(([\d.]+)%\)", outputs)
    assert share, outputs
    quoted = quoting(desktop_tab, [share.group(1)])
    assert quoted == [share.group(1)], (lang, quoted, share.group(0))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_small_gpt_says_how_many_of_its_words_are_the_training_texts(
    desktop_tab, site, lang: str
) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/small-gpt")
    counts = re.search(
        r"^(\d+) words in the sample, (\d+) of them words of the training", outputs, re.M
    )
    assert counts, outputs
    total, known = (int(n) for n in counts.groups())
    # "Of the sample's N words, P% are words of the training text. ... : VERDICT."
    words = {"en": "Of the sample", "zh": "生成结果中的"}
    quoted_total, share, verdict = paragraph_quoting(desktop_tab, words, lang)
    assert int(quoted_total) == total, (lang, quoted_total, counts.group(0))
    assert number(share) == round(100 * known / max(total, 1)), (lang, share, counts.group(0))
    choices = {
        "en": ("no word at all", "none of them", "some of them", "every word"),
        "zh": ("还没有任何词", "还没有这样的词", "已有一些", "全都是"),
    }[lang]
    chosen = 0 if not total else 1 if not known else 2 if known < total else 3
    assert one_of(verdict, choices, chosen), (lang, verdict, counts.group(0))


# The decoding page's sample: the prompt and the generated text, each as Python's repr.
REPR = r"('(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")"
SAMPLE = re.compile(rf"^{REPR} -> {REPR}$", re.M)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_decoding_describes_its_sample(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/decoding")
    line = SAMPLE.search(outputs)
    assert line, outputs
    sample = ast.literal_eval(line.group(2))
    kinds = len(set(sample))
    # "The text it generated above is S% spaces and uses K." / "...空格占 S%，全文...K..."
    words = {"en": "The text it generated above", "zh": "上面生成的文本中"}
    spaces, phrase = paragraph_quoting(desktop_tab, words, lang)[:2]
    assert spaces == f"{sample.count(' ') / len(sample):.0%}", (lang, spaces, line.group(2))
    single = {"en": "a single character", "zh": "只用到一种字符"}[lang]
    several = {"en": f"{kinds} different characters", "zh": f"{kinds} 种不同的字符"}[lang]
    assert (single if kinds == 1 else several) in phrase, (lang, phrase, kinds)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_paged_kv_cache_compares_the_times_per_step(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/paged-kv-cache")
    steps = dict(re.findall(r"^\s*(static|continuous): +(\d+) decode steps,", outputs, re.M))
    runs = {
        policy: values
        for policy, *values in re.findall(
            r"^\s*(static|continuous): ([\d.]+) ms a decode step without the prefills, "
            r"([\d.]+) requests a step; \d+ prefills ([\d.]+) ms",
            outputs,
            re.M,
        )
    }
    assert set(steps) == set(runs) == {"static", "continuous"}, outputs
    # "Without its prefills, each run's time divided by its decode steps comes to S ms a step
    # for static batching, whose steps decoded RS requests, ..., and C ms for continuous
    # batching, whose steps decoded RC requests on average, of at most B: ... A continuous step
    # took WORD a static one here. The prefills, timed apart, would add PS ms to each static
    # step and PC ms to each continuous one ..."
    words = {"en": "Without its prefills", "zh": "不计预填充"}
    quoted = paragraph_quoting(desktop_tab, words, lang)
    assert len(quoted) == 8, (lang, quoted)
    static_ms, static_rows, continuous_ms, continuous_rows, most, word, *prefills = quoted
    for policy, ms, rows, prefill in (
        ("static", static_ms, static_rows, prefills[0]),
        ("continuous", continuous_ms, continuous_rows, prefills[1]),
    ):
        printed_ms, printed_rows, printed_prefills = runs[policy]
        assert (ms, rows) == (printed_ms, printed_rows), (lang, policy, ms, rows)
        # the prefills' ms per decode step, from their total printed to 0.1 ms
        n = int(steps[policy])
        expected = number(printed_prefills) / n
        assert abs(number(prefill) - expected) <= 0.05 / n + 0.005, (lang, policy, prefill)
    assert 1 <= number(continuous_rows) <= number(most), (lang, continuous_rows, most)
    choices = {
        "en": ("as long as", "longer than", "less time than"),
        "zh": ("与静态批处理的一步一样长", "比静态批处理的一步更长", "比静态批处理的一步更短"),
    }[lang]
    way = (number(continuous_ms) > number(static_ms)) - (number(continuous_ms) < number(static_ms))
    assert one_of(word, choices, way), (lang, word, static_ms, continuous_ms)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_expert_parallelism_says_which_way_training_moved_the_load(
    desktop_tab, site, lang: str
) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/expert-parallelism")
    # The untrained router: the assignments per expert it printed (the same for each factor).
    counts = re.findall(r"assignments per expert \[([^\]]*)\]", outputs)[-1].split(",")
    counts = [int(n) for n in counts]
    untrained = f"{max(counts) / (sum(counts) / len(counts)):.2f}"
    # The trained one without the auxiliary loss: the first row of the table, busiest / mean.
    trained = re.search(r"^\s*0\.0\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+%$", outputs, re.M)
    assert trained, outputs
    trained = trained.group(1)
    # "... got L times the mean load (the untrained router's ...: U times; on this build,
    # training without the auxiliary loss raised the imbalance) ..."
    quoted = quoting(desktop_tab, ["", trained, untrained, ""], read_here={0, 3})
    assert quoted[1:3] == [trained, untrained], (lang, quoted, trained, untrained)
    words = {"en": ("did not change", "raised", "lowered"), "zh": ("没有改变", "加剧了", "减轻了")}
    way = (float(trained) > float(untrained)) - (float(trained) < float(untrained))
    assert one_of(quoted[3], words[lang], way), (lang, quoted[3], trained, untrained)


# The pipeline's GPipe rows: m, the weight difference, the bubble and rank 0's idle share
PIPELINE_ROW = r"^gpipe +(\d+) +[\d.e+-]+ +[\d.]+ +([\d.]+)$"
PIPELINE_IDLE_WORDS = {  # fell, did not change, rose
    "en": ("fell", "did not change", "rose"),
    "zh": ("降低了", "没有变化", "反而升高了"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_pipeline_says_whether_more_microbatches_lowered_the_idle_share(
    desktop_tab, site, lang: str
) -> None:
    # "With more microbatches, rank 0's measured idle share [rose] on this build: it was idle
    # 0.42 and 0.44 of its steps". Once the page said that even 8 microbatches "take far longer
    # to compute than to send" beside a table where the idle share rose from 2 to 8.
    _, outputs = read(desktop_tab, site, f"{lang}/tensor-pipeline-parallelism")
    rows = sorted((int(m), float(idle)) for m, idle in re.findall(PIPELINE_ROW, outputs, re.M))
    assert len(rows) == 2, outputs
    (_, few), (_, many) = rows
    starts = {"en": "With more microbatches", "zh": "微批量增多后"}
    verdict, idle_few, idle_many = paragraph_quoting(desktop_tab, starts, lang)[:3]
    if lang == "zh":  # whole percents of the same shares
        quoted = [number(q.rstrip("%")) / 100 for q in (idle_few, idle_many)]
        assert all(abs(q - t) < 0.01 for q, t in zip(quoted, (few, many), strict=True)), (
            quoted,
            rows,
        )
    else:
        assert [idle_few, idle_many] == [f"{few:.2f}", f"{many:.2f}"], (idle_few, idle_many, rows)
    way = (many > few) - (many < few)  # as the table prints them
    assert one_of(verdict, PIPELINE_IDLE_WORDS[lang], way + 1), (lang, verdict, rows)


# The overlap page's table: a run's step, computing and collectives in ms, and the hidden share
OVERLAP_ROW = r"^{} +[\d.]+ms +[\d.]+ms +([\d.]+)ms +(\d+)%$"
PREFETCH_SOURCE = {  # about equally, mostly shorter collectives, mostly more hidden
    "en": ("about equally", "mostly because the collectives were shorter", "mostly because more"),
    "zh": ("大致相当", "主要是因为集合通信本身变短了", "主要是因为隐藏得更多"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_overlap_says_where_prefetchings_gain_came_from(desktop_tab, site, lang: str) -> None:
    # Exposed collective time is collectives x (1 - hidden); prefetching changed both. Once the
    # page said "mostly because the collectives were shorter, not because more of them were
    # hidden" beside a split of 51 to 49.
    _, outputs = read(desktop_tab, site, f"{lang}/overlap")
    (comm, hidden), (comm_prefetch, hidden_prefetch) = (
        map(float, re.search(OVERLAP_ROW.format(re.escape(name)), outputs, re.M).groups())
        for name in ("fsdp", "fsdp, prefetch")
    )
    by_shorter = (comm - comm_prefetch) * (1 - hidden / 100)
    by_hiding = comm_prefetch * (hidden_prefetch - hidden) / 100
    starts = {
        "en": "collectives with prefetching took",
        "zh": "有预取时 FSDP 的集合通信用时",
    }
    source = paragraph_quoting(desktop_tab, starts, lang)[-1]
    equally, shorter, hiding = PREFETCH_SOURCE[lang]
    if by_shorter + by_hiding > 1:  # a millisecond at least: the shares of a real change
        # the hidden shares are printed in whole percents: only clear cases are checked
        share = by_shorter / (by_shorter + by_hiding)
        if 0.45 <= share <= 0.55:
            assert equally in source, (share, source)
        elif share > 0.7:
            assert shorter in source, (share, source)
        elif share < 0.3:
            assert hiding in source, (share, source)


# A run's row with its step and collectives in ms and the hidden share, as printed
OVERLAP_TIMES = r"^{} +([\d.]+)ms +[\d.]+ms +([\d.]+)ms +(\d+%)$"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_overlap_quotes_the_ratios_of_its_table(desktop_tab, site, lang: str) -> None:
    # "With buckets the step took R times as long as with one bucket, ... The collectives of the
    # bucketed run took R times as long as the one all-reduce": once a glued 2.6, the ratio of
    # the unrounded times, stood beside a table whose 17.10 / 6.45 gives 2.7. The page glues
    # the ratios of the printed times, so they are checked exactly.
    _, outputs = read(desktop_tab, site, f"{lang}/overlap")
    rows = {
        name: re.search(OVERLAP_TIMES.format(re.escape(name)), outputs, re.M).groups()
        for name in ("fsdp", "fsdp, prefetch", "ddp, one bucket", "ddp, buckets")
    }
    step = {name: float(row[0]) for name, row in rows.items()}
    comm = {name: float(row[1]) for name, row in rows.items()}
    starts = {"en": "What the overlap bought in time", "zh": "重叠在时间上换来了多少"}
    quoted = paragraph_quoting(desktop_tab, starts, lang)
    expected = [
        f"{step['ddp, buckets'] / step['ddp, one bucket']:.2f}",
        f"{step['fsdp, prefetch'] / step['fsdp']:.2f}",
        f"{comm['ddp, buckets'] / comm['ddp, one bucket']:.1f}",
        f"{comm['fsdp, prefetch'] / comm['fsdp']:.2f}",
        rows["fsdp, prefetch"][2],
        rows["fsdp"][2],
    ]
    assert [quoted[i] for i in (0, 1, 2, 4, 5, 6)] == expected, (lang, quoted, rows)


# A run's row as printed: step, computing and collectives in ms, and the hidden share
OVERLAP_ALL = r"^{} +([\d.]+)ms +([\d.]+)ms +([\d.]+)ms +(\d+)%$"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_overlap_compares_the_computing_and_the_exposed_collectives(
    desktop_tab, site, lang: str
) -> None:
    # "rank 0 computed for C ms without prefetching and C ms with it, R times as long for the
    # same work. The collective time left outside the computing ... came to E ms and E ms: less
    # collective time outside the computing accounts for S% of the D ms by which the step
    # shortened". Once the page set prefetching's step ratio (0.71) beside a computing column
    # that fell from 153.80 to 99.61 ms, with nothing saying that the collectives left outside
    # the computing fell by only about 5 of the 81 ms.
    _, outputs = read(desktop_tab, site, f"{lang}/overlap")
    (step, compute, comm, hidden), (step_p, compute_p, comm_p, hidden_p) = (
        re.search(OVERLAP_ALL.format(re.escape(name)), outputs, re.M).groups()
        for name in ("fsdp", "fsdp, prefetch")
    )
    starts = {"en": "Each run is profiled for one step", "zh": "每种运行只剖析一步"}
    quoted = paragraph_quoting(desktop_tab, starts, lang)
    assert quoted[:3] == [compute, compute_p, f"{float(compute_p) / float(compute):.2f}"], (
        lang,
        quoted,
        compute,
        compute_p,
    )
    # collectives x (1 - hidden), the hidden share printed in whole percents
    exposed, exposed_p = (
        float(c) * (1 - float(h) / 100) for c, h in ((comm, hidden), (comm_p, hidden_p))
    )
    slack = 0.005 * max(float(comm), float(comm_p)) + 0.06
    assert abs(number(quoted[3]) - exposed) <= slack, (quoted[3], exposed)
    assert abs(number(quoted[4]) - exposed_p) <= slack, (quoted[4], exposed_p)
    verdict = quoted[5]
    saved = float(step) - float(step_p)
    if saved <= 0:
        assert {"en": "did not shorten", "zh": "并没有缩短"}[lang] in verdict, verdict
        return
    assert f"{saved:.2f} ms" in verdict, (saved, verdict)
    exposed_saved = exposed - exposed_p
    share = re.search(r"(\d+)%", verdict)
    if exposed_saved > 2 * slack and exposed_saved < saved - 2 * slack:  # a clear share
        assert share, verdict
        assert abs(int(share.group(1)) / 100 - exposed_saved / saved) <= 2 * slack / saved + 0.01
        mostly_elsewhere = {"en": "lies elsewhere", "zh": "大半不在集合通信上"}[lang]
        if exposed_saved / saved < 0.4:
            assert mostly_elsewhere in verdict, verdict
        elif exposed_saved / saved > 0.6:
            assert mostly_elsewhere not in verdict, verdict


ZIGZAG_WORDS = {  # shortened, only just shortened, did not shorten
    "en": ("shortened", "only just shortened", "did not shorten"),
    "zh": ("缩短了", "只略微缩短了", "没有缩短"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_context_parallelism_says_whether_the_zigzag_shortened_the_step(
    desktop_tab, site, lang: str
) -> None:
    # "the slowest rank computed R times as long with contiguous parts ...: on this build the
    # zigzag [did not shorten] the slowest rank's computing time" (once a glued 0.98 stood with
    # no word saying the zigzag had not helped)
    read(desktop_tab, site, f"{lang}/context-parallelism")
    starts = {"en": "which paces the ring, computed", "zh": "决定环的节奏的最慢进程"}
    ratio, _, verdict = paragraph_quoting(desktop_tab, starts, lang)[:3]
    shortened, just, not_shortened = ZIGZAG_WORDS[lang]
    ratio = float(ratio)  # rounded to 2 places: the cell's bounds 1 and 1.1 are not checked
    if ratio > 1.1:
        assert verdict == shortened, (ratio, verdict)
    elif ratio < 1:
        assert verdict == not_shortened, (ratio, verdict)
    elif 1 < ratio < 1.1:
        assert verdict == just, (ratio, verdict)


GROUPED_WAY = {"en": "grouping saved time here", "zh": "分组在这里省了时间"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_expert_parallelism_says_whether_grouping_saved_time(desktop_tab, site, lang: str) -> None:
    # "the loop took R times as long as the grouped product (grouping saved [no] time here)":
    # once a CPU case said what grouping saves beside a loop that took 0.92 times as long.
    _, outputs = read(desktop_tab, site, f"{lang}/expert-parallelism")
    loop, grouped = (
        float(re.search(rf"^ *{name}: ([\d.]+) sec", outputs, re.M)[1])
        for name in ("one product per expert", "grouped")
    )
    starts = {"en": "The grouped product gave the loop", "zh": "分组乘法得到了与循环相同的结果"}
    ratio, way = paragraph_quoting(desktop_tab, starts, lang)[:2]
    # the times are printed to 4 decimals: the glued ratio, of the unrounded ones, may differ
    assert ratio_fits(ratio, loop, grouped, 0.00005), (ratio, loop, grouped)
    if ratio != "1.00":
        assert (way == GROUPED_WAY[lang]) == (float(ratio) > 1), (lang, ratio, way)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_from_scratch_exercise_4_says_whether_the_accuracies_agree(
    desktop_tab, site, lang: str
) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/multiple-gpus")
    multi, alone = re.search(
        r"test acc on \d+ devices: ([\d.]+), on \S+ alone: ([\d.]+)", outputs
    ).groups()
    words = {"en": ("differ", "agree to the last digit"), "zh": ("有差别", "完全一致")}[lang]
    word_beside_values(desktop_tab, [multi, alone], words, multi == alone)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_concise_exercise_4_quotes_the_slower_devices_share(desktop_tab, site, lang: str) -> None:
    # "On this build the slower of the two, device 1 (cpu), would take N% of each minibatch":
    # once both devices printed as "cpu", and the prose named "the slower device, cpu".
    _, outputs = read(desktop_tab, site, f"{lang}/{PAGE}")
    rates = [
        (device, number(rate))
        for device, rate in re.findall(
            r"^(device \d \(\S+\)): one step on \d+ examples in .*?, ([\d,.]+) examples/sec$",
            outputs,
            re.M,
        )
    ]
    assert len(rates) == 2, outputs
    assert [device.split()[1] for device, _ in rates] == ["0", "1"], rates
    slow, slow_rate = min(rates, key=lambda pair: pair[1])
    share = 100 * slow_rate / sum(rate for _, rate in rates)
    quoted = quoting(desktop_tab, [slow, ""], read_here={1})
    assert quoted[0] == slow, (lang, quoted, rates)
    # The printed rates are rounded: the share may differ by one in its last digit.
    assert abs(number(quoted[1]) - share) <= 1, (lang, quoted, rates)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_parameter_server_exercise_4_quotes_its_rates(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/parameterserver")
    sweep = [(n, rate) for n, _, rate in SWEEP.findall(outputs)]
    assert len(sweep) >= 3, outputs
    (n_small, r_small), (n_mid, r_mid), (n_large, r_large) = sweep[0], sweep[-2], sweep[-1]
    # en quotes each rate before its size, zh each size before its rate
    pairs = [(r_small, n_small), (r_mid, n_mid), (r_large, n_large)]
    expected = [x for pair in pairs for x in (pair if lang == "en" else pair[::-1])]
    quoted = quoting(desktop_tab, expected)
    assert quoted[:6] == expected, (lang, sweep)
    # ... and whether the largest size moved its bytes faster or slower than the one before it
    words = {"en": ("slower", "faster"), "zh": ("更慢", "更快")}[lang]
    assert one_of(quoted[6], words, float(r_large) > float(r_mid)), (lang, quoted[6], sweep)
    # "At N numbers dist.all_reduce took <longer than> our ring (B s against R s); at N numbers
    # it took <less time than> the ring (B s against R s)": the smallest and the largest line.
    both = SWEEP_BOTH.findall(outputs)
    assert len(both) == len(sweep), outputs
    expected = []
    for n, ring, _, builtin in (both[0], both[-1]):
        way = 0 if float(builtin) > float(ring) else 1 if float(builtin) < float(ring) else 2
        expected += [n, way, builtin, ring]
    quoted = quoting(desktop_tab, expected, read_here={1, 5})
    assert [quoted[i] for i in (0, 2, 3, 4, 6, 7)] == [expected[i] for i in (0, 2, 3, 4, 6, 7)], (
        lang,
        quoted,
        both,
    )
    for place in (1, 5):
        assert one_of(quoted[place], BUILTIN_WAY[lang], expected[place]), (lang, quoted, both)


# Each multi-process page's sentence on its world size: the words that find it, and what its
# outputs print for that number ({} is the number).
WORLD_SENTENCE = {"en": "world size is", "zh": "进程总数是"}
WORLD_OUTPUTS = {
    "fsdp": r"^{} ranks \((gloo|nccl)\)",
    "tensor-pipeline-parallelism": r"\b{} ranks \((gloo|nccl)\) on",
    "context-parallelism": r"\b{} ranks \((gloo|nccl)\)",
    "expert-parallelism": r"\b{} ranks \((gloo|nccl)\)",
    "overlap": r"\b{} ranks \((gloo|nccl)\)",
    "planner": r"\b{} ranks \((gloo|nccl)\)",
    "parameterserver": r"^{} processes, backend (gloo|nccl)",
    "multiple-gpus-concise": r"DistributedDataParallel, {} (gloo|nccl) process",
    "many-machines": r"WORLD_SIZE={}\b",
}


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("page", sorted(WORLD_OUTPUTS))
def test_multi_process_pages_state_their_world_size(desktop_tab, site, lang: str, page) -> None:
    provenance, outputs = read(desktop_tab, site, f"{lang}/{page}")
    quoted = paragraph_quoting(desktop_tab, WORLD_SENTENCE, lang)
    assert quoted, f"{lang}/{page}: no sentence on the world size"
    found = re.search(WORLD_OUTPUTS[page].format(re.escape(quoted[0])), outputs, re.M)
    assert found, f"{lang}/{page}: the prose says a world size of {quoted[0]}: {outputs[:2000]}"
    # What the ranks ran on: CPU processes under gloo (always, on many-machines), else a GPU each
    backend = found.group(1) if found.groups() else "gloo"
    if len(quoted) > 1:
        assert ("CPU" in quoted[1]) == (backend == "gloo"), (lang, page, quoted, backend)
        assert ("NCCL" in quoted[1]) == (backend == "nccl"), (lang, page, quoted, backend)
    if QUICK_CPU[lang][0] in provenance:
        assert backend == "gloo", (lang, page, found.group(0))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_from_scratch_page_states_its_devices(desktop_tab, site, lang: str) -> None:
    _, outputs = read(desktop_tab, site, f"{lang}/multiple-gpus")
    quoted = paragraph_quoting(desktop_tab, {"en": "in one process on", "zh": "在一个进程中"}, lang)
    devices = re.search(r"^(\d+) devices: (.*?)(?: \(|$)", outputs, re.M)
    assert devices and quoted[0] == devices.group(1), (lang, quoted, outputs[:500])
    gpus = devices.group(2).count("cuda")
    kinds = {
        "en": ("the CPU twice", "GPU 0 and the CPU", "two GPUs"),
        "zh": ("同一个 CPU 用两次", "GPU 0 加 CPU", "两块 GPU"),
    }[lang]
    assert quoted[1] == kinds[gpus], (lang, quoted, devices.group(0))
