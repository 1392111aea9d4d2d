"""The command line: the typer app, rendering, and the entry point git hooks call.

Nothing is imported here: the hook entry point must not pay for typer.
"""
