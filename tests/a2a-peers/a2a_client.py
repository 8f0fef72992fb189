"""The official A2A Python SDK (a2a-sdk 1.x) as a client of a mux A2A server.

Usage: python a2a_client.py URL

Runs every scenario against the example server (mux's quickstart agent, offline) and
prints one JSON report on stdout for the Rust test to check: card discovery, send, stream,
get, list, an input-required approval answered by the client, cancel, and subscribe after
a dropped stream.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)


def request(text, task_id=None):
    message = Message(
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        message_id=str(uuid.uuid4()),
    )
    if task_id:
        message.task_id = task_id
    return SendMessageRequest(message=message)


def kind(item):
    for field in ("task", "message", "status_update", "artifact_update"):
        if item.HasField(field):
            return field
    return "none"


def state_of(item):
    if item.HasField("task"):
        return TaskState.Name(item.task.status.state)
    if item.HasField("status_update"):
        return TaskState.Name(item.status_update.status.state)
    return None


def task_id_of(item):
    if item.HasField("task"):
        return item.task.id
    if item.HasField("status_update"):
        return item.status_update.task_id
    if item.HasField("artifact_update"):
        return item.artifact_update.task_id
    return None


async def collect(stream, limit=None):
    """The items of a stream: kinds, states, the task id, the last answer chunk."""
    kinds, states, task_id, answer = [], [], None, None
    async for item in stream:
        kinds.append(kind(item))
        state = state_of(item)
        if state:
            states.append(state)
        task_id = task_id or task_id_of(item)
        if item.HasField("artifact_update"):
            answer = "".join(p.text for p in item.artifact_update.artifact.parts)
        if item.HasField("task") and item.task.artifacts:
            answer = "".join(p.text for p in item.task.artifacts[0].parts)
        if limit and len(kinds) >= limit:
            break
    return {"kinds": kinds, "states": states, "task_id": task_id, "answer": answer}


async def main(url):
    report = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        report["card"] = {
            "name": card.name,
            "protocol_version": card.supported_interfaces[0].protocol_version,
            "binding": card.supported_interfaces[0].protocol_binding,
            "streaming": card.capabilities.streaming,
            "push": card.capabilities.push_notifications,
            "skills": [s.description for s in card.skills],
        }
    blocking = await ClientFactory(ClientConfig(streaming=False)).create_from_url(url)
    streaming = await ClientFactory(ClientConfig(streaming=True)).create_from_url(url)
    polling = await ClientFactory(
        ClientConfig(streaming=False, polling=True)
    ).create_from_url(url)

    # send: a read-only call runs unasked; the answer comes back with the completed task.
    sent = await collect(
        blocking.send_message(request('call read_file {"path": "README.md"}'))
    )
    report["send"] = sent

    # stream: status and artifact updates until completed.
    report["stream"] = await collect(
        streaming.send_message(request('call list_dir {"path": "."}'))
    )

    # get and list.
    got = await blocking.get_task(GetTaskRequest(id=sent["task_id"], history_length=1))
    report["get"] = {
        "state": TaskState.Name(got.status.state),
        "history": len(got.history),
        "context_id": got.context_id,
    }
    listed = await blocking.list_tasks(ListTasksRequest())
    report["list"] = {
        "total": listed.total_size,
        "ids": [t.id for t in listed.tasks],
    }

    # approval: the quickstart asks to run `git log`; the task pauses, the client approves.
    paused = await collect(streaming.send_message(request("What is in this project?")))
    question = await blocking.get_task(GetTaskRequest(id=paused["task_id"]))
    answered = await collect(
        streaming.send_message(request("approve", paused["task_id"]))
    )
    report["approval"] = {
        "paused": paused["states"][-1],
        "question": "".join(p.text for p in question.status.message.parts),
        "answered": answered["states"][-1],
        "answer": answered["answer"],
    }

    # cancel: a long command, approved, then cancelled while it runs.
    asked = await collect(
        blocking.send_message(request('call bash {"command": "sleep 271.5"}'))
    )
    running = await collect(polling.send_message(request("yes", asked["task_id"])))
    await asyncio.sleep(0.5)
    cancelled = await blocking.cancel_task(CancelTaskRequest(id=asked["task_id"]))
    report["cancel"] = {
        "asked": asked["states"][-1],
        "running": running["states"][-1],
        "cancelled": TaskState.Name(cancelled.status.state),
    }

    # subscribe: a stream dropped after its first item, picked up again.
    asked = await collect(
        streaming.send_message(request('call bash {"command": "sleep 1.5"}'))
    )
    dropped = await collect(
        streaming.send_message(request("approve", asked["task_id"])), limit=1
    )
    resumed = await collect(
        streaming.subscribe(SubscribeToTaskRequest(id=asked["task_id"]))
    )
    report["subscribe"] = {
        "asked": asked["states"][-1],
        "dropped": dropped["kinds"],
        "resumed": resumed,
    }
    for client in (blocking, streaming, polling):
        await client.close()
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
