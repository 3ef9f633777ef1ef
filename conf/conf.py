"""One Sphinx configuration for both languages of "GPU 计算 · Computing on GPUs".

Used as ``sphinx-build -t en -c conf docs/en ...`` and ``sphinx-build -t zh -c conf docs/zh ...``
(the noxfile does this). The language comes from the ``-t`` tag because ``-D language=...``
is applied only after this file has run.
"""

import os
import shutil
from pathlib import Path

# The site's extensions and tools are the package gpukit_site (src/gpukit_site), installed with
# gpukit (``pip install -e .``, as nox does).
import gpukit
from gpukit_site.ext.execution import cache_key, tree_hash
from gpukit_site.kernel_env import kernel_environment
from gpukit_site.languages import LANGUAGES, MYST_EXTENSIONS

CONF_DIR = Path(__file__).resolve().parent
ROOT = CONF_DIR.parent

# -- Language -------------------------------------------------------------------------------
chosen = [code for code in LANGUAGES if tags.has(code)]  # noqa: F821 (Sphinx injects `tags`)
if len(chosen) != 1:
    raise RuntimeError(f"pass exactly one language tag, -t en or -t zh (got {chosen or 'none'})")
site_language = chosen[0]
language = LANGUAGES[site_language].locale
locale_dirs = [str(CONF_DIR / "locales")]  # Chinese strings for the theme

# -- Project --------------------------------------------------------------------------------
project = "GPU 计算 · Computing on GPUs"
author = "The GPU 计算 authors"
copyright = "2026, " + author
html_title = "GPU 计算" if site_language == "zh" else "Computing on GPUs"
repository_url = "https://github.com/gpukit-docs/gpu-computing"
# The hosted site: GitHub Pages of the repository, <site_url><lang>/<page>.html.
owner, repository = repository_url.removeprefix("https://github.com/").split("/")
site_url = f"https://{owner.lower()}.github.io/{repository}/"

extensions = [
    "myst_nb",  # loads myst_parser itself: listing both breaks the build
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",  # the API page links each object to its source
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx_copybutton",
]
# The site's own, in src/gpukit_site/ext:
extensions += [
    f"gpukit_site.ext.{name}"
    for name in (
        "cjk_linebreaks",  # a line break between Chinese characters is not a space
        "provenance",  # which machine, software and profile produced a page's outputs
        "gpu_guard",  # a page wants more GPUs than the machine has: a notice, or a failed build
        "about",  # the About page's tables: this build's facts, each page's execution
        "machine_cases",  # this machine's explanation first, the others collapsed
        "recorded",  # other machines' recorded outputs under each cell, collapsed
        "execution",  # no half-written cache entry after a kill; raises-exception cells must raise
        "learning_path",  # the index's table of pages: what each teaches, reading time, GPUs
        "api_reference",  # the API page's section of a gpukit module, made from its __all__
        "notebooks",  # every executed page as .ipynb with outputs, and an "Open in Colab" link
        "katex_math",  # math typeset by KaTeX while the site is built: no script in the page
        "image_alt",  # every image has an alt text; a plot gets its labels in the page's language
        "page_styles",  # myst-nb's and KaTeX's stylesheets only on the pages that use them
        "search_entries",  # a rebuild's search still lists the glossary's terms first
    )
]
exclude_patterns = ["_build", "jupyter_execute", ".ipynb_checkpoints"]
templates_path = [str(CONF_DIR / "_templates")]
html_static_path = [str(CONF_DIR / "_static")]
numfig = True
# Types from torch, Triton, numpy, matplotlib and the standard library cannot be linked: the
# build is offline, so there are no intersphinx inventories. Everything of gpukit's own must
# resolve.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|triton|numpy|np|matplotlib|collections|contextlib|os|pathlib|time|types|typing)\..*",
    ),
    (r"py:class", r"gpukit\.\w+\.T"),  # a type variable (pick's), not a class
]
autodoc_member_order = "bysource"
# The docstrings' examples run with every public name of gpukit in scope, as under pytest.
doctest_global_setup = "from pathlib import Path\nimport matplotlib\nimport torch\n"
doctest_global_setup += "from torch import nn\nimport gpukit\nfrom gpukit import *\n"
myst_enable_extensions = MYST_EXTENSIONS

# -- Execution ------------------------------------------------------------------------------
# The kernel inherits this environment (gpukit_site.kernel_env, shared with gpukit_site.gpu_check):
# the profile, the IPython profile that shortens tracebacks, idle OpenMP threads that sleep.
profile = gpukit.current_profile()
os.environ.update(kernel_environment(profile.name))

nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "docs/_build/.jupyter_cache" / cache_key(ROOT, profile.name))
nb_execution_raise_on_error = True
nb_execution_show_tb = True  # the failure names the page, the cell and the error
# Per cell, in seconds: a hung cell fails the build instead of stalling it. Quick has room
# for a slow shared 2-core machine (ResNet-18 cells took minutes under load there).
nb_execution_timeout = {"quick": 600, "full": 3600}[profile.name]
nb_merge_streams = True
# The toggles of hidden cells are myst-nb's settings, not theme strings from the catalog.
if site_language == "zh":
    nb_code_prompt_show = "显示隐藏内容"
    nb_code_prompt_hide = "隐藏内容"

