// Package healthfn wires the "health" function: one probe per dependency
// (the table, the bus, every state machine, every queue). It links the
// DynamoDB, EventBridge, Step Functions and SQS clients, and only their
// describe calls are granted (manifest.GrantDescribe*, GrantGetQueueAttributes).
package healthfn

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	api.HealthRoutes(rt, d.Config.Stage, checks(d, core))
}

func checks(d lambdafn.Deps, core *dynamo.Store) []api.Check {
	bus := eventbus.FromConfig(d.AWS, d.Config.BusName)
	states, queues := sfn.NewFromConfig(d.AWS), sqs.NewFromConfig(d.AWS)
	out := []api.Check{{Name: "dynamodb", Ping: core.Ping}, {Name: "eventbridge", Ping: bus.Ping}}
	for _, name := range sortedKeys(d.Config.StateMachines) {
		arn := d.Config.StateMachines[name]
		out = append(out, api.Check{Name: "stepfunctions:" + name, Ping: func(ctx context.Context) error {
			_, err := states.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: &arn})
			return err
		}})
	}
	for _, name := range sortedKeys(d.Config.Queues) {
		url := d.Config.Queues[name]
		out = append(out, api.Check{Name: "sqs:" + name, Ping: func(ctx context.Context) error {
			_, err := queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
			return err
		}})
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
