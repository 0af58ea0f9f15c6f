// Package taskwiring builds the task service the task functions share
// (tasks, task-lifecycle, task-worker, task-sweeper) from the store, the
// bus and, for the functions granted Step Functions, a workflow starter.
package taskwiring

import (
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Wiring is the task service with the adapters behind it.
type Wiring struct {
	Core  *dynamo.Store
	Store *taskstore.Store
	Bus   *eventbus.Bus
	Tasks *tasks.Service
}

// New builds the task service of d. callbacks wakes the executions
// waiting for a task that ends (every function that ends tasks has it).
// workflows is nil for a function that
// never starts or stops executions (the lifecycle steps), so it links no
// Step Functions client.
func New(d lambdafn.Deps, core *dynamo.Store, workflows workflow.Starter, callbacks workflow.Callbacks) Wiring {
	bus := eventbus.FromConfig(d.AWS, d.Config.BusName)
	store := taskstore.New(core.DB, core.Table)
	svc := tasks.NewService(store, workflows, bus, d.Log)
	svc.Callbacks = callbacks
	// A task may name the team's MCP packs: whether the team has one is
	// a read of the pack store (no secret, no server involved).
	svc.Packs = &toolpacks.Registry{Store: mcppackstore.New(core.DB, core.Table)}
	return Wiring{Core: core, Store: store, Bus: bus, Tasks: svc}
}
