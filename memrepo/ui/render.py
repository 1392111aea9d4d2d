"""Turning what :mod:`memrepo.api` returns into HTML: templates that escape, markdown that escapes.

Jinja2 autoescapes every value a template prints, so a summary, a reason or an id holding
``<script>`` is shown as text. A memory's body is markdown rendered by markdown-it-py with raw
HTML turned off: ``<script>`` and ``<img onerror=...>`` in a body come out as text; images are
off too (a body cannot make the browser fetch anything); ``javascript:`` links are refused by
markdown-it's link check. ``[[id]]`` wikilinks become links to that memory's page. Templates
only lay values out; what to show is decided in :mod:`memrepo.ui.pages` and the library.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
_WIKILINK = re.compile(r"\[\[([A-Za-z0-9][A-Za-z0-9_.-]{0,127})(?:\|([^\[\]\n]+))?\]\]")


@lru_cache(maxsize=1)
def environment():
    from jinja2 import ChainableUndefined, Environment, FileSystemLoader, select_autoescape
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["highlighted"] = highlighted
    return env


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")

    def link_open(self, tokens, idx, options, env):
        tokens[idx].attrSet("rel", "noopener noreferrer")
        return self.renderToken(tokens, idx, options, env)
    md.add_render_rule("link_open", link_open)
    md.inline.ruler.before("link", "wikilink", _wikilink)
    return md


def _wikilink(state, silent: bool) -> bool:
    """``[[id]]`` or ``[[id|label]]`` in running text as a link to that memory's page: an
    inline rule, so code spans and code blocks (``lst[[1]]``) stay as written."""
    found = _WIKILINK.match(state.src, state.pos, state.posMax) if state.src.startswith("[[", state.pos) else None
    if found is None:
        return False
    if not silent:
        state.push("link_open", "a", 1).attrs = {"href": f"/memory/{found.group(1)}"}
        state.push("text", "", 0).content = found.group(2) or found.group(1)
        state.push("link_close", "a", -1)
    state.pos = found.end()
    return True


def markdown(body: str) -> Markup:
    """A memory body as HTML: raw HTML escaped, no images, wikilinks to memory pages."""
    return Markup(_markdown().render(body or ""))


def highlighted(snippet: str) -> Markup:
    """A search snippet with its ``**matched**`` words marked (everything else escaped)."""
    parts = (snippet or "").split("**")
    if len(parts) % 2 == 0:   # an unpaired marker: show the text as it is
        return Markup.escape(snippet)
    return Markup("").join(Markup("<mark>{}</mark>").format(p) if n % 2 else Markup.escape(p) for n, p in enumerate(parts))


def page(template: str, **values) -> str:
    return environment().get_template(template).render(**values)
