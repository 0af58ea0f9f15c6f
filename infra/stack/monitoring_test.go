package stack_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// The prod stage with two alarm subscribers: every dead-letter queue, state
// machine, function and both APIs are watched, every alarm notifies the one
// topic (on ALARM and on OK), the subscribers come from the config, every
// EventBridge target dead-letters, and the machines log no payloads. (The
// alarms, filters, topic and dashboard are the nested monitoring stack's;
// the rules and machines the application's.)
func TestProdMonitoringCoversEveryFailurePath(t *testing.T) {
	// (as `cdk deploy -c env=prod -c alarmEmails=…` hands them to the app)
	cfg, err := configFrom(t, map[string]any{"env": "prod", "alarmEmails": "oncall@example.com,lead@example.com"}, "")
	require.NoError(t, err)
	app, monitoring := synthStacks(t, cfg, mustAssetDir(t))
	m, mon := templateJSON(t, app), templateJSON(t, monitoring)

	topics := logicalIDs(mon, "AWS::SNS::Topic")
	require.Len(t, topics, 1)
	topic := map[string]any{"Ref": topics[0]}

	alarms := map[string]map[string]any{}
	for _, a := range resources(mon, "AWS::CloudWatch::Alarm") {
		p := props(a)
		alarms[p["AlarmName"].(string)] = p
		assert.Equal(t, []any{topic}, p["AlarmActions"], p["AlarmName"])
		assert.Equal(t, []any{topic}, p["OKActions"], p["AlarmName"])
		assert.Equal(t, "notBreaching", p["TreatMissingData"], p["AlarmName"])
	}
	want := []string{"conclave-prod-api-5xx-rate", "conclave-prod-api-latency-p99", "conclave-prod-team-budget-warnings",
		"conclave-prod-stream-5xx-rate", "conclave-prod-stream-latency-p99"}
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

	// Team budgets: any TeamBudgetWarning, counted from the CostGuard's log
	// line in every function whose model calls it guards.
	budget := alarms["conclave-prod-team-budget-warnings"]
	assert.Equal(t, "Conclave/conclave-prod", budget["Namespace"])
	assert.Equal(t, manifest.BudgetWarningMetric, budget["MetricName"])
	assert.EqualValues(t, 1, budget["Threshold"])
	assert.Equal(t, "Sum", budget["Statistic"])
	var filtered []string
	for _, mf := range resources(mon, "AWS::Logs::MetricFilter") {
		p := props(mf)
		assert.Equal(t, fmt.Sprintf(`{ $.msg = "%s" }`, manifest.BudgetWarningLog), p["FilterPattern"])
		tr := p["MetricTransformations"].([]any)[0].(map[string]any)
		assert.Equal(t, "Conclave/conclave-prod", tr["MetricNamespace"])
		assert.Equal(t, manifest.BudgetWarningMetric, tr["MetricName"])
		filtered = append(filtered, fmt.Sprint(p["LogGroupName"]))
	}
	var guarded []string
	for _, f := range manifest.Functions {
		if slices.Contains(f.Domains, "budget") && slices.Contains(f.Grants, manifest.GrantModels) {
			guarded = append(guarded, f.Name)
		}
	}
	assert.ElementsMatch(t, []string{"task-worker", "conversations", "streams", "session-steps", "plan-steps", "consultations"}, guarded)
	require.Len(t, filtered, len(guarded), "a metric filter per function whose model calls the guard charges")

	var emails []any
	for _, s := range resources(mon, "AWS::SNS::Subscription") {
		assert.Equal(t, "email", props(s)["Protocol"])
		assert.Equal(t, topic, props(s)["TopicArn"])
		emails = append(emails, props(s)["Endpoint"])
	}
	assert.ElementsMatch(t, []any{"oncall@example.com", "lead@example.com"}, emails)
	require.Len(t, resources(mon, "AWS::CloudWatch::Dashboard"), 1)
	assert.Equal(t, "conclave-prod", props(resources(mon, "AWS::CloudWatch::Dashboard")[0])["DashboardName"])

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

// Each stage's dashboard graphs every figure the alarms watch, and the
// throughput of tasks and sessions: the API's requests, 4xx, 5xx and p99
// latency; for every state machine its executions started, succeeded,
// failed and timed out; every function's errors and throttles; every
// dead-letter queue's depth. Each metric is read from the dashboard body
// the template deploys, down to the resource it names, so dropping a
// widget (or a machine, a function, a queue from one) fails.
func TestDashboardShowsEveryFigure(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		t.Run(env, func(t *testing.T) {
			// GIVEN the stage's templates
			_, mon, m := synthMonitoring(t, env)
			names := manifest.Names{Stage: env}
			// WHEN its dashboard's metrics are read, each resource as the
			// application's stack passes it to the monitoring stack
			dashboards := resources(mon, "AWS::CloudWatch::Dashboard")
			require.Len(t, dashboards, 1)
			got := dashboardMetrics(t, fromParent(t, m, props(dashboards[0])["DashboardBody"]))

			// THEN each figure is there, on the resource it is about
			api := "Ref:" + logicalIDs(m, "AWS::ApiGatewayV2::Api")[0]
			want := []string{
				"AWS/ApiGateway Count ApiId=" + api + " Sum", "AWS/ApiGateway 5xx ApiId=" + api + " Sum",
				"AWS/ApiGateway 4xx ApiId=" + api + " Sum", "AWS/ApiGateway Latency ApiId=" + api + " p99",
			}
			for _, sm := range manifest.StateMachines {
				id := "Ref:" + logicalIDByName(t, m, "AWS::StepFunctions::StateMachine", "StateMachineName", names.StateMachine(sm.Name))
				for _, metric := range []string{"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut"} {
					want = append(want, "AWS/States "+metric+" StateMachineArn="+id+" Sum")
				}
			}
			for _, f := range manifest.Functions {
				id := "Ref:" + logicalIDOf(t, m, names.Function(f.Name))
				want = append(want, "AWS/Lambda Errors FunctionName="+id+" Sum", "AWS/Lambda Throttles FunctionName="+id+" Sum")
			}
			for _, q := range manifest.Queues {
				dlq := q.DLQName()
				if q.DeadLetterOnly {
					dlq = q.Name
				}
				id := "GetAtt:" + logicalIDOfQueue(t, m, names.Queue(dlq)) + ".QueueName"
				want = append(want, "AWS/SQS ApproximateNumberOfMessagesVisible QueueName="+id+" Maximum")
			}
			for _, w := range want {
				_, shown := got[w]
				assert.True(t, shown, "the dashboard does not show %s", w)
			}
			// AND every machine's starts are in one graph: the stage's
			// throughput of tasks (delegation) and sessions (the others)
			starts := got["AWS/States ExecutionsStarted"]
			require.Len(t, starts, len(manifest.StateMachines))
			assert.Len(t, slices.Compact(slices.Sorted(slices.Values(starts))), 1, "one widget: %v", starts)
		})
	}
}

