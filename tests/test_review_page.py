"""The review page in a real headless browser (Debian's chromium + chromium-driver, driven by
Selenium; nothing downloaded): an episode with ``--reviewer human`` files its ticket in the
store, the page (a real ``impasse review serve`` process) shows it with the evidence and the
diff, a person logs in, opens it by keyboard, accepts it, and the agent's next check_answer gets
the answer and the environment is restored. Labels, keyboard reach, the token and the CSRF field
are checked too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

import httpx
import pytest
from test_mcp_server import free_port, wait_for_port

from impasse.tickets.store import TicketStore

pytestmark = pytest.mark.slow
TOKEN = "page-token-123"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def page(tmp_path):
    db = tmp_path / "tickets.sqlite"
    TicketStore(db)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "impasse.cli", "review", "serve", "--store", str(db), "--port",
                             str(port), "--budget", "5"], env={**os.environ, "IMPASSE_REVIEW_TOKEN": TOKEN},
                            stderr=subprocess.PIPE)
    wait_for_port(proc, port)
    yield f"http://127.0.0.1:{port}", db
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def unlabelled(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    fields = [e for e in driver.find_elements(By.CSS_SELECTOR, "input, textarea, select")
              if e.get_attribute("type") != "hidden"]
    return [f.get_attribute("name") for f in fields
            if not driver.find_elements(By.CSS_SELECTOR, f"label[for='{f.get_attribute('id')}']")]


def tab_to(driver, element_id: str, limit: int = 40) -> bool:
    """Press Tab from the top of the page until ``element_id`` has the focus."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("document.activeElement && document.activeElement.blur(); window.focus();")
    for _ in range(limit):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.switch_to.active_element.get_attribute("id") == element_id:
            return True
    return False


def test_a_person_answers_an_agents_escalation_from_the_page(glom_task, tmp_path, page, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    import impasse.env

    url, db = page
    target = f"/workspace/repo/{glom_task.target_file}"
    seen: list[str] = []
    filed = threading.Event()
    failures: list[BaseException] = []

    def agent():
        try:
            with impasse.env.make("blockers", task=glom_task.instance_id, condition="read_only_source",
                                  interface="tool", out=str(tmp_path / "run"), episode_id="human-ep",
                                  reviewer=f"human:{db}", restore=True) as env:
                env.reset()
                env.step({"name": "edit_file", "arguments": {"path": "NOTES.md", "old_str": "", "new_str": "n\n"}})
                for cmd in (f"echo '# x' >> {target}", f"ls -l {target}", f"chmod u+w {target}"):
                    env.step({"name": "bash", "arguments": {"command": cmd}})
                ticket = {"blocker": {"failed_operation": f"echo >> {target}", "affected_target": target,
                                      "error_feedback": "Permission denied; chmod: Operation not permitted"},
                          "evidence": ["ls -l: -r--r--r-- root"], "recovery_attempts": ["chmod u+w refused"],
                          "request": {"assistance_needed": "make the source file writable for the agent user",
                                      "scope": "that one file"},
                          "resume_condition": "`test -w FILE` succeeds",
                          "progress": {"saved_changes": "NOTES.md with my notes", "unfinished_work": "the fix",
                                       "verification_status": "not verified"}}
                seen.append(env.step({"name": "escalate_to_human", "arguments": ticket}).observation)
                filed.set()
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and not env.restored:
                    r = env.step({"name": "check_answer", "arguments": {"ticket_id": 1}})
                    seen.append(r.observation)
                    time.sleep(0.3)
                seen.append(env.step({"name": "bash", "arguments": {"command": f"touch {target}"}}).observation)
                env.step({"name": "task_complete", "arguments": {"verified": False, "summary": "s"}})
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)
            filed.set()

    worker = threading.Thread(target=agent, daemon=True)
    worker.start()
    assert filed.wait(120) and not failures, failures
    assert seen[0].startswith("queued (#1), no answer yet")

    browser.get(url + "/")
    assert browser.current_url.endswith("/login") and not unlabelled(browser)
    token = browser.find_element(By.ID, "token")
    token.send_keys("wrong")
    token.send_keys(Keys.ENTER)
    assert "not right" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    browser.find_element(By.ID, "token").send_keys(TOKEN + Keys.ENTER)
    assert "Review queue" in browser.find_element(By.TAG_NAME, "h1").text
    assert "1 waiting for you" in browser.find_element(By.ID, "waiting").text
    assert "budget left: 5 of 5" in browser.find_element(By.ID, "load").text

    assert tab_to(browser, "open-1"), "the ticket's link cannot be reached with the keyboard"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    assert "#1 escalation" in browser.find_element(By.TAG_NAME, "h1").text
    assert glom_task.problem_statement.strip()[:60] in browser.find_element(By.ID, "task").text
    assert "make the source file writable" in browser.find_element(By.ID, "assistance").text
    summary = browser.find_element(By.ID, "evidence-summary").text
    t_star = int(summary.split("t* (evidence sufficient): step ")[1].split()[0])
    assert "tstar" in browser.find_element(By.ID, f"step-{t_star}").get_attribute("class")
    assert "NOTES.md" in browser.find_element(By.ID, "diff").text
    assert not unlabelled(browser)

    assert tab_to(browser, "accept-message")
    browser.switch_to.active_element.send_keys("Done: the file is writable now.")
    assert tab_to(browser, "accept")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    assert "Saved: accepted" in browser.find_element(By.ID, "confirmation").text
    record = TicketStore(db).get(1)  # committed before the page confirmed it
    assert record.status == "accepted" and record.answer == "Done: the file is writable now."
    assert "budget left: 4 of 5" in browser.find_element(By.ID, "load").text

    worker.join(120)
    assert not failures, failures
    assert any("ticket #1 was accepted" in s for s in seen[1:]), seen[-3:]
    assert seen[-1].startswith("[exit code: 0]")  # restored: the agent's write goes through now


