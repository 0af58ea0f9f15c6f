// Package executions is the Step Functions adapter of workflow.Starter: it
// starts and stops executions of any machine of the manifest. An execution
// is named after its task or session, so the Step Functions console lists
// it under its own id.
package executions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// API is the part of the Step Functions client used here.
type API interface {
	StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	StopExecution(context.Context, *sfn.StopExecutionInput, ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
	SendTaskSuccess(context.Context, *sfn.SendTaskSuccessInput, ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	DescribeExecution(context.Context, *sfn.DescribeExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// Starter runs executions of the machines in ARNs (manifest name → ARN).
//
// Starting and stopping (Starter) and completing task tokens (Callbacks)
// are two types, not one with both methods, because they are two grants:
// a function's code links the calls of the types it builds, and the test
// of least privilege (infra/grants) holds its role to exactly those.
type Starter struct {
	Client API
	ARNs   map[string]string
}

// Callbacks completes the task tokens of waiting states.
type Callbacks struct {
	Client API
}

var (
	_ workflow.Starter   = (*Starter)(nil)
	_ workflow.Callbacks = (*Callbacks)(nil)
)

// FromConfig is the starter of the machines in arns (the
// STATE_MACHINE_ARNS of the environment), or a nil interface when there
// are none (never a typed nil, which a service would call).
func FromConfig(cfg aws.Config, arns map[string]string) workflow.Starter {
	if len(arns) == 0 {
		return nil
	}
	return &Starter{Client: sfn.NewFromConfig(cfg), ARNs: arns}
}

// CallbacksFromConfig completes task tokens only: for a function that ends
// tasks (and so wakes waiting parents).
func CallbacksFromConfig(cfg aws.Config) workflow.Callbacks {
	return &Callbacks{Client: sfn.NewFromConfig(cfg)}
}

// Succeed implements workflow.Callbacks.
func (c *Callbacks) Succeed(ctx context.Context, token string, output any) error {
	out, err := json.Marshal(output)
	if err != nil {
		return err
	}
	_, err = c.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(out))})
	return err
}

// Start implements workflow.Starter. The input, a JSON object, gets a
// top-level "trace" field: the traceparent of ctx's span, or "" without
// one. Every machine reads it ($$.Execution.Input.trace) into each state's
// payload, so the functions the execution runs continue the caller's trace
// (task tokens cannot carry it, and Step Functions propagates nothing into
// a Lambda's payload); the field is always present because a JSONPath that
// names a missing field fails the execution.
//
// A retried start of the same name is harmless: Step Functions answers the
// same name and the same input with the running execution; the input now
// differs between two starts of one execution from two traces (a retried
// request, a redelivered event), so an ExecutionAlreadyExists is looked
// at: an execution of that name still running is the one wanted
// (success), one that ended is not (the error, as before: a caller
// reconciling a stuck session or plan must see it).
func (s *Starter) Start(ctx context.Context, machine, name string, input any) (string, error) {
	arn, ok := s.ARNs[machine]
	if !ok {
		return "", fmt.Errorf("no state machine %q is configured", machine)
	}
	in, err := withTrace(input, tracing.Traceparent(ctx))
	if err != nil {
		return "", fmt.Errorf("execution %s of %s: %w", name, machine, err)
	}
	out, err := s.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(string(in)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		exec := s.ExecutionARN(machine, name)
		if d, derr := s.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(exec)}); derr == nil && d.Status == types.ExecutionStatusRunning {
			return exec, nil
		}
		return "", err
	}
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ExecutionArn), nil
}

// withTrace is input as JSON with its top-level tracing.Field set to
// traceparent (replacing any the caller put there). input must marshal to
// a JSON object: the machines read their input's fields by path.
func withTrace(input any, traceparent string) ([]byte, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("the input must be a JSON object, not %.40s", raw)
	}
	fields[tracing.Field], _ = json.Marshal(traceparent)
	return json.Marshal(fields)
}

// maxCause is the longest cause StopExecution accepts.
const maxCause = 32768

// Stop implements workflow.Starter. An execution that already ended or
// never started is not an error: the goal (nothing running) holds.
func (s *Starter) Stop(ctx context.Context, executionARN, cause string) error {
	if len(cause) > maxCause {
		cause = cause[:maxCause]
	}
	_, err := s.Client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(executionARN), Cause: aws.String(cause), Error: aws.String("Canceled")})
	var missing *types.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return nil
	}
	return err
}

// ExecutionARN implements workflow.Starter:
// arn:…:stateMachine:<machine> → arn:…:execution:<machine>:<name>.
func (s *Starter) ExecutionARN(machine, name string) string {
	return strings.Replace(s.ARNs[machine], ":stateMachine:", ":execution:", 1) + ":" + name
}
