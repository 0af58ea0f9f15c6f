// Package messagefanoutfn wires the "message-fanout" function: AgentMessageSent
// (bus → rule → SQS) becomes one inbox entry per recipient. It links
// DynamoDB, and SQS for its dead-letter queue: fan-out writes inboxes and publishes nothing.
package messagefanoutfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
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
