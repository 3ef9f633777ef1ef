"""C++ and CUDA extensions built from strings, each in a build folder keyed by what builds it.

:func:`load_extension` calls :func:`torch.utils.cpp_extension.load_inline`, which writes the
sources into a folder, compiles them with Ninja and loads the library. load_inline's default
folder is named after the extension alone (``~/.cache/torch_extensions/py311_cpu/<name>``), so
two builds that differ in anything but their sources and flags, a PyTorch release for
instance, share it. Here the folder's name carries a hash of everything that decides the build:
the sources, the flags, PyTorch's and CUDA's versions, Python's version and the compiler. A
second build with the same key finds the library already built and only loads it; any change
builds into a new folder. The CUDA C++ page times both.

Building needs a C++ compiler and Ninja (``pip install ninja``; the docs' dependency group has
it), and for CUDA sources the CUDA toolkit's ``nvcc``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from gpukit._checks import check_type

__all__ = ["Extension", "extension_build_dir", "load_extension"]


@dataclass(frozen=True)
class Extension:
    """What :func:`load_extension` built: the loaded extension and how long that took.

    ``module`` is the Python module (for ``functions=``), or the library's path when the
    extension registers operators itself (``is_python_module=False``: call them through
    ``torch.ops``). ``reused`` says whether the library was already in ``directory``, so that
    ``seconds`` measured loading, not compiling.

    Example:
        >>> Extension(module="x.so", directory=Path("/tmp/x"), seconds=0.5, reused=True).reused
        True
    """

    module: ModuleType | str
    directory: Path
    seconds: float
    reused: bool


def _strings(value: object, name: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name} must be a string or a list of strings, got {type(value).__name__}")
    return list(value)


def _check_name(name: object) -> str:
    check_type(name, "name", str, "a string")
    if not name.isidentifier():
        raise ValueError(f"name must be a Python identifier such as 'tiled_matmul', got {name!r}")
    return name


def _key(name: str, parts: dict[str, object]) -> str:
    facts = {
        "name": name,
        **parts,
        "torch": torch.__version__,
        "cuda_version": torch.version.cuda,
        "python": sys.version_info[:2],
        "machine": platform.machine(),
        "compiler": os.environ.get("CXX", "c++"),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _root(root: str | os.PathLike | None) -> Path:
    if root is not None:
        return Path(root)
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "gpukit" / "extensions"


def extension_build_dir(
    name: str,
    cpp_sources: str | Sequence[str],
    cuda_sources: str | Sequence[str] = (),
    *,
    flags: Sequence[str] = (),
    root: str | os.PathLike | None = None,
) -> Path:
    """The build folder of an extension: ``<root>/<name>-<hash>``, created if missing.

    The hash covers ``name``, the sources, the flags, PyTorch's and CUDA's versions, Python's
    version, the machine's architecture and the compiler (``$CXX``, else ``c++``), so a folder
    is reused only by a build that would produce the same library. ``root`` defaults to
    ``$XDG_CACHE_HOME/gpukit/extensions`` (``~/.cache/...``).

    Example:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> a = extension_build_dir("ext", "int f() { return 1; }", root=root)
        >>> a == extension_build_dir("ext", "int f() { return 1; }", root=root)
        True
        >>> a == extension_build_dir("ext", "int f() { return 2; }", root=root)
        False
        >>> a.name.startswith("ext-")
        True
    """
    name = _check_name(name)
    parts = {
        "cpp_sources": _strings(cpp_sources, "cpp_sources"),
        "cuda_sources": _strings(cuda_sources, "cuda_sources"),
        "flags": _strings(flags, "flags"),
    }
    directory = _root(root) / f"{name}-{_key(name, parts)}"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def load_extension(
    name: str,
    cpp_sources: str | Sequence[str],
    cuda_sources: str | Sequence[str] = (),
    *,
    functions: Sequence[str] | None = None,
    flags: Sequence[str] = ("-O2",),
    cuda_flags: Sequence[str] = ("-O2",),
    no_implicit_headers: bool = False,
    is_python_module: bool = True,
    root: str | os.PathLike | None = None,
) -> Extension:
    """Build (or reuse) and load an extension with ``load_inline``, in a keyed build folder.

    The arguments are load_inline's: ``cpp_sources`` (C++), ``cuda_sources`` (CUDA C++, which
    needs the CUDA toolkit's ``nvcc``), ``functions`` (names to bind with pybind11), ``flags``
    and ``cuda_flags`` (for the C++ and the CUDA compiler), ``no_implicit_headers`` (leave out
    ``#include <torch/extension.h>``, the slow header, when the sources include what they
    need) and ``is_python_module`` (False when the sources register operators with
    ``TORCH_LIBRARY`` or ``STABLE_TORCH_LIBRARY``). The folder comes from
    :func:`extension_build_dir`; it is reused only by identical builds.

    Example (a C++ function registered as an operator; the first build compiles it):
        >>> import tempfile
        >>> source = '''
        ... #include <torch/csrc/stable/library.h>
        ... #include <torch/csrc/stable/tensor.h>
        ... using torch::stable::Tensor;
        ... Tensor same(Tensor x) { return x; }
        ... STABLE_TORCH_LIBRARY(gpukit_doctest, m) { m.def("same(Tensor x) -> Tensor"); }
        ... STABLE_TORCH_LIBRARY_IMPL(gpukit_doctest, CPU, m) { m.impl("same", TORCH_BOX(&same)); }
        ... '''
        >>> built = load_extension("same", source, no_implicit_headers=True,
        ...                        is_python_module=False, root=tempfile.mkdtemp())
        >>> built.reused, torch.ops.gpukit_doctest.same(torch.ones(2)).tolist()
        (False, [1.0, 1.0])
    """
    name = _check_name(name)
    cpp = _strings(cpp_sources, "cpp_sources")
    cuda = _strings(cuda_sources, "cuda_sources")
    if functions is not None:
        functions = _strings(functions, "functions")
    flags, cuda_flags = _strings(flags, "flags"), _strings(cuda_flags, "cuda_flags")
    check_type(no_implicit_headers, "no_implicit_headers", bool, "a bool")
    check_type(is_python_module, "is_python_module", bool, "a bool")
    from torch.utils.cpp_extension import load_inline  # imports setuptools: not at import

    directory = extension_build_dir(
        name,
        cpp,
        cuda,
        flags=[*flags, *cuda_flags, repr(functions), repr((no_implicit_headers, is_python_module))],
        root=root,
    )
    reused = (directory / f"{name}.so").is_file()
    start = time.perf_counter()
    module = load_inline(
        name=name,
        cpp_sources=cpp,
        cuda_sources=cuda or None,
        functions=functions,
        extra_cflags=flags,
        extra_cuda_cflags=cuda_flags,
        build_directory=str(directory),
        no_implicit_headers=no_implicit_headers,
        is_python_module=is_python_module,
    )
    return Extension(module, directory, time.perf_counter() - start, reused)
