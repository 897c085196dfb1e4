"""The web UI in a real browser: Debian's Chromium, headless, driven by Playwright for Python,
against the real UI process (``ccmem ui``) and the real API (``ccmem serve``) on loopback.

A memory is added over MCP with the official SDK client and seen in the UI; the UI searches,
filters, edits, approves a pending capture, bulk-archives, deletes and exports. Every page is
saved as a screenshot at 1280 and 390 px into ``test-artifacts/ui/``. Isolation (another
user's memory is 404), CSRF, cookie flags, labelled controls, no horizontal scroll at 390 px,
and a friendly page (never a traceback) when the API is down.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from tests.support import users
from tests.support.processes import free_port, require_tool
from tests.support.server import REPO_ROOT, MemoryServer
from tests.support.web_ui import UiServer

pytestmark = pytest.mark.timeout(600)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "ui"
WIDTHS = {"wide": 1280, "narrow": 390}


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("ui-api")) as server:
        yield server


@pytest.fixture(scope="module")
def ui(api: MemoryServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    with UiServer(tmp_path_factory.mktemp("ui"), api.base_url) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_tool(CHROMIUM, "the browser for UI tests: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


class User(users.User):
    def __init__(self, api: MemoryServer, name: str) -> None:
        super().__init__(api, name, suffix=6)
        self.api = api

    def rest(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code < 400, response.text
        return response.json()

    def add(self, text: str, app: str = "openmemory") -> str:
        return self.rest("POST", "/api/v1/memories", json={"text": text, "app": app})["id"]

    def capture(self, user_says: str, project: str = "/work/demo") -> str:
        body = self.rest(
            "POST",
            "/api/v1/capture",
            json={
                "app": "claude-code",
                "project": project,
                "model": "claude-test",
                "messages": [
                    {"role": "user", "content": user_says},
                    {"role": "assistant", "content": "Noted."},
                ],
            },
        )
        assert body["status"] == "pending", body
        return body["id"]


@pytest.fixture
def alice(api: MemoryServer) -> User:
    return User(api, "alice")


@pytest.fixture
def page(browser: Any, ui: UiServer) -> Iterator[Any]:
    context = browser.new_context(base_url=ui.base_url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def sign_in(page: Any, user: User) -> None:
    page.goto("/signin")
    page.get_by_label("Token").fill(user.token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))
    assert page.locator(".who").inner_text() == user.name


def nav(page: Any, name: str) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def flash(page: Any) -> str:
    return page.locator(".flash").first.inner_text()


def shoot(page: Any, name: str) -> None:
    """Screenshots of the current page at both widths, full length."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def add_over_mcp(api: MemoryServer, user: User, text: str) -> str:
    url = f"{api.base_url}/mcp/claude-code/sse/{user.name}"

    async def scenario() -> str:
        async with Client(sse_client(url, headers=user.headers)) as session:
            result = await session.call_tool("add_memories", {"text": text})
            assert not result.is_error, result
            body = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return body["results"][0]["id"]

    # Playwright's sync API keeps an event loop running on this thread: the SDK gets its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, scenario).result(timeout=120)


