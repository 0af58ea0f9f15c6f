// Package consumerwiring wires what every queue consumer shares: counting
// its failed attempts in the table and dead-lettering the last through SQS
// (consumers.Retry), for the queue the manifest gives the function.
package consumerwiring

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/aws/queues"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// Retry is the retry policy of function d.Name's trigger queue.
func Retry(d lambdafn.Deps, attempts consumers.Attempts) (*consumers.Retry, error) {
	f, ok := manifest.Lookup(d.Name)
	if !ok || f.Trigger != manifest.TriggerSQS {
		return nil, fmt.Errorf("%q is not a queue consumer in the manifest", d.Name)
	}
	q, _ := manifest.QueueByName(f.Queue)
	return &consumers.Retry{
		Queue: q.Name, MaxAttempts: q.MaxAttempts, Attempts: attempts,
		DeadLetters: queues.FromConfig(d.AWS, d.Config.Queues), Log: d.Log,
	}, nil
}
