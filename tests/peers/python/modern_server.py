"""A small MCP server of our own, written with the Python SDK (`mcp`), for mux-mcp's interop
tests: it speaks 2026-07-28 (the `server/discover` lifecycle) as well as older versions.

Tools: `add` (typed arguments and structured output), `shout` (text), `slow` (progress
notifications, then a result), `effect_key` (echoes the effect key of the request's
`_meta`), `fail` (an `isError` result), `greet` (asks the client for a
name by elicitation: an `input_required` round on 2026-07-28, SEP-2322), `add_later` and
`drop_later` (add and remove the tool `later`, then announce the change; on 2026-07-28 the SDK
delivers `notifications/tools/list_changed` only on `subscriptions/listen` streams).
"""

import asyncio
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
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
def effect_key(ctx: Context) -> str:
    """Returns the effect key and attempt the request's `_meta` carried."""
    meta = ctx.request_context.meta or {}
    return f"{meta.get('dev.mux/effectKey')} {meta.get('dev.mux/attempt')}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Whom should I greet?", Name)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Asks the client whom to greet, then greets them."""
    return f"Hello, {who.name}!"


def later(text: str) -> str:
    """Echoes text; listed only after `add_later`."""
    return f"later: {text}"


later_listed = False


@server.tool()
async def add_later(ctx: Context) -> str:
    """Adds the tool `later` and announces the change."""
    global later_listed
    if not later_listed:
        server.add_tool(later)
        later_listed = True
    await ctx.notify_tools_changed()
    return "added"


@server.tool()
async def drop_later(ctx: Context) -> str:
    """Removes the tool `later` and announces the change."""
    global later_listed
    if later_listed:
        server.remove_tool("later")
        later_listed = False
    await ctx.notify_tools_changed()
    return "dropped"


if __name__ == "__main__":
    server.run()
