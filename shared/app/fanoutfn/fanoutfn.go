// Package fanoutfn wires the "message-fanout" function: AgentMessageSent
// (bus → rule → SQS) becomes one inbox entry per recipient. It links
// DynamoDB, and SQS for its dead-letter queue: fan-out writes inboxes and publishes nothing.
package fanoutfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/app/consumerwiring"
	"github.com/conclave-ai/conclave/shared/app/messagingwiring"
	"github.com/conclave-ai/conclave/shared/consumers"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/messaging"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	// No Bus: FanOut never publishes, and the function has no bus grant.
	svc := messagingwiring.Service(core, nil)
	valid := func(ev messaging.SentEvent) bool { return ev.TeamID != "" && ev.MessageID != "" }
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For(messaging.DetailType, d.Log, valid, func(ctx context.Context, ev messaging.SentEvent) error {
		n, err := svc.FanOut(ctx, ev.TeamID, ev.MessageID)
		d.Log.InfoContext(ctx, "fanned out", "inbox_entries_written", n)
		return err
	})
	h.Retry = retry
	return h.Handle, nil
}
