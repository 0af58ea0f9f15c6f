// Package workerfn wires the "task-worker" function: one agent on one task
// through the model port, with the collaboration tools (report requests
// among them), the model tier of its task, the report check, and what the
// agent is told beyond the payload (its task record's fields, its
// conversation's last messages, its memories). It links DynamoDB,
// EventBridge, Step Functions (sub-delegations start executions), Lambda
// (the ExpertGate function, for find_colleagues) and Bedrock.
package workerfn

import (
	"github.com/conclave-ai/conclave/shared/app/budgetwiring"
	"github.com/conclave-ai/conclave/shared/app/messagingwiring"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/app/toolwiring"
	"github.com/conclave-ai/conclave/shared/approvals"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/approvalstore"
	"github.com/conclave-ai/conclave/shared/dynamo/convstore"
	"github.com/conclave-ai/conclave/shared/dynamo/memorystore"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/taskbrief"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/worker"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), starter, nil)
	mem := memorystore.New(w.Core.DB, w.Core.Table)
	msgs := messagingwiring.Service(w.Core, w.Bus)
	// The same tools as a chat reply's (toolwiring), so GET
	// /v1/agents/{slug}/tools?context=task answers what a task offers.
	model := providers.New(d.Config, d.AWS, w.Store, budgetwiring.Guard(d, w.Core, w.Bus))
	tools := toolwiring.New(d, w, starter, &memory.Service{Store: mem, Dir: mem, Bus: w.Bus}, toolwiring.Gate(d), model)
	run := &worker.Worker{Agents: w.Store, Model: model,
		Tools: tools, Tracker: tasktools.Tracker{Tasks: w.Tasks},
		Tiers: routing.TiersOrDefault(d.Config.Tiers), Reviewer: tasktools.Reviewer{},
		// The task record's fields and its conversation, and the
		// assignee's memories, as a chat reply's agent has them.
		Briefs:   taskbrief.Reader{Tasks: w.Store, Conversations: convstore.New(w.Core.DB, w.Core.Table)},
		Memories: &memory.Service{Store: mem, Dir: mem, Bus: w.Bus}, Log: d.Log,
		// The assignee read with its team (one query: the roster), and
		// its unread messages summarized (docs/agents-context.md).
		Team: w.Store, Inbox: msgs,
		// The team's approval policy gates tool calls (docs/approvals.md).
		Approvals: &approvals.Service{Store: approvalstore.New(w.Core.DB, w.Core.Table), Log: d.Log},
		// A task of an A2A agent outside the team is sent to it and
		// waited for in the delegation machine (worker/remote.go).
		Remote: providers.Remote(d.Config, d.AWS, w.Store)}
	return run.Run, nil
}
