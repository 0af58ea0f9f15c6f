package stack

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// describeTargets are the resources a function may describe.
type describeTargets struct {
	Machines *StateMachines
	Queues   map[string]awssqs.Queue
}

// grantDescribes gives fn the describes of the state machines and the
// queues its manifest grants name (the health function's dependency
// checks), on every machine and queue, and tells it their ARNs and URLs.
// A describe reads configuration and state, never data. (The table's and
// the bus's describes are statements on those alone: grant.)
func grantDescribes(fn awslambda.Function, f manifest.Function, t describeTargets) {
	if slices.Contains(f.Grants, manifest.GrantDescribeStateMachine) {
		fn.AddEnvironment(jsii.String(settings.EnvStateMachines), t.Machines.ARNPairs(), nil)
		// In name order, like everything built from a map here.
		var arns []*string
		for _, name := range sortedKeys(t.Machines.Machines) {
			arns = append(arns, t.Machines.Machines[name].StateMachineArn())
		}
		fn.AddToRolePolicy(statement([]string{string(manifest.GrantDescribeStateMachine)}, arns...))
	}
	if slices.Contains(f.Grants, manifest.GrantGetQueueAttributes) {
		urls := map[string]*string{}
		var arns []*string
		for _, name := range sortedKeys(t.Queues) {
			urls[name] = t.Queues[name].QueueUrl()
			arns = append(arns, t.Queues[name].QueueArn())
		}
		fn.AddEnvironment(jsii.String(settings.EnvQueues), joinPairs(urls), nil)
		fn.AddToRolePolicy(statement([]string{string(manifest.GrantGetQueueAttributes)}, arns...))
	}
}
