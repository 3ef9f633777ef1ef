"""Explain an output for the machine that produced it first, and for other machines collapsed.

A page's outputs come from one machine: a CPU-only laptop, a machine with one GPU, or one with
several. Where the text reads differently for each, the page gives one ``{case}`` per kind of
machine (``cpu``, ``gpu``, ``gpus``; one case may name several) inside ``{machine-cases}``, and
the build shows the case of the machine that executed the page as ordinary text, followed by
the other cases in a collapsed block::

    ::::{machine-cases}
    :::{case} gpus
    **Two or more GPUs.** ...
    :::
    :::{case} cpu gpu
    **One GPU or none.** ...
    :::
    ::::

``{details} Title`` is the collapsed block on its own, for material a first read can skip
(deep dives, solutions). Both render as an HTML ``<details>`` element, which needs no script.

A case holds no glued value (``{glue:text}`` and the other glue roles and directives of
myst-nb): every case is shown, collapsed, on the builds of other kinds of machine, where a
glued number would be that build's, not the case's. Glued numbers go in the text around the
cases, which is true on every machine; a case says in words what its kind of machine shows.
"""

import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

import gpukit

CASES = ("cpu", "gpu", "gpus")  # no GPU, one GPU, two or more
GLUE = re.compile(r"\{glue(:[\w-]+)?\}")  # a glue role or directive of myst-nb


def this_machine() -> str:
    return CASES[min(gpukit.num_gpus(), 2)]


class details(nodes.General, nodes.Element):
    """A block that is closed until the reader opens it; ``summary`` is its title."""


def visit_details(self, node: details) -> None:
    classes = " ".join(["details", *node["classes"]])
    self.body.append(
        f'<details class="{classes}"><summary>{self.encode(node["summary"])}</summary>\n'
    )


class Details(SphinxDirective):
    """``{details} Title``: collapsed content with a title."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        return [details("", *self.parse_content_to_nodes(), summary=self.arguments[0])]


class Case(Details):
    """``{case} cpu|gpu|gpus ...``: the text for some kinds of machine, in ``{machine-cases}``."""

    def run(self) -> list[nodes.Node]:
        kinds = [directives.choice(word, CASES) for word in self.arguments[0].split()]
        if GLUE.search("\n".join(self.content)):
            raise self.error(
                f"the {{case}} {self.arguments[0]} holds a glued value: a case is also shown on "
                "other kinds of machine, where the value would be that build's. Put glued "
                "values in the text around {machine-cases}, and say in the case in words what "
                "such a machine shows"
            )
        content = self.parse_content_to_nodes()
        return [nodes.container("", *content, classes=["machine-case"], machine_case=kinds)]


class MachineCases(SphinxDirective):
    """This machine's ``{case}`` as text, then the others in a collapsed block."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        parsed = self.parse_content_to_nodes()
        if any(isinstance(node, nodes.system_message) for node in parsed):
            return parsed  # a case reported its error: one message is enough
        cases = [n for n in parsed if n.get("machine_case")]
        found = sorted(kind for n in cases for kind in n["machine_case"])
        if len(cases) != len(parsed) or found != sorted(set(found)) or len(cases) < 2:
            raise self.error(
                "machine-cases holds only {case} blocks, each kind of machine once, at least two "
                f"of {', '.join(CASES)} (found {', '.join(found) or 'none'})"
            )
        here = this_machine()
        others = [n for n in cases if here not in n["machine_case"]]
        collapsed = details(
            "", *others, summary=_("On other machines"), classes=["machine-cases-others"]
        )
        return [*(n for n in cases if here in n["machine_case"]), collapsed]


def depart_details(self, node: details) -> None:
    self.body.append("</details>\n")


def setup(app):
    # As a config value, the kind of machine makes a build on another kind read every page again.
    app.add_config_value("machine_case", this_machine(), "env", types=[str])
    app.add_node(details, html=(visit_details, depart_details))
    app.add_directive("details", Details)
    app.add_directive("case", Case)
    app.add_directive("machine-cases", MachineCases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
