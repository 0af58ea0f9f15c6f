// Package workflow is the Go side of the state machines in statemachines/:
// each machine's name, its input and output types, the error names its ASL
// files match in Retry and Catch, and the two ports the domain uses to run
// workflows (a Starter for executions, Steps for the functions the machines
// call back). It imports only the standard library, so domain packages and
// adapters can share it without importing each other. A new collaboration
// machine arrives as new entries here, not as edits across the task model.
package workflow

import (
	"context"
	"encoding/json"
	"fmt"
)

// Machine names, as in manifest.StateMachines (the physical name is
// conclave-<stage>-<machine>).
const (
	// Delegation runs one task: mark it running, run the worker, record
	// the result, dead-letter the payload after the retries.
	Delegation = "delegation"
)

// Starter starts and stops executions of any machine (the Step Functions
// adapter in shared/aws/executions implements it).
type Starter interface {
	// Start runs machine with input (a JSON object, to which it adds the
	// caller's trace) under name; starting the same name again is not an
	// error, whatever the input: the execution already named is the one
	// wanted.
	Start(ctx context.Context, machine, name string, input any) (executionARN string, err error)
	// Stop ends an execution; one that already ended is not an error.
	Stop(ctx context.Context, executionARN, cause string) error
	// ExecutionARN is the ARN an execution called name has (or would have).
	ExecutionARN(machine, name string) string
}

// Callbacks completes a waiting state's task token (the Step Functions
// adapter implements it with SendTaskSuccess).
type Callbacks interface {
	// Succeed hands output to the execution waiting on token. A token whose
	// execution already ended is an error the caller may ignore.
	Succeed(ctx context.Context, token string, output any) error
}

// Step handles one action a machine asks a function for (the payload the
// ASL passes in, already decoded by the handler).
type Step func(ctx context.Context, in json.RawMessage) (any, error)

// Steps routes a step function's invocations by the machine that made
// them: each machine's ASL passes "machine" in the payload.
type Steps map[string]Step

// envelope is the part of every step payload Steps reads.
type envelope struct {
	Machine string `json:"machine"`
}

// Handle is the Lambda handler of a step function.
func (s Steps) Handle(ctx context.Context, in json.RawMessage) (any, error) {
	var e envelope
	if err := json.Unmarshal(in, &e); err != nil {
		return nil, InvalidTask{Msg: "unreadable step payload: " + err.Error()}
	}
	step, ok := s[e.Machine]
	if !ok {
		return nil, InvalidTask{Msg: fmt.Sprintf("no steps for machine %q", e.Machine)}
	}
	return step(ctx, in)
}
