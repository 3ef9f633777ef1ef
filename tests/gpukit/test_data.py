"""Tests of gpukit.data: IDX parsing, the data search, the loaders, offline throughout.

The IDX files are read through :func:`gpukit.data.load_data_fashion_mnist`, as pages read them:
a damaged file in the data folder must be an error naming it.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import socket
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import gpukit.data as gd
from gpukit.data import (
    DataNotFoundError,
    find_fashion_mnist,
    load_data_fashion_mnist,
)

REAL_DIR = Path("/usr/share/datasets/fashion-mnist")
ALL_NAMES = [name for pair in gd.FILES.values() for name in pair]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees this machine's data, cache or network unless it asks for them: downloads go
    to a local address where nothing listens."""
    monkeypatch.delenv("GPUKIT_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setattr(gd, "SYSTEM_DIR", tmp_path / "system")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setattr(gd, "BASE_URL", f"http://127.0.0.1:{port}/")


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch):
    """``serve(answer)``: downloads go to a local HTTP server, whose handler calls
    ``answer(handler, name)`` for each file asked for; returns the URLs asked for."""
    servers = []

    def start(answer) -> list[str]:
        asked: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                asked.append(gd.BASE_URL + self.path.lstrip("/"))
                answer(self, self.path.lstrip("/"))

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        monkeypatch.setattr(gd, "BASE_URL", f"http://127.0.0.1:{server.server_port}/")
        return asked

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def send(handler: http.server.BaseHTTPRequestHandler, body: bytes, length: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(length))
    handler.end_headers()
    handler.wfile.write(body)


