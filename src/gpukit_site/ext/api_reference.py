"""The API reference's pages, one per gpukit module (``docs/<lang>/api/<module>.md``, listed in
the toctree of ``docs/<lang>/api.md``; tests/test_api_page.py checks that every module has one),
each made from the module itself::

    ```{gpukit-module} gpukit.devices
    ```

gives the module's summary table (``autosummary``, one row per name of its ``__all__``, in
that order) followed by its documentation (``automodule``). The page lists each public name
once, where the module declares it, so that a name added to ``__all__`` appears on the page.

A Triton kernel (``@triton.jit``) is a ``JITFunction`` object, which autodoc would skip as
neither a function nor a documented variable: :class:`TritonKernelDocumenter` documents it as
the function it wraps.
"""

import importlib
import inspect

from docutils import nodes
from sphinx.ext.autodoc import FunctionDocumenter
from sphinx.util.docutils import SphinxDirective


class GpukitModule(SphinxDirective):
    """``{gpukit-module} gpukit.<module>``: the summary of the module's ``__all__``, then its
    members."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            public = importlib.import_module(name).__all__
        except (ImportError, AttributeError) as err:
            raise self.error(f"gpukit-module: {name} is not a module with __all__ ({err})") from err
        rst = [
            f".. currentmodule:: {name}",
            "",
            ".. autosummary::",
            "   :nosignatures:",
            "",
            *(f"   {member}" for member in public),
            "",
            f".. automodule:: {name}",
            "   :members:",
            "   :no-value:",
        ]
        return self.parse_text_to_nodes("```{eval-rst}\n" + "\n".join(rst) + "\n```")


class TritonKernelDocumenter(FunctionDocumenter):
    """A ``@triton.jit`` kernel, documented as a function: the signature and the docstring of
    the Python function it compiles (``kernel.fn``)."""

    objtype = "tritonkernel"
    directivetype = "function"
    priority = FunctionDocumenter.priority + 1

    # InterpretedFunction: what @triton.jit makes when TRITON_INTERPRET=1 was set before Triton
    # was first imported (a build without a GPU may inherit it)
    kernel_types = ("JITFunction", "InterpretedFunction")

    @classmethod
    def can_document_member(cls, member, membername, isattr, parent) -> bool:
        return type(member).__name__ in cls.kernel_types and inspect.isfunction(
            getattr(member, "fn", None)
        )

    def format_args(self, **kwargs) -> str:
        kernel = self.object
        self.object = kernel.fn
        try:
            return super().format_args(**kwargs)
        finally:
            self.object = kernel

    def check_module(self) -> bool:
        # An InterpretedFunction names Triton's interpreter as its module, not the kernel's.
        return self.object.fn.__module__ == self.modname

    def get_doc(self) -> list[list[str]]:
        kernel = self.object
        self.object = kernel.fn
        try:
            return super().get_doc()
        finally:
            self.object = kernel


def keep_interpreted_kernels(app, what, name, obj, skip, options) -> bool | None:
    """Keep a kernel that Triton's interpreter wraps: the wrapper has no docstring of its own,
    which autodoc would take for an undocumented member."""
    if type(obj).__name__ == "InterpretedFunction" and getattr(obj.fn, "__doc__", None):
        return False
    return None


def setup(app):
    app.add_directive("gpukit-module", GpukitModule)
    app.add_autodocumenter(TritonKernelDocumenter)
    app.connect("autodoc-skip-member", keep_interpreted_kernels)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
