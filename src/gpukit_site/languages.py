"""The site's languages, and the one ``sphinx-build`` command line that builds a language.

conf.py, the noxfile, gpukit_site.parity, the extensions and the tests all read them from here.
Only the standard library is used: the browser tests and parity run without Sphinx or torch.
"""

from dataclasses import dataclass
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"  # the Sphinx configuration


@dataclass(frozen=True)
class Language:
    code: str  # the folder under docs/ and under the built site, and the -t tag of the build
    locale: str  # Sphinx's ``language``
    hreflang: str  # HTML's ``lang``
    name: str  # what the language switcher shows


# Pages are written in English and translated into Chinese (gpukit_site.parity).
SOURCE = "en"
TRANSLATION = "zh"
# In build order, English first: the Chinese build then finds every notebook in the execution
# cache.
LANGUAGES = {
    SOURCE: Language(code=SOURCE, locale="en", hreflang="en", name="English"),
    TRANSLATION: Language(code=TRANSLATION, locale="zh_CN", hreflang="zh-CN", name="中文"),
}
# The MyST syntax of the pages, for Sphinx (conf.py) and for gpukit_site.parity.
MYST_EXTENSIONS = ["colon_fence", "dollarmath", "amsmath"]
# A Chinese character (CJK Unified Ideographs and Extension A), as a regular expression: what
# the Chinese lint (gpukit_site.zh_style) spaces and the learning path's reading time counts.
CHINESE_CHARACTER = r"[\u3400-\u4dbf\u4e00-\u9fff]"
# How many Chinese characters say what one English word says: the prose of the zh pages has
# 1.75 characters per word of the en pages' (measured over every page, Latin words left out).
# The learning path's reading time and the wall-of-prose check count Chinese text with it.
CHINESE_CHARACTERS_PER_WORD = 1.8


def sphinx_build_args(docs: Path, build: Path, lang: str, builder: str = "html") -> list[str]:
    """The arguments of ``sphinx-build`` for one language of the site under ``docs``.

    Warnings are errors (``-W``, all of them reported: ``--keep-going``), and so is a
    reference that does not resolve (``-n``). The output goes to ``build/<builder>/<lang>``.
    """
    doctrees = build / "doctrees" / builder / lang
    out = build / builder / lang
    options = ["-b", builder, "-t", lang, "-c", str(CONF_DIR), "-d", str(doctrees)]
    return [*options, "-W", "--keep-going", "-n", str(docs / lang), str(out)]
