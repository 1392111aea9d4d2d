"""``memrepo ui`` without a browser: the guard's rules, the language choice, the command as a
process (a warning off loopback, Ctrl-C, a busy port, a bad option) and the wheel's assets."""
from __future__ import annotations

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
