"""Retrieval: the Whoosh index, text analysis, ranking, usage statistics and the search service."""
