"""pydantic-ai's AG-UI adapter on a FunctionModel: the web benchmark's baseline.

The model calls the tool `noop` once, then answers "ok" (the workload mux-web's side runs).
Usage: python pydantic_agui_server.py PORT
"""

import sys

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route


def respond(messages, info):
    if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
        return ModelResponse(parts=[TextPart("ok")])
    return ModelResponse(parts=[ToolCallPart("noop", {"n": 1})])


async def stream(messages, info):
    if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
        yield "ok"
    else:
        yield {0: DeltaToolCall(name="noop", json_args='{"n": 1}', tool_call_id="call_1")}


agent = Agent(FunctionModel(respond, stream_function=stream))


@agent.tool_plain
def noop(n: int) -> str:
    return "ok"


async def agui(request: Request):
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/agui", agui, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
