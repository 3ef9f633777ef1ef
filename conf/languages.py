"""The site's languages, and the one ``sphinx-build`` command line that builds a language.

conf.py, the noxfile, conf/parity.py, the extensions and the tests all read them from here.
Only the standard library is used: the browser tests and parity run without Sphinx or torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Language:
    code: str  # the folder under docs/ and under the built site, and the -t tag of the build
    locale: str  # Sphinx's ``language``
    hreflang: str  # HTML's ``lang``
    name: str  # what the language switcher shows


# English first: the Chinese build then finds every notebook in the execution cache.
LANGUAGES = {
    lang.code: lang
    for lang in (Language("en", "en", "en", "English"), Language("zh", "zh_CN", "zh-CN", "中文"))
}
# Pages are written in English and translated into Chinese (conf/parity.py).
SOURCE, TRANSLATION = LANGUAGES


def sphinx_build_args(docs: Path, build: Path, lang: str, builder: str = "html") -> list[str]:
    """The arguments of ``sphinx-build`` for one language of the site under ``docs``.

    Warnings are errors (``-W``, all of them reported: ``--keep-going``), and so is a
    reference that does not resolve (``-n``). The output goes to ``build/<builder>/<lang>``.
    """
    return [
        "-b", builder,
        "-t", lang,
        "-c", str(CONF_DIR),
        "-d", str(build / "doctrees" / builder / lang),
        "-W", "--keep-going", "-n",
        str(docs / lang),
        str(build / builder / lang),
    ]  # fmt: skip