def cache_folder(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache" / "gpukit" / "fashion-mnist"


# ---------------------------------------------------------------- IDX files

TRAIN_IMAGES, TRAIN_LABELS = gd.FILES["train"]


def test_images_are_read_exactly_from_gzip(fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    images = np.random.default_rng(3).integers(0, 256, size=(50, 28, 28), dtype=np.uint8)
    write_idx(folder / TRAIN_IMAGES, images, magic=2051)
    train_iter, _ = load_data_fashion_mnist(4, root=folder)  # all 50, in file order
    X = train_iter.dataset.tensors[0]
    assert X.shape == (50, 1, 28, 28)
    np.testing.assert_array_equal((X[:, 0] * 255).round().to(torch.uint8).numpy(), images)


def test_truncated_gzip_names_file(fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    path = write_idx(folder / TRAIN_LABELS, np.zeros(5000, np.uint8), magic=2049)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte\.gz.*gzip"):
        load_data_fashion_mnist(4, root=folder)


def test_corrupt_gzip_names_file(fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    path = write_idx(folder / TRAIN_LABELS, np.arange(200, dtype=np.uint8))
    raw = bytearray(path.read_bytes())
    raw[20:40] = b"\xff" * 20  # damage the deflate stream
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte\.gz"):
        load_data_fashion_mnist(4, root=folder)
    path.write_text("this is not gzip")
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte\.gz: not a complete gzip file"):
        load_data_fashion_mnist(4, root=folder)


def test_wrong_magic_names_file_and_numbers(fake_fashion_mnist, write_idx):
    # Images where the labels belong (the magic number of 3 dimensions, not 1)
    folder = fake_fashion_mnist()
    write_idx(folder / TRAIN_LABELS, np.zeros((50, 28, 28), np.uint8), magic=2051)
    with pytest.raises(
        ValueError, match=r"train-labels-idx1-ubyte\.gz: magic number 2051, expected 2049"
    ):
        load_data_fashion_mnist(4, root=folder)


@pytest.mark.parametrize("size", [16 + 2351, 16 + 2353, 16 + 1652, 9])
def test_size_must_match_header_exactly(fake_fashion_mnist, size):
    folder = fake_fashion_mnist()
    payload = (gd_header(2051, (3, 28, 28)) + bytes(3 * 28 * 28 + 1))[:size]
    (folder / TRAIN_IMAGES).write_bytes(gzip.compress(payload))
    with pytest.raises(
        ValueError, match=rf"train-images-idx3-ubyte\.gz: the header .* holds {size} bytes"
    ):
        load_data_fashion_mnist(4, root=folder)


def gd_header(magic: int, dims: tuple[int, ...]) -> bytes:
    return magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims)


# ---------------------------------------------------------------- search order


def test_explicit_root_is_used(fake_fashion_mnist, tmp_path, monkeypatch):
    folder = fake_fashion_mnist(tmp_path / "mine")
    other = fake_fashion_mnist(tmp_path / "env")
    monkeypatch.setenv("GPUKIT_DATA", str(other))
    assert find_fashion_mnist(folder) == folder
    assert find_fashion_mnist(str(folder)) == folder


def test_env_var_is_used_before_system_and_cache(fake_fashion_mnist, tmp_path, monkeypatch):
    env = fake_fashion_mnist(tmp_path / "env")
    fake_fashion_mnist(gd.SYSTEM_DIR)
    fake_fashion_mnist(cache_folder(tmp_path))
    monkeypatch.setenv("GPUKIT_DATA", str(env))
    assert find_fashion_mnist() == env


def test_explicit_place_without_files_fails_without_falling_back(
    fake_fashion_mnist, tmp_path, monkeypatch
):
    fake_fashion_mnist(gd.SYSTEM_DIR)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ALL_NAMES[0]).write_bytes(b"")
    monkeypatch.setenv("GPUKIT_DATA", str(empty))
    with pytest.raises(DataNotFoundError, match="given by the GPUKIT_DATA environment") as info:
        find_fashion_mnist()
    message = str(info.value)
    assert str(empty) in message and ALL_NAMES[1] in message and ALL_NAMES[0] not in message
    with pytest.raises(DataNotFoundError, match=r"root argument.*no such folder"):
        find_fashion_mnist(tmp_path / "nowhere")


def test_system_dir_before_cache(fake_fashion_mnist, tmp_path):
    fake_fashion_mnist(gd.SYSTEM_DIR)
    fake_fashion_mnist(cache_folder(tmp_path))
    assert find_fashion_mnist() == gd.SYSTEM_DIR


def test_cache_honours_xdg_cache_home(fake_fashion_mnist, tmp_path, monkeypatch):
    xdg = tmp_path / "elsewhere"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    fake_fashion_mnist(xdg / "gpukit" / "fashion-mnist")
    assert find_fashion_mnist() == xdg / "gpukit" / "fashion-mnist"


def test_cache_defaults_to_home_dot_cache(fake_fashion_mnist, tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = fake_fashion_mnist(tmp_path / "home" / ".cache" / "gpukit" / "fashion-mnist")
    assert find_fashion_mnist() == folder


def test_incomplete_system_dir_is_skipped(fake_fashion_mnist, tmp_path):
    system = fake_fashion_mnist(gd.SYSTEM_DIR)
    (system / ALL_NAMES[3]).unlink()
    cache = fake_fashion_mnist(cache_folder(tmp_path))
    assert find_fashion_mnist() == cache


def test_not_found_error_lists_every_place_and_the_remedy(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        find_fashion_mnist()
    message = str(info.value)
    assert str(gd.SYSTEM_DIR) in message
    assert str(cache_folder(tmp_path)) in message
    assert f"download from {gd.BASE_URL} into" in message and "Connection refused" in message
    assert "apt install dataset-fashion-mnist" in message
    assert "GPUKIT_DATA is not set" in message
    assert isinstance(info.value, FileNotFoundError)
    # One clear error, not a urllib traceback chained to it.
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_download_false_does_not_fetch(serve):
    asked = serve(lambda handler, name: send(handler, b"", 0))
    with pytest.raises(DataNotFoundError, match="not tried"):
        find_fashion_mnist(download=False)
    assert asked == []


@pytest.fixture
def server(fake_fashion_mnist, tmp_path, monkeypatch, serve):
    """Serve tiny files over HTTP as if they were the official ones; the URLs fetched."""
    served = fake_fashion_mnist(tmp_path / "server")
    for name in ALL_NAMES:
        content = gzip.decompress((served / name).read_bytes())
        monkeypatch.setitem(gd.CONTENT_SHA256, name, hashlib.sha256(content).hexdigest())

    def answer(handler, name: str) -> None:
        body = (served / name).read_bytes()
        send(handler, body, len(body))

    return serve(answer)


def test_download_into_cache_verified(server, tmp_path):
    cache = cache_folder(tmp_path)
    assert find_fashion_mnist() == cache
    assert sorted(server) == sorted(gd.BASE_URL + name for name in ALL_NAMES)
    assert sorted(p.name for p in cache.iterdir()) == sorted(ALL_NAMES)  # no temp files left
    train_iter, _ = load_data_fashion_mnist(10)
    assert len(train_iter.dataset) == 50
    server.clear()
    find_fashion_mnist()
    assert server == []  # found in the cache now


def test_download_fetches_only_missing_files(server, fake_fashion_mnist, tmp_path):
    cache = fake_fashion_mnist(cache_folder(tmp_path))
    (cache / ALL_NAMES[0]).unlink()
    assert find_fashion_mnist() == cache
    assert server == [gd.BASE_URL + ALL_NAMES[0]]


def test_download_with_wrong_digest_keeps_nothing(server, tmp_path, monkeypatch):
    monkeypatch.setitem(gd.CONTENT_SHA256, ALL_NAMES[0], "0" * 64)
    with pytest.raises(DataNotFoundError, match="SHA-256"):
        find_fashion_mnist()
    cache = cache_folder(tmp_path)
    assert not (cache / ALL_NAMES[0]).exists()
    assert not list(cache.glob("*.part"))


def test_interrupted_download_keeps_nothing(tmp_path, serve):
    # The connection closes after 10 of the 1,000 bytes announced: the part is no gzip file.
    serve(lambda handler, name: send(handler, b"\x1f\x8b partial", 1_000))
    with pytest.raises(DataNotFoundError, match="not a complete gzip file"):
        find_fashion_mnist()
    assert list(cache_folder(tmp_path).iterdir()) == []


def test_find_argument_errors():
    with pytest.raises(TypeError, match="root must be"):
        find_fashion_mnist(3)
    with pytest.raises(TypeError, match="download must be"):
        find_fashion_mnist(download="yes")


# ---------------------------------------------------------------- loaders


def test_loader_shapes_types_and_ranges(fake_fashion_mnist):
    folder = fake_fashion_mnist()
    train_iter, test_iter = load_data_fashion_mnist(16, root=folder)
    X, y = next(iter(train_iter))
    assert X.shape == (16, 1, 28, 28) and X.dtype == torch.float32
    assert y.shape == (16,) and y.dtype == torch.int64
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert len(train_iter.dataset) == 50 and len(test_iter.dataset) == 20
    assert sum(len(y) for _, y in train_iter) == 50
    raw = gzip.decompress((folder / TRAIN_IMAGES).read_bytes())
    images = np.frombuffer(raw, np.uint8, offset=16).reshape(50, 28, 28)
    first = train_iter.dataset.tensors[0][0, 0]
    np.testing.assert_allclose(first.numpy(), images[0] / 255, rtol=1e-6)


def test_test_loader_keeps_file_order(fake_fashion_mnist):
    _, test_iter = load_data_fashion_mnist(7, root=fake_fashion_mnist())
    X = torch.cat([X for X, _ in test_iter])
    assert (X[:, 0, 0, 0] * 255).round().long().tolist() == list(range(20))


def first_pixels(loader) -> list[int]:
    return [int(v) for X, _ in loader for v in (X[:, 0, 0, 0] * 255).round()]


def test_shuffle_is_seeded(fake_fashion_mnist):
    folder = fake_fashion_mnist()
    a, _ = load_data_fashion_mnist(8, root=folder, seed=3)
    b, _ = load_data_fashion_mnist(8, root=folder, seed=3)
    c, _ = load_data_fashion_mnist(8, root=folder, seed=4)
    a1 = first_pixels(a)
    b1 = first_pixels(b)
    c1 = first_pixels(c)
    assert a1 == b1 and a1 != c1
    assert sorted(a1) == list(range(50)) and a1 != sorted(a1)
    # Each epoch is shuffled anew, and the sequence of epochs is the same in both runs.
    a2 = first_pixels(a)
    b2 = first_pixels(b)
    assert a2 != a1 and a2 == b2


def subset_ids(loader) -> list[int]:
    return sorted(first_pixels(loader))


def test_subsets_are_deterministic_nested_and_sized(fake_fashion_mnist):
    folder = fake_fashion_mnist()
    small, small_test = load_data_fashion_mnist(4, root=folder, n_train=10, n_test=5)
    again, _ = load_data_fashion_mnist(4, root=folder, n_train=10, n_test=5)
    large, _ = load_data_fashion_mnist(4, root=folder, n_train=30, n_test=5)
    other, _ = load_data_fashion_mnist(4, root=folder, n_train=10, seed=1)
    assert len(small.dataset) == 10 and len(small_test.dataset) == 5
    assert subset_ids(small) == subset_ids(again)
    assert set(subset_ids(small)) < set(subset_ids(large))
    assert subset_ids(small) != subset_ids(other)
    assert subset_ids(small) != list(range(10))  # a random subset, not the first examples
    # Kept in file order (the test loader does not shuffle).
    assert first_pixels(small_test) == sorted(first_pixels(small_test))


def test_worker_processes_give_the_same_batches(fake_fashion_mnist):
    root = fake_fashion_mnist()
    train_iter, _ = load_data_fashion_mnist(25, root=root, num_workers=1)
    same, _ = load_data_fashion_mnist(25, root=root)
    assert [y.tolist() for _, y in train_iter] == [y.tolist() for _, y in same]
    assert [tuple(X.shape) for X, _ in train_iter] == [(25, 1, 28, 28)] * 2


def test_image_label_count_mismatch_names_both_files(tmp_path, fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    write_idx(folder / gd.FILES["test"][1], np.zeros(19, np.uint8), magic=2049)
    with pytest.raises(ValueError, match=r"t10k-images.*20 images.*t10k-labels.*19 labels"):
        load_data_fashion_mnist(4, root=folder)


def test_label_out_of_range(fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    write_idx(folder / gd.FILES["train"][1], np.full(50, 10, np.uint8), magic=2049)
    with pytest.raises(ValueError, match=r"train-labels.*label 10 out of range"):
        load_data_fashion_mnist(4, root=folder)


def test_wrong_magic_in_data_folder_names_file(fake_fashion_mnist, write_idx):
    folder = fake_fashion_mnist()
    write_idx(folder / gd.FILES["train"][0], np.zeros(50, np.uint8), magic=2049)
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\.gz: magic number 2049"):
        load_data_fashion_mnist(4, root=folder)


def test_truncated_data_file_is_an_error_not_a_smaller_set(fake_fashion_mnist):
    folder = fake_fashion_mnist()
    path = folder / gd.FILES["train"][0]
    content = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(content[: -28 * 28]))  # one image short, valid gzip
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\.gz"):
        load_data_fashion_mnist(4, root=folder)


def test_decoded_arrays_are_cached_until_the_file_changes(fake_fashion_mnist):
    # Once read, the four files are not read again while their sizes and modification times
    # stay: after each is overwritten with zeros of its size and given back its time, loading
    # still works (a new read would fail); a file rewritten otherwise is read again.
    folder = fake_fashion_mnist()
    load_data_fashion_mnist(4, root=folder)
    for name in ALL_NAMES:
        path = folder / name
        stat = path.stat()
        path.write_bytes(bytes(stat.st_size))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    train_iter, test_iter = load_data_fashion_mnist(8, root=folder, n_train=5)
    assert len(train_iter.dataset) == 5 and len(test_iter.dataset) == 20
    fake_fashion_mnist(folder, n_train=60)  # rewrite: other size, so another cache key
    train_iter, _ = load_data_fashion_mnist(4, root=folder)
    assert len(train_iter.dataset) == 60


def test_cached_arrays_are_not_modified_by_loaders(fake_fashion_mnist):
    folder = fake_fashion_mnist()
    train_iter, _ = load_data_fashion_mnist(4, root=folder)
    train_iter.dataset.tensors[0].zero_()
    again, _ = load_data_fashion_mnist(4, root=folder)
    assert again.dataset.tensors[0].max() > 0


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
        ({"batch_size": 2.0}, TypeError, "batch_size must be an int"),
        ({"batch_size": True}, TypeError, "batch_size"),
        ({"n_train": 0}, ValueError, "n_train must be >= 1"),
        ({"n_test": 1.5}, TypeError, "n_test must be"),
        ({"n_train": 51}, ValueError, "n_train must be None or between 1 and 50, got 51"),
        ({"n_test": 21}, ValueError, "n_test must be None or between 1 and 20, got 21"),
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        ({"num_workers": -1}, ValueError, "num_workers must be >= 0"),
        ({"root": 5}, TypeError, "root must be"),
    ],
)
def test_loader_argument_errors(fake_fashion_mnist, kwargs, error, pattern):
    arguments = {"batch_size": 4, "root": fake_fashion_mnist(), **kwargs}
    with pytest.raises(error, match=pattern):
        load_data_fashion_mnist(**arguments)


def test_loader_without_data_raises_the_search_error():
    with pytest.raises(DataNotFoundError, match="dataset-fashion-mnist"):
        load_data_fashion_mnist(4)


# ---------------------------------------------------------------- the real files


@pytest.mark.skipif(
    not all((REAL_DIR / name).is_file() for name in ALL_NAMES),
    reason="dataset-fashion-mnist is not installed",
)
def test_real_fashion_mnist():
    for name in ALL_NAMES:  # the digests are those of these (the official release's) files
        content = gzip.decompress((REAL_DIR / name).read_bytes())
        assert hashlib.sha256(content).hexdigest() == gd.CONTENT_SHA256[name]
    train_iter, test_iter = load_data_fashion_mnist(256, root=REAL_DIR)
    assert len(train_iter.dataset) == 60_000 and len(test_iter.dataset) == 10_000
    counts = torch.bincount(train_iter.dataset.tensors[1], minlength=10)
    assert counts.tolist() == [6000] * 10
    a, b = (load_data_fashion_mnist(64, root=REAL_DIR, n_train=500, n_test=100) for _ in "ab")
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.dataset.tensors[0], y.dataset.tensors[0])
        assert torch.equal(x.dataset.tensors[1], y.dataset.tensors[1])
    Xa, ya = next(iter(a[0]))
    Xb, yb = next(iter(b[0]))
    assert torch.equal(Xa, Xb) and torch.equal(ya, yb)
    assert len(a[0].dataset) == 500 and len(a[1].dataset) == 100
