"""What the browser tests share: where the built site is, its pages, and small page helpers.

The site is an existing build (``nox -s docs``): docs/_build/html, or the folder named by
$GPUKIT_SITE. Screenshots go to docs/_build/screenshots (next to the site), or $GPUKIT_SCREENSHOTS.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from gpukit_site.languages import LANGUAGES as SITE_LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("GPUKIT_SITE", ROOT / "docs" / "_build" / "html")).resolve()
SCREENSHOTS = Path(os.environ.get("GPUKIT_SCREENSHOTS", SITE.parent / "screenshots"))
LANGUAGES = tuple(SITE_LANGUAGES)
OTHER = {"en": "zh", "zh": "en"}
HTML_LANG = {code: lang.hreflang for code, lang in SITE_LANGUAGES.items()}
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 900}
TIMEOUT_MS = 10_000  # for any wait: the site is local, so anything slower is a failure
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Folders of a language's output that hold no pages of their own.
NOT_PAGES = {"_static", "_sources", "_images", "_notebooks", "_downloads"}


def site_pages(lang: str) -> list[str]:
    """Every HTML page of one language, as page names ("index", "use-gpu", ...)."""
    folder = SITE / lang
    pages = []
    for path in sorted(folder.rglob("*.html")):
        relative = path.relative_to(folder)
        if relative.parts[0] not in NOT_PAGES:
            pages.append(relative.with_suffix("").as_posix())
    return pages


PAGES = {lang: site_pages(lang) for lang in LANGUAGES}
ALL_PAGES = [f"{lang}/{page}" for lang in LANGUAGES for page in PAGES[lang]]


def chromium_executable() -> str | None:
    """Debian's Chromium (or $GPUKIT_CHROMIUM); None lets Playwright use its own download."""
    named = os.environ.get("GPUKIT_CHROMIUM")
    if named:
        return named
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).is_file():
            return candidate
    return shutil.which("chromium")


@dataclass(frozen=True)
class Site:
    """The served site: ``site.url("en/use-gpu")`` is the page's address."""

    base: str
    folder: Path

    def url(self, page: str = "") -> str:
        if page and not page.endswith((".html", "/")) and "?" not in page:
            page += ".html"
        return f"{self.base}/{page}"

    def page_of(self, url: str) -> str:
        """The page name ("en/use-gpu") of a URL of this site."""
        path = url.removeprefix(self.base + "/").split("#")[0].split("?")[0]
        return path.removesuffix(".html")


def set_theme(page, theme: str) -> None:
    """Click furo's theme toggle until the page shows ``theme`` (light or dark)."""
    for _ in range(3):
        if page.evaluate("document.body.dataset.theme") == theme:
            return
        page.locator("button.theme-toggle:visible").first.click()
    assert page.evaluate("document.body.dataset.theme") == theme


def relative_luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour with components 0..255."""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG 2 contrast ratio, 1 (none) to 21 (black on white)."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def read(tab, site, page: str) -> tuple[str, str]:
    """A page's provenance line and the text of all its cell outputs (collapsed ones too)."""
    tab.goto(site.url(page), wait_until="domcontentloaded")
    provenance = tab.locator("p.provenance").first.text_content()
    outputs = "\n".join(tab.locator("div.cell_output").all_text_contents())
    return provenance, outputs


def ratio_fits(quoted: str, top: float, bottom: float, half_unit: float) -> bool:
    """``quoted`` (rounded to its digits) can be ``top / bottom``, both printed to ±half_unit."""
    digits = len(quoted.split(".")[1]) if "." in quoted else 0
    slack = 0.5 * 10**-digits
    low, high = (
        (top - half_unit) / (bottom + half_unit),
        (top + half_unit) / max(bottom - half_unit, 1e-12),
    )
    return low - slack <= float(quoted) <= high + slack
