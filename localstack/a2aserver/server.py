"""An external A2A agent for the remote team member tests, built with the
official Python SDK (`a2a-sdk`, pinned in localstack/requirements-tools.txt):
an independent implementation of A2A 1.0 (JSON-RPC binding) that Conclave's
client (a2a-go) must speak to.

Conclave's Go integration tests (localstack/cloud) start it on loopback,
register it as a remote team member by its card URL and send it messages:

    python server.py --token SECRET --name "Remote Tax Desk" --log calls.jsonl [--port 0]

It listens on 127.0.0.1 (port 0: a free one), prints one line
{"url": "http://127.0.0.1:PORT"} once it accepts connections, and serves
until killed (SIGTERM or SIGINT end it cleanly).

  GET  /.well-known/agent-card.json  the public card, no credential needed
                                     (the SDK's own route and format)
  POST /                             JSON-RPC; `Authorization: Bearer SECRET`
                                     or 401 with a JSON-RPC error

Every request to / (authorized or not) appends one JSON line to --log:
{"method", "headers" (all, names lower-cased), "texts" (the text parts of
the request's message; [] when it carries none)}, so a test sees what Conclave
sent and what it did not (an x-api-key, say).

The agent answers from the text of the user's message (text parts joined);
every task is WORKING first, so a client that returns immediately sees it:

  [hang]    never ends by itself; CancelTask makes it CANCELED
  [slow N]  waits N seconds, then goes on as below
  [fail]    FAILED, with the status message "the remote agent failed on purpose"
  anything  COMPLETED, one artifact "answer":
            "Remote answer from NAME: TEXT"
"""

import argparse
import asyncio
import contextlib
import hmac
import json
import os
import re
import socket
from datetime import datetime, timezone

# Before the SDK is imported, which reads it once: its OpenTelemetry wrappers
# (opentelemetry is in the tools venv) log spurious "Failed to detach
# context" and "Task was destroyed" tracebacks when a task is canceled under
# a waiting SendMessage. Nothing here is traced.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette

DESCRIPTION = "An external A2A agent for tests: answers questions about VAT returns and tax planning."
FAILURE = "the remote agent failed on purpose"
SLOW = re.compile(r"\[slow (\d+)\]")
UNAUTHENTICATED = -31401  # A2A 1.0's JSON-RPC code for a missing credential


def card(name: str, url: str) -> AgentCard:
    return AgentCard(
        name=name,
        description=DESCRIPTION,
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        security_schemes={"bearer": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer"))},
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        skills=[
            AgentSkill(
                id="vat-returns",
                name="VAT returns",
                description="Prepares and checks VAT returns, input tax and invoices for small businesses.",
                tags=["vat", "tax", "returns", "invoices"],
                examples=["How do I file my quarterly VAT return?"],
            ),
            # The odd id is on purpose: Conclave must normalize it.
            AgentSkill(
                id="Tax Planning & Strategy!!",
                name="Tax planning",
                description="Plans income tax and deductions over the year.",
                tags=["tax", "planning", "deductions"],
            ),
        ],
    )


class Desk(AgentExecutor):
    """The agent: every task WORKING first, then as its text says."""

    def __init__(self, name: str):
        self.name = name

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if context.current_task is None:
            # A new task: announced WORKING at once, so a client that
            # returns immediately sees it running.
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_WORKING, timestamp=now()),
                    history=[context.message] if context.message else [],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await self.start(text, updater)

    async def start(self, text: str, updater: TaskUpdater) -> None:
        await updater.start_work()
        if "[hang]" in text:
            # Never ends by itself: CancelTask cancels this coroutine.
            await asyncio.Event().wait()
        slow = SLOW.search(text)
        if slow:
            await asyncio.sleep(int(slow.group(1)))
        if "[fail]" in text:
            await updater.failed(updater.new_agent_message([Part(text=FAILURE)]))
            return
        await updater.add_artifact([Part(text=f"Remote answer from {self.name}: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def now():
    return datetime.now(timezone.utc)


def texts_of(body: bytes) -> list[str]:
    """The text parts of a JSON-RPC request's message, if it has one."""
    try:
        msg = json.loads(body).get("params", {}).get("message", {})
    except (ValueError, AttributeError):
        return []
    if not isinstance(msg, dict):
        return []
    return [p["text"] for p in msg.get("parts", []) if isinstance(p, dict) and isinstance(p.get("text"), str)]


def method_of(body: bytes) -> str:
    try:
        method = json.loads(body).get("method", "")
    except (ValueError, AttributeError):
        return ""
    return method if isinstance(method, str) else ""


def task_id_of(body: bytes) -> str:
    """The task a GetTask or CancelTask names (params.id), "" otherwise."""
    try:
        params = json.loads(body).get("params") or {}
        task_id = params.get("id", "") if isinstance(params, dict) else ""
    except (ValueError, AttributeError):
        return ""
    return task_id if isinstance(task_id, str) else ""


def headers_of(scope) -> dict[str, str]:
    """The request's headers, names lower-cased; a repeated one joined."""
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name, value = k.decode("latin-1").lower(), v.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def read_body(receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body


def replay(body: bytes, receive):
    """A receive that hands the app the body already read, then the rest of
    the connection's messages (a disconnect, say)."""
    sent = False

    async def again():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def guard(inner, token: str, log):
    """An ASGI app that logs every request to the JSON-RPC endpoint and lets
    through those with the bearer token; the card and the lifespan pass
    untouched."""
    expected = f"Bearer {token}".encode()

    async def asgi(scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        body = await read_body(receive)
        headers = headers_of(scope)
        log.write(json.dumps({"method": method_of(body), "task_id": task_id_of(body), "headers": headers, "texts": texts_of(body)}) + "\n")
        log.flush()
        if not hmac.compare_digest(headers.get("authorization", "").encode(), expected):
            try:
                rid = json.loads(body).get("id")
            except (ValueError, AttributeError):
                rid = None
            payload = json.dumps({"jsonrpc": "2.0", "id": rid,
                                  "error": {"code": UNAUTHENTICATED, "message": "Unauthenticated: a bearer token is required"}}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": payload})
            return
        await inner(scope, replay(body, receive), send)

    return asgi


def app(name: str, url: str, token: str, log):
    agent_card = card(name, url)
    handler = DefaultRequestHandler(agent_executor=Desk(name), task_store=InMemoryTaskStore(), agent_card=agent_card)

    @contextlib.asynccontextmanager
    async def lifespan(_):
        yield
        await handler.aclose()

    # The SDK's own card route: the card as a real Python agent serves it
    # (security requirements in ProtoJSON's StringList form, "bearer": {},
    # which Conclave's parser reads: shared/a2a/remote).
    routes = [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return guard(Starlette(routes=routes, lifespan=lifespan), token, log)


class Server(uvicorn.Server):
    """uvicorn, announcing the URL once it accepts connections."""

    def __init__(self, config, url: str):
        super().__init__(config)
        self.url = url

    async def startup(self, sockets=None):
        await super().startup(sockets=sockets)
        if self.started:
            print(json.dumps({"url": self.url}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with open(args.log, "a", encoding="utf-8") as log:
        asgi = app(args.name, url + "/", args.token, log)
        # A hung SendMessage holds its connection open: do not wait on it
        # for long when told to stop.
        config = uvicorn.Config(asgi, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        Server(config, url).run(sockets=[sock])


if __name__ == "__main__":
    main()
