// A small MCP server on the official TypeScript SDK's low-level `Server`, for the tests of
// `tools/list` pagination and server logging (mux-mcp's `paging_and_logging.rs`).
//
// `tools/list` serves PAGES below one page per request: the first request (no cursor) gets
// page 1 and a `nextCursor`, each cursor names the next page, the last page has no
// `nextCursor`, and an unknown cursor is an invalid-params error. The tools are deliberately
// not in alphabetical order, so a client that sorts or drops a page is caught.
//
// Tools:
// - `log-messages` sends each `{level, data}` of its `messages` argument as
//   notifications/message (logger `paging-server`) before it answers `logged N`.
// - `cursors-seen` answers the cursors of every `tools/list` request so far, as a JSON array
//   (`null` for a request without one).
// - every other tool answers `<name>: <text>`.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const textSchema = {
  type: "object",
  properties: { text: { type: "string" } },
};

function plain(name, page) {
  return {
    name,
    description: `Answers its text; served on page ${page}.`,
    inputSchema: textSchema,
  };
}

const PAGES = [
  [plain("delta", 1), plain("alpha", 1), plain("kilo", 1)],
  [
    plain("charlie", 2),
    {
      name: "log-messages",
      description: "Sends each message as notifications/message, then answers.",
      inputSchema: {
        type: "object",
        properties: {
          messages: {
            type: "array",
            items: {
              type: "object",
              properties: { level: { type: "string" }, data: {} },
              required: ["level", "data"],
            },
          },
        },
        required: ["messages"],
      },
    },
    plain("bravo", 2),
  ],
  [
    {
      name: "cursors-seen",
      description: "The cursors of every tools/list request so far.",
      inputSchema: { type: "object", properties: {} },
    },
    plain("echo", 3),
  ],
];
const TOOLS = new Map(PAGES.flat().map((tool) => [tool.name, tool]));

const cursorsSeen = [];
const server = new Server(
  { name: "mux-paging-logging", version: "1.0.0" },
  { capabilities: { tools: {}, logging: {} } },
);

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const cursor = request.params?.cursor;
  cursorsSeen.push(cursor ?? null);
  let page = 0;
  if (cursor !== undefined) {
    const match = /^page-(\d+)$/.exec(cursor);
    page = match ? Number(match[1]) : -1;
    if (!(page >= 1 && page < PAGES.length)) {
      throw new McpError(ErrorCode.InvalidParams, `unknown cursor ${cursor}`);
    }
  }
  const result = { tools: PAGES[page] };
  if (page + 1 < PAGES.length) {
    result.nextCursor = `page-${page + 1}`;
  }
  return result;
});

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (!TOOLS.has(name)) {
    throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  }
  if (name === "log-messages") {
    for (const { level, data } of args.messages) {
      await server.sendLoggingMessage({ level, logger: "paging-server", data });
    }
    return { content: [{ type: "text", text: `logged ${args.messages.length}` }] };
  }
  if (name === "cursors-seen") {
    return { content: [{ type: "text", text: JSON.stringify(cursorsSeen) }] };
  }
  return { content: [{ type: "text", text: `${name}: ${args.text ?? ""}` }] };
});

await server.connect(new StdioServerTransport());
