"""Checks of localstack/moto_server.py's patches against the pinned moto
(run by make test: python -m unittest localstack/moto_server_test.py)."""

import importlib.util
import pathlib
import sys
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


@unittest.skipUnless(moto.__version__ == moto_server.PINNED, "the patches are for the pinned moto only")
class StepFunctionsShareParsesAndClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        moto_server.patch()

    def test_a_definition_is_parsed_once(self):
        from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

        one = '{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}'
        other = '{"StartAt": "B", "States": {"B": {"Type": "Pass", "End": true}}}'
        program, _ = AmazonStateLanguageParser.parse(one)
        self.assertIs(AmazonStateLanguageParser.parse(one)[0], program)
        self.assertIsNot(AmazonStateLanguageParser.parse(other)[0], program)

    def test_a_shared_components_heap_key_is_one_across_threads(self):
        import threading

        from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

        class Leaf(EvalComponent):
            def _eval_body(self, env):
                pass

        # Threads switched as often as the interpreter can: unlocked, the
        # check and the assignment of a key interleave within a few rounds.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        self.addCleanup(sys.setswitchinterval, interval)
        for _ in range(50):
            leaf, keys, start = Leaf(), [], threading.Barrier(8)

            def read():
                start.wait()
                keys.append(leaf.heap_key)

            threads = [threading.Thread(target=read) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(len(set(keys)), 1, keys)
            self.assertEqual(leaf.heap_key, keys[0])

    def test_task_states_share_a_client_unless_they_carry_credentials(self):
        import moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils as lambda_eval
        import moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb as dynamodb

        client = lambda_eval.boto_client_for("us-east-1", "lambda")
        self.assertIs(lambda_eval.boto_client_for("us-east-1", "lambda"), client)
        self.assertIs(dynamodb.boto_client_for, lambda_eval.boto_client_for, "every module's binding is replaced")
        self.assertIsNot(lambda_eval.boto_client_for("eu-west-1", "lambda"), client)
        self.assertIsNot(lambda_eval.boto_client_for("us-east-1", "dynamodb"), client)
        own = {"AccessKeyId": "a", "SecretAccessKey": "s", "SessionToken": "t"}
        self.assertIsNot(lambda_eval.boto_client_for("us-east-1", "lambda", own), client)


if __name__ == "__main__":
    unittest.main()
