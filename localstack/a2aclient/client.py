"""An A2A client of a Conclave team, with the official Python SDK.

The independent client the A2A integration test drives (localstack/cloud,
a2a_integration_test.go): it resolves the team's public agent card and its
extended card, sends messages, reads tasks until they end, lists them,
cancels one and decides an approval, all through a2a-sdk's client (A2A 1.0,
JSON-RPC), and prints what it saw as one JSON object. With --stream it is
a streaming client instead (a2a_stream_integration_test.go): a message sent
with the SDK's streaming call, its events as they came, a subscription to a
running task that a cancel ends, and the URLs its calls went to. The
scenario's messages come from the test (argv); nothing here knows Conclave.

    python client.py --url AGENT_URL --key API_KEY --scenario JSON [--stream]
"""

import argparse
import asyncio
import json
import sys
import time
import uuid
from contextlib import aclosing

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
    SubscribeToTaskRequest,
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


def event_of(resp):
    """One streamed event as the test reads it: its kind, state, answer."""
    kind = resp.WhichOneof("payload")
    ev = {"kind": kind}
    if kind == "task":
        ev.update(task=resp.task.id, state=state(resp.task))
    elif kind == "status_update":
        ev.update(task=resp.status_update.task_id, state=TaskState.Name(resp.status_update.status.state))
    elif kind == "artifact_update":
        a = resp.artifact_update.artifact
        ev.update(task=resp.artifact_update.task_id, artifact=a.artifact_id, text=[p.text for p in a.parts if p.text])
    return ev


def request(text):
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    return SendMessageRequest(message=msg)


async def streaming(card, key, sc, out):
    """The SDK's streaming calls: send_message and subscribe, streamed."""
    posted = []

    async def record(req):
        posted.append(str(req.url))

    http = httpx.AsyncClient(timeout=60, headers={"X-Api-Key": key}, event_hooks={"request": [record]})
    client = await create_client(card, client_config=ClientConfig(streaming=True, httpx_client=http))
    async with client:
        # A message, streamed: the task, its status updates, the answer.
        out["streamed"] = [event_of(r) async for r in client.send_message(request(sc["ask"]))]
        done = out["streamed"][0]["task"]

        # An ended task has nothing more to stream.
        try:
            async with aclosing(client.subscribe(SubscribeToTaskRequest(id=done))) as events:
                out["subscribe_ended"] = {"events": [event_of(r) async for r in events]}
        except Exception as exc:  # noqa: BLE001 - the error is the observation
            out["subscribe_ended"] = error_of(exc)

        # A slow task: its message's stream left after the first event, a
        # subscription to it, which its cancel ends.
        async with aclosing(client.send_message(request(sc["slow"]))) as events:
            first = event_of(await anext(events))
        subscribed = []
        async with aclosing(client.subscribe(SubscribeToTaskRequest(id=first["task"]))) as events:
            async for r in events:
                subscribed.append(event_of(r))
                if len(subscribed) == 1:
                    await client.cancel_task(CancelTaskRequest(id=first["task"]))
        out["slow"] = first
        out["subscribed"] = subscribed
    await http.aclose()
    out["posted"] = posted


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--stream", action="store_true")
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
    if args.stream:
        await streaming(card, args.key, sc, out)
        json.dump(out, sys.stdout)
        return
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
