"""Offer every executed page as a Jupyter notebook that reads like the page, with its outputs.

myst-nb writes each page's notebook to ``<build>/jupyter_execute/<page>.ipynb`` without its
outputs (myst-nb 1.4 writes the notebook it read), in a folder both languages share. So right
after myst-nb has read a page, the outputs are merged from the execution cache into that notebook
(this language's text), which is kept in the build environment, each language's own; a page a
build does not read again keeps its last notebook. Only the ``cache`` execution mode (the
project's) keeps outputs; in another, pages offer none.

When the build finishes, each notebook goes to ``<outdir>/_notebooks/<page>.ipynb``, its MyST
turned into Markdown that Jupyter and Colab render like the page (``Markdown``): references link
to the hosted page (``site_url``) with the text Sphinx gives them, figures are attached to their
cell, glued values become their text, Chinese lines are joined as on the site. A first cell
installs gpukit where it is missing (Colab) at the commit the site was built from, keeping the
installed PyTorch; it is added after execution, so the cache never depends on it.
"""

import base64
import mimetypes
import re
import subprocess
import textwrap
from pathlib import Path
from urllib.parse import urljoin

import nbformat
from docutils import nodes
from docutils.parsers.rst.directives.misc import TestDirective  # takes any option
from jupyter_cache import get_cache
from markdown_it.renderer import RendererHTML
from myst_nb.core.variables import format_plain_text
from myst_nb.ext.glue import extract_glue_data_cell
from myst_parser.parsers.directives import parse_directive_text
from myst_parser.parsers.mdit import create_md_parser
from sphinx import addnodes
from sphinx.directives.code import LiteralIncludeReader
from sphinx.locale import _ as translated
from sphinx.locale import admonitionlabels
from sphinx.util import logging

from gpukit_site.ext.cjk_linebreaks import join_cjk_markdown
from gpukit_site.ext.machine_cases import this_machine

logger = logging.getLogger(__name__)

FOLDER = "_notebooks"
# --no-deps: keep the PyTorch already there (Colab's matches its GPU driver; gpukit pins the
# release the site was built with, whose CUDA may need a newer driver).
INSTALL = """\
# gpukit, the helper package of these pages, installed where it is missing (e.g. on Colab),
# {source}.
import importlib.util

if importlib.util.find_spec("gpukit") is None:
    get_ipython().run_line_magic("pip", "install --quiet --no-deps 'gpukit @ git+{url}@{ref}'")"""

# A role ({name}`text`), or a code span, which stays as written.
ROLE = re.compile(r"(`+).*?(?<!`)\1(?!`)|\{(?P<name>[\w:.+-]+)\}`(?P<text>[^`]*)`", re.DOTALL)
VERBATIM = {"fence", "colon_fence", "code_block", "math_block", "math_block_label", "amsmath"}
DROPPED = {"myst_target", "myst_line_comment"}
ADMONITIONS = {*admonitionlabels, "admonition", "dropdown"}
# JupyterLab's collapsed parts of a cell, and the page's tags that collapse them.
COLLAPSED = {"source_hidden": {"hide-cell", "hide-input"}, "outputs_hidden": {"hide-cell"}}


