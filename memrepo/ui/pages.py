"""The pages: each one a few calls of :mod:`memrepo.api` and a template.

Every read is an api call and every action is the api call the CLI makes (``apply``, ``reject``,
``rollback``), so the browser can do nothing the command line could not. An action answers
with a redirect (post/redirect/get) to the page it came from, which shows the commit it made or
the library's message saying why nothing changed. A ``MemrepoError`` anywhere becomes a page
with its message and an HTTP status matching its exit code, never a traceback.
"""
from __future__ import annotations

import secrets
import sys
import traceback
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from memrepo import api
from memrepo.errors import Conflict, MemrepoError, NotFound, UsageError
from memrepo.model import KINDS, LAYERS, MERGE_MODES, STATUSES
from memrepo.ui import i18n, render
from memrepo.ui.security import Guard

PAGE_SIZE = 50
INBOX_PAGE = 100           # open proposals a page of the inbox lists (the counts cover them all)
# Seconds an action waits for the vault's lock: the server answers one request at a time, so an
# action waiting the whole lock timeout behind a long CLI command would freeze every page.
ACTION_LOCK_WAIT = 2.0
SEARCH_LIMIT = 50
# The proposal page's sections, in order: one template each (templates/section_<name>.html)
# taking the page's values. A new section (a check delta, say) is one template and one name here.
PROPOSAL_SECTIONS = ("outcome", "card", "checks", "diff", "actions")
_STATUS_OF = {NotFound: 404, Conflict: 409, UsageError: 400}


