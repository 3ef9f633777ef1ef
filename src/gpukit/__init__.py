"""gpukit: the helpers shared by the pages of "GPU 计算 · Computing on GPUs".

Names follow D2L's PyTorch helpers where D2L has the same idea, so ``import gpukit as d2l``
runs D2L code for the GPU chapter. Every public name of the topic modules is exported here,
except those of the modules in ``IMPORTED_BY_NAME``.
"""

import importlib
import pkgutil

from gpukit.attention import *
from gpukit.context import *
from gpukit.data import *
from gpukit.devices import *
from gpukit.experts import *
from gpukit.extensions import *
from gpukit.fast import *
from gpukit.flash import *
from gpukit.gpt import *
from gpukit.measure import *
from gpukit.memory import *
from gpukit.metrics import *
from gpukit.models import *
from gpukit.multinode import *
from gpukit.overlap import *
from gpukit.paging import *
from gpukit.parallel import *
from gpukit.planner import *
from gpukit.plotting import *
from gpukit.pretrained import *
from gpukit.profiles import *
from gpukit.quantization import *
from gpukit.results import *
from gpukit.roofline import *
from gpukit.serving import *
from gpukit.sharding import *
from gpukit.speculative import *
from gpukit.step import *
from gpukit.timing import *
from gpukit.training import *

#: Public modules that ``import gpukit`` leaves out, imported by name (``from gpukit.flash_kernel
#: import flash_forward_kernel``): they import Triton, which chooses its interpreter
#: (``TRITON_INTERPRET``) while it is first imported, so a page must be able to import gpukit
#: before it decides.
IMPORTED_BY_NAME = ("flash_kernel",)

__all__ = sorted(
    name
    for module in pkgutil.iter_modules(__path__)
    if not module.name.startswith("_") and module.name not in IMPORTED_BY_NAME
    for name in importlib.import_module(f"gpukit.{module.name}").__all__
)
