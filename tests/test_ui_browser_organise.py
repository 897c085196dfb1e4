"""The web UI's pages for organising memory, in Chromium (Playwright) against a real ``ccmem
serve`` with the trash on (``privacy.trash_days: 7``) and a real ``ccmem ui``: the scope filter
and moving memories, completing a task, links on a memory's page, entities, the trash (restore,
purge) and the hygiene review (run, apply a merge with an edited text, undo it, reject, bulk,
standing rules). One server and UI for the module; each test has its own user.
"""

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

DUPLICATES = (
    "Nightly backups of the orders database are kept for thirty days.",
    "Backups of the orders database taken nightly are retained for thirty days.",
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryServer, UiServer]]:
    # The hygiene job only on demand: the page's "Run now" starts it.
    env = {"CCMEM_PRIVACY__TRASH_DAYS": "7", "CCMEM_HYGIENE__SCHEDULE_HOURS": "0"}
    api = MemoryServer(tmp_path_factory.mktemp("ui-organise-api"), env=env)
    ui = UiServer(tmp_path_factory.mktemp("ui-organise"), api.base_url)
    try:
        # The UI needs only the API's address to start: both start at once.
        with ThreadPoolExecutor(max_workers=1) as pool:
            starting_ui = pool.submit(ui.start)
            api.start()
            starting_ui.result()
        yield api, ui
    finally:
        ui.stop()  # stopped by PID; a no-op for one that never started
        api.stop()


@pytest.fixture(scope="module")
def api(stack: tuple[MemoryServer, UiServer]) -> MemoryServer:
    return stack[0]


@pytest.fixture(scope="module")
def ui(stack: tuple[MemoryServer, UiServer]) -> UiServer:
    return stack[1]


@pytest.fixture
def alice(api: MemoryServer) -> User:
    return User(api, "alice")  # its token made over REST: the server runs


def listed(page: Any) -> list[str]:
    return page.locator(".memory-item .content").all_inner_texts()


def scope_of(user: User, memory_id: str) -> tuple[str | None, str | None]:
    provenance = user.rest("GET", f"/api/v1/memories/{memory_id}")["provenance"]
    return provenance["project"], provenance["task"]


def apply_filters(page: Any, **choices: str) -> None:
    if not page.locator("details.more-filters").evaluate("details => details.open"):  # open when filtered
        page.locator("summary", has_text="Filters and sort").click()
    for label, value in choices.items():
        page.get_by_label(label, exact=True).select_option(value)
    page.get_by_role("button", name="Apply").click()


# -- scopes -------------------------------------------------------------------------------------
def test_filter_by_scope_move_memories_and_complete_a_task(page: Any, alice: User) -> None:
    anywhere = alice.add("Scope UI: I prefer tabs over spaces")
    in_project = alice.rest(
        "POST", "/api/v1/memories", json={"text": "Scope UI: the shop runs on Postgres", "project": "shop"}
    )["id"]
    in_task = alice.rest(
        "POST",
        "/api/v1/memories",
        json={"text": "Scope UI: checkout retries card payments", "project": "shop", "task": "checkout"},
    )["id"]
    sign_in(page, alice)
    page.goto("/memories")
    assert len(listed(page)) == 3

    apply_filters(page, Scope="global")
    assert listed(page) == ["Scope UI: I prefer tabs over spaces"]
    assert "scope=global" in page.url
    apply_filters(page, Scope="task")
    assert listed(page) == ["Scope UI: checkout retries card payments"]
    assert "shop / checkout" in page.locator(".memory-item .scope").inner_text()
    apply_filters(page, Scope="project")
    assert listed(page) == ["Scope UI: the shop runs on Postgres"]
    shoot(page, "memories-scope-filter")

    # Move the global memory into the project, from the list.
    page.goto("/memories?scope=global")
    page.locator(f'input[value="{anywhere}"]').check()
    page.locator("summary", has_text="Move selected…").click()
    page.get_by_label("To project").fill("shop")
    page.get_by_role("button", name="Move selected", exact=True).click()
    assert "Moved 1 memory to shop" in flash(page)
    assert scope_of(alice, anywhere) == ("shop", None)
    assert listed(page) == []  # it left the global list it was moved from
    page.goto("/memories?scope=project")
    assert sorted(listed(page)) == [
        "Scope UI: I prefer tabs over spaces",
        "Scope UI: the shop runs on Postgres",
    ]

    # A task without its project is refused, nothing moves.
    page.locator(f'input[value="{in_project}"]').check()
    page.locator("summary", has_text="Move selected…").click()
    page.get_by_label("Task (optional)").fill("checkout")
    page.get_by_role("button", name="Move selected", exact=True).click()
    assert "name the project too" in flash(page)
    assert scope_of(alice, in_project) == ("shop", None)

    # Back to global from its own page.
    page.goto(f"/memories/{anywhere}")
    assert "Project shop" in page.get_by_test_id("scope").inner_text()
    page.get_by_label("Project (empty: global)").fill("")
    page.get_by_role("button", name="Move", exact=True).click()
    assert "Moved 1 memory to global" in flash(page)
    assert scope_of(alice, anywhere) == (None, None)

    # Complete the task, keeping its memories in the project.
    page.goto("/scopes")
    rows = page.locator("table.scopes tbody tr")
    assert rows.count() == 3  # global, shop, shop/checkout
    shoot(page, "scopes")
    page.get_by_role(
        "button", name="Complete task checkout of shop: keep its memories in the project"
    ).click()
    assert "1 memory kept in shop" in flash(page)
    assert scope_of(alice, in_task) == ("shop", None)
    assert alice.rest("GET", f"/api/v1/memories/{in_task}")["state"] == "active"
    assert "checkout" not in page.locator("table.scopes").inner_text()


