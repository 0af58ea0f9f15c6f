"""moto_server for the local cloud: moto's own server, less two costs per
request that made moto (one Python process, one core at most) the busiest
part of `make test` once the integration tests ran in parallel. Each patch
computes exactly what moto computes, only once; both are for the moto pinned
in localstack/requirements.txt and are left out, with a warning, for any
other version (moto then runs as released, only slower).

1. EventBridge: every event delivered to a rule's target parses the eight
   default input paths with jsonpath_ng's parse, which builds a new parser
   (its yacc tables) on each call: about 15 % of moto's time in a test run.
   The Step Functions interpreter parses its paths the same way. A parsed
   path is immutable and its find() pure, so parse is cached by path.
2. SQS: receiving a message checks its retention period through
   get_queue_attributes, which computes every attribute of the queue three
   times (each approximate count walks every message, reading the clock per
   message): about 12 %. The check reads the queue's retention directly.
3. Every request finds its backend by listing moto's package directory (a
   stat per entry, under the dispatcher's lock): the listing is cached.
4. The access log (a line per request, "POST / HTTP/1.1" 200, under the
   logging lock) is off: the edge's edge.log has a line per AWS call with
   its service, operation, status and time. Errors are still logged.

Run as `python localstack/moto_server.py -H 127.0.0.1 -p PORT`, as
moto_server (localstack/cloud.sh points the edge at it).
"""

import functools
import logging
import sys

import moto

PINNED = "5.2.5"


def patch() -> None:
    import jsonpath_ng.ext
    import moto.backends
    import moto.stepfunctions.parser.asl.utils.json_path as sfn_json_path
    from moto.core.utils import unix_time
    from moto.sqs.models import SQSBackend

    parse = functools.lru_cache(maxsize=1024)(jsonpath_ng.ext.parse)
    # moto.events.utils imports parse from jsonpath_ng.ext on each call;
    # the interpreter's module bound it at import.
    jsonpath_ng.ext.parse = parse
    sfn_json_path.parse = parse

    def is_message_valid_based_on_retention_period(self, queue_name, message):
        retention_period = self.get_queue(queue_name).message_retention_period
        return retention_period + message.sent_timestamp / 1000 > unix_time()

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: modules

    logging.getLogger("werkzeug").setLevel(logging.WARNING)


if __name__ == "__main__":
    if moto.__version__ == PINNED:
        patch()
    else:
        print(f"localstack/moto_server.py: moto {moto.__version__}, not {PINNED}: running it unpatched", file=sys.stderr)
    from moto.server import main

    sys.exit(main())
