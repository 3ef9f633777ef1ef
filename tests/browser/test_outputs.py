"""What the executed cells show a reader: no trace of the build machine's folders or logs.

The IPython profile (conf/ipython) shortens tracebacks, the kernel's environment
(gpukit_site.kernel_env) quiets torch.profiler's C++ log, and gpukit prints no paths, so an output
naming the builder's home, virtual environment or site-packages, or a log line with its pid, is
a leak. Checked on the built site, as the browser renders it, for every page with outputs.
"""

from __future__ import annotations

import re

import pytest
from browsing import ALL_PAGES, SITE
from sphinx_site import machine_paths

# "USDT:2026-12-01 22:35:57 10518:10518 SyncActivityProfilerHandler.cpp:52] profiler_start"
LOG_LINE = re.compile(r"\d+:\d+ \w+\.cpp:\d+\]")
WITH_OUTPUTS = [
    name for name in ALL_PAGES if 'class="cell_output' in (SITE / f"{name}.html").read_text("utf-8")
]


def test_the_executed_pages_have_outputs() -> None:
    # Seven pages in each language execute code; fewer would make the test below vacuous.
    assert len(WITH_OUTPUTS) >= 14, WITH_OUTPUTS


@pytest.mark.parametrize("name", WITH_OUTPUTS)
def test_outputs_show_no_machine_path(desktop_tab, site, name: str) -> None:
    desktop_tab.goto(site.url(name), wait_until="domcontentloaded")
    outputs = desktop_tab.locator("div.cell_output").all_text_contents()
    assert outputs, f"{name}: no cell output rendered"
    paths = machine_paths()
    leaked = {path: text for text in outputs for path in paths if path in text}
    assert not leaked, f"{name}: {leaked}"
    logged = [line for text in outputs for line in text.splitlines() if LOG_LINE.search(line)]
    assert not logged, f"{name}: C++ log lines in the outputs: {logged}"