// dashboardMetrics reads a dashboard body (an Fn::Join of JSON text around
// the tokens of the resources it names) into its metrics, each as
// "<namespace> <metric> <dimension>=<value> <statistic>" (a token as
// Ref:<id> or GetAtt:<id>.<attribute>), mapped to the titles of the
// widgets showing it; also under "<namespace> <metric>", the widgets
// listing that metric, once per resource.
func dashboardMetrics(t *testing.T, body any) map[string][]string {
	t.Helper()
	join, ok := body.(map[string]any)["Fn::Join"].([]any)
	require.True(t, ok, "the body is an Fn::Join: %v", body)
	require.Equal(t, "", join[0])
	var text strings.Builder
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			text.WriteString(p)
		case map[string]any:
			// A token sits between the quotes of a JSON string.
			if ref, ok := p["Ref"].(string); ok {
				text.WriteString("Ref:" + ref)
			} else if att, ok := p["Fn::GetAtt"].([]any); ok {
				text.WriteString(fmt.Sprintf("GetAtt:%s.%s", att[0], att[1]))
			} else {
				t.Fatalf("unexpected token %v", p)
			}
		}
	}
	var doc struct {
		Widgets []struct {
			Properties struct {
				Title   string  `json:"title"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	require.NoError(t, json.Unmarshal([]byte(text.String()), &doc), text.String())
	out := map[string][]string{}
	for _, w := range doc.Widgets {
		for _, row := range w.Properties.Metrics {
			require.Len(t, row, 5, "namespace, metric, one dimension, its value, options: %v", row)
			opts := row[4].(map[string]any)
			key := fmt.Sprintf("%s %s %s=%s %s", row[0], row[1], row[2], row[3], opts["stat"])
			out[key] = append(out[key], w.Properties.Title)
			out[fmt.Sprintf("%s %s", row[0], row[1])] = append(out[fmt.Sprintf("%s %s", row[0], row[1])], w.Properties.Title)
		}
	}
	return out
}

func logicalIDByName(t *testing.T, m map[string]any, typ, prop, name string) string {
	t.Helper()
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ && props(r)[prop] == name {
			return id
		}
	}
	t.Fatalf("no %s %s", typ, name)
	return ""
}

// Without subscribers the topic still exists (other subscribers attach to
// its ARN, an output of the application's stack, which the nested
// monitoring stack outputs to it) and dev keeps execution data in its logs.
func TestDevMonitoringHasNoSubscribersAndLogsPayloads(t *testing.T) {
	_, mon, m := synthMonitoring(t, "dev")
	topics := logicalIDs(mon, "AWS::SNS::Topic")
	require.Len(t, topics, 1)
	assert.Empty(t, resources(mon, "AWS::SNS::Subscription"))
	require.Contains(t, m["Outputs"], "AlarmTopicArn")
	nested, _ := onlyResource(t, m, "AWS::CloudFormation::Stack")
	arn := m["Outputs"].(map[string]any)["AlarmTopicArn"].(map[string]any)["Value"].(map[string]any)["Fn::GetAtt"].([]any)
	require.Equal(t, nested, arn[0])
	output, ok := strings.CutPrefix(arn[1].(string), "Outputs.")
	require.True(t, ok, arn[1])
	assert.Equal(t, map[string]any{"Ref": topics[0]}, mon["Outputs"].(map[string]any)[output].(map[string]any)["Value"])
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

// fromParent replaces, anywhere in v (a part of the nested monitoring
// stack's template), each reference to one of that stack's parameters with
// what the application's template app passes to it: the reference to its
// own resource, as the monitoring read it before it was nested.
func fromParent(t *testing.T, app map[string]any, v any) any {
	t.Helper()
	_, nested := onlyResource(t, app, "AWS::CloudFormation::Stack")
	params := props(nested)["Parameters"].(map[string]any)
	var resolve func(v any) any
	resolve = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["Ref"].(string); ok && len(x) == 1 && params[ref] != nil {
				return params[ref]
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = resolve(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = resolve(e)
			}
			return out
		}
		return v
	}
	return resolve(v)
}
