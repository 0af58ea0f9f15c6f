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

	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// API is the part of the Step Functions client used here.
type API interface {
	StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	StopExecution(context.Context, *sfn.StopExecutionInput, ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
	SendTaskSuccess(context.Context, *sfn.SendTaskSuccessInput, ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
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

// Start implements workflow.Starter. Starting the same name twice with the
// same input is idempotent in Step Functions, so a retried request is
// harmless.
func (s *Starter) Start(ctx context.Context, machine, name string, input any) (string, error) {
	arn, ok := s.ARNs[machine]
	if !ok {
		return "", fmt.Errorf("no state machine %q is configured", machine)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return "", err
	}
	out, err := s.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(string(in)),
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ExecutionArn), nil
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
