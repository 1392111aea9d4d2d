"""The page's words in English and Chinese, and dates as a reader of each expects them.

The people who supervise an agent's memory write it in both languages, so every label, date and
message of the UI exists in both. The language is ``--lang`` when given, else the browser's
``Accept-Language`` (the first of ``en``/``zh`` it prefers), else English. Text that comes from
the vault (summaries, bodies, reasons, the library's error messages) is shown as written.
"""
from __future__ import annotations

import datetime as dt

from memrepo.model import aware_time

LANGUAGES = ("en", "zh")

LABELS: dict[str, tuple[str, str]] = {
    "app": ("memrepo", "memrepo"),
    "nav.inbox": ("Inbox", "待审"),
    "checks.title": ("Recall checks: main now → after apply", "召回检查：当前主线 → 应用之后"),
    "checks.regressed": ("regressed: apply refuses it unless a reason is recorded (memrepo apply --accept-regression)",
                         "退化：除非记录原因，否则 apply 会拒绝（memrepo apply --accept-regression）"),
    "checks.skipped": ("Not run", "未运行"),
    "checks.all_pass": ("Every other check passes.", "其余检查均通过。"),
    "nav.memories": ("Memories", "记忆"),
    "nav.graph": ("Graph", "图谱"),
    "nav.distill": ("Distill", "提炼"),
    "reviewing_as": ("Reviewing as", "审阅人"),
    "read_only": ("Read-only: no action can change the vault", "只读：任何操作都不能修改记忆库"),
    "inbox.title": ("Waiting for review", "等待审阅"),
    "inbox.empty": ("Nothing waits for review.", "没有待审阅的提议。"),
    "inbox.counts": ("By source", "按来源"),
    "inbox.notices": ("Notices: citations of memories that are no longer active", "提醒：引用了已失效记忆的内容"),
    "inbox.no_notices": ("No notices.", "没有提醒。"),
    "inbox.nightly": ("Last nightly run", "最近一次夜间任务"),
    "inbox.no_nightly": ("No nightly run recorded yet ('memrepo schedule' installs one).",
                         "尚无夜间任务记录（用 'memrepo schedule' 安装）。"),
    "inbox.bulk": ("With the checked proposals", "对勾选的提议"),
    "inbox.select_all": ("Select all", "全选"),
    "source.person": ("person", "人工"),
    "source.agent": ("agent", "智能体"),
    "source.distill": ("distill", "提炼"),
    "source.arbitration": ("arbitration", "仲裁"),
    "source.clean-up": ("clean-up", "清理"),
    "col.proposal": ("Proposal", "提议"),
    "col.source": ("Source", "来源"),
    "col.about": ("Subject / fact", "主题 / 事实"),
    "col.summary": ("Summary", "摘要"),
    "col.why": ("Why it needs review", "需要审阅的原因"),
    "col.agent": ("Agent / author", "智能体 / 作者"),
    "col.age": ("Waiting", "等待时长"),
    "col.id": ("Id", "编号"),
    "col.layer": ("Layer", "层"),
    "col.kind": ("Kind", "类型"),
    "col.status": ("Status", "状态"),
    "col.created": ("Created", "创建时间"),
    "col.score": ("Score", "得分"),
    "col.keyword": ("Keyword", "关键词"),
    "col.semantic": ("Semantic", "语义"),
    "action.approve": ("Approve", "批准"),
    "action.reject": ("Reject", "拒绝"),
    "action.rollback": ("Roll back", "回滚"),
    "action.search": ("Search", "搜索"),
    "action.filter": ("Filter", "筛选"),
    "action.show": ("Show", "显示"),
    "action.explain": ("Explain now (dry run: changes nothing)", "立即解释（试运行：不做任何修改）"),
    "mode": ("Mode", "方式"),
    "mode.overwrite": ("overwrite: supersede the old version", "覆盖：取代旧版本"),
    "mode.append": ("append: keep both when they do not conflict", "追加：不冲突时保留两者"),
    "only": ("Apply only the checked memories", "只应用勾选的记忆"),
    "reason": ("Reason", "原因"),
    "reason.approve": ("Reason (optional)", "原因（可选）"),
    "reason.reject": ("Reason (required to reject)", "原因（拒绝时必填）"),
    "reason.rollback": ("Reason (required)", "原因（必填）"),
    "card.title": ("Review card", "审阅卡片"),
    "card.triggered": ("Triggered by", "触发者"),
    "card.why": ("Why it needs review", "需要审阅的原因"),
    "card.supersedes": ("Supersedes", "取代"),
    "card.nothing": ("nothing (no active memory for this fact)", "无（该事实没有生效的记忆）"),
    "card.current": ("Current value", "当前值"),
    "card.proposed": ("Proposed value", "提议值"),
    "card.evidence": ("Evidence", "证据"),
    "card.no_evidence": ("none given", "未提供"),
    "card.stored": ("stored tool result", "已存储的工具结果"),
    "card.affects": ("Affects", "影响"),
    "card.cited_by": ("cited by", "被引用于"),
    "card.rollback_point": ("Rollback point", "回滚点"),
    "card.delete": ("Delete", "删除"),
    "card.source": ("source", "来源"),
    "card.session": ("session", "会话"),
    "card.links": ("Links", "链接"),
    "card.text": ("The card as written in the proposal commit", "提议提交中记录的卡片原文"),
    "diff.title": ("What changes", "变更内容"),
    "diff.against": ("against", "对比"),
    "diff.new": ("new memory", "新记忆"),
    "diff.fields": ("Front matter", "元数据"),
    "diff.bookkeeping": ("Record-keeping fields", "记录字段"),
    "diff.body": ("Body (word diff)", "正文（逐词对比）"),
    "diff.same_body": ("The body is unchanged.", "正文未改变。"),
    "diff.folded": ("unchanged lines", "行未改变"),
    "diff.raw": ("Raw branch diff", "分支原始差异"),
    "diff.before": ("before", "之前"),
    "diff.after": ("after", "之后"),
    "diff.field": ("field", "字段"),
    "pr.open": ("Open a pull request", "创建合并请求"),
    "status.open": ("open", "待审"),
    "status.applied": ("applied", "已应用"),
    "status.rejected": ("rejected", "已拒绝"),
    "outcome.applied": ("Applied in commit", "已应用，提交"),
    "outcome.rejected": ("Rejected, recorded in commit", "已拒绝，记录于提交"),
    "outcome.rolled_back": ("Rolled back in commit", "已回滚，提交"),
    "outcome.failed": ("Not done", "未完成"),
    "outcome.closed_by": ("Closed by", "关闭者"),
    "memories.title": ("Memories", "记忆"),
    "memories.query": ("Search (keywords and meaning, Chinese and English)", "搜索（关键词与语义，中英文皆可）"),
    "memories.nothing": ("Nothing relevant.", "没有相关的记忆。"),
    "memories.none": ("No memory matches.", "没有匹配的记忆。"),
    "memories.showing": ("Showing {start}–{end} of {total}", "第 {start}–{end} 条，共 {total} 条"),
    "memories.hits": ("{n} hits (intent: {intent}, semantic: {semantic})", "{n} 条结果（意图：{intent}，语义：{semantic}）"),
    "memories.prev": ("Newer", "较新"),
    "memories.next": ("Older", "较旧"),
    "any": ("any", "全部"),
    "scope": ("Agent scope", "智能体范围"),
    "scope.shared": ("shared pool", "共享池"),
    "filter.tag": ("Tag", "标签"),
    "filter.subject": ("Subject", "主题"),
    "memory.history": ("History", "历史"),
    "memory.why": ("Why is it active?", "为什么生效？"),
    "memory.was_active": ("Not active now; it was made active by:", "当前未生效；它曾由以下提交生效："),
    "memory.not_active": ("It is not active: see its history.", "它当前未生效：请查看历史。"),
    "memory.citations": ("Citations", "引用"),
    "memory.cited_by": ("Cited by", "被引用"),
    "memory.cites": ("Cites", "引用了"),
    "memory.neighbours": ("Neighbours", "相邻记忆"),
    "memory.front_matter": ("Front matter", "元数据"),
    "memory.none": ("none", "无"),
    "memory.graph": ("See it in the graph", "在图谱中查看"),
    "timeline.undone_by": ("undone by", "已被撤销，撤销提交"),
    "timeline.undoes": ("undoes", "撤销了"),
    "timeline.reviewer": ("reviewer", "审阅人"),
    "timeline.proposal": ("proposal", "提议"),
    "graph.title": ("Memory graph", "记忆图谱"),
    "graph.around": ("Around a memory id or a subject", "围绕某个记忆编号或主题"),
    "graph.cut": ("Showing the {shown} strongest of {total} neighbours.", "仅显示 {total} 个相邻记忆中最强的 {shown} 个。"),
    "graph.legend.layer": ("Colour: layer", "颜色：层"),
    "graph.legend.edges": ("Line: kind of edge, width: strength", "线型：边的类型，粗细：强度"),
    "graph.legend.cold": ("Faded and dashed: decay would archive it; hollow: not active; size: activity",
                          "淡化虚线：衰减将归档；空心：未生效；大小：活跃度"),
    "graph.pick": ("Give a memory id or a subject.", "请输入记忆编号或主题。"),
    "distill.title": ("Distill: patterns proposed for long-term memory", "提炼：提议进入长期记忆的模式"),
    "distill.none": ("No distill run recorded yet ('memrepo distill' or the nightly job runs one).",
                     "尚无提炼记录（运行 'memrepo distill' 或夜间任务）。"),
    "distill.run": ("Run of", "运行于"),
    "distill.candidates": ("Candidates and why each was kept", "候选模式及保留原因"),
    "distill.near": ("Near misses: groups that were not kept, and why", "落选：未被保留的分组及原因"),
    "distill.no_near": ("No near misses recorded for this run (explain it to see them).", "本次运行未记录落选项（点击解释查看）。"),
    "distill.capped": ("Capped: wait for the next run", "超出上限：等待下次运行"),
    "distill.members": ("evidence", "证据"),
    "distill.seen": ("seen {n} times on", "出现 {n} 次，日期"),
    "error.title": ("Something stopped this", "操作未完成"),
    "error.forbidden": ("Open the link 'memrepo ui' printed (it carries the access token).",
                        "请打开 'memrepo ui' 打印的链接（其中带有访问令牌）。"),
    "error.host": ("This page was asked for under another address than the one 'memrepo ui' serves; open the link it printed.",
                   "此页面是通过另一个地址请求的，而不是 'memrepo ui' 所服务的地址；请打开它打印的链接。"),
    "error.csrf": ("This form is stale or did not come from this page; reload the page and try again.",
                   "表单已过期或不是来自本页面；请刷新页面后重试。"),
    "error.read_only": ("This window is read-only ('memrepo ui --read-only').", "此窗口为只读（'memrepo ui --read-only'）。"),
    "error.not_found": ("Not found", "未找到"),
    "error.conflict": ("Conflict", "冲突"),
    "error.usage": ("Cannot do that", "无法执行"),
    "ago": ("{n} {unit} ago", "{n} {unit}前"),
    "unit.s": ("seconds", "秒"), "unit.m": ("minutes", "分钟"), "unit.h": ("hours", "小时"), "unit.d": ("days", "天"),
    "changed": ("changes made", "有修改"),
    "unchanged": ("nothing changed", "无修改"),
    "back": ("Back", "返回"),
}


