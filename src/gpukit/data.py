"""Fashion-MNIST, read from its IDX files without torchvision.

:func:`load_data_fashion_mnist` returns D2L's pair of loaders, with small deterministic subsets
and a seeded shuffle. :func:`find_fashion_mnist` looks for the files, in order, in

1. the ``root`` argument, else the folder named by the ``GPUKIT_DATA`` environment variable
   (when either is given, it is the only place looked at: no other data is silently used);
2. ``/usr/share/datasets/fashion-mnist``, from the Debian/Ubuntu package
   ``dataset-fashion-mnist``;
3. the user cache, ``$XDG_CACHE_HOME/gpukit/fashion-mnist`` (default ``~/.cache/...``);
4. a download from the official Fashion-MNIST URLs into the user cache, verified by SHA-256.

A truncated or corrupt file raises a ``ValueError`` naming the file, never a silently smaller
data set.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.client
import math
import os
import shutil
import tempfile
import urllib.request
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch.utils import data

from gpukit._checks import check_int, check_type
from gpukit._env import DATA_VAR as ENV_VAR
from gpukit._env import FASHION_MNIST_FILES as FILES

__all__ = ["DataNotFoundError", "find_fashion_mnist", "load_data_fashion_mnist"]

SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
BASE_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
# FILES: split -> (images file, labels file); an IDX file starts with its magic number, which
# says "unsigned bytes, 3 dimensions" (images: 2051) or "unsigned bytes, 1 dimension" (labels:
# 2049).
# SHA-256 of the *decompressed* files of the official release, computed from the Debian
# package (which recompressed them: the gzip bytes differ from the official download, the
# content does not).
CONTENT_SHA256 = {
    "train-images-idx3-ubyte.gz": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",  # noqa: E501
    "train-labels-idx1-ubyte.gz": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",  # noqa: E501
    "t10k-images-idx3-ubyte.gz": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte.gz": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
_HOW_TO_GET = (
    "Get the data with `sudo apt install dataset-fashion-mnist` (Debian/Ubuntu), or put the "
    f"four files in a folder and set {ENV_VAR} to it (or pass root=...). The files are at "
    f"{BASE_URL}<file name>."
)


class DataNotFoundError(FileNotFoundError):
    """Fashion-MNIST is in none of the places searched and could not be downloaded."""


def _gunzip(path: Path) -> bytes:
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as err:  # truncated: EOFError; damaged: the others
        raise ValueError(f"{path}: not a complete gzip file ({err}); get it again") from None


def _read_idx(path: Path, magic: int) -> np.ndarray:
    """The read-only ``uint8`` array of a gzipped IDX file whose header must say ``magic``."""
    raw = _gunzip(path)
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"{path}: magic number {found}, expected {magic}")
    header = 4 + 4 * (magic & 0xFF)
    dims = [int.from_bytes(raw[i : i + 4], "big") for i in range(4, header, 4)]
    expected = header + math.prod(dims)
    if len(raw) != expected:
        raise ValueError(
            f"{path}: the header announces {' x '.join(map(str, dims))} values ({expected} "
            f"bytes with the header), but the file holds {len(raw)} bytes"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _missing(folder: Path) -> list[str]:
    return [name for pair in FILES.values() for name in pair if not (folder / name).is_file()]


def _fetch(url: str, out: BinaryIO) -> None:
    """Write the body of ``url`` to ``out``."""
    with urllib.request.urlopen(url, timeout=60) as response:
        shutil.copyfileobj(response, out)


def _download(name: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # Written next to the target and renamed only once verified, so an interrupted or
    # corrupted download never leaves a file that a later search would accept.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            _fetch(BASE_URL + name, out)
        found = hashlib.sha256(_gunzip(Path(tmp))).hexdigest()
        if found != CONTENT_SHA256[name]:
            raise ValueError(f"{name}: SHA-256 {found}, expected {CONTENT_SHA256[name]}")
        os.replace(tmp, folder / name)
    finally:
        Path(tmp).unlink(missing_ok=True)


def find_fashion_mnist(
    root: str | os.PathLike[str] | None = None, *, download: bool = True
) -> Path:
    """Return the folder holding the four Fashion-MNIST ``.gz`` files, downloading if needed.

    The search order is in the module documentation; ``download=False`` stops before the
    download. :class:`DataNotFoundError` lists every place looked at and how to get the data.

    Example:
        >>> try:
        ...     folder = find_fashion_mnist(download=False)
        ... except DataNotFoundError as err:
        ...     assert "dataset-fashion-mnist" in str(err)
    """
    check_type(root, "root", str | os.PathLike | None, "None, a str or a path")
    check_type(download, "download", bool, "True or False")
    xdg_cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    cache = Path(xdg_cache) / "gpukit" / "fashion-mnist"
    looked = []
    if root is None and os.environ.get(ENV_VAR):
        root = os.environ[ENV_VAR]
        source = f"the {ENV_VAR} environment variable"
    else:
        source = "the root argument"
    places = [(SYSTEM_DIR, "Debian/Ubuntu package dataset-fashion-mnist"), (cache, "user cache")]
    if root is not None:  # the only place looked at: no other data is silently used
        places = [(Path(root).expanduser(), f"given by {source}")]
    for folder, what in places:
        missing = _missing(folder)
        if not missing:
            return folder
        why = "missing " + ", ".join(missing) if folder.is_dir() else "no such folder"
        looked.append(f"  - {folder} ({what}): {why}")
    if root is None and not download:
        looked.append(f"  - download from {BASE_URL}: not tried (download=False)")
    elif root is None:
        try:
            for name in _missing(cache):
                _download(name, cache)
            return cache
        except (OSError, ValueError, http.client.HTTPException) as err:
            looked.append(f"  - download from {BASE_URL} into {cache}: failed ({err})")
    unset = "" if root is not None else f" {ENV_VAR} is not set;"
    raise DataNotFoundError(
        f"Fashion-MNIST not found.{unset} Looked in:\n" + "\n".join(looked) + f"\n{_HOW_TO_GET}"
    ) from None


@functools.lru_cache(maxsize=4)
def _decode(folder: Path, split: str, stamp: tuple) -> tuple[np.ndarray, np.ndarray]:
    # ``stamp`` (sizes, modification times) is in the cache key: a replaced file is read again.
    images_path, labels_path = (folder / name for name in FILES[split])
    images = _read_idx(images_path, 2051)
    labels = _read_idx(labels_path, 2049)
    if len(images) != len(labels):
        raise ValueError(
            f"{images_path}: {len(images)} images, {labels_path}: {len(labels)} labels"
        )
    if labels.size and labels.max() >= 10:
        raise ValueError(f"{labels_path}: label {labels.max()} out of range 0..9")
    return images, labels


class _ResizeBatch:
    """A ``collate_fn`` that stacks a minibatch and resizes its images to ``size`` x ``size``.

    Resizing a minibatch when it is drawn, as D2L's ``transforms.Resize`` does image by image,
    keeps the data set at 28 x 28 in memory: all 60,000 images at 224 x 224 would take 12 GB.
    A class, not a closure, so that worker processes can unpickle it.
    """

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, examples: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
        X, y = data.default_collate(examples)
        # Bilinear with antialiasing, as torchvision's Resize on images; align_corners=False
        # maps pixel centres the same way.
        X = torch.nn.functional.interpolate(
            X, size=(self.size, self.size), mode="bilinear", align_corners=False, antialias=True
        )
        return [X, y]


def load_data_fashion_mnist(
    batch_size: int,
    resize: int | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    num_workers: int = 0,
) -> tuple[data.DataLoader, data.DataLoader]:
    """Return ``(train_iter, test_iter)``: loaders over real Fashion-MNIST (D2L's function).

    Batches are ``(X, y)``: ``X`` float32 in ``[0, 1]`` of shape ``(B, 1, 28, 28)``, ``y``
    int64 classes ``0..9``. ``resize`` (D2L's second argument, e.g. 96 or 224 for its ResNet
    and AlexNet) makes the images ``resize`` x ``resize``, bilinearly, one minibatch at a time.
    ``root`` is passed to :func:`find_fashion_mnist`.

    ``n_train`` and ``n_test`` (``None``: all 60,000 and 10,000) take the first examples of a
    permutation seeded by ``seed``, kept in file order: the same in every run, and a smaller
    subset lies inside a larger one. The training loader shuffles with a generator seeded by
    ``seed`` too, so two loaders made alike give the same batches; the test loader does not
    shuffle. ``num_workers`` worker processes load the batches (0: the main process).

    Example:
        >>> try:
        ...     train_iter, test_iter = load_data_fashion_mnist(32, n_train=64, n_test=32)
        ...     big_iter, _ = load_data_fashion_mnist(8, 96, n_train=8, n_test=8)
        ... except DataNotFoundError:
        ...     pass  # no data on this machine and no network: the error says how to get it
        ... else:
        ...     X, y = next(iter(train_iter))
        ...     assert X.shape == (32, 1, 28, 28) and len(train_iter.dataset) == 64
        ...     assert next(iter(big_iter))[0].shape == (8, 1, 96, 96)
    """
    check_int(batch_size, "batch_size")
    if resize is not None:
        check_int(resize, "resize", 1, "or None")
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if n is not None:
            check_int(n, name, 1, "or None")
    check_int(seed, "seed", 0)
    check_int(num_workers, "num_workers", 0)
    folder = find_fashion_mnist(root)
    loader_options = {
        "folder": folder,
        "seed": seed,
        "batch_size": batch_size,
        "num_workers": num_workers,
        "collate": None if resize is None else _ResizeBatch(resize),
    }
    train_iter = _loader(split="train", n=n_train, name="n_train", **loader_options)
    test_iter = _loader(split="test", n=n_test, name="n_test", **loader_options)
    return train_iter, test_iter


def _loader(
    *,
    folder: Path,
    split: str,
    n: int | None,
    name: str,
    seed: int,
    batch_size: int,
    num_workers: int,
    collate: _ResizeBatch | None,
) -> data.DataLoader:
    """The loader of one split for :func:`load_data_fashion_mnist`, its arguments checked."""
    stats = [(folder / file).stat() for file in FILES[split]]
    stamp = tuple((st.st_size, st.st_mtime_ns) for st in stats)
    images, labels = _decode(folder.resolve(), split, stamp)
    idx = np.arange(len(labels))
    if n is not None:
        if n > len(labels):
            raise ValueError(f"{name} must be None or between 1 and {len(labels)}, got {n}")
        # The first n of a seeded permutation, sorted: nested subsets in file order. The
        # permutation of the test split uses another stream of the same seed.
        stream = 0 if split == "train" else 1
        permutation = np.random.default_rng([seed, stream]).permutation(len(labels))
        idx = np.sort(permutation[:n])
    # Indexing copies, so the cached arrays stay untouched (and read-only).
    X = torch.from_numpy(images[idx]).unsqueeze(1).float().div_(255)
    dataset = data.TensorDataset(X, torch.from_numpy(labels[idx].astype(np.int64)))
    shuffle = split == "train"
    return data.DataLoader(
        dataset,
        batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        collate_fn=collate,
        generator=torch.Generator().manual_seed(seed) if shuffle else None,
    )
