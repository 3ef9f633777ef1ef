"""Fixtures shared by the gpukit tests: tiny IDX files written on the fly; Triton's interpreter
without a GPU."""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

# Without a GPU, gpukit.flash's kernel runs in Triton's interpreter, which Triton chooses while
# it is first imported: set it here, before any test (or torch.compile) imports Triton.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
FILE_NAMES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def idx_bytes(array: np.ndarray, magic: int | None = None) -> bytes:
    """Serialize a uint8 array as IDX: magic (0x08 = ubyte, ndim), big-endian dims, data."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    if magic is None:
        magic = 0x0800 | array.ndim
    header = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


def write_gz(path: Path, payload: bytes) -> Path:
    # mtime=0 keeps the bytes (and so their digests) identical from run to run.
    path.write_bytes(gzip.compress(payload, mtime=0))
    return path


def make_split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n images whose first pixel encodes the example's index, so order can be checked."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    images[:, 0, 0] = np.arange(n) % 256
    labels = (np.arange(n) % 10).astype(np.uint8)
    return images, labels


@pytest.fixture
def write_idx() -> Callable[..., Path]:
    """Return ``write_idx(path, array, magic=None)``: write a gzip IDX file."""

    def write(path: Path, array: np.ndarray, magic: int | None = None) -> Path:
        return write_gz(path, idx_bytes(array, magic))

    return write


@pytest.fixture
def fake_fashion_mnist(tmp_path: Path) -> Callable[..., Path]:
    """Return ``make(folder, n_train=50, n_test=20)``: write the four files, return folder."""

    def make(folder: Path | None = None, n_train: int = 50, n_test: int = 20) -> Path:
        folder = folder if folder is not None else tmp_path / "fmnist"
        folder.mkdir(parents=True, exist_ok=True)
        for split, n, seed in (("train", n_train, 1), ("test", n_test, 2)):
            images, labels = make_split(n, seed)
            images_name, labels_name = FILE_NAMES[split]
            write_gz(folder / images_name, idx_bytes(images, IMAGES_MAGIC))
            write_gz(folder / labels_name, idx_bytes(labels, LABELS_MAGIC))
        return folder

    return make
