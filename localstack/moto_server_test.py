"""Checks of localstack/moto_server.py's patches against the pinned moto
(run by make test: python -m unittest localstack/moto_server_test.py)."""

import importlib.util
import pathlib
import unittest
from types import SimpleNamespace

import moto

spec = importlib.util.spec_from_file_location("moto_server", pathlib.Path(__file__).with_name("moto_server.py"))
moto_server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(moto_server)


@unittest.skipUnless(moto.__version__ == moto_server.PINNED, "the patches are for the pinned moto only")
class TaskTokensSkipExecutionsWithoutAWorker(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        moto_server.patch()

    def test_a_token_no_execution_holds_is_invalid_not_a_crash(self):
        from moto.stepfunctions.parser.api import ExecutionStatus, InvalidToken
        from moto.stepfunctions.parser.models import StepFunctionsParserBackend

        backend = StepFunctionsParserBackend("us-east-1", "123456789012")
        # Two executions just started: one without a worker, one whose
        # worker has no environment yet.
        backend.state_machines = [SimpleNamespace(executions=[
            SimpleNamespace(status=ExecutionStatus.RUNNING, exec_worker=None),
            SimpleNamespace(status=ExecutionStatus.RUNNING, exec_worker=SimpleNamespace(env=None)),
        ])]
        for call in (
            lambda: backend.send_task_success("token", "{}"),
            lambda: backend.send_task_failure("token", "Error", "cause"),
            lambda: backend.send_task_heartbeat("token"),
        ):
            with self.assertRaises(InvalidToken):
                call()


if __name__ == "__main__":
    unittest.main()
