"""A page's front matter, the YAML block between two ``---`` lines at its top, read one way.

The GPU guard, the provenance notice, the learning path and the tests read it here; parity
takes it from the notebook that myst-nb parses from the same block.
"""

import re
from pathlib import Path

import yaml
from sphinx.errors import ConfigError

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


def gpus_wanted(path: Path) -> int:
    """The GPUs a page's full run wants: ``gpus`` in its front matter, 0 if none."""
    front_matter, _ = split_front_matter(path.read_text(encoding="utf-8"))
    gpus = front_matter.get("gpus", 0)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        raise ConfigError(f"{path}: front matter 'gpus' must be an integer >= 0, got {gpus!r}")
    return gpus
