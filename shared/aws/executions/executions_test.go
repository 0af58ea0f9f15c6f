package executions_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/aws/executions"
)

const machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:conclave-dev-delegation"

// fakeSFN records the starts and answers with err (nil: the execution's
// ARN as Step Functions forms it).
type fakeSFN struct {
	executions.API
	starts []*sfn.StartExecutionInput
	err    error
	// status is what DescribeExecution answers for the execution named.
	status    types.ExecutionStatus
	described []string
}

func (f *fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	f.described = append(f.described, aws.ToString(in.ExecutionArn))
	return &sfn.DescribeExecutionOutput{Status: f.status}, nil
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.starts = append(f.starts, in)
	if f.err != nil {
		return nil, f.err
	}
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String("arn:from-sfn:" + aws.ToString(in.Name))}, nil
}

func starter(f *fakeSFN) *executions.Starter {
	return &executions.Starter{Client: f, ARNs: map[string]string{"delegation": machineARN}}
}

func inputOf(t *testing.T, in *sfn.StartExecutionInput) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(in.Input)), &m))
	return m
}

func traced(t *testing.T) (context.Context, string) {
	t.Helper()
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return trace.ContextWithSpanContext(context.Background(), sc), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
}

// The input carries the caller's traceparent as its top-level "trace",
// beside the caller's own fields, which are kept.
func TestStartPutsTheTraceInTheInput(t *testing.T) {
	ctx, tp := traced(t)
	f := &fakeSFN{}
	arn, err := starter(f).Start(ctx, "delegation", "task_1", map[string]any{"team_id": "t1", "task_id": "task_1", "budgets": map[string]int{"timeout_seconds": 60}})
	require.NoError(t, err)
	assert.Equal(t, "arn:from-sfn:task_1", arn)
	require.Len(t, f.starts, 1)
	assert.Equal(t, machineARN, aws.ToString(f.starts[0].StateMachineArn))
	assert.Equal(t, map[string]any{
		"team_id": "t1", "task_id": "task_1", "budgets": map[string]any{"timeout_seconds": float64(60)}, "trace": tp,
	}, inputOf(t, f.starts[0]))
}

// Without a span the field is still there, empty: the machines read it by
// path ($$.Execution.Input.trace), and a missing path fails the execution.
// A struct input works as a map does, and a "trace" of the caller's is
// replaced.
func TestStartAlwaysHasTheTraceField(t *testing.T) {
	type input struct {
		TeamID string `json:"team_id"`
		Trace  string `json:"trace"`
	}
	f := &fakeSFN{}
	_, err := starter(f).Start(context.Background(), "delegation", "task_2", input{TeamID: "t1", Trace: "stale"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"team_id": "t1", "trace": ""}, inputOf(t, f.starts[0]))
}

// An input that is not a JSON object is refused before Step Functions is
// called.
func TestStartRefusesAnInputThatIsNotAnObject(t *testing.T) {
	for _, in := range []any{nil, "text", []int{1}, 3, (map[string]any)(nil)} {
		f := &fakeSFN{}
		_, err := starter(f).Start(context.Background(), "delegation", "task_3", in)
		require.Error(t, err, "%#v", in)
		assert.Contains(t, err.Error(), "JSON object")
		assert.Empty(t, f.starts)
	}
}

// A second start of a name (a retry from another trace, so another input)
// is success when the execution named is still running, with its ARN; an
// execution of that name that ended is the caller's error, as before.
func TestStartTakesARunningExecutionOfTheNameAsSuccess(t *testing.T) {
	exists := &types.ExecutionAlreadyExists{Message: aws.String("Execution Already Exists")}
	const want = "arn:aws:states:us-east-1:123456789012:execution:conclave-dev-delegation:task_4"
	f := &fakeSFN{err: exists, status: types.ExecutionStatusRunning}
	arn, err := starter(f).Start(context.Background(), "delegation", "task_4", map[string]any{"task_id": "task_4"})
	require.NoError(t, err)
	assert.Equal(t, want, arn)
	assert.Equal(t, []string{want}, f.described)

	for _, ended := range []types.ExecutionStatus{types.ExecutionStatusSucceeded, types.ExecutionStatusFailed, types.ExecutionStatusTimedOut, types.ExecutionStatusAborted} {
		f := &fakeSFN{err: exists, status: ended}
		_, err := starter(f).Start(context.Background(), "delegation", "task_4", map[string]any{"task_id": "task_4"})
		assert.ErrorAs(t, err, &exists, ended)
	}
}

// Any other error is the caller's, and so is an unknown machine.
func TestStartPassesOtherErrors(t *testing.T) {
	boom := errors.New("throttled")
	f := &fakeSFN{err: boom}
	_, err := starter(f).Start(context.Background(), "delegation", "task_5", map[string]any{})
	assert.ErrorIs(t, err, boom)

	_, err = starter(&fakeSFN{}).Start(context.Background(), "plan", "p1", map[string]any{})
	assert.ErrorContains(t, err, `no state machine "plan"`)
}
