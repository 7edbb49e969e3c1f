"""``cigeval mcp``: the judge as tools of a Model Context Protocol server (docs/mcp.md).

Agents (Claude Code, Cursor, any MCP client) and agentic image generators call
``judge_image`` (task, text conditions, images as paths under the server's image root or as
data URIs; the score, the sub-scores with their reasons, tools and evidence regions),
``list_tasks`` and ``probe_judge``. The tools' work is in :mod:`~cigeval.mcp_server.tools`
(no MCP import), the answers in :mod:`~cigeval.mcp_server.results`, the image root in
:mod:`~cigeval.mcp_server.images`, the server on the official ``mcp`` SDK in
:mod:`~cigeval.mcp_server.server` (the ``mcp`` extra: ``pip install 'cigeval[mcp]'``).
"""
