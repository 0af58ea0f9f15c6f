// Package workerfn wires the "task-worker" function: one agent on one task
// through the model port, with the collaboration tools (report requests
// among them), the model tier of its task, the report check, and what the
// agent is told beyond the payload (its task record's fields, its
// conversation's last messages, its memories). It links DynamoDB,
// EventBridge, Step Functions (sub-delegations start executions) and
// Bedrock.
package workerfn

import (
	"github.com/conclave-ai/conclave/shared/app/consultationsfn"
	"github.com/conclave-ai/conclave/shared/app/sessionwiring"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/shared/taskbrief"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/worker"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), starter, nil)
	msgs := &messaging.Service{Store: w.Store, Dir: w.Store, Bus: w.Bus}
	reps := &reports.Service{Store: w.Store, Tasks: w.Tasks, Conversations: w.Store, Bus: w.Bus, Log: d.Log}
	tools := &tasktools.Tools{Flags: d.Config.Flags, Tasks: w.Tasks, Messages: msgs, Reports: reps,
		Memories: &memory.Service{Store: w.Store, Dir: w.Store, Bus: w.Bus}}
	// consult_specialist: the same service as POST /v1/consultations.
	tools.Consultations = consultationsfn.Service(d, w.Store, w.Bus)
	if d.Config.Flags.On(settings.FlagSessions) {
		tools.Sessions = sessionwiring.New(d, w.Store, starter, nil, nil)
	}
	run := &worker.Worker{Agents: w.Store, Model: providers.New(d.Config, d.AWS, w.Store),
		Tools: tools, Tracker: tasktools.Tracker{Tasks: w.Tasks},
		Tiers: routing.TiersOrDefault(d.Config.Tiers), Reviewer: tasktools.Reviewer{},
		// The task record's fields and its conversation, and the
		// assignee's memories, as a chat reply's agent has them.
		Briefs:   taskbrief.Reader{Tasks: w.Store, Conversations: w.Store},
		Memories: &memory.Service{Store: w.Store, Dir: w.Store, Bus: w.Bus}, Log: d.Log}
	return run.Run, nil
}
