// Package taskworkerfn wires the "task-worker" function: one agent on one task
// through the model port, with the collaboration tools (report requests
// among them), the model tier of its task, the report check, and what the
// agent is told beyond the payload (its task record's fields, its
// conversation's last messages, its memories). It links DynamoDB,
// EventBridge, Step Functions (sub-delegations start executions), Lambda
// (the ExpertGate function, for find_colleagues) and Bedrock.
package taskworkerfn

import (
	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/wire/agenttoolswiring"
	"github.com/conclave-ai/conclave/shared/wire/budgetwiring"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/taskbrief"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), starter, nil)
	mem := memorystore.New(w.Core.DB, w.Core.Table)
	msgs := messagingwiring.Service(w.Core, w.Bus)
	// The same tools as a chat reply's (agenttoolswiring), so GET
	// /v1/agents/{slug}/tools?context=task answers what a task offers.
	model, err := providers.New(d.Config, d.AWS, w.Store, budgetwiring.Guard(d, w.Core, w.Bus))
	if err != nil {
		return nil, err
	}
	tools, err := agenttoolswiring.New(d, w, starter, &memory.Service{Store: mem, Dir: mem, Bus: w.Bus}, gatewiring.Gate(d), model)
	if err != nil {
		return nil, err
	}
	run := &worker.Worker{Agents: w.Store, Model: model,
		Tools: tools, Tracker: agenttools.Tracker{Tasks: w.Tasks},
		Tiers: routing.TiersOrDefault(d.Config.Tiers), Reviewer: agenttools.Reviewer{},
		// The task record's fields and its conversation, and the
		// assignee's memories, as a chat reply's agent has them.
		Briefs:   taskbrief.Reader{Tasks: w.Store, Conversations: conversationstore.New(w.Core.DB, w.Core.Table)},
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
