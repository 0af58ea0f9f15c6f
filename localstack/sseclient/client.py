"""An ordinary Server-Sent Events client of the streaming API.

The integration tests of the streaming API (localstack/cloud,
streams_integration_test.go) read every stream through this script, with
httpx-sse's parser, not the project's: what it prints is what any SSE client
would see. It sends one request, reads events until the stream ends or
--max-events have arrived (then it disconnects), and prints one JSON object
per line: {"at": seconds since the request, "id", "event", "data"} for each
event, and a last line {"status", "content_type", "body" (a non-stream
answer), "events", "closed_by": "server" | "client"}.

    python client.py --url URL --key KEY [--method POST --body JSON]
                     [--header 'Name: value' ...] [--max-events N]
"""

import argparse
import json
import sys
import time

import httpx
from httpx_sse import connect_sse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--key", default="")
    p.add_argument("--method", default="GET")
    p.add_argument("--body", default=None)
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--max-events", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    headers = {"Accept": "text/event-stream"}
    if a.key:
        headers["X-Api-Key"] = a.key
    for h in a.header:
        name, _, value = h.partition(":")
        headers[name.strip()] = value.strip()
    kwargs = {"headers": headers}
    if a.body is not None:
        kwargs["content"] = a.body.encode()
        headers["Content-Type"] = "application/json"
    start = time.monotonic()
    n, closed_by = 0, "server"
    with httpx.Client(timeout=httpx.Timeout(a.timeout, read=a.timeout)) as client:
        with connect_sse(client, a.method, a.url, **kwargs) as source:
            resp = source.response
            ctype = resp.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                body = resp.read().decode()
                print(json.dumps({"status": resp.status_code, "content_type": ctype, "body": body, "events": 0, "closed_by": "server"}))
                return
            for sse in source.iter_sse():
                n += 1
                print(json.dumps({"at": round(time.monotonic() - start, 4), "id": sse.id, "event": sse.event, "data": sse.data}), flush=True)
                if a.max_events and n >= a.max_events:
                    closed_by = "client"
                    break
            print(json.dumps({"status": resp.status_code, "content_type": ctype, "body": "", "events": n, "closed_by": closed_by}))


if __name__ == "__main__":
    try:
        main()
    except httpx.HTTPError as e:
        print(json.dumps({"error": str(e)}), file=sys.stderr)
        sys.exit(2)
