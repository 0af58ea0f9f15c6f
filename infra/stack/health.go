package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/settings"
)

// healthProbes are the dependencies the health function describes.
type healthProbes struct {
	Table    awsdynamodb.ITable
	Bus      awsevents.IEventBus
	Machines *StateMachines
	Queues   map[string]awssqs.Queue
}

// grantProbes is manifest.GrantProbe: the function (health) may describe
// every dependency (table, bus, state machines, queues) and learns the
// machines' ARNs and the queues' URLs. A describe reads configuration and
// state, never data.
func grantProbes(health awslambda.Function, p healthProbes) {
	health.AddEnvironment(jsii.String(settings.EnvStateMachines), p.Machines.ARNPairs(), nil)
	queueURLs := map[string]*string{}
	for _, name := range sortedKeys(p.Queues) {
		queueURLs[name] = p.Queues[name].QueueUrl()
	}
	health.AddEnvironment(jsii.String(settings.EnvQueues), joinPairs(queueURLs), nil)

	// In name order, like everything built from a map here.
	var machineARNs, queueARNs []*string
	for _, name := range sortedKeys(p.Machines.Machines) {
		machineARNs = append(machineARNs, p.Machines.Machines[name].StateMachineArn())
	}
	for _, name := range sortedKeys(p.Queues) {
		queueARNs = append(queueARNs, p.Queues[name].QueueArn())
	}
	for _, s := range []struct {
		action    string
		resources []*string
	}{
		{"dynamodb:DescribeTable", []*string{p.Table.TableArn()}},
		{"events:DescribeEventBus", []*string{p.Bus.EventBusArn()}},
		{"states:DescribeStateMachine", machineARNs},
		{"sqs:GetQueueAttributes", queueARNs},
	} {
		health.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(s.action), Resources: &s.resources,
		}))
	}
}
