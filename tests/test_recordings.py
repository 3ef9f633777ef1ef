"""Recorded runs (gpukit_site.recordings, gpukit_site.ext.recorded): a run of this CPU with its
kernels lowered stands in for another machine. It is written by the GPU check, imported, shown
under its cells in both languages, hidden under a changed cell, quoted by the {recorded} role inside
its machine's case, and refused when malformed, from unknown pages or over the budget."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx_site import copy_fixture_site, sphinx_build

from gpukit_site import recordings

# DESIGN.md: the variables that make this CPU imitate an older one.
LOWERED = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
}
FRONT = (
    "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n"
    "orphan: true\n---\n\n"
)
CELLS = """
```{code-cell} ipython3
import torch
print("kernels:", torch.backends.cpu.get_cpu_capability())
```

```{code-cell} ipython3
from IPython.display import SVG
SVG('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="9"><text>seven</text></svg>')
```

```{code-cell} ipython3
:tags: [remove-cell]
try:
    from myst_nb import glue
except ImportError:
    def glue(*a, **k): pass
glue("answer", 6 * 7, display=False)
```
"""
PROSE = {"en": "# Recorded\n\nThe kernels:\n", "zh": "# 运行记录\n\n核函数：\n"}
# {kind} and {case}: the recording's machine, known once it is written.
CASES = """
::::{{machine-cases}}
:::{{case}} {case}
That machine glued {{recorded}}`{kind}:recorded:answer:d`.
:::
:::{{case}} {others}
Other machines.
:::
::::
"""


def write_page(site: Path, cases: str = "", cells: str = CELLS) -> None:
    for lang, prose in PROSE.items():
        (site / lang / "recorded.md").write_text(FRONT + prose + cells + cases, encoding="utf-8")


def cases_for(provenance: dict, where: str = "") -> str:
    case = ("cpu", "gpu", "gpus")[min(len(provenance["gpus"]), 2)]
    others = " ".join(k for k in ("cpu", "gpu", "gpus") if k != case)
    text = CASES.format(case=case, others=others, kind=provenance["kind"])
    if where == "outside":  # the same role in the text around the cases
        text = f"\nHere {{recorded}}`{provenance['kind']}:recorded:answer:d`.\n" + text
    return text


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The GPU check's recording of the page, on this CPU with lowered kernels, imported."""
    tmp = tmp_path_factory.mktemp("recorded")
    site = copy_fixture_site(tmp / "src")
    write_page(site)
    out = tmp / "check"
    command = [sys.executable, "-m", "gpukit_site.gpu_check", "run", "--no-tests"]
    command += ["--docs", str(site / "en"), "--pages", "recorded", "--out", str(out)]
    command += ["--jobs", "1", "--budget", "240"]
    done = subprocess.run(
        command, env=os.environ | LOWERED, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recording: " in (out / "report.txt").read_text(encoding="utf-8")
    imported = recordings.import_recording(out, docs=site / "en", folder=site / "recordings")
    recording = json.loads(imported.read_text(encoding="utf-8"))
    write_page(site, cases_for(recording["provenance"]))
    for lang in ("en", "zh"):  # About's list of recordings
        page = site / lang / "about.md"
        page.write_text("---\norphan: true\n---\n# About\n\n```{recordings}\n```\n", "utf-8")
    builds = {lang: sphinx_build(site, lang, tmp / "out") for lang in ("en", "zh")}
    return {"site": site, "tmp": tmp, "out": out, "recording": recording, "builds": builds}


def recorded_blocks(html: str) -> list[str]:
    return re.findall(r'<details class="details recorded[^"]*">.*?</details>', html, re.DOTALL)


def test_the_gpu_check_records_the_machine_and_every_cell(recorded: dict) -> None:
    provenance = recorded["recording"]["provenance"]
    assert provenance["lowered"] == LOWERED  # said honestly: a CPU imitating an older one
    assert provenance["cpu_capability"] == "DEFAULT"
    assert provenance["profile"] == "quick" and provenance["torch"]
    cells = recorded["recording"]["pages"]["recorded"]
    assert [list(o) for o in cells[0]["outputs"]] == [["text"]]
    assert cells[0]["outputs"][0]["text"] == "kernels: DEFAULT\n"
    assert "<svg" in cells[1]["outputs"][0]["svg"]
    assert cells[2]["outputs"] == [{"glue": "answer", "text": "42"}]


def test_recorded_outputs_show_under_their_cells_in_both_languages(recorded: dict) -> None:
    for lang, build in recorded["builds"].items():
        assert build.returncode == 0, build.log
        assert "WARNING" not in build.log.replace("[IPKernelApp] WARNING", ""), build.log
        html = build.page("recorded")
        blocks = recorded_blocks(html)
        assert len(blocks) == 2, html  # the two shown cells; the removed glue cell has none
        assert "kernels: DEFAULT" in blocks[0]
        assert "ATEN_CPU_CAPABILITY=default" in blocks[0]  # the label names the lowering
        summary = "运行记录：仅 CPU（" if lang == "zh" else "Recorded on CPU only ("
        assert summary in blocks[0]
        image = re.search(r'<img src="(_images/recorded-\w+\.svg)"', blocks[1])
        assert image and "seven" in (build.html / image[1]).read_text(encoding="utf-8")
        # This build's own output is still there, above the recorded one.
        own = html.index("kernels: ")
        assert own < html.index(blocks[0])
        assert "<script" not in "".join(blocks)


def test_the_role_quotes_the_recorded_value_naming_the_machine(recorded: dict) -> None:
    html = recorded["builds"]["en"].page("recorded")
    assert re.search(r'<span class="recorded-value">42 \(CPU only \([^<]*DEFAULT kernels', html)
    zh = recorded["builds"]["zh"].page("recorded")
    assert re.search(r'<span class="recorded-value">42（仅 CPU（', zh)


def test_about_lists_the_recordings(recorded: dict) -> None:
    for lang, words in (("en", ": 3 cells of 1 page(s)"), ("zh", "：1 个页面的 3 个单元格")):
        about = recorded["builds"][lang].page("about")
        assert "PyTorch" in about and words in about


def again(recorded: dict, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the recorded site and of its build (its execution cache warm)."""
    shutil.copytree(recorded["site"], tmp_path / "src")
    shutil.copytree(recorded["tmp"] / "out", tmp_path / "out")
    return tmp_path / "src", tmp_path / "out"


def test_a_changed_cell_shows_no_recorded_output_and_quotes_no_value(
    recorded: dict, tmp_path: Path
) -> None:
    site, out = again(recorded, tmp_path)
    changed = CELLS.replace('print("kernels:"', 'print("the kernels:"').replace("6 * 7", "6 * 9")
    write_page(site, cases_for(recorded["recording"]["provenance"]), cells=changed)
    build = sphinx_build(site, "en", out)
    # The role quotes a value from a cell changed since the recording: a warning, under -W
    # a failed build (which still writes the page: --keep-going).
    assert build.returncode != 0
    assert "changed since" in build.log
    blocks = recorded_blocks(build.page("recorded"))
    assert len(blocks) == 1 and "<img" in blocks[0]  # the unchanged figure cell only
    assert "the kernels: " in build.page("recorded")  # this build's output of the new code


def test_the_role_fails_outside_its_machines_case(recorded: dict, tmp_path: Path) -> None:
    site, out = again(recorded, tmp_path)
    write_page(site, cases_for(recorded["recording"]["provenance"], "outside"))
    build = sphinx_build(site, "en", out)
    assert build.returncode != 0
    assert "quote it inside the {case}" in build.log


def test_the_docs_build_writes_a_recording_from_its_cache(recorded: dict) -> None:
    # The build of the fixture above executed the page on this machine (not lowered).
    cache = recorded["tmp"] / "out" / "cache"
    site = recorded["site"]
    written = recordings.write_from_cache(site / "en", cache, recorded["tmp"] / "own", "quick")
    own = recordings.load(Path(written["path"]))
    assert own["pages"]["recorded"][2]["outputs"] == [{"glue": "answer", "text": "42"}]
    assert own["provenance"]["lowered"] == {} or os.environ.get("ATEN_CPU_CAPABILITY")


def refused(recording: dict, tmp_path: Path, site: Path) -> str:
    path = tmp_path / "recording.json"
    path.write_bytes(recordings.encode(recording))
    before = sorted((site / "recordings").rglob("*"))
    kept = {p: p.read_bytes() for p in before if p.is_file()}
    with pytest.raises(recordings.RecordingError) as refusal:
        recordings.import_recording(path, docs=site / "en", folder=site / "recordings")
    assert sorted((site / "recordings").rglob("*")) == before  # nothing lost, nothing left
    assert all(p.read_bytes() == b for p, b in kept.items())
    return str(refusal.value)


def test_refused_when_malformed_unknown_or_over_budget(recorded: dict, tmp_path: Path) -> None:
    site = recorded["site"]
    good = recorded["recording"]
    no_provenance = {k: v for k, v in good.items() if k != "provenance"}
    assert "malformed: provenance is missing" in refused(no_provenance, tmp_path, site)
    bad_output = json.loads(json.dumps(good))
    bad_output["pages"]["recorded"][0]["outputs"][0] = {"png": "..."}
    message = refused(bad_output, tmp_path, site)
    assert "malformed: pages.recorded[0].outputs[0] is none of text" in message
    unknown = json.loads(json.dumps(good))
    unknown["pages"]["renamed"] = unknown["pages"].pop("recorded")
    assert "pages this repository does not have" in refused(unknown, tmp_path, site)
    assert "renamed" in refused(unknown, tmp_path, site)
    huge = json.loads(json.dumps(good))
    huge["pages"]["recorded"][0]["outputs"][0]["text"] = "x" * (recordings.BUDGET + 1)
    assert "over the budget of 3 MiB" in refused(huge, tmp_path, site)
    with pytest.raises(recordings.RecordingError, match="not a readable recording"):
        (tmp_path / "broken.json").write_text("{", encoding="utf-8")
        recordings.import_recording(tmp_path / "broken.json", docs=site / "en", folder=tmp_path)


def test_an_import_replaces_the_same_machines_recording(recorded: dict, tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    docs = recorded["site"] / "en"
    first = recordings.import_recording(recorded["out"], docs=docs, folder=folder)
    newer = json.loads(json.dumps(recorded["recording"]))
    newer["provenance"]["date"] = "2027-01-01"
    (tmp_path / "newer.json").write_bytes(recordings.encode(newer))
    second = recordings.import_recording(tmp_path / "newer.json", docs=docs, folder=folder)
    assert first == second
    assert [p.name for p in folder.iterdir()] == [recorded["recording"]["provenance"]["kind"]]
    assert json.loads(second.read_text(encoding="utf-8"))["provenance"]["date"] == "2027-01-01"


def test_the_writer_drops_the_largest_outputs_to_fit_and_says_so(tmp_path: Path) -> None:
    pages = {
        "p": [
            {"hash": "a", "outputs": [{"text": "small"}, {"svg": "<svg>" + "x" * 5000 + "</svg>"}]},
            {"hash": "b", "outputs": [{"glue": "g", "text": "1"}]},
        ]
    }
    provenance = {k: "x" for k in recordings.PROVENANCE_KEYS} | {"kind": "cpu-x", "gpus": []}
    recording = {"format": recordings.FORMAT, "provenance": provenance, "dropped": []}
    fitted = recordings.fit(recording | {"pages": pages}, budget=2000)
    assert len(recordings.encode(fitted)) <= 2000
    kept = fitted["pages"]["p"]
    assert kept[0]["outputs"][0] == {"text": "small"}
    assert "over the budget" in kept[0]["outputs"][1]["dropped"]
    assert kept[1]["outputs"] == [{"glue": "g", "text": "1"}]  # values for the role stay
    assert fitted["dropped"] == [f"p cell 1: {kept[0]['outputs'][1]['dropped']}"]
