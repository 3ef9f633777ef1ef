"""Pages declare in their front matter how many GPUs their full run wants (``gpus: 2``).

A build started with ``GPUKIT_REQUIRE_GPUS=1`` (``nox -s docs -- --require-gpus``, the GPU
runner) on a machine with fewer GPUs fails within seconds, before executing anything, naming
the pages: a GPU build is never silently a CPU one. Without it such a page still runs, on the
devices the machine has, and carries a visible notice, so a CPU build is never mistaken for a
GPU one.
"""

import os
from pathlib import Path

from sphinx.locale import _

import gpukit
from gpukit_site.ext.front_matter import gpus_wanted
from gpukit_site.kernel_env import REQUIRE_GPUS_VAR as REQUIRE_GPUS


def check_gpus(app, config) -> None:
    if os.environ.get(REQUIRE_GPUS, "") in ("", "0"):
        return
    found = gpukit.num_gpus()
    srcdir = Path(app.srcdir)
    # Relative: a checkout that happens to sit under a folder named _build is still read.
    pages = (p.relative_to(srcdir) for p in sorted(srcdir.rglob("*.md")))
    wanted = {page: gpus_wanted(srcdir / page) for page in pages if "_build" not in page.parts}
    short = "".join(f"\n  {p.as_posix()}: wants {n} GPU(s)" for p, n in wanted.items() if n > found)
    if short:
        # SystemExit, not a SphinxError: Sphinx would bury the message under a crash report
        # that asks the reader to file a Sphinx bug.
        raise SystemExit(
            f"GPU guard: this build requires GPUs ({REQUIRE_GPUS} is set), but the machine has "
            f"{found} ({gpukit.describe_machine()}); these pages want more:{short}\n"
            "Build on a machine with enough GPUs, or drop --require-gpus for a build whose "
            "pages say they ran on fewer devices."
        )


def add_gpu_notice(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """What a reader must know about a page built with fewer GPUs than it is written for."""
    if pagename not in app.env.found_docs:  # the index of names, the search page
        return
    wanted = gpus_wanted(Path(app.env.doc2path(pagename)))
    found = gpukit.num_gpus()
    if wanted > found:
        # One sentence per number (no "GPU(s)"): found < wanted, so only wanted can be 1.
        if found == 0:
            found_text = _("no GPU")
        elif found == 1:
            found_text = _("only one GPU")
        else:
            found_text = _("only {n} GPUs").format(n=found)
        notice = (
            _(
                "This page is written for one GPU; the machine that built it has {found}. Its "
                "code ran all the same, on the devices this machine has, so the times below are "
                "this machine's. The text says what a machine with a GPU shows."
            )
            if wanted == 1
            else _(
                "This page is written for {wanted} GPUs; the machine that built it has {found}. "
                "Its code ran all the same, on the devices this machine has, so the times below "
                "are this machine's. The text says what a machine with {wanted} GPUs shows."
            )
        )
        context["provenance_notice"] = notice.format(wanted=wanted, found=found_text)


def setup(app):
    app.connect("config-inited", check_gpus)
    app.connect("html-page-context", add_gpu_notice)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
