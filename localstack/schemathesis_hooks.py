"""schemathesis hooks for localstack/contract.sh (SCHEMATHESIS_HOOKS).

A fresh Idempotency-Key on every case that carries one. schemathesis gives
the optional header the same generated value in case after case, and the
API answers a reused key with another body 409 IdempotencyKeyReused before
it reads the body: 2,117 of the coverage phase's 4,602 cases (nearly every
POST's body boundaries) never reached validation. Replays of one key are
the Go integration tests' to check (shared/platform/idempotency, the
replay tests in localstack/cloud).
"""

import uuid

import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    for name in list(case.headers or {}):
        if name.lower() == "idempotency-key":
            case.headers[name] = "contract-" + uuid.uuid4().hex
