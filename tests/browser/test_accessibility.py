"""axe-core finds no serious or critical accessibility violation on the home, GPUs and attention
pages."""

from __future__ import annotations

import pytest
from browsing import PHONE, set_theme

SERIOUS = {"serious", "critical"}
# attention: display math that scrolls on a phone (focusable, so not inside aria-hidden).
PAGES = ["en/index", "zh/index", "en/use-gpu", "zh/use-gpu", "en/attention", "zh/attention"]


def violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {v['help']}; "
        + ", ".join(str(node["target"]) for node in v["nodes"][:5])
        for v in found
        if v["impact"] in SERIOUS
    ]


def settle(page) -> None:
    """Wait for gpukit.js to mark the blocks that scroll."""
    page.wait_for_timeout(200)


@pytest.mark.parametrize("name", PAGES)
def test_no_serious_violation_on_a_desktop_in_light_mode(desktop, site, name: str) -> None:
    desktop.goto(site.url(name), wait_until="load")
    set_theme(desktop, "light")
    settle(desktop)
    assert not (found := violations(desktop)), "\n".join(found)


@pytest.mark.parametrize("name", PAGES)
def test_no_serious_violation_on_a_phone_in_dark_mode(phone, site, name: str) -> None:
    """The other layout (code blocks that scroll sideways) and the other theme (contrast)."""
    phone.goto(site.url(name), wait_until="load")
    assert phone.viewport_size == PHONE
    set_theme(phone, "dark")
    settle(phone)
    assert not (found := violations(phone)), "\n".join(found)
