package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/testkit/logtest"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Every line a session step logs, the task service's included, carries
// the Lambda request id, the team, the session and the step; a stage's
// lines carry its task too. The step runs as the session-steps function
// runs it: the machine's payload through workflow.Steps and the bootstrap.
// A failing bus makes the services log (a failed publish is logged, not
// returned).
func TestEveryLineOfASessionStepCarriesTheTeamAndSession(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	f.svc.Log, f.tasks.Log = log, log
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Plan the release",
		Participants: parts("contributor", "luke", "archie")})
	f.bus.Err = errors.New("bus down")
	h := lambdafn.Counted(workflow.Steps{string(s.Pattern): f.svc.Steps()}.Handle, log)

	invoke := func(requestID, action string, item *workflow.SessionItem) []byte {
		t.Helper()
		buf.Reset()
		payload, err := json.Marshal(workflow.SessionStepInput{Machine: string(s.Pattern), Action: action, TeamID: team,
			SessionID: s.ID, Run: 1, ExecutionARN: "arn:" + s.ID, Item: item})
		require.NoError(t, err)
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
		out, err := h.Invoke(ctx, payload)
		require.NoError(t, err)
		return out
	}
	check := func(requestID, action string) map[string][]map[string]any {
		t.Helper()
		byMsg := map[string][]map[string]any{}
		for _, l := range logtest.Lines(t, &buf) {
			msg := l["msg"].(string)
			byMsg[msg] = append(byMsg[msg], l)
			assert.Equal(t, requestID, l["lambda_request_id"], msg)
			if msg == "invocation" {
				continue // the invocation's own line, logged outside the step
			}
			assert.Equal(t, team, l["team_id"], msg)
			assert.Equal(t, s.ID, l["session_id"], msg)
			assert.Equal(t, action, l["step"], msg)
		}
		return byMsg
	}

	var begun workflow.SessionStepOutput
	require.NoError(t, json.Unmarshal(invoke("lambda-begin", workflow.SessionBegin, nil), &begun))
	lines := check("lambda-begin", workflow.SessionBegin)
	require.NotEmpty(t, lines["publish "+sessions.EventStatusChanged], "the failed publish was logged")
	require.NotEmpty(t, begun.Items)

	invoke("lambda-stage", workflow.SessionStage, &begun.Items[0])
	lines = check("lambda-stage", workflow.SessionStage)
	// The task service logs the stage task's failed publish naming only
	// the task, the session service the stage's naming only the session:
	// the rest comes from the context.
	require.NotEmpty(t, lines["publish TaskStatusChanged"], "the stage task's failed publish was logged")
	require.NotEmpty(t, lines["publish "+sessions.EventStageCompleted], "the stage's failed publish was logged")
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	var stageTask string
	for _, p := range got.Participants {
		if p.Agent == begun.Items[0].Agent {
			stageTask = p.TaskID
		}
	}
	require.NotEmpty(t, stageTask, "the stage's participant names its task")
	for msg, ls := range lines {
		for _, l := range ls {
			if msg != "invocation" {
				assert.Equal(t, stageTask, l["task_id"], msg)
			}
		}
	}
}
