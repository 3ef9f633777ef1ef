"""gpukit.extensions: build folders keyed by everything that decides a build, and reuse.

The builds use the stable ABI's small headers (no ``torch/extension.h``), so each compiles in
seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gpukit.extensions import extension_build_dir, load_extension

SOURCE = """
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>
using torch::stable::Tensor;
Tensor identity(Tensor x) { return x; }
STABLE_TORCH_LIBRARY(gpukit_test_ext, m) { m.def("identity(Tensor x) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(gpukit_test_ext, CPU, m) { m.impl("identity", TORCH_BOX(&identity)); }
"""


def test_key_covers_sources_flags_and_torch(tmp_path: Path, monkeypatch) -> None:
    base = extension_build_dir("ext", "a", root=tmp_path)
    assert base == extension_build_dir("ext", ["a"], root=tmp_path)
    assert base.is_dir() and base.parent == tmp_path
    others = {
        extension_build_dir("ext", "b", root=tmp_path),
        extension_build_dir("ext", "a", "kernel", root=tmp_path),
        extension_build_dir("ext", "a", flags=["-O3"], root=tmp_path),
        extension_build_dir("other", "a", root=tmp_path),
    }
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    others.add(extension_build_dir("ext", "a", root=tmp_path))
    monkeypatch.setenv("CXX", "clang++")
    others.add(extension_build_dir("ext", "a", root=tmp_path))
    assert base not in others and len(others) == 6


def test_default_root_is_the_user_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert extension_build_dir("ext", "a").parent == tmp_path / "gpukit" / "extensions"


def test_builds_once_then_reuses(tmp_path: Path) -> None:
    kwargs = dict(no_implicit_headers=True, is_python_module=False, root=tmp_path)
    first = load_extension("identity_ext", SOURCE, **kwargs)
    assert not first.reused and Path(first.module).is_file()
    x = torch.arange(3.0)
    torch.testing.assert_close(torch.ops.gpukit_test_ext.identity(x), x)
    second = load_extension("identity_ext", SOURCE, **kwargs)
    assert second.reused and second.directory == first.directory


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(name="not a name"), ValueError, "name must be a Python identifier"),
        (dict(name=3), TypeError, "name must be a string"),
        (dict(cpp_sources=3), TypeError, "cpp_sources must be a string or a list"),
        (dict(cuda_sources=[1]), TypeError, "cuda_sources must be a string or a list"),
        (dict(flags="-O2 -g", functions=[1]), TypeError, "functions must be"),
        (dict(no_implicit_headers=1), TypeError, "no_implicit_headers must be a bool"),
        (dict(is_python_module="yes"), TypeError, "is_python_module must be a bool"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict, error: type, match: str) -> None:
    arguments = dict(name="ext", cpp_sources="int f();", root=tmp_path) | kwargs
    with pytest.raises(error, match=match):
        load_extension(**arguments)
    assert not any(tmp_path.iterdir())  # nothing built, no folder made
