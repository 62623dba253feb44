"""The programs behind an eval suite's hermetic tools: a stdio MCP server and a command shim.

Both run as the agent's children, so each is a standalone script (copied into a
per-run folder, which a sandbox shows read-only) and imports nothing of waza.
"""