def test_the_page_always_needs_the_token_and_its_forms_the_csrf_field(page):
    url, db = page
    store = TicketStore(db)
    store.add_question("s", "Which timezone?")
    assert httpx.get(url + "/", follow_redirects=False).headers["location"] == "/login"
    assert httpx.get(url + "/", headers={"Authorization": "Bearer nope"}).status_code == 401
    ok = httpx.get(url + "/ticket/1", headers={"Authorization": f"bearer {TOKEN}"})
    assert ok.status_code == 200 and "Which timezone?" in ok.text
    forged = httpx.post(url + "/ticket/1", data={"action": "answer", "message": "UTC"},
                        headers={"Authorization": f"Bearer {TOKEN}"})
    assert forged.status_code == 403 and store.get(1).status == "open"
    csrf = ok.text.split('name="csrf" value="')[1].split('"')[0]
    done = httpx.post(url + "/ticket/1", data={"action": "answer", "message": "UTC", "csrf": csrf},
                      headers={"Authorization": f"Bearer {TOKEN}"}, follow_redirects=True)
    assert "Saved: answer" in done.text and store.get(1).answer == "UTC"
    again = httpx.post(url + "/ticket/1", data={"action": "answer", "message": "CET", "csrf": csrf},
                       headers={"Authorization": f"Bearer {TOKEN}"})
    assert again.status_code == 400 and "already answered" in again.text and store.get(1).answer == "UTC"


