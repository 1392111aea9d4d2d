"""``memrepo ui``: a person's window on the vault, a local web page over :mod:`memrepo.api`.

An interface like the command line and the MCP server: it renders what the api returns and
calls the same functions the CLI calls. Its web stack is imported only when the command runs.
"""
