"""A small MCP server of our own, written with the Python SDK (`mcp`), for mux-mcp's interop
tests: it speaks 2026-07-28 (the `server/discover` lifecycle) as well as older versions.

Tools: `add` (typed arguments and structured output), `shout` (text), `slow` (progress
notifications, then a result), `fail` (an `isError` result).
"""

import asyncio

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("mux-test-modern")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Returns the text in upper case."""
    return text.upper()


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress for each step, then finishes."""
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        await ctx.report_progress(step, steps)
    return f"done after {steps} steps"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


if __name__ == "__main__":
    server.run()