def test_completing_a_task_can_archive_its_memories(page: Any, alice: User) -> None:
    done = alice.rest(
        "POST",
        "/api/v1/memories",
        json={"text": "Scope UI: the refund flow needs an audit log", "project": "shop", "task": "refunds"},
    )["id"]
    sign_in(page, alice)
    page.goto("/scopes")
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name="Complete task refunds of shop: archive its memories").click()
    assert "1 memory archived" in flash(page)
    assert questions and "Complete task refunds" in questions[0]
    memory = alice.rest("GET", f"/api/v1/memories/{done}")
    assert memory["state"] == "archived" and memory["provenance"]["task"] == "refunds"


def test_links_on_a_memorys_page_and_entities(page: Any, alice: User) -> None:
    source = alice.add("Links UI: the deploy script needs Terraform and Docker")
    target = alice.add("Links UI: Grace Hopper owns the staging cluster")
    sign_in(page, alice)
    page.goto(f"/memories/{source}")
    assert "No links yet" in page.locator("main").inner_text()
    # The other memory named by its page's address, as a person would paste it.
    page.get_by_label("Other memory (its id or page address)").fill(
        f"{page.url.split('/memories')[0]}/memories/{target}"
    )
    page.get_by_label("Relation").fill("depends on")
    page.get_by_role("button", name="Link", exact=True).click()
    assert "Linked (depends on)" in flash(page)
    links = page.get_by_test_id("links")
    assert "depends on" in links.inner_text() and "Grace Hopper owns" in links.inner_text()
    shoot(page, "memory-links")
    (link,) = alice.rest("GET", f"/api/v1/memories/{source}/links")["links"]
    assert link["relation"] == "depends on" and link["memory"]["id"] == target
    # "related" on the other memory lists the link first; its page shows the link's other end.
    assert alice.rest("GET", f"/api/v1/memories/{target}/related")["items"][0]["id"] == source
    page.goto(f"/memories/{target}")
    assert "depends on this memory" in page.get_by_test_id("links").inner_text()

    # Not a memory id, or a relation the API refuses: a message on the page, nothing linked.
    page.get_by_label("Other memory (its id or page address)").fill("the deploy one")
    page.get_by_role("button", name="Link", exact=True).click()
    assert "nothing was linked" in flash(page)
    page.get_by_label("Other memory (its id or page address)").fill(source)
    page.get_by_label("Relation").fill("9 lives!")
    page.get_by_role("button", name="Link", exact=True).click()
    assert "relation must be" in flash(page)
    assert len(alice.rest("GET", f"/api/v1/memories/{source}/links")["links"]) == 1

    page.get_by_role("button", name=re.compile("^Remove link depends on")).click()
    assert "link was removed" in flash(page)
    assert alice.rest("GET", f"/api/v1/memories/{source}/links")["links"] == []

    page.goto("/entities")
    names = page.locator("table").inner_text()
    assert "Terraform" in names and "Docker" in names
    page.get_by_label("Entity name").fill("terraform")
    page.get_by_role("button", name="Search").click()
    found = page.locator(".entities").inner_text()
    assert "Terraform" in found and "the deploy script needs Terraform" in found
    shoot(page, "entities")


# -- trash --------------------------------------------------------------------------------------
def test_delete_goes_to_the_trash_and_comes_back(page: Any, api: MemoryServer, alice: User) -> None:
    kept = alice.add("Trash UI: the office wifi is called heron-5")
    gone = alice.add("Trash UI: a note to purge for good")
    sign_in(page, alice)
    page.goto(f"/memories/{kept}")
    page.get_by_role("link", name="Delete…").click()
    assert "restore it for 7 day(s)" in page.locator("main").inner_text()
    page.get_by_role("button", name="Yes, delete it").click()
    assert "moved to the trash" in flash(page)
    assert alice.rest("GET", f"/api/v1/memories/{kept}")["state"] == "trashed"
    search = alice.rest("POST", "/api/v1/memories/search", json={"query": "office wifi heron", "limit": 5})
    assert kept not in {hit["id"] for hit in search["results"]}
    alice.rest("DELETE", "/api/v1/memories", json={"memory_ids": [gone]})

    page.goto("/trash")
    assert "wait here for 7 day(s)" in page.get_by_test_id("trash-state").inner_text()
    assert page.locator(".trashed-item").count() == 2
    shoot(page, "trash")
    page.locator(f'input[value="{kept}"]').check()
    page.get_by_role("button", name="Restore selected").click()
    assert "Restored 1 memory" in flash(page)
    assert alice.rest("GET", f"/api/v1/memories/{kept}")["state"] == "active"
    assert page.locator(".trashed-item").count() == 1

    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.locator(f'input[value="{gone}"]').check()
    page.get_by_role("button", name="Purge selected now").click()
    assert "Purged 1 memory" in flash(page)
    assert questions and "for good" in questions[0]
    assert alice.rest("GET", "/api/v1/trash")["total"] == 0
    assert "The trash is empty" in page.locator("main").inner_text()


