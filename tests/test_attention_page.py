"""The attention page's FlexAttention cells run on a CPU without AVX2 (issue 35).

Inductor's CPU kernel for FlexAttention needs AVX2 and refuses a process whose vector kernels
are lowered below it ("torch.compile on current platform is not supported for CPU"). The page
checks the same conditions and runs ``flex_attention`` uncompiled where they fail. This test
runs the page's own cells (read from docs/en/attention.md, so a change to the page is tested)
in a fresh process with the setting of a CPU without AVX2: the settings are read when torch
starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[1] / "docs" / "en" / "attention.md"
CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```$", re.M | re.S)
# A CPU without AVX2, as DESIGN.md asks every page to survive.
NO_AVX2 = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
}


# The cells FlexAttention needs: the setup, the inputs, the masks and the run itself.
NEEDED = ("import torch\n", "def qkv(", "def sliding_window(", "flex(q, k, v")


def flex_cells() -> str:
    """The page's own code of the cells that set up and run FlexAttention, in page order."""
    cells = CELL.findall(PAGE.read_text(encoding="utf-8"))
    chosen = [next(cell for cell in cells if marker in cell) for marker in NEEDED]
    # The timing cell of SDPA's backends, left out, sets how often a call is timed.
    return "\n".join([*chosen[:-1], "repeats = 1", chosen[-1]])


def test_flex_attention_cells_run_without_avx2(tmp_path: Path) -> None:
    code = flex_cells()
    assert "torch.compile(flex_attention)" in code, "the page no longer compiles FlexAttention"
    env = {
        **os.environ,
        **NO_AVX2,
        "GPUKIT_PROFILE": "quick",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "flex_attention runs uncompiled" in result.stdout, result.stdout
    difference = re.search(r"largest difference from the written-out version: (\S+)", result.stdout)
    assert difference and float(difference.group(1)) < 1e-4, result.stdout
