"""Fashion-MNIST, read from its IDX files without torchvision.

:func:`load_data_fashion_mnist` keeps D2L's name and returns D2L's ``(train_iter, test_iter)``
pair of ``DataLoader`` objects. It adds what executed pages need: real data in small
deterministic subsets (``n_train``, ``n_test``), a seeded shuffle (two runs see the same
batches), and a data search that works offline. The files are looked for, in order, in

1. the ``root`` argument, else the folder named by the ``GPUKIT_DATA`` environment variable
   (when either is given, it is the only place looked at: no other data is silently used);
2. ``/usr/share/datasets/fashion-mnist``, from the Debian/Ubuntu package
   ``dataset-fashion-mnist``;
3. the user cache, ``$XDG_CACHE_HOME/gpukit/fashion-mnist`` (default ``~/.cache/...``);
4. a download from the official Fashion-MNIST URLs into the user cache, verified by SHA-256.

Every file is checked against its IDX header: a truncated or corrupt file raises
:class:`IDXFormatError` naming the file instead of giving a silently smaller data set.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.client
import math
import os
import shutil
import struct
import tempfile
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch.nn import functional as F
from torch.utils import data
from torch.utils.data import default_collate

__all__ = [
    "DataNotFoundError",
    "IDXFormatError",
    "find_fashion_mnist",
    "get_fashion_mnist_labels",
    "load_data_fashion_mnist",
    "read_idx",
]

ENV_VAR = "GPUKIT_DATA"
SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
BASE_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
IMAGES_MAGIC = 2051  # 0x0803: unsigned bytes, 3 dimensions (count, rows, columns)
LABELS_MAGIC = 2049  # 0x0801: unsigned bytes, 1 dimension (count)

# split -> (images file, labels file)
FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
# SHA-256 of the *decompressed* files of the official release, computed from the Debian
# package. The digests of the .gz files cannot be used: Debian recompressed them (the gzip
# bytes differ from the official download, the content does not).
CONTENT_SHA256 = {
    "train-images-idx3-ubyte.gz": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",  # noqa: E501
    "train-labels-idx1-ubyte.gz": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",  # noqa: E501
    "t10k-images-idx3-ubyte.gz": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte.gz": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
TEXT_LABELS = (
    "t-shirt",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
)
_HOW_TO_GET = (
    "Get the data with `sudo apt install dataset-fashion-mnist` (Debian/Ubuntu), or put the "
    "four files in a folder and set GPUKIT_DATA to it (or pass root=...). The files are at "
    f"{BASE_URL}<file name>."
)


class DataNotFoundError(FileNotFoundError):
    """The data set is in none of the places searched and could not be downloaded."""


class IDXFormatError(ValueError):
    """A data file is not a complete, well-formed IDX file; the message names the file."""


def _check_int(value: object, name: str, low: int, accepted: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {accepted}, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be {accepted}, got {value}")
    return value


def _check_path(value: object, name: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be None, a str or a path, got {type(value).__name__}")
    return Path(value).expanduser()


def read_idx(path: str | os.PathLike[str], *, magic: int | None = None) -> np.ndarray:
    """Read an IDX file of unsigned bytes (gzip-compressed when the name ends in ``.gz``).

    Args:
        path: the file.
        magic: the magic number the file must have (2051 for images, 2049 for labels);
            ``None`` accepts any unsigned-byte IDX file.

    Returns:
        A read-only ``uint8`` array with the dimensions given in the header.

    Raises:
        FileNotFoundError: if the file does not exist.
        IDXFormatError: if the file is not valid gzip, has another magic number, or holds
            more or fewer bytes than its header announces.

    Example:
        >>> import tempfile
        >>> raw = bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9])  # magic 2049, 3 labels
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "labels-idx1-ubyte"
        ...     _ = path.write_bytes(raw)
        ...     read_idx(path, magic=2049)
        array([7, 8, 9], dtype=uint8)
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
    path = Path(path)
    if magic is not None:
        _check_int(magic, "magic", 0, "an int such as 2051 (images) or 2049 (labels)")
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except (OSError, EOFError, zlib.error) as err:
        # gzip reports a truncated file as EOFError and a damaged one as BadGzipFile/zlib.error.
        raise IDXFormatError(
            f"{path}: not a complete gzip file ({err}); delete it and get it again"
        ) from None
    if len(raw) < 4:
        raise IDXFormatError(f"{path}: {len(raw)} bytes, too short for an IDX header")
    found = int.from_bytes(raw[:4], "big")
    if magic is not None and found != magic:
        raise IDXFormatError(
            f"{path}: magic number {found}, expected {magic} "
            f"({IMAGES_MAGIC} for images, {LABELS_MAGIC} for labels)"
        )
    if raw[:3] != b"\x00\x00\x08":
        raise IDXFormatError(
            f"{path}: magic number {found} is not that of an unsigned-byte IDX file (0x08XX)"
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IDXFormatError(f"{path}: truncated inside its header ({len(raw)} bytes)")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    expected = header + math.prod(dims)
    if len(raw) != expected:
        raise IDXFormatError(
            f"{path}: the header announces {' x '.join(map(str, dims))} values "
            f"({expected} bytes), but the file holds {len(raw)} bytes"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpukit" / "fashion-mnist"


def _missing(folder: Path) -> list[str]:
    names = [name for pair in FILES.values() for name in pair]
    return [name for name in names if not (folder / name).is_file()]


def _describe_missing(folder: Path, missing: list[str]) -> str:
    if not folder.is_dir():
        return "no such folder"
    return "missing " + ", ".join(missing)


def _fetch(url: str, out: BinaryIO) -> None:
    """Write the body of ``url`` to ``out`` (tests replace this to stay offline)."""
    with urllib.request.urlopen(url, timeout=60) as response:
        shutil.copyfileobj(response, out)


def _content_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except (OSError, EOFError, zlib.error) as err:
        raise IDXFormatError(f"{path}: not a complete gzip file ({err})") from None
    return digest.hexdigest()


def _download(name: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    url = BASE_URL + name
    # Written next to the target and renamed only once verified, so an interrupted or
    # corrupted download never leaves a file that a later search would accept.
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            _fetch(url, out)
        found = _content_sha256(tmp)
        if found != CONTENT_SHA256[name]:
            raise IDXFormatError(
                f"{url}: SHA-256 of the content is {found}, expected {CONTENT_SHA256[name]}"
            )
        os.replace(tmp, folder / name)
    finally:
        tmp.unlink(missing_ok=True)


def find_fashion_mnist(
    root: str | os.PathLike[str] | None = None, *, download: bool = True
) -> Path:
    """Return the folder holding the four Fashion-MNIST ``.gz`` files, downloading if needed.

    The search order is in the module documentation. An explicit ``root`` (or
    ``GPUKIT_DATA``) is the only place looked at.

    Args:
        root: a folder that must hold the four files; ``None`` to search.
        download: whether to download into the user cache when no folder has the files.

    Raises:
        DataNotFoundError: the files are nowhere; the message lists every place looked at
            and how to get the data.

    Example:
        >>> try:
        ...     folder = find_fashion_mnist(download=False)
        ... except DataNotFoundError as err:
        ...     assert "dataset-fashion-mnist" in str(err)
        ... else:
        ...     assert (folder / "train-images-idx3-ubyte.gz").is_file()
    """
    explicit = _check_path(root, "root")
    if not isinstance(download, bool):
        raise TypeError(f"download must be True or False, got {type(download).__name__}")
    source = "the root argument"
    if explicit is None and os.environ.get(ENV_VAR):
        explicit = Path(os.environ[ENV_VAR]).expanduser()
        source = f"the {ENV_VAR} environment variable"
    if explicit is not None:
        missing = _missing(explicit)
        if not missing:
            return explicit
        raise DataNotFoundError(
            f"Fashion-MNIST not found in {explicit} (given by {source}): "
            f"{_describe_missing(explicit, missing)}. {_HOW_TO_GET}"
        )
    looked = []
    cache = _cache_dir()
    for folder, what in (
        (SYSTEM_DIR, "Debian/Ubuntu package dataset-fashion-mnist"),
        (cache, "user cache"),
    ):
        missing = _missing(folder)
        if not missing:
            return folder
        looked.append(f"  - {folder} ({what}): {_describe_missing(folder, missing)}")
    if download:
        try:
            for name in _missing(cache):
                _download(name, cache)
            return cache
        except (OSError, ValueError, http.client.HTTPException) as err:
            looked.append(f"  - download from {BASE_URL} into {cache}: failed ({err})")
    else:
        looked.append(f"  - download from {BASE_URL}: not tried (download=False)")
    raise DataNotFoundError(
        f"Fashion-MNIST not found. {ENV_VAR} is not set; looked in:\n"
        + "\n".join(looked)
        + f"\n{_HOW_TO_GET}"
    ) from None


@functools.lru_cache(maxsize=4)
def _decode_split(
    images_path: Path, labels_path: Path, stamp: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    # ``stamp`` (sizes and modification times) is part of the cache key, so a file replaced
    # on disk is decoded again rather than served stale.
    images = read_idx(images_path, magic=IMAGES_MAGIC)
    labels = read_idx(labels_path, magic=LABELS_MAGIC)
    if images.shape[0] != labels.shape[0]:
        raise IDXFormatError(
            f"{images_path} holds {images.shape[0]} images but {labels_path} holds "
            f"{labels.shape[0]} labels"
        )
    if labels.size and labels.max() >= len(TEXT_LABELS):
        raise IDXFormatError(
            f"{labels_path}: label {int(labels.max())} out of range 0..{len(TEXT_LABELS) - 1}"
        )
    return images, labels


def _load_split(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    paths = [(folder / name).resolve() for name in FILES[split]]
    stamp = tuple(v for p in paths for v in (p.stat().st_size, p.stat().st_mtime_ns))
    return _decode_split(paths[0], paths[1], stamp)


def _subset(n_available: int, n: int | None, seed: int, stream: int, name: str) -> np.ndarray:
    if n is None:
        return np.arange(n_available)
    if n > n_available:
        raise ValueError(f"{name} must be None or between 1 and {n_available}, got {n}")
    # The first n of a seeded permutation: a smaller subset is part of any larger one with
    # the same seed. Sorted, so the subset keeps the file's order.
    order = np.random.default_rng([seed, stream]).permutation(n_available)
    return np.sort(order[:n])


class _Resize:
    """collate_fn that resizes each batch (a class, so worker processes can pickle it)."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size

    def __call__(self, batch: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
        X, y = default_collate(batch)
        return [F.interpolate(X, size=self.size, mode="bilinear", align_corners=False), y]


def _check_resize(resize: object) -> tuple[int, int] | None:
    accepted = "None, an int >= 1 or a pair (height, width) of ints >= 1"
    if resize is None:
        return None
    if isinstance(resize, int) and not isinstance(resize, bool):
        size = (resize, resize)
    elif isinstance(resize, Sequence) and not isinstance(resize, str) and len(resize) == 2:
        size = tuple(resize)
    else:
        raise TypeError(f"resize must be {accepted}, got {resize!r}")
    for v in size:
        _check_int(v, "resize", 1, accepted)
    return size[0], size[1]


def load_data_fashion_mnist(
    batch_size: int,
    resize: int | Sequence[int] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    num_workers: int = 0,
) -> tuple[data.DataLoader, data.DataLoader]:
    """Return ``(train_iter, test_iter)``: loaders over real Fashion-MNIST (D2L's function).

    Batches are ``(X, y)``: ``X`` float32 in ``[0, 1]`` of shape ``(B, 1, 28, 28)`` (or the
    ``resize`` size, resized bilinearly batch by batch), ``y`` int64 classes ``0..9``.

    Subsets are the first ``n`` examples of a permutation seeded by ``seed`` (one stream for
    the training set, another for the test set), kept in file order; so they are the same
    in every run, and a smaller subset is contained in a larger one. The training loader
    shuffles with a ``torch.Generator`` seeded by ``seed``, so two loaders made with the same
    arguments give the same batches in the same order; the test loader does not shuffle.

    Args:
        batch_size: examples per batch, an int >= 1.
        resize: ``None`` (28 x 28), a side length, or ``(height, width)``.
        root: the folder with the four ``.gz`` files; ``None`` searches (see
            :func:`find_fashion_mnist`).
        n_train: training examples to use (``None``: all 60,000).
        n_test: test examples to use (``None``: all 10,000).
        seed: seed of the subsets and of the shuffle, an int >= 0.
        num_workers: worker processes of each loader (0: load in the main process).

    Example:
        >>> try:
        ...     train_iter, test_iter = load_data_fashion_mnist(32, n_train=64, n_test=32)
        ... except DataNotFoundError:
        ...     pass  # no data on this machine and no network: the error says how to get it
        ... else:
        ...     X, y = next(iter(train_iter))
        ...     assert X.shape == (32, 1, 28, 28) and y.dtype == torch.int64
        ...     assert len(train_iter.dataset) == 64 and len(test_iter.dataset) == 32
    """
    _check_int(batch_size, "batch_size", 1, "an int >= 1")
    size = _check_resize(resize)
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if n is not None:
            _check_int(n, name, 1, "None or an int >= 1")
    _check_int(seed, "seed", 0, "an int >= 0")
    _check_int(num_workers, "num_workers", 0, "an int >= 0")
    folder = find_fashion_mnist(root)

    datasets = []
    for stream, (split, n, name) in enumerate(
        (("train", n_train, "n_train"), ("test", n_test, "n_test"))
    ):
        images, labels = _load_split(folder, split)
        idx = _subset(len(labels), n, seed, stream, name)
        # Indexing copies, so the cached arrays stay untouched (and read-only).
        X = torch.from_numpy(images[idx]).unsqueeze(1).float().div_(255)
        y = torch.from_numpy(labels[idx].astype(np.int64))
        datasets.append(data.TensorDataset(X, y))

    collate = _Resize(size) if size is not None else None
    generator = torch.Generator().manual_seed(seed)
    train_iter = data.DataLoader(
        datasets[0],
        batch_size,
        shuffle=True,
        generator=generator,
        num_workers=num_workers,
        collate_fn=collate,
    )
    test_iter = data.DataLoader(
        datasets[1], batch_size, shuffle=False, num_workers=num_workers, collate_fn=collate
    )
    return train_iter, test_iter


def get_fashion_mnist_labels(labels: Iterable[int] | torch.Tensor) -> list[str]:
    """Return the text labels of Fashion-MNIST classes (D2L's function).

    Example:
        >>> get_fashion_mnist_labels(torch.tensor([0, 9, 5]))
        ['t-shirt', 'ankle boot', 'sandal']
    """
    if isinstance(labels, torch.Tensor | np.ndarray):
        labels = labels.reshape(-1).tolist()
    if isinstance(labels, str) or not isinstance(labels, Iterable):
        raise TypeError(
            f"labels must be an iterable of ints 0..9 or a tensor, got {type(labels).__name__}"
        )
    texts = []
    for label in labels:
        if isinstance(label, bool) or not isinstance(label, int | np.integer):
            raise TypeError(f"labels must hold ints 0..9, got {label!r}")
        if not 0 <= label < len(TEXT_LABELS):
            raise ValueError(f"labels must hold ints 0..9, got {label}")
        texts.append(TEXT_LABELS[int(label)])
    return texts
