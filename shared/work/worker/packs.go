package worker

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// PackTools resolves tool packs (shared/tools/toolpacks) into the specs of their
// tools an agent may be given in a task (the stage's flags and the wired
// services still decide). agenttools.Tools implements it; a Tools without
// it gives no pack any tool.
type PackTools interface {
	// PackSpecs may read the team's packs (its MCP packs): ctx bounds it.
	PackSpecs(ctx context.Context, teamID string, a agents.Agent, packs []string) []models.Tool
}

// AddPack is what the request_tool_pack tool returns (as its error) to add
// a pack to the running task: the worker offers the pack's tools from the
// model's next step to the end of the task (its resumed attempts
// included), records it on the timeline, and answers the call with
// Output.
type AddPack struct {
	Pack   string
	Output string
}

func (e AddPack) Error() string { return "add tool pack " + e.Pack }

// EvToolPackAdded is the timeline event of a pack added mid-task
// (tasks.EvToolPackAdded).
const EvToolPackAdded = "tool_pack_added"

// augment returns tools with the specs of packs' tools a is not offered
// yet, in order, each once.
func (w *Worker) augment(ctx context.Context, teamID string, a agents.Agent, tools []models.Tool, packs []string) []models.Tool {
	pt, ok := w.Tools.(PackTools)
	if !ok || len(packs) == 0 {
		return tools
	}
	return Augment(tools, pt.PackSpecs(ctx, teamID, a, packs))
}

// Augment returns tools with those of specs it does not hold yet (by
// name), in order, each once: how a task's tools take its packs' and, the
// same way, a chat reply's (shared/agenttools).
func Augment(tools, specs []models.Tool) []models.Tool {
	for _, s := range specs {
		if !slices.ContainsFunc(tools, func(t models.Tool) bool { return t.Name == s.Name }) {
			tools = append(tools, s)
		}
	}
	return tools
}

// Meter is the task's token budget as a tool that calls a model sees it
// (the bridging tools): what is left of it, and what the tool's calls
// used. The worker adds what a call charged to the attempt's usage and
// ends the attempt with BudgetExceeded when it went over. A chat reply's
// tools get one too, on what is left of the turn's budget
// (shared/agenttools, Chat): the turn counts what it charged.
type Meter struct {
	left   int
	tokens int
	cost   float64
}

type meterKey struct{}

// WithMeter returns ctx carrying m (the worker's, around one tool call).
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterFrom is the meter of the call running under ctx (a task's, or a
// chat reply's), or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// NewMeter is a meter with left tokens of budget (tests, and the worker).
func NewMeter(left int) *Meter { return &Meter{left: max(0, left)} }

// Left is the tokens left of the task's budget.
func (m *Meter) Left() int { return max(0, m.left-m.tokens) }

// Charge adds a model call's tokens and cost to the task's usage.
func (m *Meter) Charge(tokens int, costUSD float64) {
	m.tokens += tokens
	m.cost += costUSD
}

// Charged is what the calls made under m used.
func (m *Meter) Charged() (tokens int, costUSD float64) { return m.tokens, m.cost }