# Sphinx reads a page again when its source or a config value changes, not when the code of
# an extension does. As a config value, the hash of src/gpukit_site/ext makes an edited
# extension (pulled, or saved while docs-live runs) read every page again; the outputs still
# come from the cache.
site_extensions_hash = tree_hash(ROOT, ("src/gpukit_site/ext",))


def copy_root_index(app, exception) -> None:
    """The site's root, ``<outdir>/../index.html``, sends a reader to zh/ or en/."""
    if exception is None and app.builder.format == "html":
        shutil.copyfile(CONF_DIR / "root_index.html", Path(app.outdir).parent / "index.html")


def link_other_language(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The language switch: the languages are built into sibling folders from mirrored sources,
    so a page's counterpart has the same name one folder over (relative: works from file://)."""
    other = next(lang for code, lang in LANGUAGES.items() if code != site_language)
    url = "../" * (pagename.count("/") + 1) + f"{other.code}/{pagename}.html"
    context["this_language"] = LANGUAGES[site_language]
    context["other_language"] = {"url": url, "name": other.name, "hreflang": other.hreflang}


def add_heading_levels(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Sphinx 8.2 writes a toctree's caption as ``<p class="caption" role="heading">`` without
    the ``aria-level`` the role requires (axe-core: aria-required-attr, critical), in the body and
    in furo's sidebar. The captions name sections of the table of contents: level 2. (Scrollable
    code blocks become keyboard-focusable in _static/gpukit.js: whether one scrolls depends on
    the screen.)"""
    caption = 'class="caption" role="heading"'
    for part in ("body", "toc", "furo_navigation_tree"):  # the parts that hold toctrees
        if isinstance(context.get(part), str):
            context[part] = context[part].replace(caption, caption + ' aria-level="2"')


def choose_triton_interpreter(app) -> None:
    """The doctest builder runs gpukit's examples in this process, and autodoc imports
    gpukit.flash_kernel, and with it Triton, while the API pages are read. Triton chooses its
    interpreter when it is first imported (as src/conftest.py sets it for pytest): without a
    GPU, it must be chosen before reading."""
    import torch

    if app.builder.name == "doctest" and not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def setup(app):
    app.connect("builder-inited", choose_triton_interpreter)
    app.add_config_value("site_extensions_hash", "", "env", types=[str])
    app.add_config_value("site_language", "en", "html", types=[str])
    app.connect("html-page-context", link_other_language)
    # After furo (priority 500), which builds its sidebar tree in the same event.
    app.connect("html-page-context", add_heading_levels, priority=900)
    app.connect("build-finished", copy_root_index)


# -- HTML (furo) ----------------------------------------------------------------------------
html_theme = "furo"
html_css_files = ["gpukit.css"]
html_search_scorer = str(CONF_DIR / "_static" / "search_scorer.js")
html_js_files = ["gpukit.js"]  # scrollable code blocks become keyboard-focusable
sidebar = ("brand", "languages", "search", "scroll-start", "navigation", "scroll-end")
html_sidebars = {"**": [f"sidebar/{name}.html" for name in sidebar]}
html_theme_options = {"source_repository": repository_url, "source_branch": "main"}
html_theme_options["source_directory"] = f"docs/{site_language}/"
html_last_updated_fmt = None
# No Python module index page: the API reference lists gpukit's modules, one page each.
html_domain_indices = False
html_favicon = str(CONF_DIR / "_static" / "favicon.svg")
# The template (_templates/page.html) links every page to itself in each language on the hosted
# site (hreflang wants absolute addresses) and describes the pages that have no summary.
html_context = {
    "site_url": site_url,
    "site_languages": [(code, lang.hreflang) for code, lang in LANGUAGES.items()],
    "site_description": {
        "en": "How to compute on GPUs with PyTorch, from one GPU to many machines: every page"
        " executed while the site is built, on the machine it names.",
        "zh": "用 PyTorch 在 GPU 上计算，从一块 GPU 到多台机器：每一节的代码都在构建本站时执行，"
        "并注明执行它的机器。",
    }[site_language],
}

# -- Math -----------------------------------------------------------------------------------
# KaTeX typesets the math while the site is built (gpukit_site.ext.katex_math): a page ships HTML,
# KaTeX's stylesheet and the few fonts its math uses, and no script. (MathJax in the browser
# cost every page with math 1.2 MB of script, and sized each formula by the reader's fonts.)
# _static/katex holds KaTeX 0.16.22's dist/katex.min.css, the version sphinxcontrib-katex
# bundles, with its @font-face rules cut to the woff2 files, and those fonts.
katex_prerender = True
katex_css_path = "katex/katex.min.css"

# -- Copy button ----------------------------------------------------------------------------
# Copy code only: strip prompts and never put a button on a cell's output.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True  # a pasted session's output lines are not copied
copybutton_selector = "div:not(.output) > div.highlight > pre"

# -- Notebooks and Colab --------------------------------------------------------------------
# Every executed page offers its notebook, with outputs, as _notebooks/<page>.ipynb
# (gpukit_site.ext.notebooks). Colab opens notebooks only from GitHub, and the repository holds
# MyST sources: so the GPU workflow that deploys the site also publishes the built notebooks to
# the branch `notebooks`, as <lang>/<page>.ipynb, and the Colab link opens that copy.
notebooks_repository_url = repository_url  # where the notebook's first cell installs gpukit from
notebooks_colab_url = f"https://colab.research.google.com/github/{owner}/{repository}"
notebooks_colab_url += "/blob/notebooks/{lang}/{page}.ipynb"
