"""``memrepo ui`` in a real headless Chromium: the review loop, the security model, read-only.

The browser is Debian's ``chromium`` driven through its ``chromedriver`` by Selenium (nothing
downloads a browser). Without them these tests skip with one line saying how to enable them;
``MEMREPO_BROWSER_TESTS=required`` (set by ``.ci/run``) turns that skip into a failure. The
server is ``memrepo ui`` as a real process (one per module, plus a read-only one); the browser
is started once per session, and a second one with JavaScript turned off proves the forms need
none. Every test saves a screenshot under ``$MEMREPO_UI_SCREENSHOTS`` (default: the run's
temporary folder); ``MEMREPO_UI_DOC_IMAGES=1`` also refreshes the README's images in docs/img/.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import git
from ui_vault import XSS_FIELD, build

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
REQUIRED = os.environ.get("MEMREPO_BROWSER_TESTS") == "required"
DOC_IMAGES = Path(__file__).resolve().parent.parent / "docs" / "img"


def _missing() -> str | None:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return "browser tests skipped: apt-get install -y chromium chromium-driver to run them"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "browser tests skipped: pip install -e '.[test]' (selenium) to run them"
    return None


if _missing():
    if REQUIRED:
        pytest.fail(f"{_missing()} (MEMREPO_BROWSER_TESTS=required)", pytrace=False)
    pytest.skip(_missing(), allow_module_level=True)


# ------------------------------------------------------------------ the server and the browsers

class Server:
    """``memrepo ui --no-open`` as a process; its token URL read from the first lines it prints."""

    def __init__(self, root: Path, env: dict[str, str], *extra: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "memrepo", "--vault", str(root), "ui", "--no-open", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        self.lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"memrepo ui did not start: {self.proc.stderr.read()}")
            self.lines.append(line)
            found = re.search(r"http://\S+\?token=\S+", line)
            if found:
                self.url = found.group(0)
                break
        parts = urllib.parse.urlsplit(self.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.port = parts.port
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]
        self.cookie = f"memrepo_ui_{self.port}={self.token}"

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a person stops it."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, "".join(self.lines) + out + err

    def request(self, path: str, *, data: dict | None = None, cookie: bool = True, host: str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, str]:
        body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body, method="POST" if data is not None else "GET")
        if cookie:
            req.add_header("Cookie", self.cookie)
        if host:
            req.add_header("Host", host)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(req, timeout=30) as resp:
                return resp.status, resp.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    def csrf(self) -> str:
        return re.search(r'name="csrf" value="([^"]+)"', self.request("/")[1]).group(1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), MEMREPO_SEMANTIC="0",
               MEMREPO_DAEMON="0", MEMREPO_LOCK_TIMEOUT="10", PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    env.pop("MEMREPO_VAULT", None)
    env.pop("MEMREPO_AUTHOR", None)
    return env


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The vault (made once) and the server over it; stopped with Ctrl-C at the end."""
    home = tmp_path_factory.mktemp("ui-home")
    env = _env(home)
    for key, value in (("user.name", "Ann Reviewer"), ("user.email", "ann@example.invalid"), ("init.defaultBranch", "main")):
        subprocess.run(["git", "config", "--global", key, value], check=True, env=env)
    root = tmp_path_factory.mktemp("ui") / "vault"
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        ids = build(root)
    server = Server(root, env)
    yield {"root": root, "ids": ids, "server": server, "env": env}
    code, output = server.stop()
    assert code == 0 and "stopped" in output, output


def _browser(javascript: bool = True):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1360,1000", "--lang=en-US",
                f"--user-data-dir={tempfile.mkdtemp(prefix='memrepo-chromium-')}"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"intl.accept_languages": "en-US,en",
                                              "profile.managed_default_content_settings.javascript": 1 if javascript else 2})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture(scope="session")
def browser():
    driver = _browser()
    yield driver
    driver.quit()