class Window:
    """The pages of one server run over one vault."""

    def __init__(self, root: Path, guard: Guard, *, lang: str | None = None):
        self.root, self.guard, self.lang = root, guard, lang
        self.results: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.graphs: OrderedDict[tuple, Any] = OrderedDict()
        self._reviewer: str | None = None

    # ---------------------------------------------------------------- plumbing

    @contextmanager
    def vault(self, *, locking: bool = False):
        """The vault for one request; ``locking``: the request takes the vault's lock (an action,
        a dry run), and waits for it at most :data:`ACTION_LOCK_WAIT` seconds."""
        with api.Vault.find(explicit=self.root) as vault:
            if locking:
                vault.lock_wait = ACTION_LOCK_WAIT
            yield vault

    def language(self, request) -> str:
        return i18n.choose(request.headers.get("accept-language"), self.lang)

    def html(self, request, template: str, status: int = 200, **values):
        from starlette.responses import HTMLResponse
        lang = self.language(request)
        body = render.page(template, lang=lang, t=lambda key, **kw: i18n.text(lang, key, **kw),
                           when=lambda iso: i18n.when(lang, iso), since=lambda iso: i18n.since(lang, iso),
                           age=lambda s: i18n.age(lang, s), csrf=self.guard.csrf, read_only=self.guard.read_only,
                           reviewer=self.reviewer(), path=request.url.path, **values)
        return HTMLResponse(body, status_code=status)

    def reviewer(self) -> str:
        """Who apply, reject and rollback record (the vault's git identity), asked once."""
        if self._reviewer is None:
            try:
                with self.vault() as vault:
                    self._reviewer = api.reviewer_name(vault)
            except MemrepoError:
                return ""
        return self._reviewer

    def error(self, request, e: BaseException):
        if isinstance(e, MemrepoError):
            status = next((code for cls, code in _STATUS_OF.items() if isinstance(e, cls)), 503 if e.exit_code == 75 else 400)
            kind = "error.not_found" if status == 404 else "error.conflict" if status == 409 else "error.usage"
            return self.html(request, "message.html", status=status, kind=kind, message=str(e),
                             problems=[str(p) for p in getattr(e, "problems", ())])
        refused = getattr(e, "status_code", None)
        if isinstance(refused, int) and 400 <= refused < 500:   # Starlette's answer to a malformed request
            return self.html(request, "message.html", status=refused, kind="error.usage",
                             message=str(getattr(e, "detail", e)), problems=[])
        traceback.print_exc(file=sys.stderr)   # for the person running the server; the page says what failed
        return self.html(request, "message.html", status=500, kind="error.title",
                         message=f"{type(e).__name__}: {e}", problems=[])

    def remember(self, outcome: dict[str, Any]) -> str:
        key = secrets.token_urlsafe(8)
        self.results[key] = outcome
        while len(self.results) > 100:
            self.results.popitem(last=False)
        return key

    async def posted(self, request) -> tuple[Any, Any]:
        """The form of a POST, or the response refusing it (read-only, or no valid CSRF token)."""
        form = await request.form()
        why = self.guard.check_form(form)
        if why is None:
            return form, None
        key = "error.read_only" if why == "read_only" else "error.csrf"
        return None, self.html(request, "message.html", status=403, kind="error.title",
                               message=i18n.text(self.language(request), key), problems=[])

    def redirect(self, url: str):
        from starlette.responses import RedirectResponse
        return RedirectResponse(url, status_code=303)

    # ---------------------------------------------------------------- inbox

    def inbox(self, request):
        with self.vault() as vault:
            box = api.inbox(vault)
        done = self.results.get(request.query_params.get("done", ""))
        start, total = _int(request.query_params.get("offset")), len(box.items)
        page = {"items": box.items[start:start + INBOX_PAGE], "start": start, "total": total,
                "newer": max(start - INBOX_PAGE, 0) if start else None,
                "older": start + INBOX_PAGE if start + INBOX_PAGE < total else None}
        return self.html(request, "inbox.html", box=box, page=page, done=done, modes=MERGE_MODES)

    async def bulk(self, request):
        form, refused = await self.posted(request)
        if refused:
            return refused
        ids = form.getlist("id")
        with self.vault(locking=True) as vault:
            if form.get("action") == "reject":
                outcomes = api.reject_many(vault, ids, why=str(form.get("reason", "")))
            else:
                outcomes = api.apply_many(vault, ids, mode=str(form.get("mode") or "overwrite"),
                                          why=str(form.get("reason", "")))
        return self.redirect(f"/?done={self.remember({'outcomes': outcomes})}")

    # ---------------------------------------------------------------- a proposal

    def proposal(self, request):
        pid = request.path_params["pid"]
        with self.vault() as vault:
            view = api.review_view(vault, pid)
        done = self.results.get(request.query_params.get("done", ""))
        sections = [s for s in PROPOSAL_SECTIONS if s != "actions" or (view.proposal.status == "open" and not self.guard.read_only)]
        return self.html(request, "proposal.html", view=view, done=done, sections=sections, modes=MERGE_MODES,
                         choose=_offers_choice(view.proposal.ids))

    async def apply(self, request):
        form, refused = await self.posted(request)
        if refused:
            return refused
        pid = request.path_params["pid"]
        only = [str(i) for i in form.getlist("only")]
        with self.vault(locking=True) as vault:
            carried = api.get_proposal(vault, pid).ids
            # the page offered a box per memory: none ticked chooses none (the library refuses it)
            chosen = only if _offers_choice(carried) and set(only) != set(carried) else None
            outcomes = api.apply_many(vault, [pid], mode=str(form.get("mode") or "overwrite"), only=chosen,
                                      why=str(form.get("reason", "")))
        return self.redirect(f"/proposal/{pid}?done={self.remember({'outcomes': outcomes})}")

    async def reject(self, request):
        form, refused = await self.posted(request)
        if refused:
            return refused
        pid = request.path_params["pid"]
        with self.vault(locking=True) as vault:
            outcomes = api.reject_many(vault, [pid], why=str(form.get("reason", "")))
        return self.redirect(f"/proposal/{pid}?done={self.remember({'outcomes': outcomes})}")

    def raw_diff(self, request):
        pid = request.path_params["pid"]
        with self.vault() as vault:
            p = api.get_proposal(vault, pid)
            text = api.branch_diff(vault, pid)
        return self.html(request, "raw.html", proposal=p, text=text)

    # ---------------------------------------------------------------- memories

    def memories(self, request):
        q = request.query_params
        query = q.get("q", "").strip()
        filters = {k: q.get(k) or None for k in ("layer", "kind", "status", "subject", "tag")}
        agent = q.get("agent") or None
        with self.vault() as vault:
            agents = api.agents_with_private_memories(vault)
            if query:
                result, report = api.search_visible(vault, query, agent=agent, **api.search_filters(filters, SEARCH_LIMIT))
                hits = [h for h in result.hits if not filters["status"] or h.status == filters["status"]]
                values = {"result": result, "hits": hits, "notice": report.notice, "page": None}
            else:
                page = api.browse(vault, offset=_int(q.get("offset")), limit=PAGE_SIZE, agent=agent, **filters)
                values = {"result": None, "hits": [], "notice": None, "page": page}
        kept = {**{k: v for k, v in filters.items() if v}, **({"agent": agent} if agent else {})}
        pager_query = urlencode(kept) + "&" if kept else ""
        return self.html(request, "memories.html", query=query, filters=filters, agent=agent or "", agents=agents,
                         pager_query=pager_query,
                         layers=LAYERS, kinds=KINDS, statuses=STATUSES, **values)

    def memory(self, request):
        mid = request.path_params["mid"]
        agent = request.query_params.get("agent") or None
        with self.vault() as vault:
            try:
                view = api.memory_view(vault, mid, agent=agent)
            except NotFound:
                pending = self._carrying(vault, mid)   # not on main yet: show the proposal that carries it
                if pending is None:
                    raise
                return self.redirect(f"/proposal/{pending}")
        done = self.results.get(request.query_params.get("done", ""))
        return self.html(request, "memory.html", view=view, body=render.markdown(view.memory.body), done=done,
                         agent=agent or "")

    @staticmethod
    def _carrying(vault, memory_id: str) -> str | None:
        try:
            return api.get_proposal(vault, memory_id).id
        except MemrepoError:
            return None

    async def rollback(self, request):
        form, refused = await self.posted(request)
        if refused:
            return refused
        mid = request.path_params["mid"]
        reason = str(form.get("reason", ""))
        with self.vault(locking=True) as vault:
            try:
                outcome = {"rolled_back": api.rollback_with_reason(vault, mid, reason=reason)}
            except MemrepoError as e:
                outcome = {"error": str(e)}
        return self.redirect(f"/memory/{mid}?done={self.remember(outcome)}")

    # ---------------------------------------------------------------- graph and distill

    def graph(self, request):
        q = request.query_params
        memory_id, subject = q.get("id") or None, q.get("subject") or None
        limit = min(max(_int(q.get("limit"), 24), 1), 80)
        svg = view = None
        if memory_id or subject:
            with self.vault() as vault:
                key = (vault.head(), memory_id, None if memory_id else subject, limit)
                if key not in self.graphs:
                    view = api.graph_around(vault, memory_id=memory_id, subject=None if memory_id else subject, limit=limit)
                    self.graphs[key] = (view, api.graph_svg(view, href="/memory/"))
                    while len(self.graphs) > 20:
                        self.graphs.popitem(last=False)
                view, svg = self.graphs[key]
        from markupsafe import Markup
        return self.html(request, "graph.html", view=view, svg=Markup(svg) if svg else None, memory_id=memory_id or "",
                         subject=subject or "", limit=limit, legend=api.graph_legend())

    def distill(self, request):
        explain = request.query_params.get("explain") == "1"
        with self.vault(locking=True) as vault:
            run = api.distill(vault, dry_run=True, explain=True).as_dict() if explain else api.last_distill(vault)
        return self.html(request, "distill.html", run=run, explained=explain)


def _offers_choice(ids) -> bool:
    """Whether a proposal's page offers a box per memory ("only these"): it carries several."""
    return len(ids) > 1


def _int(text: str | None, default: int = 0) -> int:
    try:
        return max(int(text or default), 0)
    except ValueError:
        return default
