// Package stack is Conclave's CDK stack: everything in the function manifest
// (functions, routes, queues, rules, state machines, schedules) plus the
// table and the event bus, with least-privilege grants. One stack per
// environment, with the stage's monitoring in a nested stack of it
// (monitoring.go): CloudFormation counts a nested stack's resources
// against its own quota of 500, not the parent's.
//
// The stack composes one construct per concern (Table, Bus, Functions,
// StateMachines, API, StreamAPI, Schedules, Monitoring), each in its own file. Moving resources
// into constructs changed their logical ids (the hash covers the whole
// path), which is acceptable before the first deployed stage. Their
// readable part stays as it was where it can: the table, bus and API sit
// under a construct of their own id, which the CDK does not repeat
// (Table…, Bus…, HttpApiGETv1agents…); elsewhere the construct id comes
// first and the old id follows (FunctionsAgentsFunction…). Constructs
// create their children with the embedded constructs.Construct as scope,
// the jsii object, not the Go wrapper around it.
package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// adminFunction is the manifest function operators invoke (infra/admin);
// its name is a stack output.
const adminFunction = "admin"

// Props configure the stack.
type Props struct {
	awscdk.StackProps
	// Env is the stage's configuration (Environments).
	Env EnvConfig
	// AssetDir holds one directory per function with its bootstrap binary
	// (make build writes dist/<function>/bootstrap).
	AssetDir string
}

// Stack exposes the resources tests and outputs need.
type Stack struct {
	awscdk.Stack
	// Table is the single table.
	Table awsdynamodb.Table
	// Bus is the custom event bus.
	Bus awsevents.EventBus
	// API is the HTTP API.
	API awsapigatewayv2.HttpApi
	// StreamAPI is the streaming API, a REST API (streamapi.go).
	StreamAPI *StreamAPI
	// Functions, Queues and StateMachines are keyed by manifest name (a
	// dead-letter queue by manifest.Queue.DLQName).
	Functions     map[string]awslambda.Function
	Queues        map[string]awssqs.Queue
	StateMachines map[string]awsstepfunctions.StateMachine
	// Monitoring is the stage's alarms, alarm topic and dashboard, in a
	// nested stack (Monitoring.Stack).
	Monitoring *Monitoring
}

// NewConclaveStack builds the stack of one environment. The order matters:
// functions need the table, bus and queues; machines need the functions;
// functions learn the machines' ARNs last, built from names, so nothing
// refers back to a machine.
func NewConclaveStack(scope constructs.Construct, id string, props *Props) *Stack {
	sp := props.StackProps
	s := awscdk.NewStack(scope, &id, &sp)
	env := props.Env
	stage := NewStage(env)

	table := NewTable(s, "Table", &TableProps{Stage: stage, DeletionProtection: env.Retain})
	bus := NewBus(s, "Bus", &BusProps{Stage: stage})
	fns := NewFunctions(s, "Functions", &FunctionsProps{
		Stage: stage, Env: env, AssetDir: props.AssetDir, Table: table.Table, Bus: bus.EventBus, Queues: bus.Queues,
	})
	machines := NewStateMachines(s, "StateMachines", &StateMachinesProps{
		Stage: stage, Table: table.Table, Bus: bus.EventBus, Functions: fns.Functions, Queues: bus.Queues,
	})
	machines.GrantExecutions(fns.Functions)
	NewSchedules(s, "Schedules", &SchedulesProps{Stage: stage, Functions: fns.Functions, DeadLetter: bus.Queues[manifest.EventDeliveryDLQ]})
	describes := describeTargets{Machines: machines, Queues: bus.Queues}
	for _, f := range manifest.Functions {
		grantDescribes(fns.Functions[f.Name], f, describes)
	}
	api := NewAPI(s, "HttpApi", &APIProps{Stage: stage, Env: env, Functions: fns.Functions})
	// The console (served by the HTTP API, docs/console.md) streams from
	// the streaming API: its origin is the HTTP API's endpoint.
	console := api.HTTPAPI.ApiEndpoint()
	stream := NewStreamAPI(s, "StreamApi", &StreamAPIProps{Stage: stage, Env: env, Functions: fns.Functions, ConsoleOrigin: console})
	stream.ShareURL(fns.Functions)
	stream.ShareOrigins(fns.Functions, StreamOrigins(env, console))
	monitoring := NewMonitoring(s, "Monitoring", &MonitoringProps{
		Stage: stage, Env: env, Functions: fns.Functions, Queues: bus.Queues, Machines: machines.Machines, API: api.HTTPAPI,
		Stream: stream,
	})

	awscdk.NewCfnOutput(s, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: api.HTTPAPI.ApiEndpoint()})
	awscdk.NewCfnOutput(s, jsii.String("StreamUrl"), &awscdk.CfnOutputProps{Value: stream.URL})
	awscdk.NewCfnOutput(s, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.Table.TableName()})
	awscdk.NewCfnOutput(s, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: bus.EventBus.EventBusName()})
	awscdk.NewCfnOutput(s, jsii.String("AdminFunctionName"), &awscdk.CfnOutputProps{Value: fns.Functions[adminFunction].FunctionName()})
	awscdk.NewCfnOutput(s, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{Value: monitoring.Topic.TopicArn()})
	OutputIssuer(s, env)
	return &Stack{
		Stack: s, Table: table.Table, Bus: bus.EventBus, API: api.HTTPAPI, StreamAPI: stream,
		Functions: fns.Functions, Queues: bus.Queues, StateMachines: machines.Machines, Monitoring: monitoring,
	}
}