@pytest.fixture(scope="session")
def browser_without_js():
    driver = _browser(javascript=False)
    yield driver
    driver.quit()


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("MEMREPO_UI_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shot(driver, shots: Path, name: str, *, doc: str | None = None, height: int | None = None) -> None:
    """Save the page as ``<shots>/<name>.png`` (the whole page's height up to ``height``)."""
    try:
        full = int(driver.execute_script("return document.documentElement.scrollHeight") or 1000)
    except Exception:   # a browser running no script: the window as it is
        full = 1000
    driver.set_window_size(1360, min(max(full, 700), height or 2400))
    driver.save_screenshot(str(shots / f"{name}.png"))
    if doc and os.environ.get("MEMREPO_UI_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shots / f"{name}.png", DOC_IMAGES / doc)
    driver.set_window_size(1360, 1000)


def signed_in(driver, server: Server) -> None:
    """Follow the token link and wait until the page it leads to has taken the token away."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(server.url)
    WebDriverWait(driver, 20).until(lambda d: "token=" not in d.current_url and d.execute_script(
        "return document.readyState") == "complete" if d.current_url.startswith(server.base) else False)


def css(driver, selector: str):
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, selector)


def all_css(driver, selector: str):
    from selenium.webdriver.common.by import By
    return driver.find_elements(By.CSS_SELECTOR, selector)


def submit(driver, selector: str) -> None:
    """Click a form's button and wait until the next page has replaced this one."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait
    page = css(driver, "html")
    css(driver, selector).click()
    WebDriverWait(driver, 20).until(expected_conditions.staleness_of(page))


def main_tip(world) -> str:
    return git(world["root"], "rev-parse", "main").strip()


# ------------------------------------------------------------------ the review loop

def test_the_token_link_opens_the_inbox_and_leaves_an_httponly_strict_cookie(world, browser, shots):
    server = world["server"]
    signed_in(browser, server)
    assert browser.current_url == server.base + "/"           # the token left the address bar
    cookie = browser.get_cookie(f"memrepo_ui_{server.port}")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] == server.token
    rows = all_css(browser, "table.inbox tbody tr")
    assert len(rows) == 6
    assert "当前阶段禁止自动发布" in css(browser, f"#row-{world['ids']['high']}").text
    counts = {b.get_attribute("data-source"): b.text for b in all_css(browser, "#counts .badge")}
    assert counts["agent"].endswith("5") and counts["distill"].endswith("1")
    assert "weekly-report-48" not in css(browser, "#notices").text       # nothing superseded yet
    shot(browser, shots, "inbox", doc="ui-inbox.png", height=1100)


def test_a_request_without_the_cookie_is_refused(world, browser, shots):
    server = world["server"]
    assert server.request("/", cookie=False)[0] == 403
    assert server.request("/memories?q=x", cookie=False)[0] == 403
    assert server.request("/?token=not-the-token", cookie=False)[0] == 403
    assert server.request("/static/style.css", cookie=False)[0] == 403
    code, _ = server.request(f"/?token={server.token}", cookie=False)
    assert code in (200, 303)
    browser.delete_all_cookies()
    browser.get(server.base + "/")
    assert "memrepo ui" in css(browser, "#message").text and not all_css(browser, "table.inbox")
    shot(browser, shots, "refused-without-cookie")
    signed_in(browser, server)


def test_the_token_link_followed_from_another_site_opens_the_inbox(world, browser, tmp_path):
    """A person clicks the printed link in a chat, a web IDE or the page the browser is opened
    on: that navigation comes from another site, and a SameSite=Strict cookie set on its way is
    not sent with it (nor on reload); the window must still open, not answer 403."""
    from selenium.webdriver.support.ui import WebDriverWait
    server = world["server"]
    page = tmp_path / "elsewhere.html"
    page.write_text(f'<!doctype html><a id="go" href="{server.url}">memrepo ui</a>', encoding="utf-8")
    browser.delete_all_cookies()
    try:
        browser.get(page.as_uri())
        css(browser, "#go").click()
        WebDriverWait(browser, 20).until(lambda d: d.current_url == server.base + "/" and all_css(d, "table.inbox, #error, .message"))
        assert all_css(browser, "table.inbox"), browser.page_source[:300]
    finally:
        signed_in(browser, server)


def test_a_high_risk_proposal_shows_its_field_diff_and_approving_it_merges_with_the_reviewer(world, browser, shots):
    server, pid = world["server"], world["ids"]["high"]
    signed_in(browser, server)
    browser.get(f"{server.base}/proposal/{pid}")
    summary = css(browser, '#diff tr[data-field="summary"]')
    assert "允许自动发布" in css(summary, "td.old").text
    assert "当前阶段禁止自动发布" in summary.text
    assert [d.text for d in all_css(browser, "#diff pre.word-diff del")] == ["允许", "无需"]
    assert [i.text for i in all_css(browser, "#diff pre.word-diff ins")] == ["禁止", "必须等待"]
    assert "3 failed, 120 passed" in css(browser, "#card pre.evidence-text").text    # a pruned tool result's text
    assert "weekly-report-48" in css(browser, "#card").text                          # what cites the old value
    shot(browser, shots, "proposal-high-risk", doc="ui-proposal.png", height=1900)
    before = main_tip(world)
    css(browser, "#approve-reason").send_keys("release team agreed")
    submit(browser, "#approve")
    outcome = css(browser, "#outcomes .ok")
    commit = css(outcome, "code.commit").text
    assert css(browser, "#status").text == "applied"
    merge = git(world["root"], "log", "-1", "--format=%H%n%P%n%B", "main")
    sha, parents, *message = merge.splitlines()
    assert sha.startswith(commit) and len(parents.split()) == 2 and parents.split()[0] == before
    assert f"Memrepo-Proposal: {pid}" in message and "Memrepo-Reviewer: Ann Reviewer" in message
    assert "Memrepo-Why: release team agreed" in message
    shot(browser, shots, "proposal-applied")
    browser.get(f"{server.base}/")
    assert "weekly-report-48" in css(browser, "#notices").text      # its citer now has a notice


def test_reject_another_with_a_reason(world, browser, shots):
    server, pid = world["server"], world["ids"]["rule0"]
    signed_in(browser, server)
    browser.get(f"{server.base}/memory/mem_rule0")                   # pending: its page is the proposal's
    assert browser.current_url == f"{server.base}/proposal/{pid}"
    css(browser, "#reject-reason").send_keys("周末也可以部署 (weekends are fine)")
    submit(browser, "#reject")
    assert css(browser, "#outcomes .ok") and css(browser, "#status").text == "rejected"
    assert "周末也可以部署" in css(browser, "#closed").text
    record = git(world["root"], "log", "-1", "--format=%B", f"refs/memrepo/rejected/{pid}")
    assert "Memrepo-Why: 周末也可以部署 (weekends are fine)" in record and "Memrepo-Reviewer: Ann Reviewer" in record
    shot(browser, shots, "proposal-rejected")
    browser.get(f"{server.base}/proposal/{pid}")
    assert not all_css(browser, "#approve") and not all_css(browser, "#reject")   # closed: no action offered


def test_bulk_approve_two_with_javascript_off(world, browser_without_js, shots):
    """The inbox's bulk form is plain HTML: it works in a browser that runs no script."""
    server, ids = world["server"], world["ids"]
    driver = browser_without_js
    signed_in(driver, server)
    for pid in (ids["rule1"], ids["rule2"]):
        css(driver, f'#row-{pid} input[name="id"]').click()
    css(driver, '#bulk input[name="reason"]').send_keys("两条都核对过 (both checked)")
    shot(driver, shots, "bulk-selected")
    submit(driver, "#bulk-approve")
    oks = all_css(driver, "#outcomes .ok")
    assert len(oks) == 2 and not all_css(driver, "#outcomes .fail")
    for pid in (ids["rule1"], ids["rule2"]):
        assert git(world["root"], "rev-parse", "--verify", "-q", f"refs/memrepo/applied/{pid}")
        record = git(world["root"], "log", "-1", "--format=%B", f"refs/memrepo/applied/{pid}")
        assert "Memrepo-Why: 两条都核对过 (both checked)" in record     # one reason, recorded on each
        assert not all_css(driver, f"#row-{pid}")
    shot(driver, shots, "bulk-approved")


def test_roll_back_a_memory_from_its_page_and_see_the_new_version_in_history(world, browser, shots):
    server = world["server"]
    signed_in(browser, server)
    browser.get(f"{server.base}/memory/mem_limit2")
    steps = all_css(browser, "#history li.step")
    assert [s.get_attribute("class").split()[1] for s in steps] == ["action-apply", "action-add"]
    css(browser, "#rollback-reason").send_keys("the provider still enforces 100/s")
    submit(browser, "#rollback-button")
    assert css(browser, "#outcomes .ok") and css(browser, "#status").text == "rolled_back"
    steps = all_css(browser, "#history li.step")
    assert steps[0].get_attribute("class").split()[1] == "action-rollback"
    assert "the provider still enforces 100/s" in steps[0].text
    assert "undone by" in steps[1].text                              # the apply it reverted is marked
    assert "mem_limit2: active → rolled_back" in steps[0].text and "mem_limit: superseded → active" in steps[0].text
    assert not all_css(browser, "#rollback-form")                   # rolled back: nothing left to roll back
    shot(browser, shots, "memory-rolled-back", doc="ui-memory.png", height=1500)


def test_search_in_chinese_and_english(world, browser, shots):
    server = world["server"]
    signed_in(browser, server)
    browser.get(f"{server.base}/memories")
    for query, expected in (("数据库", "配置数据库连接池：最大线程数 32"), ("dark mode", "User prefers dark mode")):
        box = css(browser, "#q")
        box.clear()
        box.send_keys(query)
        submit(browser, "#search-button")
        hits = [row.text for row in all_css(browser, "#results tr.hit")]
        assert any(expected in h for h in hits), (query, hits)
        assert re.search(r"\d\.\d\d", hits[0])                        # its scores are shown
        assert query == "数据库" or all_css(browser, "#results .snippet mark")   # the words found are marked
        shot(browser, shots, f"search-{'zh' if query == '数据库' else 'en'}")
    box = css(browser, "#q")
    box.clear()
    box.send_keys("quantum chromodynamics lecture notes")
    submit(browser, "#search-button")
    assert css(browser, "#nothing").text == "Nothing relevant."
    browser.get(f"{server.base}/memories?agent=analyst")
    assert "我猜用户偏好深色" in css(browser, "#memory-list").text     # an agent's private memories, by scope


def test_a_body_that_tries_to_run_script_renders_as_text(world, browser, shots):
    from selenium.common.exceptions import NoAlertPresentException
    server = world["server"]
    signed_in(browser, server)
    browser.get_log("performance")                                    # forget what came before
    browser.get(f"{server.base}/memory/mem_xss")
    body = css(browser, "#body")
    assert body.text.startswith("Watch out") and "<script>alert(1)</script>" in body.text and 'onerror="alert(2)"' in body.text
    assert not all_css(browser, "#body script") and not all_css(browser, "#body img")
    assert "[a link](javascript:alert(7))" in body.text and not all_css(browser, 'a[href^="javascript"]')
    assert "<script>alert(3)</script>" in css(browser, "h1").text          # the summary, as text
    shot(browser, shots, "memory-script-as-text")
    # the summary, tag and evidence in every page that shows them: the list, a search, the graph
    for path in ("/memory/mem_xss", "/memories", "/memories?q=script", "/memories?tag=" + urllib.parse.quote(XSS_FIELD.format(n=4)),
                 "/graph?id=mem_xss", "/graph?subject=security"):
        browser.get(server.base + path)
        assert "'><script>" in css(browser, "main").text, path        # shown, as text
        assert not all_css(browser, "main script, main img, main svg [onload], a[href^='javascript']"), path
        with pytest.raises(NoAlertPresentException):
            _ = browser.switch_to.alert.text
    requested = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in requested if m.get("method") == "Network.requestWillBeSent"]
    assert urls and all(u.startswith(server.base + "/") for u in urls), urls    # nothing but the pages and their assets
    assert not any("probe" in u or u.endswith("/x") for u in urls), urls


