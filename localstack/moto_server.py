"""moto_server for the local cloud: moto's own server, less four costs per
request that made moto (one Python process, one core at most) the busiest
part of `make test` once the integration tests ran in parallel, and one race
fixed. Each cost patch computes exactly what moto computes, only once; all
are for the moto pinned in localstack/requirements.txt and are left out,
with a warning, for any other version (moto then runs as released).
localstack/moto_server_test.py checks them (make test runs it).

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
5. A fix, not a cost: the task-token calls skip an execution that has no
   worker environment yet (see the patch; without it they answered 500).

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

    # 5. Task tokens: SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat
    # look for the token in every running execution's worker environment,
    # and an execution started a moment ago is RUNNING before it has a
    # worker (exec_worker None) or its worker an environment (env None):
    # the whole call then failed with AttributeError, a 500, although the
    # token's own execution was waiting (seen as a 500 on a session's
    # approval while other tests started executions). An execution without
    # an environment holds no token, so these three skip it.
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    class WithEnvironment:
        """The backend, its executions limited to those with a worker environment."""

        def __init__(self, backend):
            self._backend = backend

        def __getattr__(self, name):
            return getattr(self._backend, name)

        def _get_executions(self, execution_status=None):
            return [
                e
                for e in self._backend._get_executions(execution_status)
                if getattr(e, "exec_worker", None) is not None and e.exec_worker.env is not None
            ]

    def on_ready_executions(method):
        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            return method(WithEnvironment(self), *args, **kwargs)

        return wrapped

    for name in ("send_task_success", "send_task_failure", "send_task_heartbeat"):
        setattr(StepFunctionsParserBackend, name, on_ready_executions(getattr(StepFunctionsParserBackend, name)))


if __name__ == "__main__":
    if moto.__version__ == PINNED:
        patch()
    else:
        print(f"localstack/moto_server.py: moto {moto.__version__}, not {PINNED}: running it unpatched", file=sys.stderr)
    from moto.server import main

    sys.exit(main())