def choose(accept_language: str | None, forced: str | None = None) -> str:
    """``forced`` when given; else the browser's most preferred of en/zh; else en."""
    if forced in LANGUAGES:
        return forced
    ranked = []
    for n, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and q > 0:
            ranked.append((-q, n, primary))
    return min(ranked)[2] if ranked else "en"


def text(lang: str, key: str, **values: object) -> str:
    """The label ``key`` in ``lang`` (the key itself when unknown, so a gap shows, never breaks)."""
    pair = LABELS.get(key)
    if pair is None:
        return key
    words = pair[1] if lang == "zh" else pair[0]
    return words.format(**values) if values else words


def when(lang: str, iso: object) -> str:
    """A time from the vault in the reader's local time zone, in their language's style."""
    moment = aware_time(iso)
    if moment is None:
        return str(iso or "")
    local = moment.astimezone()
    if lang == "zh":
        return f"{local.year}年{local.month}月{local.day}日 {local:%H:%M}"
    return f"{local.day} {local:%b %Y %H:%M}"


def age(lang: str, seconds: int) -> str:
    """How long ago, in the largest whole unit: '3 hours ago' / '3 小时前'."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return text(lang, "ago", n=seconds // size, unit=text(lang, f"unit.{unit}"))
    return text(lang, "ago", n=max(seconds, 0), unit=text(lang, "unit.s"))


def since(lang: str, iso: object, now: dt.datetime | None = None) -> str:
    moment = aware_time(iso)
    if moment is None:
        return ""
    return age(lang, int(((now or dt.datetime.now(dt.UTC)) - moment).total_seconds()))
