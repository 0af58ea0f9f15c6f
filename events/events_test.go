package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/admin"
	"github.com/conclave-ai/conclave/shared/team/recorder"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := events.FS.ReadFile("samples/" + name)
	require.NoError(t, err)
	return b
}

// Every detail-type with a schema has a sample, and every sample is valid.
func TestEventBridgeSamplesMatchTheirSchemas(t *testing.T) {
	types := events.DetailTypes()
	require.NotEmpty(t, types)
	for _, dt := range types {
		var ev lambdaevents.EventBridgeEvent
		require.NoError(t, json.Unmarshal(sample(t, "eventbridge/"+dt+".json"), &ev), dt)
		assert.Equal(t, dt, ev.DetailType)
		assert.Equal(t, "conclave", ev.Source)
		assert.NoError(t, events.Validate(dt, ev.Detail), dt)
	}
}

// The stream-only types have schemas, are not on the bus's list, and
// check the message they carry: a result names its work.
func TestStreamOnlyDetailTypes(t *testing.T) {
	for _, dt := range events.StreamOnly {
		assert.Contains(t, events.DetailTypes(), dt)
		assert.NotContains(t, events.BusDetailTypes(), dt)
	}
	assert.Len(t, events.BusDetailTypes(), len(events.DetailTypes())-len(events.StreamOnly))
	msg := `{"team_id":"t","conversation_id":"c","message":{"id":"m","conversation_id":"c","role":"assistant","agent":"a","content":"x","created_at":"2026-01-01T00:00:00Z"%s}}`
	assert.NoError(t, events.Validate("MessagePosted", []byte(fmt.Sprintf(msg, ""))))
	err := events.Validate("ResultPosted", []byte(fmt.Sprintf(msg, "")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "result_of")
	assert.NoError(t, events.Validate("ResultPosted", []byte(fmt.Sprintf(msg, `,"result_of":{"type":"task","id":"task_1","status":"completed"}`))))
	assert.Error(t, events.Validate("ResultPosted", []byte(fmt.Sprintf(msg, `,"result_of":{"type":"chore","id":"x"}`))), "a work type of none")
	assert.Error(t, events.Validate("MessagePosted", []byte(fmt.Sprintf(msg, `,"query":"hidden"`))), "a field the API does not show")
}

// A bad detail is refused with the field named.
func TestValidatorRejectsBadDetails(t *testing.T) {
	for bad, want := range map[string]string{
		`{"task_id":"t","assignee":"a","status":"completed"}`:                                 "detail.team_id is required",
		`{"team_id":"t","task_id":"t","assignee":"a","status":"exploded"}`:                    "detail.status must be one of queued, running,",
		`{"team_id":"t","task_id":"t","assignee":"a","status":"failed","x":1}`:                "detail.x is not allowed",
		`{"team_id":"t","task_id":"t","assignee":"a","status":"completed","tokens_used":1.5}`: "detail.tokens_used must be an integer",
	} {
		// Only the field under test is wrong: the others are the sample's.
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(bad), &v))
		var ev lambdaevents.EventBridgeEvent
		require.NoError(t, json.Unmarshal(sample(t, "eventbridge/TaskStatusChanged.json"), &ev))
		var detail map[string]any
		require.NoError(t, json.Unmarshal(ev.Detail, &detail))
		for k, val := range v {
			detail[k] = val
		}
		if _, ok := v["team_id"]; !ok {
			delete(detail, "team_id")
		}
		raw, _ := json.Marshal(detail)
		err := events.Validate("TaskStatusChanged", raw)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), want, bad)
	}
	assert.Error(t, events.Validate("NoSuchEvent", []byte(`{}`)))
	assert.Error(t, events.Validate("TaskStatusChanged", []byte(`{`)))
}

// Trigger samples decode into the exact aws-lambda-go types of their
// integration and round-trip without losing fields.
func TestTriggerSamplesRoundTrip(t *testing.T) {
	cases := map[string]any{
		"triggers/api-create-agent.json":               &lambdaevents.APIGatewayV2HTTPRequest{},
		"triggers/authorizer-request.json":             &lambdaevents.APIGatewayV2CustomAuthorizerV2Request{},
		"triggers/sqs-activity-batch.json":             &lambdaevents.SQSEvent{},
		"triggers/task-worker-input.json":              &workflow.TaskInput{},
		"triggers/task-lifecycle-input.json":           &workflow.LifecycleInput{},
		"triggers/admin-create-team.json":              &admin.Request{},
		"triggers/expert-gate-request.json":            &expertgate.Request{},
		"triggers/api-post-message.json":               &lambdaevents.APIGatewayV2HTTPRequest{},
		"triggers/sqs-agent-messages-batch.json":       &lambdaevents.SQSEvent{},
		"triggers/sqs-conversation-results-batch.json": &lambdaevents.SQSEvent{},
		"triggers/api-create-session.json":             &lambdaevents.APIGatewayV2HTTPRequest{},
		"triggers/session-steps-input.json":            &workflow.SessionStepInput{},
	}
	for name, v := range cases {
		raw := sample(t, name)
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(v), name)
		again, err := json.Marshal(v)
		require.NoError(t, err)
		var a, b map[string]any
		require.NoError(t, json.Unmarshal(raw, &a))
		require.NoError(t, json.Unmarshal(again, &b))
		for k := range a {
			assert.Contains(t, b, k, "%s: field %s lost in the round trip", name, k)
		}
	}
}

