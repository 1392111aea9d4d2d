"""The MCP server: memrepo as the memory an agent runtime plugs in (interface layer, like the CLI)."""
