package sessions

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Tasks records a session's stages in the task model: each stage is a
// task the lead gives the stage's agent (its own stages the session's
// creator gives the lead), so a stage takes one of the agent's five slots,
// counts toward the depth of anything it delegates, and has the task
// budgets.
type Tasks interface {
	// BeginStage creates the stage's task and starts it; the task model's
	// errors (ConcurrencyLimit, AgentUnavailable, …) come back as they are.
	BeginStage(ctx context.Context, teamID string, st StageTask) (taskID string, err error)
	// EndStage completes the task with output, or fails it with failure.
	EndStage(ctx context.Context, teamID, taskID, agent, output, failure string, tokens int, costUSD float64) error
	// AwaitSlot puts a stage whose agent is at its limit in line for a
	// slot (its ticket, named by key): the transaction that frees one
	// hands it over and completes token. waiting is false when a slot is
	// free now (nothing was registered: the stage should run).
	AwaitSlot(ctx context.Context, teamID, agent, key, token string, until time.Time) (waiting bool, err error)
	// ReleaseSlots ends the tickets of the session (key prefix): one
	// waiting is dropped, one granted gives its slot back.
	ReleaseSlots(ctx context.Context, teamID, prefix string) error
}

// StageTask is the task of one stage.
type StageTask struct {
	SessionID string
	Lead      string
	Agent     string
	Title     string
	Prompt    string
	Context   string
	CapUSD    float64
	// Ticket is the stage's slot ticket key: a granted one gives the task
	// its slot (the stage waited for it).
	Ticket string
}

// TaskModel implements Tasks on the task service.
type TaskModel struct{ Svc *tasks.Service }

// BeginStage implements Tasks.
func (m TaskModel) BeginStage(ctx context.Context, teamID string, st StageTask) (string, error) {
	in := tasks.CreateInput{
		Assignee: st.Agent, Type: "execute", Title: st.Title, Instructions: st.Prompt, Context: clip.Clip(st.Context, 20000),
		CostCapUSD: &st.CapUSD, Execute: new(bool), SessionID: st.SessionID,
		Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(workflow.MaxTaskSeconds)},
	}
	if st.Ticket != "" {
		// One read per stage: a stage that waited runs on the slot that
		// was handed to its ticket, and takes no other.
		if _, granted, err := m.Svc.GrantedTicket(ctx, teamID, st.Ticket); err != nil {
			return "", err
		} else if granted {
			in.Ticket = st.Ticket
		}
	}
	creator := tasks.Creator{Type: "user", ID: tasks.SessionCreatorPrefix + st.SessionID}
	if st.Agent != st.Lead {
		in.CreatedByAgent = st.Lead
	}
	t, err := m.Svc.Create(ctx, teamID, creator, in, false)
	if err != nil {
		return "", err
	}
	if _, err := m.Svc.Start(ctx, teamID, t.ID, "session:"+st.SessionID); err != nil {
		return t.ID, err
	}
	return t.ID, nil
}

// AwaitSlot implements Tasks.
func (m TaskModel) AwaitSlot(ctx context.Context, teamID, agent, key, token string, until time.Time) (bool, error) {
	return m.Svc.WaitForSlot(ctx, tasks.Ticket{TeamID: teamID, Agent: agent, Key: key, Token: token,
		Rank: tasks.PriorityRank("normal"), Expires: until})
}

// ReleaseSlots implements Tasks.
func (m TaskModel) ReleaseSlots(ctx context.Context, teamID, prefix string) error {
	_, err := m.Svc.ReleaseTickets(ctx, teamID, prefix)
	return err
}

// EndStage implements Tasks.
func (m TaskModel) EndStage(ctx context.Context, teamID, taskID, agent, output, failure string, tokens int, costUSD float64) error {
	if err := m.Svc.RecordAttempt(ctx, teamID, taskID, agent, tasks.Usage{Tokens: tokens, CostUSD: costUSD}, []tasks.Event{
		{Type: tasks.EvProgress, Payload: map[string]any{"message": "session stage finished", "tokens_used": tokens, "cost_usd": costUSD}},
	}); err != nil {
		return err
	}
	by := "agent:" + agent
	if failure != "" {
		_, err := m.Svc.Fail(ctx, teamID, taskID, by, failure)
		return err
	}
	_, err := m.Svc.Complete(ctx, teamID, taskID, by, clip.Clip(output, 20000), nil)
	return err
}

func ptr[T any](v T) *T { return &v }
