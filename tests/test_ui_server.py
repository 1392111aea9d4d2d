"""``memrepo ui`` without a browser: the guard's rules, the language choice, the command as a
process (a warning off loopback, Ctrl-C, a busy port, a bad option) and the wheel's assets."""
from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import MEMREPO, cli, person_env

from memrepo.ui import i18n
from memrepo.ui.security import Guard

# The app in this process through Starlette's test client (a page's server time, no browser):
# Starlette warns that the client's httpx transport is deprecated; the client works.
IN_PROCESS = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def signed_in(root: Path, *, lang: str | None = "en"):
    """(guard, client) for the window over ``root``, the client carrying the cookie."""
    from starlette.testclient import TestClient

    from memrepo.ui.server import make_app
    guard = Guard(host="127.0.0.1", port=8765)
    client = TestClient(make_app(root, guard, lang=lang), base_url="http://127.0.0.1:8765")
    client.cookies.set(guard.cookie_name, guard.token)
    return guard, client


def test_the_guard_accepts_only_the_bound_host_the_cookie_and_the_csrf_token():
    g = Guard(host="127.0.0.1", port=8123)
    assert g.host_ok("127.0.0.1:8123") and g.host_ok("localhost:8123") and g.host_ok("[::1]:8123")
    assert not g.host_ok("evil.example:8123") and not g.host_ok("127.0.0.1:8124") and not g.host_ok(None)
    assert g.cookie_ok(f"a=b; memrepo_ui_8123={g.token}") and not g.cookie_ok(f"memrepo_ui_8124={g.token}")
    assert not g.cookie_ok("memrepo_ui_8123=nope") and not g.cookie_ok('bad="') and not g.cookie_ok(None)
    assert "HttpOnly" in g.set_cookie().decode() and "SameSite=Strict" in g.set_cookie().decode()
    assert g.check_form({"csrf": g.csrf}) is None and g.check_form({}) == "csrf" and g.check_form({"csrf": "x"}) == "csrf"
    assert Guard(host="127.0.0.1", port=1, read_only=True).check_form({"csrf": "x"}) == "read_only"
    other = Guard(host="192.0.2.7", port=9000)
    assert other.allowed_hosts() == {"192.0.2.7:9000"}
    assert Guard(host="127.0.0.1", port=1).token != Guard(host="127.0.0.1", port=1).token


@pytest.mark.parametrize("others", ['session={"a": 1}', 'x="unterminated', "pref=a b", "k=v;;", "name=val\\ue",
                                    "memrepo_ui_8123=planted-by-another-port"])
def test_the_cookie_is_found_beside_any_other_cookie_of_the_host(others):
    """Cookies ignore ports: the browser sends the window every cookie any local web app set on
    this host name, whatever its syntax (JSON, spaces), and one a page on another port planted
    under the same name with a longer path comes first. None of them may lock the person out."""
    g = Guard(host="127.0.0.1", port=8123)
    mine = f"memrepo_ui_8123={g.token}"
    assert g.cookie_ok(f"{others}; {mine}") and g.cookie_ok(f"{mine}; {others}")
    assert not g.cookie_ok(others)


def test_a_token_or_csrf_value_that_is_not_ascii_is_refused_not_an_error():
    g = Guard(host="127.0.0.1", port=8123)
    assert not g.token_ok("令牌") and not g.cookie_ok("memrepo_ui_8123=ä½ ") and g.check_form({"csrf": "令牌"}) == "csrf"


def test_a_body_links_its_wikilinks_but_leaves_code_as_written():
    from memrepo.ui import render
    html = str(render.markdown("See [[mem_a]] and [[mem_b|the pool]]; in R `lst[[1]]` picks one.\n\n"
                               "```python\nrows = frame[[0]]\n```\n"))
    assert '<a href="/memory/mem_a"' in html and '>the pool</a>' in html
    assert "<code>lst[[1]]</code>" in html and "rows = frame[[0]]" in html and "/memory/0" not in html


@pytest.mark.parametrize("header, forced, expected", [
    ("zh-CN,zh;q=0.9,en;q=0.8", None, "zh"), ("en-US,en;q=0.9,zh;q=0.8", None, "en"), ("fr, zh;q=0.5", None, "zh"),
    ("fr, de", None, "en"), (None, None, "en"), ("en;q=0.2, zh-TW;q=0.7", None, "zh"), ("zh;q=0", None, "en"),
    ("zh-CN", "en", "en"), ("en", "zh", "zh"), ("zh;q=abc, en", None, "en"),
])
def test_the_language_follows_accept_language_unless_forced(header, forced, expected):
    assert i18n.choose(header, forced) == expected


