package consumers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/testkit/logtest"
)

// Every line logged while a message is handled — the consumer's own, the
// retry's and the attempt's — carries the Lambda request id, the message's
// and its event's ids, and the team and work ids of its detail; none
// carries another message's. The batch is the sample of the result
// poster's queue: a task, a report and a session of one team, and an event
// of a type the consumer does not take.
func TestEveryLineOfAMessageCarriesItsTeamAndWorkIDs(t *testing.T) {
	raw, err := os.ReadFile("../../../events/samples/triggers/sqs-conversation-results-batch.json")
	require.NoError(t, err)
	var batch events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &batch))
	require.Len(t, batch.Records, 4)
	// A body that is not an event still says which message it was.
	batch.Records = append(batch.Records, events.SQSMessage{MessageId: "m-garbage", Body: "not json"})

	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	apply := func(ctx context.Context, ev map[string]any) error {
		log.InfoContext(ctx, "applied")
		if ev["report_id"] != nil {
			return errors.New("store down")
		}
		return nil
	}
	valid := func(map[string]any) bool { return true }
	h := consumers.For("TaskStatusChanged", log, valid, apply)
	consumers.On(h, "ReportFinished", valid, apply)
	consumers.On(h, "SessionStatusChanged", valid, apply)
	h.Retry = &consumers.Retry{Queue: "conversation-results", MaxAttempts: 3, Attempts: &attempts{n: map[string]int{}}, DeadLetters: &deadLetters{}, Log: log}

	payload, err := json.Marshal(batch)
	require.NoError(t, err)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-req-1"})
	out, err := lambdafn.Counted(h.Handle, log).Invoke(ctx, payload)
	require.NoError(t, err)
	var resp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(out, &resp))
	require.Len(t, resp.BatchItemFailures, 3, "the report's, the handoff's and the garbage's messages are retried")

	const conv = "conv_06h05a1b2c3d4e5f6g7h8j9k0m"
	// The ids each message's lines carry, absent ones as "".
	wants := map[string]map[string]string{
		batch.Records[0].MessageId: {"team_id": "team_demo", "task_id": "task_06h05a2b3c4d5e6f7g8h9j0k1m", "conversation_id": conv, "report_id": "", "session_id": ""},
		batch.Records[1].MessageId: {"team_id": "team_demo", "report_id": "rep_06h05a3c4d5e6f7g8h9j0k1m2n", "task_id": "task_06h05a3c4d5e6f7g8h9j0k1m2p", "conversation_id": conv, "session_id": ""},
		batch.Records[2].MessageId: {"team_id": "team_demo", "session_id": "ses_06h05a4d5e6f7g8h9j0k1m2n3p", "conversation_id": conv, "task_id": "", "report_id": ""},
		batch.Records[3].MessageId: {"team_id": "team_demo", "detail_type": "HandoffCompleted", "task_id": "", "session_id": "", "report_id": "", "conversation_id": ""},
		"m-garbage":                {"team_id": "", "event_id": "", "task_id": "", "session_id": "", "report_id": ""},
	}
	seen := map[string][]string{}
	for _, l := range logtest.Lines(t, &buf) {
		msg := l["msg"].(string)
		assert.Equal(t, "lambda-req-1", l["lambda_request_id"], msg)
		if msg == "invocation" {
			continue // the batch's own line: one per invocation, of no message
		}
		id, _ := l["sqs_message_id"].(string)
		want, ok := wants[id]
		require.True(t, ok, "line %q names its message, one of the batch: %q", msg, id)
		seen[id] = append(seen[id], msg)
		for k, v := range want {
			if v == "" {
				assert.NotContains(t, l, k, "%s: %s of another message leaked", msg, k)
			} else {
				assert.Equal(t, v, l[k], "%s: %s", msg, k)
			}
		}
		if id != "m-garbage" {
			assert.NotEmpty(t, l["event_id"], msg)
			assert.NotEmpty(t, l["detail_type"], msg)
		}
	}
	failed := []string{"attempt failed; the message will be retried", "event failed; it will be retried, then dead-lettered"}
	assert.Equal(t, []string{"applied"}, seen[batch.Records[0].MessageId])
	assert.Equal(t, append([]string{"applied"}, failed...), seen[batch.Records[1].MessageId])
	assert.Equal(t, []string{"applied"}, seen[batch.Records[2].MessageId])
	assert.Equal(t, failed, seen[batch.Records[3].MessageId])
	assert.Equal(t, failed, seen["m-garbage"])
}