type memActivity struct{ entries []activity.Entry }

func (m *memActivity) Record(_ context.Context, e activity.Entry) error {
	m.entries = append(m.entries, e)
	return nil
}
func (m *memActivity) List(context.Context, string, paging.Page) ([]activity.Entry, string, error) {
	return m.entries, "", nil
}

// The SQS sample drives the recorder: the event is recorded, the non-event
// is dropped (not retried into the DLQ).
func TestRecorderHandlesTheSampleBatch(t *testing.T) {
	var ev lambdaevents.SQSEvent
	require.NoError(t, json.Unmarshal(sample(t, "triggers/sqs-activity-batch.json"), &ev))
	store := &memActivity{}
	h := &recorder.Handler{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	require.Len(t, store.entries, 1)
	assert.Equal(t, "team_demo", store.entries[0].TeamID)
	assert.NoError(t, events.Validate(store.entries[0].DetailType, store.entries[0].Detail))
}

type failingActivity struct{ memActivity }

func (f *failingActivity) Record(context.Context, activity.Entry) error {
	return assert.AnError
}

// A store failure reports that one message as a batch item failure, so SQS
// retries it (and dead-letters it after two retries) without the others.
func TestRecorderReportsPartialBatchFailures(t *testing.T) {
	var ev lambdaevents.SQSEvent
	require.NoError(t, json.Unmarshal(sample(t, "triggers/sqs-activity-batch.json"), &ev))
	h := &recorder.Handler{Store: &failingActivity{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, ev.Records[0].MessageId, resp.BatchItemFailures[0].ItemIdentifier)
}

// The fan-out consumer applies each valid AgentMessageSent detail and
// reports a body that is not an event as a batch item failure (retried,
// then dead-lettered), not as a silent drop.
func TestFanOutConsumerHandlesTheSampleBatch(t *testing.T) {
	var ev lambdaevents.SQSEvent
	require.NoError(t, json.Unmarshal(sample(t, "triggers/sqs-agent-messages-batch.json"), &ev))
	var applied []json.RawMessage
	h := &consumers.Handler{DetailType: "AgentMessageSent", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Apply: func(_ context.Context, d json.RawMessage) error { applied = append(applied, d); return nil }}
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Len(t, applied, 1)
	assert.NoError(t, events.Validate("AgentMessageSent", applied[0]))
	require.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, ev.Records[1].MessageId, resp.BatchItemFailures[0].ItemIdentifier)

	h.DetailType = "MemoryShared"
	resp, err = h.Handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 2, "an event of another type is a failure too")
}

// The result-poster's queue carries three detail types (its rule's): each
// is decoded into its own type and applied; an event of another type is a
// failure (retried, then dead-lettered), not a silent drop.
func TestResultPosterConsumerHandlesTheSampleBatch(t *testing.T) {
	var ev lambdaevents.SQSEvent
	require.NoError(t, json.Unmarshal(sample(t, "triggers/sqs-conversation-results-batch.json"), &ev))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var applied []string
	keep := func(dt string) func(context.Context, json.RawMessage) error {
		return func(_ context.Context, d json.RawMessage) error {
			require.NoError(t, events.Validate(dt, d))
			applied = append(applied, dt)
			return nil
		}
	}
	h := consumers.For("TaskStatusChanged", log, func(json.RawMessage) bool { return true }, keep("TaskStatusChanged"))
	consumers.On(h, "ReportFinished", func(json.RawMessage) bool { return true }, keep("ReportFinished"))
	consumers.On(h, "SessionStatusChanged", func(json.RawMessage) bool { return true }, keep("SessionStatusChanged"))
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, []string{"TaskStatusChanged", "ReportFinished", "SessionStatusChanged"}, applied)
	require.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, ev.Records[3].MessageId, resp.BatchItemFailures[0].ItemIdentifier)
}
