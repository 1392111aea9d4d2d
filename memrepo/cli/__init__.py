"""The command line: one way in (``main``), the typer app (``app``, ``commands/``), the resident
server that answers the per-turn commands warm (``client``, ``server``), and git's hook entry
point (``hook_entry``).

Nothing is imported here: the entry point and the hook entry point must not pay for typer.
"""