class Markdown:
    """MyST to Jupyter Markdown, for the notebook of one page; figures land in ``attachments``."""

    def __init__(self, app, docname: str, glued: dict[str, dict]) -> None:
        self.app = app
        self.docname = docname
        self.glued = glued
        self.parser = create_md_parser(app.env.myst_config, RendererHTML)
        self.url = f"{app.config.site_url}{app.config.site_language}/{docname}.html"
        self.attachments: dict[str, dict[str, str]] = {}
        self.cases: dict[str, str] = {}  # the {case} blocks of the {machine-cases} being read

    def convert(self, text: str) -> str:
        """Blocks that MyST parses as directives, targets or code, each from its lines."""
        lines = text.splitlines(keepends=True)
        out = []
        done = 0
        for token in self.parser.parse(text):
            directive = token.type in ("fence", "colon_fence") and token.info.startswith("{")
            if not token.map or token.map[0] < done or token.type not in VERBATIM | DROPPED:
                continue
            start, end = token.map
            out.append(self.prose("".join(lines[done:start])))
            if directive:  # indented as it was, e.g. in a list item
                indent = re.match(r"[ \t]*", lines[start])[0]
                out.append(textwrap.indent(self.directive(token), indent) + "\n")
            elif token.type in VERBATIM:
                out.append("".join(lines[start:end]))
            done = end
        return "".join(out) + self.prose("".join(lines[done:]))

    def prose(self, text: str) -> str:
        text = ROLE.sub(self.role, text)
        return join_cjk_markdown(text) if self.app.config.language.startswith("zh") else text

    def role(self, match: re.Match) -> str:
        name = match["name"]
        text = match["text"]
        if name is None:
            return match[0]
        if name in ("ref", "numref", "doc", "term"):
            return "[{}]({})".format(*self.resolve(name, text))
        if name.startswith("glue"):
            return self.glue(name, text)
        return f"${text}$" if name == "math" else text

    def resolve(self, role: str, content: str) -> tuple[str, str]:
        """The text and the hosted address of a reference, as Sphinx resolves it for the page."""
        explicit = re.fullmatch(r"(.+?)\s*<([^<>]+)>", content, re.DOTALL)
        title, target = explicit.groups() if explicit else ("", content)
        target = target if role == "doc" else target.lower()
        contnode = nodes.inline(title, title)
        node = addnodes.pending_xref(
            "",
            contnode,
            refdomain="std",
            reftype=role,
            reftarget=target,
            refexplicit=bool(explicit),
            refdoc=self.docname,
        )
        env = self.app.env
        ref = env.get_domain("std").resolve_xref(
            env, self.docname, self.app.builder, role, target, node, contnode
        )
        if ref is None:
            logger.warning("notebook: nothing to link for %r", content, location=self.docname)
            return title or target, self.url
        return ref.astext(), urljoin(self.url, ref.get("refuri") or "#" + ref.get("refid", ""))

    def glue(self, role: str, content: str) -> str:
        key, _, fmt = content.partition(":") if role == "glue:text" else (content, "", "")
        text = self.glued.get(key, {}).get("text/markdown" if role == "glue:md" else "text/plain")
        if text is None:
            logger.warning("notebook: no glued text %r", key, location=self.docname)
            return content
        return format_plain_text(text, fmt) if role == "glue:text" else text

    def directive(self, token) -> str:
        name, _, argument = token.info[1:].partition("}")
        name, argument = name.strip(), argument.strip()
        # Options (":name: ..." lines or a YAML block) as MyST reads them for Sphinx.
        parsed = parse_directive_text(TestDirective, "", token.content)
        options = {key: str(value) for key, value in parsed.options.items()}
        body = "\n".join(parsed.body).strip("\n")
        if name in ("figure", "image"):
            file = Path(self.app.srcdir, self.docname).parent / argument
            data = base64.b64encode(file.read_bytes()).decode()
            self.attachments[file.name] = {mimetypes.guess_type(file.name)[0]: data}
            return self.figure(f"attachment:{file.name}", options, body)
        if name.startswith("glue"):
            return self.glue(name, argument)
        if name == "literalinclude":  # the code it shows, read the way Sphinx reads it
            return self.literalinclude(argument, options)
        if name == "details":  # Jupyter renders the Markdown inside HTML's <details>
            return self.details(argument, self.convert(body))
        if name == "case":
            self.cases[argument] = self.convert(body).strip()
            return ""
        if name == "machine-cases":  # as on the page: this machine's case, the others closed
            self.cases = {}
            self.convert(body)
            mine = next((k for k in self.cases if this_machine() in k.split()), "")
            mine = self.cases.pop(mine, "")
            others = "\n\n".join(self.cases.values())
            return f"{mine}\n\n{self.details(translated('On other machines'), others)}"
        if name in ADMONITIONS:
            title = argument if name in ("admonition", "dropdown") else admonitionlabels[name]
            text = (f"**{self.prose(str(title))}**\n\n" if title else "") + self.convert(body)
            return "\n".join(f"> {line}".rstrip() for line in text.strip().splitlines())
        logger.warning("notebook: no Markdown for {%s}", name, location=self.docname)
        return self.convert(body)

    def literalinclude(self, argument: str, options: dict[str, str]) -> str:
        file = Path(self.app.srcdir, self.docname).parent / argument
        if "dedent" in options:
            options["dedent"] = int(options["dedent"]) if options["dedent"] else None
        code, _ = LiteralIncludeReader(file, options, self.app.config).read()
        return f"```{options.get('language', '')}\n{code.rstrip()}\n```"

    def details(self, title: str, body: str) -> str:
        return f"<details><summary>{self.prose(title)}</summary>\n\n{body.strip()}\n\n</details>"

    def figure(self, src: str, options: dict[str, str], body: str) -> str:
        caption, _, legend = body.partition("\n\n")
        alt = re.sub(r"[\[\]\s]+", " ", options.get("alt", caption)).strip()
        number = self.resolve("numref", options["name"])[0] if "name" in options else ""
        caption = f"*{number}* {self.convert(caption)}" if number else self.convert(caption)
        return f"![{alt}]({src})\n\n{caption}\n\n{self.convert(legend)}".rstrip()


