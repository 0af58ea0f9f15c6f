"""An A2A client of a Conclave team, with the official Python SDK.

The independent client the A2A integration test drives (localstack/cloud,
a2a_integration_test.go): it resolves the team's public agent card and its
extended card, sends messages, reads tasks until they end, lists them,
cancels one and decides an approval, all through a2a-sdk's client (A2A 1.0,
JSON-RPC), and prints what it saw as one JSON object. The scenario's
messages come from the test (argv); nothing here knows Conclave.

    python client.py --url AGENT_URL --key API_KEY --scenario JSON
"""

import argparse
import asyncio
import json
import sys
import time
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from google.protobuf import json_format

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


def state(task):
    return TaskState.Name(task.status.state)


def answer(task):
    return [p.text for a in task.artifacts for p in a.parts if p.text]


async def send(client, text=None, *, task_id="", context_id="", data=None, immediately=False):
    parts = [Part(text=text)] if text is not None else []
    if data is not None:
        part = Part()
        json_format.ParseDict(data, part.data)
        parts.append(part)
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id)
    req = SendMessageRequest(message=msg, configuration=SendMessageConfiguration(return_immediately=immediately))
    async for resp in client.send_message(req):
        if resp.HasField("task"):
            return resp.task
    raise RuntimeError("SendMessage answered no task")


async def until(client, task_id, wanted, seconds):
    deadline = time.monotonic() + seconds
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in wanted or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.5)


def error_of(exc):
    return {"type": type(exc).__name__, "message": str(exc)}


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--scenario", required=True)
    args = ap.parse_args()
    sc = json.loads(args.scenario)
    out = {}
    async with httpx.AsyncClient(timeout=60) as anonymous:
        card = await A2ACardResolver(anonymous, args.url).get_agent_card()
    out["card"] = {
        "name": card.name,
        "skills": [s.id for s in card.skills],
        "streaming": card.capabilities.streaming,
        "interfaces": [[i.url, i.protocol_binding, i.protocol_version] for i in card.supported_interfaces],
        "schemes": list(card.security_schemes.keys()),
    }
    http = httpx.AsyncClient(timeout=60, headers={"X-Api-Key": args.key})
    client = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=http))
    async with client:
        ext = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        out["extended_skills"] = [s.id for s in ext.skills]

        # A message, answered as a task that completes.
        task = await send(client, sc["ask"])
        out["sent"] = {"id": task.id, "context": task.context_id, "state": state(task)}
        task = await until(client, task.id, TERMINAL, 90)
        out["done"] = {"state": state(task), "answer": answer(task)}
        listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
        out["listed"] = [t.id for t in listed.tasks]

        # A follow-up in the same context.
        again = await send(client, sc["ask"], context_id=task.context_id)
        out["follow_up"] = {"id": again.id, "context": again.context_id}
        await until(client, again.id, TERMINAL, 90)

        # A slow task, canceled.
        slow = await send(client, sc["slow"], immediately=True)
        canceled = await client.cancel_task(CancelTaskRequest(id=slow.id))
        out["canceled"] = {"first": state(slow), "after_cancel": state(canceled)}
        try:
            await client.cancel_task(CancelTaskRequest(id=slow.id))
            out["cancel_again"] = None
        except Exception as exc:  # noqa: BLE001 - the error is the observation
            out["cancel_again"] = error_of(exc)

        # A tool call that waits for an approval: INPUT_REQUIRED, decided
        # by a data part.
        held = await send(client, sc["approval"], immediately=True)
        held = await until(client, held.id, {TaskState.TASK_STATE_INPUT_REQUIRED} | TERMINAL, 60)
        out["held"] = {"state": state(held), "note": [p.text for p in held.status.message.parts]}
        decided = await send(client, task_id=held.id, data={"decision": "reject", "reason": "not now"})
        decided = await until(client, decided.id, TERMINAL, 90)
        out["decided"] = {"state": state(decided), "answer": answer(decided)}

        try:
            await client.get_task(GetTaskRequest(id=sc["missing"]))
            out["missing"] = None
        except Exception as exc:  # noqa: BLE001
            out["missing"] = error_of(exc)
    await http.aclose()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
