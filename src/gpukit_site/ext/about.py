"""The About page's tables: ``{build-info}``, this build's hardware, profile and software (read
again by every build: the facts are not in the page's source), and myst-nb's execution table
(``{nb-exec-table}``), which myst-nb writes in English with an emoji status (✅/❌, an empty box
where no emoji font is installed). We build that table just before myst-nb would, its words
translated through the gettext catalog (conf/locales), the status as a word.
"""

import platform
from importlib.metadata import version

import torch
from docutils import nodes
from myst_nb.ext.execution_tables import ExecutionStatsNode, make_stat_table
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.locale import _
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

import gpukit
from gpukit_site.ext.list_table import list_table
from gpukit_site.ext.provenance import PROFILE_NAMES, profile_in_language

# The words of myst-nb's execution table (headers, methods, status) and what we write instead.
HEADERS = ("Document", "Modified", "Method", "Run Time (s)", "Status")
STATUS = {"✅": "done", "❌": "failed"}
EXEC_TABLE = {w: w for w in (*HEADERS, "cache", "auto", "force", "inline")} | STATUS


class BuildInfo(SphinxDirective):
    """``{build-info}``: a table of the hardware and software versions of this build."""

    def run(self) -> list[nodes.Node]:
        facts = self.env.gpukit_facts
        profile = gpukit.current_profile()
        workloads = [w.describe(translate=_) for w in (profile.lenet, profile.resnet)]
        name = profile_in_language(profile.name)  # English: the name alone
        name = profile.name if name == PROFILE_NAMES[profile.name] else name
        runs = _("{profile}: {workloads}").format(profile=name, workloads=_("; ").join(workloads))
        rows = [
            (_("Hardware"), facts["machine"].describe(translate=_)),
            (_("Profile"), runs),
            ("Python", platform.python_version()),
            ("PyTorch", torch.__version__),
            ("CUDA", torch.version.cuda or "—"),
            ("cuDNN", str(torch.backends.cudnn.version() or "—")),
        ]
        rows += [(name, version(name)) for name in ("sphinx", "myst-nb", "jupyter-cache", "furo")]
        rows.append((_("Built"), facts["date"]))
        self.env.note_reread()  # the facts are this build's
        return self.parse_text_to_nodes(list_table([(n, f"`{v}`") for n, v in rows], header=False))


class ExecTableInLanguage(SphinxPostTransform):
    default_priority = 7  # before myst-nb's ExecutionStatsPostTransform (8)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(ExecutionStatsNode)):
            table = make_stat_table(self.env.docname, NbMetadataCollector.get_doc_data(self.env))
            for text in list(table.findall(nodes.Text)):  # its words in the build's language
                if str(text) in EXEC_TABLE:
                    text.parent.replace(text, nodes.Text(_(EXEC_TABLE[str(text)])))
            node.replace_self(table)


def setup(app):
    app.add_directive("build-info", BuildInfo)
    app.add_post_transform(ExecTableInLanguage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
