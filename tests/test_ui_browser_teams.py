"""The web UI's Teams pages in Chromium (Playwright) against a real ``ccmem serve`` and a real
``ccmem ui``: create a team, invite a reader (the code shown once), the reader joins with it and
sees the shared memory but no share form, the owner removes them and they lose access at once;
the owner deletes the team."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.server import MemoryServer
from tests.support.web_ui import UiServer
from tests.test_ui_browser import UNLABELLED, User, browser, flash, page, shoot, sign_in

__all__ = ["browser", "page"]  # the shared fixtures, used by name

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryServer, UiServer]]:
    api = MemoryServer(tmp_path_factory.mktemp("ui-teams-api"))
    ui = UiServer(tmp_path_factory.mktemp("ui-teams"), api.base_url)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            starting_ui = pool.submit(ui.start)
            api.start()
            starting_ui.result()
        yield api, ui
    finally:
        ui.stop()
        api.stop()


@pytest.fixture(scope="module")
def api(stack: tuple[MemoryServer, UiServer]) -> MemoryServer:
    return stack[0]


@pytest.fixture(scope="module")
def ui(stack: tuple[MemoryServer, UiServer]) -> UiServer:
    return stack[1]


def test_create_invite_join_share_and_remove(
    page: Any, browser: Any, ui: UiServer, api: MemoryServer
) -> None:
    owner, reader = User(api, "olga"), User(api, "rita")
    memory = owner.add("The release train leaves every Tuesday; ping rel.captain@trainyard.net to board")
    team = f"release-{owner.name[-6:]}".lower()

    sign_in(page, owner)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Teams", exact=True).click()
    page.get_by_label("Name").fill(team)
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(re.compile(rf"/teams/{team}$"))
    assert "You are owner" in page.get_by_test_id("team-role").inner_text()
    page.get_by_label("Memory id").fill(memory)
    page.get_by_role("button", name="Share").click()
    assert "Shared" in flash(page)
    shared = page.locator(".team-memory .content").all_inner_texts()
    assert len(shared) == 1 and "release train" in shared[0] and "rel.captain@trainyard.net" not in shared[0]
    page.get_by_label("User to invite").fill(reader.name)
    page.get_by_label("Role").select_option("reader")
    page.get_by_role("button", name="Invite").click()
    code = re.search(r"cct_[A-Za-z0-9_-]+", flash(page))
    assert code is not None, flash(page)
    shoot(page, "team")
    for path in ("/teams", f"/teams/{team}"):  # labelled controls, nothing wider than a phone
        page.goto(path)
        assert page.evaluate(UNLABELLED) == [], f"unlabelled controls on {path}"
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        page.set_viewport_size({"width": 1280, "height": 900})

    other = browser.new_context(base_url=ui.base_url, viewport={"width": 1280, "height": 900})
    tab = other.new_page()
    try:
        sign_in(tab, reader)
        tab.goto("/teams")
        tab.get_by_label("Code").fill(code.group(0))
        tab.get_by_role("button", name="Join").click()
        tab.wait_for_url(re.compile(rf"/teams/{team}$"))
        assert "Joined" in flash(tab) and "You are reader" in tab.get_by_test_id("team-role").inner_text()
        assert tab.locator(".team-memory .content").all_inner_texts() == shared
        assert tab.get_by_label("Memory id").count() == 0  # a reader has no share form

        page.reload()
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name=f"Remove {reader.name}").click()
        assert "lost access" in flash(page)
        assert reader.name not in page.get_by_test_id("members").inner_text()

        tab.reload()  # the same session, its next request: the team is gone for them
        tab.wait_for_url(re.compile(r"/teams$"))
        assert "not found" in flash(tab) and tab.locator(".team-memory").count() == 0
        assert tab.get_by_role("button", name="Delete team").count() == 0  # not theirs to delete
    finally:
        other.close()

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete team").click()
    page.wait_for_url(re.compile(r"/teams$"))
    assert f"Deleted team {team} and its 1 memory" in flash(page)
    assert owner.rest("GET", "/api/v1/teams")["teams"] == []
