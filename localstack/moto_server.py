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
6. Step Functions: every execution parses its state machine's definition
   with the ANTLR grammar in pure Python (0.1 to 0.2 s of CPU for one of
   ours, some 260 executions in a test run), and so does every create and
   update. The parse is cached by definition: the program it returns
   keeps no execution's state (each execution's lives in its Environment,
   keyed by component), so executions share one; the key of a component
   is made once, under a lock.
7. Step Functions: every Task state's call builds a new boto3 client
   (some 7 ms of CPU each); one client per region and service serves
   every call without credentials of its own (boto3 clients are safe to
   share between threads).

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

    # 6. One parse per definition. A component's heap key (where each
    # execution's Environment keeps the component's state) is made on
    # first use: shared between executions' threads, it is made under a
    # lock, or two executions could each make one and read the other's.
    import threading

    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.utils import long_uid

    AmazonStateLanguageParser.parse = staticmethod(functools.lru_cache(maxsize=64)(AmazonStateLanguageParser.parse))
    heap_keys = threading.Lock()

    def heap_key(self):
        key = self.__dict__.get("_EvalComponent__heap_key")
        if key is None:
            with heap_keys:
                key = self.__dict__.get("_EvalComponent__heap_key")
                if key is None:
                    key = self._EvalComponent__heap_key = long_uid()
        return key

    EvalComponent.heap_key = property(heap_key)

    # 7. One client per region and service. The task states' modules bound
    # the function at import (the factory imports every one of them), so
    # each binding is replaced.
    import moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_factory  # noqa: F401
    import moto.stepfunctions.parser.asl.utils.boto_client as boto_client

    build = boto_client.boto_client_for
    shared = functools.lru_cache(maxsize=64)(lambda region, service: build(region, service))

    def boto_client_for(region, service, state_credentials=None):
        if state_credentials is not None:
            return build(region, service, state_credentials)
        return shared(region, service)

    for name, module in list(sys.modules.items()):
        if name.startswith("moto.stepfunctions.parser") and getattr(module, "boto_client_for", None) is build:
            module.boto_client_for = boto_client_for


if __name__ == "__main__":
    if moto.__version__ == PINNED:
        patch()
    else:
        print(f"localstack/moto_server.py: moto {moto.__version__}, not {PINNED}: running it unpatched", file=sys.stderr)
    from moto.server import main

    sys.exit(main())
