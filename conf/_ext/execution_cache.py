"""Where the executed outputs of this build are cached.

jupyter-cache hashes a notebook's code cells and kernelspec only: it cannot see that gpukit,
torch, the execution profile or the machine changed. So each combination gets a folder of
its own; an output is never stale after a helper change and never mixed between machines.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import torch

import gpukit

# Everything, besides a page's own code, that decides what its cells print.
HASHED_TREES = ("src/gpukit", "conf/ipython")


def tree_hash(root: Path, trees: tuple[str, ...] = HASHED_TREES) -> str:
    """SHA-256 over the relative paths and bytes of every source file under ``trees``."""
    digest = hashlib.sha256()
    for tree in trees:
        for path in sorted((root / tree).rglob("*.py")):
            # Editors' lock files (".#devices.py", often a dangling link) and backups are
            # not sources: hashing them would crash or re-execute the site for nothing.
            if "__pycache__" in path.parts or path.name.startswith(".") or not path.is_file():
                continue
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def hardware_signature() -> str:
    """:func:`gpukit.describe_machine` as a folder name, e.g. ``2-x-NVIDIA-H200-CUDA-13.0`` or
    ``CPU-only-2-cores-AMD-EPYC-7B13-AVX2-kernels``: outputs computed on one machine (one CPU
    model, core count and choice of kernels) are never shown as another's."""
    return re.sub(r"[^A-Za-z0-9.+_=]+", "-", gpukit.describe_machine()).strip("-")


def cache_key(root: Path, profile: str) -> str:
    """E.g. ``CPU-only-2-cores-AMD-EPYC-AVX2-kernels-quick-torch2.13.0-1a2b3c4d5e6f``."""
    torch_version = torch.__version__.split("+")[0]
    return f"{hardware_signature()}-{profile}-torch{torch_version}-{tree_hash(root)[:12]}"


def cache_folder(parent: Path, root: Path, profile: str) -> Path:
    """The jupyter-cache folder shared by both languages of one build."""
    return parent / cache_key(root, profile)
