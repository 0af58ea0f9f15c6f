// Package a2apushfn wires the "a2a-push" function: a task created over
// A2A changed status (TaskStatusChanged with a2a set: bus → rule → SQS);
// each of its push-notification configs is sent the task as A2A shows it
// (server.Notifier), through the network policy's dialer
// (remote.PushSender). It links DynamoDB, and SQS to dead-letter an
// event whose attempts are used up.
package a2apushfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/pushstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	n := &server.Notifier{Tasks: taskstore.New(core.DB, core.Table), Configs: pushstore.New(core.DB, core.Table),
		Sender: &remote.PushSender{Client: remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}}}}
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For("TaskStatusChanged", d.Log, func(ev tasks.TaskStatusChanged) bool { return ev.A2A && ev.TeamID != "" && ev.TaskID != "" },
		func(ctx context.Context, ev tasks.TaskStatusChanged) error {
			sent, err := n.Notify(ctx, ev.TeamID, ev.TaskID)
			if sent > 0 {
				d.Log.InfoContext(ctx, "push notifications sent", "task_id", ev.TaskID, "status", string(ev.Status), "sent", sent)
			}
			return err
		})
	h.Retry = retry
	return h.Handle, nil
}