def test_every_label_exists_in_both_languages_and_dates_read_as_each_expects():
    import re
    assert all(en and zh for en, zh in i18n.LABELS.values())
    used = set()
    for template in (Path(i18n.__file__).parent / "templates").glob("*.html"):
        used |= set(re.findall(r"""\bt\(\s*['"]([a-z_.-]+)['"]""", template.read_text(encoding="utf-8")))
    used = {k for k in used if not k.endswith(".")}     # t('source.' ~ name): the families below
    from memrepo.model import MERGE_MODES
    from memrepo.oversight.inbox import SOURCES
    used |= {f"source.{s}" for s in SOURCES} | {f"mode.{m}" for m in MERGE_MODES} | {f"status.{s}" for s in ("open", "applied", "rejected")}
    assert used and not used - set(i18n.LABELS), used - set(i18n.LABELS)
    assert i18n.when("zh", "2026-12-03T08:05:00+00:00").startswith("2026年12月")
    assert "Dec 2026" in i18n.when("en", "2026-12-03T08:05:00+00:00")
    assert i18n.age("en", 7200) == "2 hours ago" and i18n.age("zh", 7200) == "2 小时前"


@IN_PROCESS
def test_the_inbox_pages_through_many_proposals(vault, monkeypatch):
    """Two thousand open proposals are not one page of 1.2 MB: the inbox shows a page at a time
    (newest first) and counts them all."""
    from memrepo.review import writes
    from memrepo.ui import pages
    for k in range(5):
        writes.add(vault, {"id": f"mem_r{k}", "subject": "ops", "fact": f"rule.{k}", "kind": "constraint", "summary": f"rule {k}"}, "")
    monkeypatch.setattr(pages, "INBOX_PAGE", 2)
    _, client = signed_in(vault.root)
    first = client.get("/").text
    assert first.count('name="id"') == 2 and "prop_mem_r4" in first and "prop_mem_r2" not in first
    assert "Showing 1–2 of 5" in first and 'href="/?offset=2"' in first and '<span class="count">5</span>' in first
    last = client.get("/?offset=4").text
    assert last.count('name="id"') == 1 and "prop_mem_r0" in last and 'href="/?offset=2"' in last


@IN_PROCESS
def test_an_action_on_a_busy_vault_says_so_at_once_and_the_pages_stay_up(vault):
    """The server answers one request at a time: an approve waiting the whole lock timeout for
    a long CLI command (an import, a nightly run) froze every page of the window meanwhile."""
    import time

    from memrepo.review import writes
    r = writes.add(vault, {"id": "mem_r", "subject": "ops", "fact": "rule", "kind": "constraint", "summary": "rule"}, "")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom memrepo import api\n"
                               f"with api.Vault.find(explicit={str(vault.root)!r}) as v, v.lock():\n"
                               "    print('held', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True, env=person_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        guard, client = signed_in(vault.root)
        start = time.monotonic()
        page = client.post(f"/proposal/{r.proposal}/apply", data={"csrf": guard.csrf, "mode": "overwrite"}).text
        assert time.monotonic() - start < 6          # the lock timeout here is 10 s
        assert "busy" in page and r.proposal in page
    finally:
        holder.kill()
        holder.wait()


@IN_PROCESS
def test_a_refusal_speaks_the_browsers_language_too(vault):
    _, client = signed_in(vault.root, lang=None)
    wrong_host = client.get("/", headers={"Host": "evil.example:8765", "Accept-Language": "zh-CN"})
    client.cookies.clear()
    no_cookie = client.get("/", headers={"Accept-Language": "zh-CN"})
    for answer in (wrong_host, no_cookie):
        assert answer.status_code == 403 and 'lang="zh-CN"' in answer.text
        assert re.search(r'id="message">[^<]*[\u4e00-\u9fff]', answer.text), answer.text


@IN_PROCESS
def test_a_malformed_form_is_a_bad_request_not_a_server_error(vault):
    guard, client = signed_in(vault.root)
    answer = client.post("/bulk", content=f"csrf={guard.csrf}", headers={"Content-Type": "multipart/form-data"})
    assert answer.status_code == 400 and "boundary" in answer.text and "HTTPException" not in answer.text