# -- sign-in ------------------------------------------------------------------------------------
def test_sign_in_refuses_bad_and_admin_tokens_then_signs_in_and_out(
    page: Any, api: MemoryServer, alice: User
) -> None:
    page.goto("/memories")
    assert "/signin" in page.url  # not signed in: sent to the form
    shoot(page, "signin")

    page.get_by_label("Token").fill("ccm_not-a-real-token")
    page.get_by_role("button", name="Sign in").click()
    assert "not accepted" in page.get_by_role("alert").inner_text()

    page.get_by_label("Token").fill(api.admin_token)
    page.get_by_role("button", name="Sign in").click()
    assert "admin token" in page.get_by_role("alert").inner_text()

    sign_in(page, alice)
    [cookie] = [c for c in page.context.cookies() if c["name"] == "ccmem_session"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert alice.token not in cookie["value"]  # sealed, not readable

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/signin"))
    assert "Signed out" in flash(page)
    page.goto("/")
    assert "/signin" in page.url
    # A copy of the signed-out cookie, put back into the browser, opens nothing.
    page.context.add_cookies([cookie])
    page.goto("/memories")
    assert "/signin" in page.url


def test_state_changes_need_the_csrf_token(page: Any, ui: UiServer, alice: User) -> None:
    memory_id = alice.add("A memory that a forged form must not delete")
    sign_in(page, alice)
    forged = page.request.post(f"/memories/{memory_id}/delete", form={"csrf": "guess"})
    assert forged.status == 403
    assert "Request refused" in forged.text()
    missing = page.request.post(f"/memories/{memory_id}/delete", form={})
    assert missing.status == 403
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value")
    other_site = page.request.post(
        f"/memories/{memory_id}/delete", form={"csrf": csrf}, headers={"Origin": "http://evil.example"}
    )
    assert other_site.status == 403
    assert alice.rest("GET", f"/api/v1/memories/{memory_id}")["state"] == "active"  # nothing changed


# -- memories -----------------------------------------------------------------------------------
def test_memory_added_over_mcp_is_listed_searched_filtered_edited_and_deleted(
    page: Any, api: MemoryServer, alice: User
) -> None:
    memory_id = add_over_mcp(api, alice, "I always deploy the billing service with blue-green releases")
    alice.add("My favourite editor theme is solarized dark", app="notes")
    sign_in(page, alice)
    shoot(page, "dashboard")
    assert page.get_by_test_id("total").inner_text() == "2"
    assert page.locator("svg.chart rect.bar").count() == 30  # one bar per day
    assert "2 in all" in page.locator(".chart-figure figcaption").inner_text()

    nav(page, "Memories")
    assert page.get_by_role("link", name=re.compile("blue-green releases")).is_visible()
    shoot(page, "memories")

    # Semantic search: a paraphrase, not the stored words.
    page.get_by_label("Search", exact=True).fill("how do we ship payments code to production")
    page.get_by_label("Search mode").select_option("semantic")
    page.get_by_role("button", name="Search", exact=True).click()
    first = page.locator(".memory-item .content").first
    assert "blue-green" in first.inner_text()
    shoot(page, "memories-search")

    # Filter by app: the MCP client's app holds one, "notes" the other.
    page.goto("/memories")
    page.locator("summary", has_text="Filters and sort").click()
    page.get_by_label("App", exact=True).select_option("notes")
    page.get_by_role("button", name="Apply").click()
    assert page.locator(".memory-item").count() == 1
    assert "solarized" in page.locator(".memory-item .content").inner_text()
    assert "filter" not in page.url or "app=notes" in page.url

    # Detail: provenance, then edit (re-embedded: a search for the new words finds it).
    page.goto(f"/memories/{memory_id}")
    assert page.locator(".facts").get_by_text("claude-code").first.is_visible()
    shoot(page, "memory-detail")
    page.get_by_label(re.compile("^Text")).fill("I always deploy the billing service with canary releases")
    page.get_by_role("button", name="Save changes").click()
    assert "re-embedded" in flash(page)
    assert alice.rest("GET", f"/api/v1/memories/{memory_id}")["text"].endswith("canary releases")
    hits = alice.rest("POST", "/api/v1/memories/search", json={"query": "canary releases", "limit": 1})[
        "results"
    ]
    assert hits[0]["id"] == memory_id

    # Pause from the detail page: the status history records it.
    page.get_by_role("button", name="Pause").click()
    assert "paused" in page.locator(".timeline").inner_text()

    # Delete, with a confirmation page.
    page.get_by_role("link", name="Delete…").click()
    shoot(page, "memory-delete-confirm")
    page.get_by_role("button", name="Yes, delete it").click()
    assert "deleted" in flash(page)
    gone = httpx.get(f"{api.base_url}/api/v1/memories/{memory_id}", headers=alice.headers)
    assert gone.status_code == 404


def test_bulk_archive_asks_first_then_archives_only_the_selected(page: Any, alice: User) -> None:
    ids = [alice.add(f"Bulk test memory number {n} about teapots") for n in range(3)]
    sign_in(page, alice)
    page.goto("/memories?mode=text&q=teapots")
    assert page.locator(".memory-item").count() == 3
    for memory_id in ids[:2]:
        page.locator(f'input[value="{memory_id}"]').check()
    page.get_by_role("button", name="Archive selected").click()
    assert page.get_by_role("heading", name="Archive 2 memories?").is_visible()
    shoot(page, "memories-bulk-confirm")
    assert [alice.rest("GET", f"/api/v1/memories/{i}")["state"] for i in ids] == ["active"] * 3
    page.get_by_role("button", name="Yes, archive 2").click()
    assert "archived 2" in flash(page)
    assert [alice.rest("GET", f"/api/v1/memories/{i}")["state"] for i in ids] == [
        "archived",
        "archived",
        "active",
    ]
    assert page.locator(".memory-item").count() == 1  # archived ones leave the default list
    page.goto("/memories?mode=text&q=teapots&state=archived")
    assert page.locator(".memory-item").count() == 2


def test_select_all_and_bulk_delete(page: Any, alice: User) -> None:
    ids = [alice.add(f"Disposable walrus fact {n}") for n in range(2)]
    sign_in(page, alice)
    page.goto("/memories?mode=text&q=walrus")
    page.get_by_label("Select all on this page").check()
    page.get_by_role("button", name="Delete selected").click()
    page.get_by_role("button", name="Yes, delete 2").click()
    assert "deleted 2" in flash(page)
    for memory_id in ids:
        response = httpx.get(f"{alice.api.base_url}/api/v1/memories/{memory_id}", headers=alice.headers)
        assert response.status_code == 404


# -- consent -------------------------------------------------------------------------------------
def test_consent_queue_approve_edit_reject_and_rule(page: Any, alice: User) -> None:
    approve_id = alice.capture("Remember that our staging database is called heron")
    edit_id = alice.capture("Remember that the on-call rota changes every Tuesday")
    reject_id = alice.capture("Remember my lunch order: soup")
    sign_in(page, alice)
    assert page.get_by_test_id("pending").inner_text() == "3"
    nav(page, "Consent")
    assert page.locator(".pending-item").count() == 3
    shoot(page, "consent")

    page.locator(f'input[value="{approve_id}"]').check()
    page.get_by_role("button", name="Approve selected").click()
    assert "Approved 1" in flash(page)

    item = page.locator(f"#item-{edit_id}")
    item.locator("summary", has_text="Edit, then approve").click()
    item.get_by_label("Text to keep").fill("The on-call rota changes every Tuesday")
    item.get_by_role("button", name="Approve edited text").click()
    assert "with your edits" in flash(page)

    page.locator(f'input[value="{reject_id}"]').check()
    page.get_by_role("button", name="Reject selected").click()
    assert "Rejected 1" in flash(page)
    assert page.get_by_text("Nothing is waiting for your consent").is_visible()

    kept = alice.rest("POST", "/api/v1/memories/browse", json={"search_query": "heron"})
    assert kept["total"] == 1 and kept["items"][0]["state"] == "active"
    edited = alice.rest("POST", "/api/v1/memories/browse", json={"search_query": "rota"})["items"]
    assert [m["content"] for m in edited] == ["The on-call rota changes every Tuesday"]
    assert alice.rest("POST", "/api/v1/memories/browse", json={"search_query": "lunch"})["total"] == 0

    # A standing rule from an item: the next capture from that app and project is approved.
    # A capture is filed under its working directory's name: "arm-builds".
    rule_item = alice.capture("Remember that builds run on the ARM runners", project="/work/arm-builds")
    page.goto("/consent")
    page.get_by_role("button", name="Always allow claude-code in arm-builds").click()
    assert "approved automatically" in flash(page)
    assert "arm-builds" in page.locator("table").inner_text()
    shoot(page, "consent-rules")
    follow_up = alice.rest(
        "POST",
        "/api/v1/capture",
        json={
            "app": "claude-code",
            "project": "/work/arm-builds",
            # Not junk (the capture filter would keep "x y z" out before any rule applies).
            "messages": [{"role": "user", "content": "The ARM runners build the release images"}],
        },
    )
    assert follow_up["status"] == "stored", follow_up
    assert rule_item  # the item itself still waits for a decision
    assert page.locator(f"#item-{rule_item}").is_visible()


# -- apps, settings, connect --------------------------------------------------------------------
def test_pause_and_resume_an_app(page: Any, alice: User) -> None:
    alice.add("Something the notes app wrote", app="notes")
    sign_in(page, alice)
    nav(page, "Apps")
    shoot(page, "apps")
    page.get_by_role("button", name="Pause notes").click()
    assert "paused" in flash(page)
    refused = httpx.post(
        f"{alice.api.base_url}/api/v1/memories",
        json={"text": "written while paused", "app": "notes"},
        headers=alice.headers,
    )
    assert refused.status_code == 403
    page.get_by_role("button", name="Resume notes").click()
    assert "resumed" in flash(page)
    alice.add("written after resuming", app="notes")


def test_settings_tokens_retention_and_export(page: Any, alice: User) -> None:
    alice.add("A memory that must be in the export: kingfisher")
    sign_in(page, alice)
    nav(page, "Settings")
    assert page.get_by_test_id("next-purge").inner_text().strip() != ""
    config_text = page.locator("pre.config").inner_text()
    assert '"admin_token": "********"' in config_text and alice.api.admin_token not in config_text
    shoot(page, "settings")

    page.get_by_label("New token name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    new_token = page.get_by_test_id("new-token").input_value()
    assert new_token.startswith("ccm_")
    shoot(page, "token-created")
    me = httpx.get(f"{alice.api.base_url}/api/v1/me", headers={"Authorization": f"Bearer {new_token}"})
    assert me.json()["user_id"] == alice.name

    page.goto("/settings")
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name=f"Revoke token {new_token[:12]}").click()
    assert "revoked" in flash(page)
    assert questions and "Revoke this token" in questions[0]
    me = httpx.get(f"{alice.api.base_url}/api/v1/me", headers={"Authorization": f"Bearer {new_token}"})
    assert me.status_code == 401

    with page.expect_download() as download_info:
        page.get_by_role("button", name="Export my memories").click()
    archive = Path(download_info.value.path()).read_bytes()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        document = json.loads(zf.read("memories.json"))
    assert any("kingfisher" in m["content"] for m in document["memories"])


def test_an_export_imports_into_another_account(
    page: Any, api: MemoryServer, alice: User, tmp_path: Path
) -> None:
    alice.add("Carried over by export and import: the sourdough starter is named Bubbles")
    sign_in(page, alice)
    nav(page, "Settings")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Export my memories").click()
    archive = tmp_path / "export.zip"
    download_info.value.save_as(str(archive))

    newcomer = User(api, "nora")
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, newcomer)
    nav(page, "Settings")
    page.get_by_label("Export file to import (.zip)").set_input_files(str(archive))
    page.get_by_role("button", name="Import", exact=True).click()
    assert "Imported 1 memories" in flash(page)
    found = newcomer.rest("POST", "/api/v1/memories/browse", json={"search_query": "Bubbles"})
    assert found["total"] == 1

    # An empty upload is refused with a message, nothing imported.
    page.goto("/settings")
    empty = tmp_path / "empty.zip"
    empty.write_bytes(b"")
    page.get_by_label("Export file to import (.zip)").set_input_files(str(empty))
    page.get_by_role("button", name="Import", exact=True).click()
    assert "Choose an export file" in flash(page)
    # A file that is not an export: the API's reason, on a page.
    bogus = tmp_path / "bogus.zip"
    bogus.write_bytes(b"not a zip at all")
    page.get_by_label("Export file to import (.zip)").set_input_files(str(bogus))
    page.get_by_role("button", name="Import", exact=True).click()
    assert "not a zip archive" in page.locator(".error-message").inner_text()


