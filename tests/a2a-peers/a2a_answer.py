"""The official A2A Python SDK (a2a-sdk 1.x) answers a task that waits for an approval.

Usage: python a2a_answer.py URL TASK_ID

Gets the task (it must be input-required), sends `approve` on it as a stream, and prints
one JSON report on stdout: the state it found, the states the stream went through, and the
answer. The Rust test runs it against a process that did not ask the question (the one that
did was killed).
"""

import asyncio
import json
import sys
import uuid

from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


async def main(url, task_id):
    blocking = await ClientFactory(ClientConfig(streaming=False)).create_from_url(url)
    streaming = await ClientFactory(ClientConfig(streaming=True)).create_from_url(url)
    found = await blocking.get_task(GetTaskRequest(id=task_id))
    message = Message(
        role=Role.ROLE_USER,
        parts=[Part(text="approve")],
        message_id=str(uuid.uuid4()),
        task_id=task_id,
    )
    states, answer = [], None
    async for item in streaming.send_message(SendMessageRequest(message=message)):
        if item.HasField("task"):
            states.append(TaskState.Name(item.task.status.state))
        if item.HasField("status_update"):
            states.append(TaskState.Name(item.status_update.status.state))
        if item.HasField("artifact_update"):
            answer = "".join(p.text for p in item.artifact_update.artifact.parts)
    done = await blocking.get_task(GetTaskRequest(id=task_id))
    for client in (blocking, streaming):
        await client.close()
    print(
        json.dumps(
            {
                "found": TaskState.Name(found.status.state),
                "question": "".join(p.text for p in found.status.message.parts),
                "states": states,
                "answer": answer,
                "final": TaskState.Name(done.status.state),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