def test_serve_refuses_without_a_token_or_a_store(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IMPASSE_REVIEW_TOKEN"}
    res = subprocess.run([sys.executable, "-m", "impasse.cli", "review", "serve", "--store", str(tmp_path / "x")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and "needs an access token" in res.stderr
    res = subprocess.run([sys.executable, "-m", "impasse.cli", "review", "serve", "--store", str(tmp_path / "x"),
                          "--token", "t"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no such file" in res.stderr


def test_an_escalation_filed_through_mcp_says_what_was_not_recorded(page):
    """A ticket `impasse mcp` filed has no trajectory and no diff in the store: the page says they
    were not recorded, never "no evidence" and "(empty: no saved changes)", which would contradict
    the store's own finding that the workspace diff changes a file."""
    url, db = page
    ticket = {"blocker": {"failed_operation": "pip install"}, "progress": {"saved_changes": "n/a"}}
    TicketStore(db).add_escalation("mcp-session", ticket, {"blocker": "partial"}, False,
                                   ["claims no saved changes, but the workspace diff changes pkg/a.py"])
    text = httpx.get(url + "/ticket/1", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert "the workspace diff changes pkg/a.py" in text
    assert "no saved changes)" not in text and "not reached" not in text
    assert text.count("not recorded: filed through the MCP server") >= 3  # task, evidence, diff


def test_an_mcp_agents_escalation_is_decided_on_the_page_and_its_poll_gets_the_answer(page, browser, tmp_path):
    """End to end over the one store: the official MCP client files two tickets through `impasse
    mcp`; the page counts them as waiting and offers accept-with-an-answer and reject-with-a-
    message; a person decides both in the real browser; each decision is a committed row before
    the page confirms it; the MCP agent's check_answer then gets the answer and the rejection."""
    import anyio
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from test_mcp_server import COMPLETE, INCOMPLETE, stdio_session, text_of

    url, db = page

    def decide_in_the_browser(ids: list[int]) -> None:
        browser.get(url + "/login")
        browser.find_element(By.ID, "token").send_keys(TOKEN + Keys.ENTER)
        assert "2 waiting for you" in browser.find_element(By.ID, "waiting").text
        assert tab_to(browser, f"open-{ids[0]}")
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        assert f"#{ids[0]} escalation" in browser.find_element(By.TAG_NAME, "h1").text
        assert "make glom/core.py writable" in browser.find_element(By.ID, "assistance").text
        assert not unlabelled(browser)
        assert tab_to(browser, "accept-message")
        browser.switch_to.active_element.send_keys("Done: glom/core.py is writable now; go on.")
        assert tab_to(browser, "accept")
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        assert "Saved: accepted" in browser.find_element(By.ID, "confirmation").text
        assert TicketStore(db).get(ids[0]).status == "accepted"  # committed before the page confirmed it
        browser.get(f"{url}/ticket/{ids[1]}")
        assert tab_to(browser, "reject-message")
        browser.switch_to.active_element.send_keys("Say which file and what you already changed.")
        assert tab_to(browser, "reject")
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        assert "Saved: rejected" in browser.find_element(By.ID, "confirmation").text
        browser.get(url + "/")
        assert "0 waiting for you" in browser.find_element(By.ID, "waiting").text

    async def main():
        async with stdio_session("--store", str(db)) as session:
            ids = []
            for ticket in (COMPLETE, INCOMPLETE):
                res = await session.call_tool("escalate_to_human", ticket)
                assert not res.is_error and f"ticket_id={res.structured_content['id']}" in text_of(res)
                ids.append(res.structured_content["id"])
            before = await session.call_tool("check_answer", {"ticket_id": ids[0]})
            assert "no answer yet" in text_of(before) and before.structured_content["answered"] is False
            await anyio.to_thread.run_sync(decide_in_the_browser, ids)
            accepted = await session.call_tool("check_answer", {"ticket_id": ids[0]})
            rejected = await session.call_tool("check_answer", {"ticket_id": ids[1]})
            return accepted, rejected

    accepted, rejected = anyio.run(main)
    assert text_of(accepted) == f"ticket {accepted.structured_content['id']} was accepted by a person: " \
                                "Done: glom/core.py is writable now; go on."
    assert accepted.structured_content["status"] == "accepted"
    assert "was rejected: Say which file and what you already changed." in text_of(rejected)
    assert rejected.structured_content["answered"] and rejected.structured_content["status"] == "rejected"


def test_a_store_written_before_mcp_tickets_were_queued_still_shows_them_as_waiting(page):
    """Rows an older `impasse mcp` stored as ``filed`` wait for a person too: counted in the
    queue, with the accept and reject forms."""
    import sqlite3

    url, db = page
    TicketStore(db).add_escalation("old-session", {"blocker": {"failed_operation": "pip install"}}, {}, False, [])
    with sqlite3.connect(db) as c:
        c.execute("UPDATE records SET status='filed'")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert "1 waiting for you" in httpx.get(url + "/", headers=headers).text
    page_text = httpx.get(url + "/ticket/1", headers=headers).text
    assert 'id="accept-form"' in page_text and 'id="reject-form"' in page_text
    csrf = page_text.split('name="csrf" value="')[1].split('"')[0]
    done = httpx.post(url + "/ticket/1", data={"action": "rejected", "message": "no", "csrf": csrf}, headers=headers,
                      follow_redirects=True)
    assert "Saved: rejected" in done.text and TicketStore(db).get(1).status == "rejected"