def test_pages_and_the_no_project_filter(page: Any, alice: User) -> None:
    items = [{"text": f"Paged memory number {n:02d} about lighthouses"} for n in range(25)]
    alice.rest("POST", "/api/v1/memories/batch", json={"items": items})
    alice.rest(
        "POST", "/api/v1/memories", json={"text": "A lighthouse memory in a project", "project": "/work/sea"}
    )
    sign_in(page, alice)
    page.goto("/memories?mode=text&q=lighthouse&sort=content&dir=asc")
    assert page.locator(".memory-item").count() == 20
    assert "Page 1 of 2" in page.locator(".pager").inner_text()
    page.get_by_role("link", name="Next →").click()
    assert page.locator(".memory-item").count() == 6
    assert "Paged memory number 24" in page.locator(".memory-item .content").last.inner_text()
    page.get_by_role("link", name="← Previous").click()
    assert "Page 1 of 2" in page.locator(".pager").inner_text()

    page.goto("/memories?mode=text&q=lighthouse")
    page.locator("summary", has_text="Filters and sort").click()
    page.get_by_label("Project", exact=True).select_option("/work/sea")
    page.get_by_role("button", name="Apply").click()
    assert page.locator(".memory-item").count() == 1
    page.locator("summary", has_text="Filters and sort").click()
    page.get_by_label("Project", exact=True).select_option(label="(no project)")
    page.get_by_role("button", name="Apply").click()
    assert "25 memories match" in page.locator("#result-count").inner_text()


