"""planbook as an MCP server: any agent reads notebooks freely and proposes every change as a
step the person reviews; no tool approves, rejects or changes the mode.

``server.serve_stdio(target)`` serves a notebook or a folder over stdio (``planbook mcp``;
``python -m planbook.surfaces.mcp TARGET``). The ``mcp`` SDK is an optional dependency
(``pip install planbook[mcp]``): it is imported only below this package, never by ``import
planbook``.
"""
