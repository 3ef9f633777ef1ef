"""A page's front matter, the YAML block between two ``---`` lines at its top, read one way.

The GPU guard and its notice, the learning path, parity, the GPU check and the tests read it
here (needing PyYAML only: the GPU check runs without Sphinx). The keys of this project:
``gpus`` (how many GPUs the page's full run wants), ``summary`` (what the page teaches, in the
page's language) and, on a translation, ``translation_of`` (gpukit_site.parity).
"""

import re
from pathlib import Path

import yaml

FRONT_MATTER = re.compile(r"\A---\n(?P<yaml>.*?\n)?---\n", re.DOTALL)


def split_front_matter(text: str) -> tuple[dict, str]:
    """``(front matter, the text after it)``; ``({}, text)`` for a page without one.

    >>> split_front_matter("---\\ngpus: 2\\n---\\n# Title\\n")
    ({'gpus': 2}, '# Title\\n')
    """
    found = FRONT_MATTER.match(text)
    if found is None:
        return {}, text
    return yaml.safe_load(found["yaml"] or "") or {}, text[found.end() :]


def read_front_matter(path: Path) -> tuple[dict, str]:
    """A page's front matter, checked, and the text after it.

    ``gpus`` (the GPUs the page's full run wants) is an integer >= 0, 0 where the page does not
    say; ``summary`` (what the page teaches, for the learning path and the page's description
    in search results), where there is one, is a non-empty string.
    """
    from sphinx.errors import ConfigError  # here: the GPU check reads pages without Sphinx

    front_matter, body = split_front_matter(path.read_text(encoding="utf-8"))
    gpus = front_matter.setdefault("gpus", 0)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        raise ConfigError(f"{path}: front matter 'gpus' must be an integer >= 0, got {gpus!r}")
    summary = front_matter.get("summary")
    if summary is not None and not (isinstance(summary, str) and summary.strip()):
        raise ConfigError(
            f"{path}: front matter 'summary' must be a sentence saying what the page teaches, "
            f"got {summary!r}"
        )
    return front_matter, body


def gpus_wanted(path: Path) -> int:
    """The GPUs a page's full run wants: ``gpus`` in its front matter, 0 if none."""
    front_matter, _ = read_front_matter(path)
    return front_matter["gpus"]
