"""A search's request and answer as plain data: a query checked from keyword options or a
``--queries`` line, and a result as the JSON the CLI and the MCP server return."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import model
from memrepo.errors import InvalidData, Problem, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.ranking import Hit, SearchQuery, SearchResult

QUERY_FILTERS = ("subject", "layer", "kind", "tag", "since", "limit", "deep", "history", "advanced", "intent")
ADVANCED_WORD_CHARS = 1000  # Whoosh's query parser takes time quadratic in a word's length


def make_query(text: str, **filters: Any) -> SearchQuery:
    """A checked search query: ``filters`` are the ``QUERY_FILTERS`` options (None: not given)."""
    from memrepo.retrieval.ranking import SearchQuery
    unknown = set(filters) - set(QUERY_FILTERS)
    if unknown:
        raise UsageError(f"unknown search option(s): {', '.join(sorted(unknown))}; use {', '.join(QUERY_FILTERS)}")
    if not isinstance(text, str):
        raise UsageError("'query' must be a string")
    clean = {k: v for k, v in filters.items() if v is not None}
    for name in ("layer", "kind"):
        model.check_choice(name, clean.get(name))
    model.parse_when("since", clean.get("since"))
    model.check_choice("intent", clean.get("intent"), model.INTENTS)
    if "limit" in clean and (not isinstance(clean["limit"], int) or clean["limit"] < 1):
        raise UsageError("'limit' must be a positive integer")
    longest = max(map(len, text.split()), default=0) if clean.get("advanced") else 0
    if longest > ADVANCED_WORD_CHARS:  # 30,000 characters took 10 s and held a shared server
        raise UsageError(f"an --advanced query takes words of up to {ADVANCED_WORD_CHARS:,} characters (this one has "
                         f"{longest:,}); search without --advanced for long text")
    return SearchQuery(text=text, **clean)


def read_queries(path: Path) -> list[tuple[Any, SearchQuery]]:
    """(qid, SearchQuery) per line of a batch file. The file is input data: every bad line is
    a problem naming its number (InvalidData, exit 5), in line order, and nothing is searched."""
    from memrepo.store.jsontext import loads
    out, problems = [], []
    for n, line in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = loads(line, where="the line")
            if not isinstance(record, dict) or "query" not in record:
                raise ValueError("each line must be an object with a 'query'")
            qid = record.pop("qid", None)
            text = record.pop("query")
            record.pop("session", None)
            out.append((qid, make_query(text, **record)))
        except (ValueError, UsageError) as e:
            problems.append(Problem(f"{path}:line {n}", "(line)", str(e)))
    if problems:
        raise InvalidData(problems, "no query was run; fix these lines of the --queries file")
    return out


def hit_dict(hit: Hit) -> dict[str, Any]:
    """A hit as JSON."""
    data = asdict(hit)
    data.pop("body", None)  # the snippet stands for it; memrepo show / memory_get give the whole memory
    data["tags"] = list(data.get("tags") or ())
    return data


def result_dict(result: SearchResult) -> dict[str, Any]:
    """A search result as JSON (``memrepo search --json``, the MCP ``memory_search`` tool)."""
    return {"query": result.query, "hits": [hit_dict(h) for h in result.hits],
            "nothing_relevant": result.nothing_relevant, "intent": result.intent,
            "semantic": result.semantic,
            **({"semantic_progress": result.semantic_progress} if result.semantic_progress else {})}
