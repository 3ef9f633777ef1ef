"""Screenshots of the GPUs page for review: light, dark and phone, in both languages.

They land in docs/_build/screenshots (next to the site; $GPUKIT_SCREENSHOTS to change it).
"""

from __future__ import annotations

import pytest
from browsing import LANGUAGES, SCREENSHOTS, set_theme


def settle(page) -> None:
    page.evaluate("document.fonts.ready.then(() => true)")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_screenshots_of_the_gpus_page(desktop, phone, site, lang: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = []
    desktop.goto(site.url(f"{lang}/use-gpu"), wait_until="load")
    for theme in ("light", "dark"):
        set_theme(desktop, theme)
        settle(desktop)
        shots.append(SCREENSHOTS / f"use-gpu-{lang}-{theme}.png")
        desktop.screenshot(path=shots[-1])
    # The page's figure in dark mode, where a figure without a background would vanish.
    figure = desktop.locator("article figure").first
    figure.scroll_into_view_if_needed()
    shots.append(SCREENSHOTS / f"use-gpu-{lang}-dark-figure.png")
    figure.screenshot(path=shots[-1])

    phone.goto(site.url(f"{lang}/use-gpu"), wait_until="load")
    settle(phone)
    shots.append(SCREENSHOTS / f"use-gpu-{lang}-phone.png")
    phone.screenshot(path=shots[-1])
    for shot in shots:
        assert shot.stat().st_size > 5_000, f"{shot} looks empty"
