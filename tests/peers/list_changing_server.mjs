// A small MCP server on the official TypeScript SDK whose tool list changes on request, for
// the tests of tools that come and go (mux-orchestrator's `mcp_servers.rs`).
//
// Tools: `add-tool` registers `added-later` and `remove-tool` removes it; the SDK announces
// each change with notifications/tools/list_changed.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "mux-list-changing", version: "1.0.0" });
let added = null;

server.registerTool(
  "add-tool",
  { description: "Adds the tool `added-later`.", inputSchema: {} },
  async () => {
    if (!added) {
      added = server.registerTool(
        "added-later",
        {
          description: "Echoes text; exists only after `add-tool`.",
          inputSchema: { text: z.string() },
        },
        async ({ text }) => ({ content: [{ type: "text", text: `later: ${text}` }] }),
      );
    }
    return { content: [{ type: "text", text: "added" }] };
  },
);

server.registerTool(
  "remove-tool",
  { description: "Removes the tool `added-later`.", inputSchema: {} },
  async () => {
    if (added) {
      added.remove();
      added = null;
    }
    return { content: [{ type: "text", text: "removed" }] };
  },
);

await server.connect(new StdioServerTransport());
