"""The API page's sections, one per gpukit module, made from the module itself::

    ```{gpukit-module} gpukit.devices
    ```

gives the module's summary table (``autosummary``, one row per name of its ``__all__``, in
that order) followed by its documentation (``automodule``). The page lists each public name
once, where the module declares it, so that a name added to ``__all__`` appears on the page.
"""

import importlib
import inspect

from docutils import nodes
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


def defining_module(app, modname: str, fullname: str) -> str | None:
    """(viewcode) Where a class whose ``__module__`` names the module that documents it is
    defined: the module of its own methods, e.g. ``gpukit._loop`` for
    ``gpukit.training.TrainResult``. ``None`` for everything else: viewcode's own answer."""
    try:
        obj = importlib.import_module(modname)
        for part in fullname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if not isinstance(obj, type):
        return None
    methods = [f for f in vars(obj).values() if inspect.isfunction(f)]
    defined_in = {f.__module__ for f in methods} - {obj.__module__}
    return defined_in.pop() if len(defined_in) == 1 else None


def setup(app):
    app.add_directive("gpukit-module", GpukitModule)
    app.connect("viewcode-follow-imported", defining_module)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
