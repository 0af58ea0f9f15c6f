package stack

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// MonitoringProps are the resources to watch and the stage's alarm settings.
type MonitoringProps struct {
	Stage Stage
	Env   EnvConfig
	// Functions, Queues and Machines by manifest name (a dead-letter queue
	// under manifest.Queue.DLQName).
	Functions map[string]awslambda.Function
	Queues    map[string]awssqs.Queue
	Machines  map[string]awsstepfunctions.StateMachine
	API       awsapigatewayv2.HttpApi
	// Stream is the streaming API (streamapi.go).
	Stream *StreamAPI
}

// Monitoring is one stage's alarms, the SNS topic they notify and a
// dashboard. Every alarm treats missing data as not breaching (a quiet
// stage is a healthy one) and notifies on both ALARM and OK, so whoever is
// paged also learns when it is over.
//
// They live in a nested stack of the application's stack: about a hundred
// resources (the alarms of every function, machine and dead-letter queue)
// that would otherwise count against CloudFormation's quota of 500 resources a
// stack, which the application's stack reached with CORS origins set. A
// nested stack keeps one deploy (`cdk deploy Conclave-<stage>` deploys
// both); what it reads of the parent (functions, queues, machines, the
// APIs, the log groups of the metric filters) the CDK passes as the nested
// stack's parameters, and the topic's ARN comes back as its output.
type Monitoring struct {
	// Construct is the nested stack, the scope of every resource here.
	constructs.Construct
	// Stack is the same nested stack (its template: assertions.Template_FromStack).
	Stack awscdk.NestedStack
	// Topic receives every alarm; its subscriptions are the stage's
	// AlarmEmails.
	Topic awssns.Topic
	// Alarms by construct id.
	Alarms    map[string]awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
}

// The periods alarms look at. Five minutes is the finest period every
// metric here has without detailed monitoring (SQS publishes every minute,
// Lambda and Step Functions too, but a five-minute sum rides out a single
// late datapoint).
var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// NewMonitoring creates the topic, an alarm per dead-letter queue, per
// state machine (failed, timed out), per function (errors, throttles), each
// API's 5xx rate and p99 latency, and the dashboard.
func NewMonitoring(scope constructs.Construct, id string, props *MonitoringProps) *Monitoring {
	nested := awscdk.NewNestedStack(scope, &id, &awscdk.NestedStackProps{
		Description: jsii.String("Conclave " + props.Env.Name + ": alarms, their topic and the dashboard"),
	})
	var c constructs.Construct = nested
	names := props.Stage.Names
	m := &Monitoring{Construct: c, Stack: nested, Alarms: map[string]awscloudwatch.Alarm{}}
	m.Topic = awssns.NewTopic(c, jsii.String("AlarmTopic"), &awssns.TopicProps{
		TopicName: jsii.String(names.Prefix() + "-alarms"), DisplayName: jsii.String("Conclave " + props.Env.Name + " alarms"),
		EnforceSSL: jsii.Bool(true),
	})
	for _, email := range props.Env.AlarmEmails {
		m.Topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(email), nil))
	}
	m.queueAlarms(props)
	m.machineAlarms(props)
	m.functionAlarms(props)
	m.apiAlarms(props)
	m.streamAPIAlarms(props)
	m.budgetAlarm(props)
	m.Dashboard = newDashboard(c, props)
	return m
}

// alarm creates one alarm notifying the topic.
func (m *Monitoring) alarm(id, name, description string, metric awscloudwatch.IMetric, threshold float64, periods float64) {
	a := awscloudwatch.NewAlarm(m.Construct, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmName: jsii.String(name), AlarmDescription: jsii.String(description), Metric: metric,
		Threshold: jsii.Number(threshold), EvaluationPeriods: jsii.Number(periods), DatapointsToAlarm: jsii.Number(periods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	action := &topicAction{topic: m.Topic}
	a.AddAlarmAction(action)
	a.AddOkAction(action)
	m.Alarms[id] = a
}

// queueAlarms: any message in a dead-letter queue is a failure nobody
// handled; the queues keep messages 14 days, so they must not sit unseen.
func (m *Monitoring) queueAlarms(props *MonitoringProps) {
	for _, q := range manifest.Queues {
		dlq := q.DLQName()
		if q.DeadLetterOnly {
			dlq = q.Name
		}
		metric := props.Queues[dlq].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: alarmPeriod, Statistic: jsii.String("Maximum"),
		})
		m.alarm(camel(dlq)+"Alarm", props.Stage.Names.Queue(dlq)+"-not-empty",
			"Messages in the dead-letter queue "+dlq+": inspect them and redrive or discard.", metric, 1, 1)
	}
}

// machineAlarms: a failed or timed-out execution is a task or session that
// ended without its result.
func (m *Monitoring) machineAlarms(props *MonitoringProps) {
	for _, sm := range manifest.StateMachines {
		machine := props.Machines[sm.Name]
		opts := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
		name := props.Stage.Names.StateMachine(sm.Name)
		m.alarm(camel(sm.Name)+"FailedAlarm", name+"-failed", "Executions of "+sm.Name+" failed.", machine.MetricFailed(opts), 1, 1)
		m.alarm(camel(sm.Name)+"TimedOutAlarm", name+"-timed-out", "Executions of "+sm.Name+" timed out.", machine.MetricTimedOut(opts), 1, 1)
	}
}

