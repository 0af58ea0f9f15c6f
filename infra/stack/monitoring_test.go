package stack_test

import (
	"encoding/json"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/manifest"
)

// The prod stage with two alarm subscribers: every dead-letter queue, state
// machine, function and the API is watched, every alarm notifies the one
// topic (on ALARM and on OK), the subscribers come from the config, every
// EventBridge target dead-letters, and the machines log no payloads.
func TestProdMonitoringCoversEveryFailurePath(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	cfg.AlarmEmails = []string{"oncall@example.com", "lead@example.com"}
	raw, err := json.Marshal(synthConfig(t, cfg, mustAssetDir(t)).ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))

	topics := logicalIDs(m, "AWS::SNS::Topic")
	require.Len(t, topics, 1)
	topic := map[string]any{"Ref": topics[0]}

	alarms := map[string]map[string]any{}
	for _, a := range resources(m, "AWS::CloudWatch::Alarm") {
		p := props(a)
		alarms[p["AlarmName"].(string)] = p
		assert.Equal(t, []any{topic}, p["AlarmActions"], p["AlarmName"])
		assert.Equal(t, []any{topic}, p["OKActions"], p["AlarmName"])
		assert.Equal(t, "notBreaching", p["TreatMissingData"], p["AlarmName"])
	}
	want := []string{"conclave-prod-api-5xx-rate", "conclave-prod-api-latency-p99"}
	for _, q := range manifest.Queues {
		dlq := q.DLQName()
		if q.DeadLetterOnly {
			dlq = q.Name
		}
		want = append(want, "conclave-prod-"+dlq+"-not-empty")
	}
	for _, sm := range manifest.StateMachines {
		want = append(want, "conclave-prod-"+sm.Name+"-failed", "conclave-prod-"+sm.Name+"-timed-out")
	}
	for _, f := range manifest.Functions {
		want = append(want, "conclave-prod-"+f.Name+"-errors", "conclave-prod-"+f.Name+"-throttles")
	}
	assert.ElementsMatch(t, want, keysOf(alarms), "one alarm per failure path, nothing else")

	dlq := alarms["conclave-prod-task-dlq-not-empty"]
	assert.Equal(t, "ApproximateNumberOfMessagesVisible", dlq["MetricName"])
	assert.EqualValues(t, 1, dlq["Threshold"], "any message")
	assert.Equal(t, "GreaterThanOrEqualToThreshold", dlq["ComparisonOperator"])
	assert.EqualValues(t, 1, alarms["conclave-prod-api-5xx-rate"]["Threshold"], "prod pages above 1% 5xx")
	assert.EqualValues(t, 10000, alarms["conclave-prod-api-latency-p99"]["Threshold"])
	assert.Equal(t, "p99", alarms["conclave-prod-api-latency-p99"]["ExtendedStatistic"])

	var emails []any
	for _, s := range resources(m, "AWS::SNS::Subscription") {
		assert.Equal(t, "email", props(s)["Protocol"])
		assert.Equal(t, topic, props(s)["TopicArn"])
		emails = append(emails, props(s)["Endpoint"])
	}
	assert.ElementsMatch(t, []any{"oncall@example.com", "lead@example.com"}, emails)
	require.Len(t, resources(m, "AWS::CloudWatch::Dashboard"), 1)
	assert.Equal(t, "conclave-prod", props(resources(m, "AWS::CloudWatch::Dashboard")[0])["DashboardName"])

	// Every target of every rule (bus rules and the sweeper's schedule)
	// has the delivery dead-letter queue.
	deliveryDLQ := logicalIDOfQueue(t, m, "conclave-prod-"+manifest.EventDeliveryDLQ)
	rules := resources(m, "AWS::Events::Rule")
	require.Len(t, rules, len(manifest.Rules)+scheduled())
	for _, r := range rules {
		for _, target := range props(r)["Targets"].([]any) {
			dl, _ := target.(map[string]any)["DeadLetterConfig"].(map[string]any)
			require.NotNil(t, dl, "rule %v has a target without a dead-letter queue", props(r)["Name"])
			assert.Equal(t, map[string]any{"Fn::GetAtt": []any{deliveryDLQ, "Arn"}}, dl["Arn"])
		}
	}

	for _, sm := range resources(m, "AWS::StepFunctions::StateMachine") {
		logging := props(sm)["LoggingConfiguration"].(map[string]any)
		assert.Equal(t, "ERROR", logging["Level"], "prod logs errors only")
		assert.Equal(t, false, logging["IncludeExecutionData"], "prod keeps payloads out of logs")
	}
}

// Without subscribers the topic still exists (other subscribers attach to
// its ARN, an output) and dev keeps execution data in its logs.
func TestDevMonitoringHasNoSubscribersAndLogsPayloads(t *testing.T) {
	_, m := synth(t, "dev")
	assert.Len(t, resources(m, "AWS::SNS::Topic"), 1)
	assert.Empty(t, resources(m, "AWS::SNS::Subscription"))
	assert.Contains(t, m["Outputs"], "AlarmTopicArn")
	for _, sm := range resources(m, "AWS::StepFunctions::StateMachine") {
		logging := props(sm)["LoggingConfiguration"].(map[string]any)
		assert.Equal(t, "ALL", logging["Level"])
		assert.Equal(t, true, logging["IncludeExecutionData"])
	}
}

func scheduled() int {
	n := 0
	for _, f := range manifest.Functions {
		if f.Trigger == manifest.TriggerSchedule {
			n++
		}
	}
	return n
}

func logicalIDs(m map[string]any, typ string) []string {
	var out []string
	for id, r := range m["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == typ {
			out = append(out, id)
		}
	}
	return out
}

func logicalIDOfQueue(t *testing.T, m map[string]any, name string) string {
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "AWS::SQS::Queue" && props(r)["QueueName"] == name {
			return id
		}
	}
	t.Fatalf("no queue %s", name)
	return ""
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
