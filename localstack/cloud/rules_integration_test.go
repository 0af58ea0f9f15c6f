//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// A rule whose consumer skips events without a field (manifest.Rule's
// DetailPresent) never queues them. The deployed rule has the manifest's
// pattern; a twin of it, on the same bus with a source of its own (so its
// events reach no consumer), routes an event of each detail type as its
// publisher marshals it, linked and unlinked: only the linked arrive. EventBridge matches
// when PutEvents is called, so what is on the twin's queue afterwards is
// all the rule passed.
func TestRulesQueueOnlyTheEventsTheirConsumersUse(t *testing.T) {
	// Alone: moto's PutEvents walks the bus's rules without a lock, and a
	// rule created or deleted meanwhile fails another test's PutEvents
	// (RuntimeError: OrderedDict mutated during iteration, a 500).
	e := mustSerialEnv(t)
	ctx := context.Background()
	eb := eventbridge.NewFromConfig(e.cfg)
	sq := sqs.NewFromConfig(e.cfg)
	checked := 0
	for _, r := range manifest.Rules {
		if len(r.DetailPresent) == 0 {
			continue
		}
		checked++
		t.Run(r.Name, func(t *testing.T) {
			deployed, err := eb.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(e.names.Rule(r.Name)), EventBusName: aws.String(e.names.Bus())})
			require.NoError(t, err)
			require.JSONEq(t, cloud.EventPattern(r), aws.ToString(deployed.EventPattern))

			source := fmt.Sprintf("conclave.test-%d", time.Now().UnixNano())
			twin := r
			twin.Sources = []string{source}
			name := "twin-" + source[len("conclave.test-"):]
			q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
			attrs, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
			require.NoError(t, err)
			_, err = eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(e.names.Bus()), EventPattern: aws.String(cloud.EventPattern(twin))})
			require.NoError(t, err)
			_, err = eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(e.names.Bus()),
				Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}})
			require.NoError(t, err)
			t.Cleanup(func() {
				_, _ = eb.RemoveTargets(context.Background(), &eventbridge.RemoveTargetsInput{Rule: aws.String(name), EventBusName: aws.String(e.names.Bus()), Ids: []string{"q"}})
				_, _ = eb.DeleteRule(context.Background(), &eventbridge.DeleteRuleInput{Name: aws.String(name), EventBusName: aws.String(e.names.Bus())})
			})

			var entries []ebtypes.PutEventsRequestEntry
			want := map[string]bool{}
			for _, dt := range r.DetailTypes {
				for _, with := range []bool{true, false} {
					// The event as its publisher marshals it, linked to a
					// conversation and a report or not; its team names it.
					raw, err := json.Marshal(publishedEvent(t, dt, fmt.Sprintf("%s/%v", dt, with), with))
					require.NoError(t, err)
					entries = append(entries, ebtypes.PutEventsRequestEntry{EventBusName: aws.String(e.names.Bus()),
						Source: aws.String(source), DetailType: aws.String(dt), Detail: aws.String(string(raw))})
					if with {
						want[fmt.Sprintf("%s/%v", dt, with)] = true
					}
				}
			}
			put, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
			require.NoError(t, err)
			require.Zero(t, put.FailedEntryCount)

			got := map[string]bool{}
			for range 3 { // a receive may answer part of the queue
				out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				require.NoError(t, err)
				for _, m := range out.Messages {
					var ev struct {
						Detail struct {
							TeamID string `json:"team_id"`
						} `json:"detail"`
					}
					require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &ev))
					got[ev.Detail.TeamID] = true
				}
			}
			assert.Equal(t, want, got, "exactly the events with %v", r.DetailPresent)
		})
	}
	assert.Equal(t, 4, checked, "the rules with a detail filter: report-tasks, consultation-tasks, conversation-results and a2a-push")
}

// publishedEvent is the detail of an event of type dt as its publisher
// writes it (the same structs, so a renamed JSON field shows here), for
// team; linked sets every link a consumer filters on (conversation_id,
// report_id, consultation_id, a2a), unlinked leaves them empty as an unlinked task's are.
func publishedEvent(t *testing.T, dt, team string, linked bool) any {
	t.Helper()
	conv, report, cons := "", "", ""
	if linked {
		conv, report, cons = "conv_twin", "rep_twin", "cons_twin"
	}
	switch dt {
	case "TaskStatusChanged":
		return tasks.TaskStatusChanged{TeamID: team, TaskID: "task_twin", RootID: "task_twin", Status: tasks.Completed, ConversationID: conv, ReportID: report, ConsultationID: cons, A2A: linked}
	case reports.DetailType:
		return reports.Finished{TeamID: team, ReportID: "rep_twin", TaskID: "task_twin", ConversationID: conv}
	case sessions.EventStatusChanged:
		return sessions.SessionStatusChanged{TeamID: team, SessionID: "ses_twin", ConversationID: conv}
	case "PlanCompleted":
		return plans.Event{TeamID: team, PlanID: "plan_twin", ConversationID: conv, Lead: "kyra", Status: plans.Completed, RootTaskID: "task_twin", Steps: 2}
	}
	t.Fatalf("no publisher's event for detail type %s", dt)
	return nil
}