def test_a_post_without_the_csrf_token_or_with_another_host_is_refused(world, browser, shots):
    server, pid = world["server"], world["ids"]["rule3"]
    before = main_tip(world)
    assert server.request(f"/proposal/{pid}/apply", data={"mode": "overwrite"})[0] == 403
    assert server.request(f"/proposal/{pid}/apply", data={"mode": "overwrite", "csrf": "forged"})[0] == 403
    assert server.request("/bulk", data={"id": [pid], "action": "approve"})[0] == 403
    assert server.request("/memory/mem_theme/rollback", data={"reason": "x"})[0] == 403
    csrf = server.csrf()
    evil = f"evil.example:{server.port}"
    assert server.request(f"/proposal/{pid}/apply", data={"mode": "overwrite", "csrf": csrf}, host=evil)[0] == 403
    assert server.request("/", host=evil)[0] == 403
    assert main_tip(world) == before and git(world["root"], "rev-parse", "--verify", "-q", f"refs/heads/proposal/{pid}")
    assert server.request(f"/proposal/{pid}", host=f"localhost:{server.port}")[0] == 200   # another name of loopback
    browser.get(f"{server.base}/proposal/{pid}")
    shot(browser, shots, "csrf-still-open")


def test_pages_speak_chinese_to_a_chinese_browser(world, shots):
    server = world["server"]
    code, page = server.request("/", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
    assert code == 200 and "等待审阅" in page and "按来源" in page and 'lang="zh-CN"' in page
    code, page = server.request("/memory/mem_theme", headers={"Accept-Language": "zh-CN"})
    assert "历史" in page and re.search(r"\d{4}年\d{1,2}月\d{1,2}日", page)
    assert "Waiting for review" in server.request("/", headers={"Accept-Language": "fr, en;q=0.8"})[1]


def test_a_conflict_is_a_clear_message_not_a_stack_trace(world, browser, shots):
    """The page was opened, then someone applied the proposal from a terminal: approving it
    in the browser says so, and changes nothing."""
    server, pid = world["server"], world["ids"]["rule3"]
    signed_in(browser, server)
    browser.get(f"{server.base}/proposal/{pid}")
    done = subprocess.run([sys.executable, "-m", "memrepo", "--vault", str(world["root"]), "apply", pid],
                          capture_output=True, text=True, env=world["env"])
    assert done.returncode == 0, done.stderr
    before = main_tip(world)
    css(browser, "#approve-reason").send_keys("release team agreed")
    submit(browser, "#approve")
    assert "already applied" in css(browser, "#outcomes .fail").text
    assert main_tip(world) == before
    shot(browser, shots, "conflict")
    browser.get(f"{server.base}/memory/mem_nothing_here")
    assert "Not found" in css(browser, "#error h1").text and "Traceback" not in browser.page_source


def test_the_graph_and_distill_pages(world, browser, shots):
    server = world["server"]
    signed_in(browser, server)
    browser.get(f"{server.base}/graph?subject=project-alpha")
    assert len(all_css(browser, "#graph svg circle")) >= 4
    shot(browser, shots, "graph-subject", doc="ui-graph.png", height=1100)
    browser.get(f"{server.base}/graph?id=mem_pool&limit=1")
    assert "the 1 strongest of 2 neighbours" in css(browser, "#cut").text
    browser.get(f"{server.base}/distill")
    run = css(browser, "#run").text
    assert "Switched the editor to dark mode" in run and world["ids"]["distill"] in run
    assert "seen 3 times on" in run
    shot(browser, shots, "distill")
    css(browser, "#explain").click()
    assert "Candidates and why each was kept" in css(browser, "#run").text   # a dry run, explained


def test_read_only_shows_no_action_and_refuses_every_post(world, browser, shots):
    server = Server(world["root"], world["env"], "--read-only", "--lang", "zh")
    try:
        signed_in(browser, server)
        assert css(browser, "#read-only").text.startswith("只读")
        for path in ("/", f"/proposal/{world['ids']['rule3']}", "/memory/mem_theme", "/memories"):
            browser.get(server.base + path)
            assert not all_css(browser, 'form[method="post"]'), path
            assert not all_css(browser, "button.approve, button.reject"), path
        shot(browser, shots, "read-only-zh")
        code, page = server.request(f"/proposal/{world['ids']['rule3']}/apply", data={"csrf": "any"})
        assert code == 403 and "只读" in page
    finally:
        code, output = server.stop()
    assert code == 0 and "stopped" in output
