// Package executions starts and stops executions of the delegation state
// machine (tasks.Runner). An execution is named after its task, so the Step
// Functions console lists a task under its own id.
package executions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/conclave-ai/conclave/shared/worker"
)

// API is the part of the Step Functions client used here.
type API interface {
	StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	StopExecution(context.Context, *sfn.StopExecutionInput, ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// Runner runs tasks on one state machine.
type Runner struct {
	Client          API
	StateMachineARN string
}

// Start implements tasks.Runner. Starting the same name twice with the same
// input is idempotent in Step Functions, so a retried request is harmless.
func (r *Runner) Start(ctx context.Context, name string, p worker.Payload) (string, error) {
	in, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	out, err := r.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(r.StateMachineARN), Name: aws.String(name), Input: aws.String(string(in)),
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ExecutionArn), nil
}

// Stop implements tasks.Runner. An execution that already ended or never
// started is not an error: the goal (nothing running) holds.
func (r *Runner) Stop(ctx context.Context, executionARN, cause string) error {
	if len(cause) > 32768 {
		cause = cause[:32768]
	}
	_, err := r.Client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(executionARN), Cause: aws.String(cause), Error: aws.String("Canceled")})
	var missing *types.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return nil
	}
	return err
}

// ExecutionARN implements tasks.Runner:
// arn:…:stateMachine:<machine> → arn:…:execution:<machine>:<name>.
func (r *Runner) ExecutionARN(name string) string {
	return strings.Replace(r.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}