def test_profile_page_edits_and_deletes_facts_for_good(page: Any, alice: User) -> None:
    alice.add("I prefer pytest to unittest.")
    alice.add("My shell is fish.")
    sign_in(page, alice)
    nav(page, "Profile")
    facts = page.locator("#user-facts tbody tr")
    assert facts.count() == 2
    shoot(page, "profile")

    shell = facts.filter(has=page.locator('input[value="My shell is fish."]'))
    shell.get_by_label("Fact").fill("My shell is zsh.")
    shell.get_by_role("button", name="Save").click()
    assert "Fact updated" in flash(page)
    facts.filter(has=page.locator('input[value="I prefer pytest to unittest."]')).get_by_role(
        "button", name="Delete"
    ).click()
    assert "Fact deleted" in flash(page)

    # Said again: the page (which refreshes the profile) shows neither back.
    alice.add("I prefer PYTEST to unittest!")
    alice.add("my shell is fish")
    page.reload()
    values = [facts.nth(i).get_by_label("Fact").input_value() for i in range(facts.count())]
    assert values == ["My shell is zsh."]
    assert [f["text"] for f in alice.rest("GET", "/api/v1/profile")["facts"]] == ["My shell is zsh."]


def test_connect_leads_with_ccmem_connect_and_shows_the_token_only_when_asked(page: Any, alice: User) -> None:
    sign_in(page, alice)
    nav(page, "Connect")
    assert page.get_by_label("On this server's machine").input_value() == "ccmem connect claude-code"
    # This server answers on loopback only: no command for another machine, which cannot reach it.
    assert page.get_by_label(re.compile("On another machine")).count() == 0
    assert "docs/remote.md" in page.locator("main").inner_text()
    # Neither the page's text, nor its HTML, nor any field holds the token until asked.
    assert alice.token not in page.content()
    fields = page.evaluate("Array.from(document.querySelectorAll('textarea, input'), f => f.value)")
    assert not [value for value in fields if alice.token in value]
    assert page.get_by_label(re.compile("hooks \\+ MCP tools")).count() == 0
    # The Copy button puts the command on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy").first.click()
    page.get_by_role("button", name="Copied").wait_for()  # set once the clipboard write resolved
    assert page.evaluate("navigator.clipboard.readText()") == "ccmem connect claude-code"
    shoot(page, "connect")

    page.get_by_role("button", name="Show the commands with my token").click()
    command = page.get_by_label(re.compile("hooks \\+ MCP tools")).input_value()
    export, install, mcp_add = command.splitlines()
    assert export == f"export CCMEM_TOKEN={alice.token}" and install.startswith("ccmem hooks install --url ")
    assert mcp_add.startswith("claude mcp add --scope user --transport http memory ")
    assert f"/mcp/claude-code/http/{alice.name}?tools=claude-code" in mcp_add and alice.token not in mcp_add
    sse = page.get_by_label(re.compile(r"\(SSE\)")).input_value()
    assert f"/mcp/claude-code/sse/{alice.name}" in sse and "$CCMEM_TOKEN" in sse
    assert alice.token in page.get_by_label(re.compile("claude_desktop_config.json")).input_value()
    cursor = json.loads(page.get_by_label(re.compile("cursor/mcp.json")).input_value())
    assert cursor["mcpServers"]["memory"]["headers"]["Authorization"] == f"Bearer {alice.token}"
    shoot(page, "connect-revealed")
    page.locator('button[data-copy="cc-setup"]').click()
    page.locator('button[data-copy="cc-setup"]', has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == command


# -- isolation and failures ---------------------------------------------------------------------
def test_another_users_memory_is_not_found(page: Any, api: MemoryServer, alice: User) -> None:
    bob = User(api, "bob")
    secret_id = bob.add("Bob's private note: the safe code is 4711")
    sign_in(page, alice)
    response = page.goto(f"/memories/{secret_id}")
    # Not found, as an id that does not exist: the answer does not say that it exists.
    assert response is not None and response.status == 404
    assert page.get_by_role("heading", name="Not found").is_visible()
    assert "4711" not in page.content()
    shoot(page, "error-404")
    post = page.request.post(
        f"/memories/{secret_id}/delete",
        form={"csrf": page.locator('input[name="csrf"]').first.get_attribute("value")},
    )
    assert post.status == 404
    assert bob.rest("GET", f"/api/v1/memories/{secret_id}")["state"] == "active"


def test_a_broken_api_shows_an_error_page_not_a_trace(
    page: Any, ui: UiServer, alice: User, tmp_path: Path
) -> None:
    sign_in(page, alice)
    dead = f"http://127.0.0.1:{free_port()}"
    # Same session secret, an API nobody answers at: the browser's session cookie is valid here.
    with UiServer(tmp_path / "ui-dead", dead) as broken:
        broken.secret = ui.secret
        broken.stop()
        broken.start()
        response = page.goto(f"{broken.base_url}/")
        assert response is not None and response.status == 503
        text = page.locator("main").inner_text()
        assert "not available" in text and "cannot be reached" in text
        assert "Traceback" not in page.content()
        shoot(page, "error-503")
        page.goto(f"{broken.base_url}/signin")
        page.get_by_label("Token").fill(alice.token)
        page.get_by_role("button", name="Sign in").click()
        assert "not available" in page.locator("main").inner_text()
        assert "Traceback" not in page.content()
        unknown = page.goto(f"{broken.base_url}/no/such/page")
        assert unknown is not None and unknown.status == 404


def test_memory_text_is_shown_as_text_never_run(page: Any, alice: User) -> None:
    payload = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> "quoted" & done'
    memory_id = alice.add(payload)
    pending_id = alice.capture(payload)
    sign_in(page, alice)
    for path in ("/memories", f"/memories/{memory_id}", "/consent", "/"):
        page.goto(path)
        assert page.evaluate("window.__xss") is None, path
    page.goto(f"/memories/{memory_id}")
    assert page.get_by_label(re.compile("^Text")).input_value() == payload
    # A pending item's page shows it read-only and sends you to the consent queue.
    page.goto(f"/memories/{pending_id}")
    assert page.get_by_role("link", name="Consent").last.is_visible()
    assert page.locator("textarea").count() == 0 and "onerror" in page.locator(".memory-text").inner_text()


def test_a_new_user_sees_clear_empty_states(page: Any, api: MemoryServer) -> None:
    newcomer = User(api, "newcomer")
    sign_in(page, newcomer)
    assert page.get_by_test_id("total").inner_text() == "0"
    assert page.get_by_test_id("hook-injections").inner_text() == "0"
    assert "No apps yet" in page.locator("main").inner_text()
    assert "ccmem connect claude-code" in page.locator("main").inner_text()
    shoot(page, "empty-dashboard")
    nav(page, "Memories")
    assert "No memories yet" in page.locator(".empty").inner_text()
    shoot(page, "empty-memories")
    page.goto("/memories?mode=text&q=nothing-matches-this")
    assert "No memories match" in page.locator(".empty").inner_text()
    nav(page, "Consent")
    assert page.get_by_text("Nothing is waiting for your consent").is_visible()
    nav(page, "Apps")
    assert "No apps yet" in page.locator(".empty").inner_text()
    nav(page, "Scopes")
    assert page.get_by_text("No memories yet, so no scopes").is_visible()
    nav(page, "Entities")
    assert page.get_by_text("No entities yet").is_visible()
    nav(page, "Hygiene")
    assert page.get_by_text("No open proposals").is_visible()
    assert page.get_by_text("No standing rules: every proposal waits for you").is_visible()
    # This server runs with the default privacy.trash_days: 0, so the Trash page says it is off.
    nav(page, "Trash")
    assert "The trash is off" in page.get_by_test_id("trash-state").inner_text()
    shoot(page, "trash-off")


# -- usability ---------------------------------------------------------------------------------
PAGES = [
    "/",
    "/memories",
    "/profile",
    "/scopes",
    "/entities",
    "/consent",
    "/hygiene",
    "/trash",
    "/apps",
    "/settings",
    "/connect",
]

UNLABELLED = """() => Array.from(document.querySelectorAll('input, select, textarea, button'))
  .filter(el => el.type !== 'hidden')
  .filter(el => {
    if (el.tagName === 'BUTTON') return !(el.textContent.trim() || el.getAttribute('aria-label'));
    return !((el.labels && el.labels.length) || el.getAttribute('aria-label'));
  })
  .map(el => el.outerHTML.slice(0, 120))"""


def test_every_page_is_labelled_keyboard_reachable_and_fits_390_px(page: Any, alice: User) -> None:
    memory_id = alice.add("A memory so the lists are not empty")
    alice.add("I prefer tabs over spaces, and a long fact so the profile table is not empty either.")
    alice.capture("Remember the pending item for the layout check")
    sign_in(page, alice)
    for path in [*PAGES, f"/memories/{memory_id}", f"/memories/{memory_id}/delete", "/no/such/page"]:
        page.goto(path)
        assert page.evaluate(UNLABELLED) == [], f"unlabelled controls on {path}"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content", path
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 390, f"{path} scrolls sideways at 390 px ({overflow} px wide)"
        page.set_viewport_size({"width": 1280, "height": 900})
    # The keyboard alone can run a search: focus the field, type, press Enter.
    page.goto("/memories")
    page.get_by_label("Search", exact=True).focus()
    page.keyboard.type("lists are not empty")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=lists"))
    assert page.locator(".memory-item").count() >= 1


# -- insights ----------------------------------------------------------------------------------
def test_insights_page_shows_reflection_next_actions_and_storage(page: Any, alice: User) -> None:
    error = "ModuleNotFoundError: No module named 'psycopg'"
    turns = [
        ("s1", f"User: `pytest` fails with {error}\n\nAssistant: Install the driver."),
        ("s1", "User: We decided to use FastAPI for the REST layer.\n\nAssistant: Done in app/main.py."),
        ("s2", f"User: CI fails again with {error}\n\nAssistant: Add it to requirements-dev.txt."),
        ("s2", "User: Should we shard the events table by tenant?\n\nAssistant: Not sure yet."),
    ]
    items = [
        {
            "text": text,
            "conversation_id": conversation,
            "project": "shop",
            "captured_at": f"2026-11-0{i + 1}T10:00:00",
        }
        for i, (conversation, text) in enumerate(turns)
    ]
    alice.rest("POST", "/api/v1/memories/batch", json={"items": items, "app": "claude-code"})
    sign_in(page, alice)
    nav(page, "Insights")
    page.wait_for_url(re.compile(r"/insights$"))
    assert error in page.get_by_test_id("recurring-problems").inner_text()
    assert "We decided to use FastAPI" in page.get_by_test_id("decisions").inner_text()
    assert "shard the events table" in page.get_by_test_id("open-questions").inner_text()
    assert "Fix: " + error in page.get_by_test_id("next-actions").inner_text()
    storage = page.get_by_test_id("storage").inner_text()
    assert alice.name in storage and "MB" in page.get_by_test_id("storage-total").inner_text()
    # Scoped to another project: nothing of this one.
    page.get_by_label("Project").fill("elsewhere")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"project=elsewhere"))
    assert "No error came back" in page.get_by_test_id("recurring-problems").inner_text()
    shoot(page, "insights")
