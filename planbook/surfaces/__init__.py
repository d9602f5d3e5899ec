"""The surfaces: magics, the review panel, the in-cell review's comm, the CLI and the MCP server;
each parses, calls the Session's public API and renders its events."""