def reader_notebook(app, docname: str, text: str, install: str) -> str:
    """The notebook of a page as a reader gets it: Jupyter Markdown, an install cell first."""
    notebook = nbformat.reads(text, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    # As myst-nb reads them: the glued outputs, which a hidden glue leaves out of the page.
    glued = {key: out["data"] for cell in code for key, out in extract_glue_data_cell(cell)}
    markdown = Markdown(app, docname, glued)
    for cell in notebook.cells:
        tags = set(cell.metadata.get("tags", []))  # collapsed in JupyterLab, as on the page
        if hidden := [key for key, hiding in COLLAPSED.items() if tags & hiding]:
            cell.metadata["jupyter"] = dict.fromkeys(hidden, True)
        if cell.cell_type == "markdown":
            markdown.attachments = {}
            cell.source = markdown.convert(cell.source).strip()
            if markdown.attachments:
                cell.attachments = markdown.attachments
    install_cell = nbformat.v4.new_code_cell(install, metadata={"tags": ["install-gpukit"]})
    notebook.cells = [install_cell] + [c for c in notebook.cells if c.source.strip()]
    return nbformat.writes(notebook)


def keep_notebook(app, doctree) -> None:
    """Store the notebook myst-nb has just written for this page (and this language)."""
    docname = app.env.docname
    config = app.env.mystnb_config
    notebooks = app.env.gpukit_notebooks
    notebooks.pop(docname, None)
    if "kernelspec" not in app.env.metadata.get(docname, {}) or config.execution_mode != "cache":
        return
    written = nbformat.read(Path(config.output_folder, f"{docname}.ipynb"), as_version=4)
    try:
        _, notebook = get_cache(config.execution_cache_path).merge_match_into_notebook(written)
    except KeyError:
        logger.warning("no executed notebook in the cache for %s", docname, location=docname)
        return
    notebook.metadata.pop("source_map", None)  # myst-nb's own bookkeeping
    notebooks[docname] = nbformat.writes(notebook)


def merge_notebooks(app, env, docnames: set, other) -> None:
    env.gpukit_notebooks |= {k: v for k, v in other.gpukit_notebooks.items() if k in docnames}


def add_links(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """``notebook`` in the page template: the download and Colab links."""
    if pagename in app.env.gpukit_notebooks:
        colab = app.config.notebooks_colab_url.format(lang=app.config.site_language, page=pagename)
        download = "../" * pagename.count("/") + f"{FOLDER}/{pagename}.ipynb"
        context["notebook"] = {"download": download, "colab": colab}


def write_notebooks(app, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    try:  # the commit of the checkout the site is built from
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=app.confdir, capture_output=True)
        commit = done.stdout.decode().strip() if done.returncode == 0 else None
    except OSError:  # no git at all
        commit = None
    if commit is None:
        logger.info("notebooks: not built from a git checkout, they install gpukit from main")
    source = f"at commit {commit[:12]}, which built this notebook" if commit else "from main"
    url = app.config.notebooks_repository_url.removesuffix("/")
    install = INSTALL.format(source=source, url=url, ref=commit or "main")
    for docname, text in app.env.gpukit_notebooks.items():
        path = Path(app.outdir, FOLDER, f"{docname}.ipynb")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(reader_notebook(app, docname, text, install), encoding="utf-8")


def start_notebooks(app) -> None:
    """This language's notebooks, as JSON by page, kept in its build environment."""
    vars(app.env).setdefault("gpukit_notebooks", {})


def forget_notebook(app, env, docname: str) -> None:
    env.gpukit_notebooks.pop(docname, None)


def setup(app):
    for name in ("site_url", "notebooks_repository_url", "notebooks_colab_url"):
        app.add_config_value(name, "", "html", types=[str])
    app.connect("builder-inited", start_notebooks)
    app.connect("doctree-read", keep_notebook)
    app.connect("env-purge-doc", forget_notebook)
    app.connect("env-merge-info", merge_notebooks)
    app.connect("html-page-context", add_links)
    app.connect("build-finished", write_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
