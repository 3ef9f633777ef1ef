"""pytest's setup for gpukit's docstring examples (``nox -s doctest``), outside the package.

Without a GPU, :func:`gpukit.flash.flash_attention`'s example runs in Triton's interpreter,
which Triton chooses while it is first imported: set it before any example imports Triton.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