@IN_PROCESS
def test_approving_with_every_memory_unticked_applies_none(vault, tmp_path):
    """A multi-memory proposal offers a box per memory ("only these"): a person who unticks them
    all and presses approve has chosen nothing; that must not apply the whole proposal."""
    import json
    import re

    from memrepo import api
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps({"id": f"mem_{k}", "summary": f"note {k}"}) + "\n" for k in "ab"), encoding="utf-8")
    pid = api.import_jsonl(vault, data, propose=True).proposal
    guard, client = signed_in(vault.root)
    page = client.get(f"/proposal/{pid}").text
    form = page[page.index('id="approve-form"'):page.index("</form>", page.index('id="approve-form"'))]
    assert form.count('name="only"') == 2
    sent = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)) | {"mode": "overwrite"}
    answer = client.post(f"/proposal/{pid}/apply", data=sent)        # what the browser sends: no box ticked
    assert api.get_proposal(vault, pid).status == "open", answer.text
    assert "at least one" in answer.text
    from memrepo.errors import UsageError
    with pytest.raises(UsageError):
        api.apply(vault, pid, only=[])                                   # the library's rule, not the page's
    ticked = client.post(f"/proposal/{pid}/apply", data=sent | {"only": ["mem_b"]})
    assert ticked.status_code == 200 and api.get_proposal(vault, pid).status == "applied"
    assert vault.get("mem_b").meta["status"] == "active"


def test_the_browser_is_opened_on_a_private_file_not_on_the_token_link(monkeypatch):
    """A browser started with the token link keeps it in its command line, which every user of
    the machine can read (ps, /proc/PID/cmdline): it is given a file only its owner can read,
    which sends it on to the link (as Jupyter does)."""
    import os
    import stat
    import webbrowser
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    from memrepo.ui import server
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda target, *a, **kw: opened.append(target) or True)
    url = "http://127.0.0.1:8123/?token=s3cret-token"
    folder = server.open_in_browser(url)
    try:
        [target] = opened
        assert "s3cret-token" not in target and target.startswith("file://")
        page = Path(url2pathname(urlsplit(target).path))
        assert stat.S_IMODE(os.stat(page).st_mode) == 0o600 and stat.S_IMODE(os.stat(page.parent).st_mode) == 0o700
        assert url in page.read_text(encoding="utf-8")
    finally:
        import shutil
        shutil.rmtree(folder)


def _start(vault_root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*MEMREPO, "--vault", str(vault_root), "ui", "--no-open", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=person_env())


def test_off_loopback_it_warns_and_ctrl_c_stops_it_cleanly(vault):
    proc = _start(vault.root, "--host", "127.0.0.2")
    first = proc.stdout.readline() + proc.stdout.readline()
    assert "http://127.0.0.2:" in first and "?token=" in first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "stopped" in out
    assert "warning: listening on 127.0.0.2" in err and "Traceback" not in err


def test_the_token_link_goes_on_to_the_same_page_as_it_was_written(vault):
    """The page that drops the token goes on to the path and the query as the browser sent them
    (escapes and repeated keys too) and can only point into this server."""
    import html
    import http.client
    import re
    proc = _start(vault.root)
    try:
        url = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", proc.stdout.readline() + proc.stdout.readline())
        port, token = int(url.group(1)), url.group(2)

        def location(target: str) -> str | None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            conn.request("GET", target)
            response = conn.getresponse()
            assert response.status == 200, (target, response.status)
            assert f"memrepo_ui_{port}={token}" in (response.getheader("set-cookie") or "")
            page = response.read().decode()
            conn.close()
            assert token not in page
            return html.unescape(re.search(r'http-equiv="refresh" content="0; url=([^"]*)"', page).group(1))
        assert location(f"/memories?q=%E4%B8%AD&token={token}&q=2") == "/memories?q=%E4%B8%AD&q=2"
        assert location(f"/memory/a%3Fb?token={token}") == "/memory/a%3Fb"
        assert location(f"/x%0d%0aSet-Cookie:%20a=b?token={token}") == "/x%0d%0aSet-Cookie:%20a=b"
        for target in (f"//evil.example/?token={token}", f"/%2F%2Fevil.example?token={token}", f"/\\evil.example?token={token}"):
            found = location(target)
            assert found.startswith("/") and found[1:2] not in ("/", "\\"), (target, found)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert "Traceback" not in err, err


def test_a_busy_port_or_a_bad_language_is_a_usage_error(vault):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = cli(vault.root, "ui", "--no-open", "--port", str(port))
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
    bad = cli(vault.root, "ui", "--no-open", "--lang", "fr")
    assert bad.returncode == 2 and "lang" in bad.stderr


def test_the_wheel_ships_the_templates_and_the_stylesheet(tmp_path):
    """Every asset comes from inside the package: nothing is fetched from a CDN."""
    root = Path(__file__).resolve().parent.parent
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
                            str(root)], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip()[-200:]}")
    [wheel] = tmp_path.glob("memrepo-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"memrepo/ui/static/style.css", "memrepo/ui/static/enhance.js", "memrepo/ui/templates/base.html",
            "memrepo/ui/templates/proposal.html"} <= names
    templates = [n for n in names if n.startswith("memrepo/ui/templates/")]
    text = "".join(zipfile.ZipFile(wheel).read(n).decode() for n in templates)
    assert "http://" not in text.replace("http://127.", "") and "https://" not in text and "//cdn" not in text