// functionAlarms: errors (an invocation that failed: an unhandled error or
// a timeout; handled 4xx answers are not errors) and throttles, per
// function.
func (m *Monitoring) functionAlarms(props *MonitoringProps) {
	for _, f := range manifest.Functions {
		fn := props.Functions[f.Name]
		opts := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
		name := props.Stage.Names.Function(f.Name)
		m.alarm(camel(f.Name)+"ErrorsAlarm", name+"-errors", "Invocations of "+f.Name+" failed.", fn.MetricErrors(opts), 1, 1)
		m.alarm(camel(f.Name)+"ThrottlesAlarm", name+"-throttles", "Invocations of "+f.Name+" were throttled.", fn.MetricThrottles(opts), 1, 1)
	}
}

// apiAlarms: the share of 5xx answers and the p99 latency of the HTTP API,
// each over the stage's thresholds for three periods in a row (one slow
// burst is not a page).
func (m *Monitoring) apiAlarms(props *MonitoringProps) {
	opts := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
	rate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(requests > 0, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": props.API.MetricServerError(opts), "requests": props.API.MetricCount(opts)},
		Label:        jsii.String("5xx %"), Period: alarmPeriod,
	})
	prefix := props.Stage.Names.Prefix()
	m.alarm("Api5xxRateAlarm", prefix+"-api-5xx-rate", "More than the stage's share of API answers are 5xx.", rate, props.Env.API5xxPercent, 3)
	latency := props.API.MetricLatency(&awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("p99")})
	m.alarm("ApiLatencyP99Alarm", prefix+"-api-latency-p99", "The API's p99 latency is over the stage's threshold.", latency, float64(props.Env.APILatencyP99Ms), 3)
}

// budgetAlarm: a team's model spend reached the warning share of its
// monthly budget (TeamBudgetWarning, once per team and month). Every
// function whose model calls go through the CostGuard (it links the
// budget domain and calls models) counts the guard's warning line with a
// metric filter on its log group; the alarm fires on any warning, so the
// operator hears of it before the team's calls are refused.
func (m *Monitoring) budgetAlarm(props *MonitoringProps) {
	names := props.Stage.Names
	namespace := manifest.MetricNamespace + "/" + names.Prefix()
	for _, f := range manifest.Functions {
		if !slices.Contains(f.Domains, "budget") || !slices.Contains(f.Grants, manifest.GrantModels) {
			continue
		}
		awslogs.NewMetricFilter(m.Construct, jsii.String(camel(f.Name)+"BudgetWarnings"), &awslogs.MetricFilterProps{
			LogGroup:        props.Functions[f.Name].LogGroup(),
			FilterPattern:   awslogs.FilterPattern_StringValue(jsii.String("$.msg"), jsii.String("="), jsii.String(manifest.BudgetWarningLog)),
			MetricNamespace: jsii.String(namespace), MetricName: jsii.String(manifest.BudgetWarningMetric),
			MetricValue: jsii.String("1"), DefaultValue: jsii.Number(0),
		})
	}
	metric := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(namespace), MetricName: jsii.String(manifest.BudgetWarningMetric),
		Period: alarmPeriod, Statistic: jsii.String("Sum"),
	})
	m.alarm("TeamBudgetWarningsAlarm", names.Prefix()+"-team-budget-warnings",
		"A team's model spend reached the warning share of its monthly budget (TeamBudgetWarning): its calls are refused once the budget is spent.", metric, 1, 1)
}

// newDashboard shows the same figures, plus the throughput of tasks (the
// delegation machine) and sessions (every other machine), and the way to
// the traces (tracesWidget).
func newDashboard(c constructs.Construct, props *MonitoringProps) awscloudwatch.Dashboard {
	period := awscdk.Duration_Minutes(jsii.Number(5))
	sum := &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum")}
	d := awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(props.Stage.Names.Prefix()),
	})
	graph := func(title string, left []awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &left, Width: jsii.Number(12)})
	}
	d.AddWidgets(
		graph("API requests and 5xx", []awscloudwatch.IMetric{props.API.MetricCount(sum), props.API.MetricServerError(sum), props.API.MetricClientError(sum)}),
		graph("API latency p99 (ms)", []awscloudwatch.IMetric{props.API.MetricLatency(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("p99")})}),
	)
	var started, ended, errs, throttles, depth []awscloudwatch.IMetric
	for _, sm := range manifest.StateMachines {
		machine := props.Machines[sm.Name]
		started = append(started, machine.MetricStarted(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(sm.Name + " started")}))
		ended = append(ended,
			machine.MetricSucceeded(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(sm.Name + " succeeded")}),
			machine.MetricFailed(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(sm.Name + " failed")}),
			machine.MetricTimedOut(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(sm.Name + " timed out")}))
	}
	for _, f := range manifest.Functions {
		fn := props.Functions[f.Name]
		errs = append(errs, fn.MetricErrors(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(f.Name)}))
		throttles = append(throttles, fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(f.Name)}))
	}
	for _, q := range manifest.Queues {
		dlq := q.DLQName()
		if q.DeadLetterOnly {
			dlq = q.Name
		}
		depth = append(depth, props.Queues[dlq].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Maximum"), Label: jsii.String(dlq)}))
	}
	d.AddWidgets(graph("Tasks and sessions started (executions)", started), graph("Executions ended", ended))
	d.AddWidgets(graph("Function errors", errs), graph("Function throttles", throttles))
	d.AddWidgets(graph("Dead-letter queue depth", depth))
	d.AddWidgets(tracesWidget(props.Env.Name))
	return d
}