# -- hygiene ------------------------------------------------------------------------------------
def test_hygiene_apply_a_merge_with_edits_undo_it_and_reject(page: Any, alice: User) -> None:
    first, second = (alice.add(text, app="notes") for text in DUPLICATES)
    junk = alice.add("ok thanks", app="notes")
    before = {mid: alice.rest("GET", f"/api/v1/memories/{mid}") for mid in (first, second, junk)}
    sign_in(page, alice)
    page.goto("/hygiene")
    assert "No open proposals" in page.locator("main").inner_text()
    page.get_by_role("button", name="Run now").click()
    assert re.search(r"proposed: .*1 duplicate", flash(page)), flash(page)
    assert page.get_by_test_id("open-duplicate").inner_text() == "1"
    assert page.get_by_test_id("open-junk").inner_text() == "1"
    shoot(page, "hygiene")

    # Reject the junk proposal in bulk: nothing changes.
    junk_item = page.locator('.proposal[data-kind="junk"]')
    junk_item.get_by_role("checkbox").check()
    page.get_by_role("button", name="Reject selected").click()
    assert "Rejected 1 proposal" in flash(page)
    assert alice.rest("GET", f"/api/v1/memories/{junk}") == before[junk]

    # Apply the merge with an edited kept text.
    merge = page.locator('.proposal[data-kind="duplicate"]')
    assert set(merge.locator("a.kept, a.archived").all_inner_texts()) == set(DUPLICATES)
    merge.locator("summary", has_text="Edit the kept text").click()
    merge.get_by_label("Text to keep").fill("Nightly orders database backups are kept for 30 days.")
    merge.get_by_role("button", name="Apply with this text").click()
    assert "Applied with your edited text" in flash(page)
    states = {mid: alice.rest("GET", f"/api/v1/memories/{mid}") for mid in (first, second)}
    (kept_id,) = [mid for mid, m in states.items() if m["state"] == "active"]
    (gone_id,) = [mid for mid, m in states.items() if m["state"] == "archived"]
    assert states[kept_id]["text"] == "Nightly orders database backups are kept for 30 days."

    page.get_by_role("navigation", name="Proposals by status").get_by_role("link", name="Applied").click()
    applied = page.locator('.proposal[data-kind="duplicate"]')
    assert "edited" in applied.inner_text()
    shoot(page, "hygiene-applied")
    applied.get_by_role("button", name="Undo").click()
    assert "Undone" in flash(page)
    for mid in (first, second):
        now = alice.rest("GET", f"/api/v1/memories/{mid}")
        assert now["state"] == "active" and now["text"] == before[mid]["text"], mid
    assert gone_id != kept_id

    page.goto("/hygiene?status=rejected")
    assert page.locator('.proposal[data-kind="junk"]').count() == 1
    page.goto("/hygiene?status=undone")
    assert page.locator('.proposal[data-kind="duplicate"]').count() == 1

    # A standing rule, added and removed.
    questions: list[str] = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.get_by_label("Always apply").select_option("junk")
    page.get_by_role("button", name="Add rule").click()
    assert "junk captures out of the consent queue" in flash(page)
    assert [r["kind"] for r in alice.rest("GET", "/api/v1/hygiene/rules")["rules"]] == ["junk"]
    page.get_by_role("button", name="Remove the standing rule for junk").click()
    assert alice.rest("GET", "/api/v1/hygiene/rules")["rules"] == []


# -- usability ----------------------------------------------------------------------------------
def test_the_new_pages_are_labelled_and_fit_390_px(page: Any, alice: User) -> None:
    memory_id = alice.rest(
        "POST",
        "/api/v1/memories",
        json={"text": "Layout: a task memory for Kubernetes", "project": "p", "task": "t"},
    )["id"]
    other = alice.add("Layout: another memory, then trashed")
    alice.rest("POST", f"/api/v1/memories/{memory_id}/links", json={"target_id": alice.add("Layout: linked")})
    alice.rest("DELETE", "/api/v1/memories", json={"memory_ids": [other]})
    for text in DUPLICATES:
        alice.add(text)
    alice.rest("POST", "/api/v1/hygiene/run", json={})
    sign_in(page, alice)
    for path in [
        "/memories",
        f"/memories/{memory_id}",
        "/scopes",
        "/entities",
        "/entities?q=kube",
        "/trash",
        "/hygiene",
    ]:
        page.goto(path)
        assert page.evaluate(UNLABELLED) == [], f"unlabelled controls on {path}"
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 390, f"{path} scrolls sideways at 390 px ({overflow} px wide)"
        page.set_viewport_size({"width": 1280, "height": 900})
