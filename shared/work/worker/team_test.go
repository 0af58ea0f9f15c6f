package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// teamDir is a team of agents read whole (TeamAgents) or one by one
// (GetAgent, for the local model's scripts), counting the reads.
type teamDir struct {
	mu          sync.Mutex
	list        []agents.Agent
	teamReads   int
	singleReads int
}

func (d *teamDir) TeamAgents(context.Context, string) ([]agents.Agent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.teamReads++
	return d.list, nil
}

func (d *teamDir) GetAgent(_ context.Context, _, slug string) (agents.Agent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.singleReads++
	for _, a := range d.list {
		if a.Slug == slug {
			return a, nil
		}
	}
	return agents.Agent{}, apperr.NotFound("agent", slug)
}

// bigTeam is n agents with long taglines and four skills each, plus the
// scripted ones the tests run.
func bigTeam(n int, extra ...agents.Agent) *teamDir {
	d := &teamDir{list: extra}
	for i := range n {
		a := agent(fmt.Sprintf("agent%02d", i), "", agents.StatusActive)
		a.Name = fmt.Sprintf("Agent Number %d", i)
		a.Tagline = "a generalist who helps with many kinds of work across the product"
		for j := range 4 {
			a.Skills = append(a.Skills, agents.Skill{Name: fmt.Sprintf("skill-%d-%d", i, j), Description: "does things"})
		}
		d.list = append(d.list, a)
	}
	return d
}

// fakeInbox is an inbox of unread messages, newest first, that can fail.
type fakeInbox struct {
	mu        sync.Mutex
	unread    []messaging.Message
	reads     int
	acked     []string
	readErr   error
	ackErr    error
	ackFailed int
}

func (f *fakeInbox) Unread(context.Context, string, string) ([]messaging.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.readErr != nil {
		return nil, f.readErr
	}
	return append([]messaging.Message(nil), f.unread...), nil
}

func (f *fakeInbox) Acknowledge(_ context.Context, _, _ string, ids []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ackErr != nil {
		f.ackFailed++
		return 0, f.ackErr
	}
	f.acked = append(f.acked, ids...)
	var left []messaging.Message
	for _, m := range f.unread {
		if !contains(ids, m.ID) {
			left = append(left, m)
		}
	}
	f.unread = left
	return len(ids), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func fullInbox(n int) *fakeInbox {
	f := &fakeInbox{}
	for i := n - 1; i >= 0; i-- {
		typ := "info_request"
		if i == n-1 {
			typ = "task_request"
		}
		f.unread = append(f.unread, messaging.Message{ID: fmt.Sprintf("amsg_%02d", i), From: fmt.Sprintf("agent%02d", i), Type: typ,
			Channel: messaging.ChannelDirect, Content: fmt.Sprintf("note %d: please look at the quarterly numbers", i)})
	}
	return f
}

// collabTools offers what a real task offers beside find_colleagues, and
// answers every call with a short result.
type collabTools struct{ calls int }

func (c *collabTools) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "delegate_task"}, {Name: "send_agent_message"}, {Name: prompts.FindColleaguesTool}}
}
func (c *collabTools) Call(context.Context, workflow.TaskInput, models.ToolCall) (string, error) {
	c.calls++
	return "ok: done", nil
}

func teamWorker(d *teamDir, in *fakeInbox, tools worker.Tools, log *requestLog) *worker.Worker {
	log.Model = localmodelwiring.New(d)
	w := &worker.Worker{Model: log, Tools: tools, Agents: d, Team: d}
	if in != nil {
		w.Inbox = in
	}
	return w
}

// A task of an agent in a team of 30, with a full inbox, that makes two
// tool calls (three model calls, each carrying the team block in its
// system prompt) stays under its 4,000-token budget.
func TestATaskWithTheRosterAndTwoToolCallsStaysUnderItsTokenBudget(t *testing.T) {
	d := bigTeam(30, agent("worker", "tools:2", agents.StatusActive))
	in := fullInbox(8)
	log := &requestLog{}
	tools := &collabTools{}
	p := payload("worker")
	p.Instructions = "Review the parser and report the three most serious problems, with a fix for each."
	res, err := teamWorker(d, in, tools, log).Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ToolCalls)
	require.Len(t, log.requests, 3)
	for _, r := range log.requests {
		assert.Contains(t, r.System, "Your team")
		assert.Contains(t, r.System, "Your inbox: 8 unread")
		assert.Contains(t, r.System, "more not listed: use find_colleagues")
	}
	block := log.requests[0].System[strings.Index(log.requests[0].System, "Your inbox"):]
	assert.LessOrEqual(t, models.EstimateTokens(block), prompts.TeamBudget)

	// The same task without the team block, to state what it costs.
	bare := &requestLog{}
	w := teamWorker(d, nil, tools, bare)
	w.Team = nil
	base, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	t.Logf("tokens used: %d with the roster and inbox (block %d tokens), %d without; budget %d",
		res.TokensUsed, models.EstimateTokens(block), base.TokensUsed, workflow.MaxTaskTokens)
	assert.Less(t, res.TokensUsed, workflow.MaxTaskTokens)
	assert.Less(t, res.TokensUsed-base.TokensUsed, 3*prompts.TeamBudget+10, "three calls of at most the block each")
}

func TestTheAssigneeIsReadWithItsTeamInOneCall(t *testing.T) {
	d := bigTeam(3, agent("worker", "", agents.StatusActive), agent("resting", "", agents.StatusPaused))
	log := &requestLog{}
	w := teamWorker(d, nil, nil, log)
	log.Model = models.Model(echoModel{}) // no agent reads by the model itself
	_, err := w.Run(context.Background(), payload("worker"))
	require.NoError(t, err)
	assert.Equal(t, 1, d.teamReads)
	assert.Equal(t, 0, d.singleReads, "the team read replaces the agent's read")
	sys := log.first(t).System
	assert.Contains(t, sys, "- @agent00 ")
	assert.Contains(t, sys, "- @resting resting; skills: code-review; paused")
	assert.NotContains(t, sys, "- @worker ")

	_, err = w.Run(context.Background(), payload("ghost"))
	assert.ErrorAs(t, err, new(workflow.InvalidTask), "not on the team")
	_, err = w.Run(context.Background(), payload("resting"))
	assert.ErrorAs(t, err, new(workflow.InvalidTask), "paused")
}

// echoModel answers at once, reading nothing.
type echoModel struct{}

func (echoModel) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: "done", InputTokens: 10, OutputTokens: 1}, nil
}

func TestTheInboxIsMarkedReadOnlyWhenTheAttemptEndsWell(t *testing.T) {
	d := bigTeam(2, agent("worker", "", agents.StatusActive), agent("flaky", "fail", agents.StatusActive))
	in := fullInbox(2)
	tr := &recordingTracker{fakeTracker: fakeTracker{running: true}}

	// A failed attempt (the machine retries it): nothing is marked.
	w := teamWorker(d, in, nil, &requestLog{})
	w.Tracker = tr
	_, err := w.Run(context.Background(), payload("flaky"))
	require.ErrorAs(t, err, new(workflow.ModelFailed))
	assert.Empty(t, in.acked)
	assert.Equal(t, []string{"amsg_01", "amsg_00"}, tr.inboxShown(), "the attempt records what it was shown")

	// Marking fails: logged, and the messages are shown again.
	tr.payloads = nil
	in.ackErr = errors.New("throttled")
	log := &requestLog{}
	w = teamWorker(d, in, nil, log)
	w.Tracker = tr
	_, err = w.Run(context.Background(), payload("worker"))
	require.NoError(t, err, "the task's answer stands")
	assert.Equal(t, 1, in.ackFailed)
	assert.Contains(t, log.first(t).System, "note 1: please look")

	// The attempt ends well: exactly what it showed is marked read, and
	// the next task sees nothing.
	in.ackErr = nil
	_, err = w.Run(context.Background(), payload("worker"))
	require.NoError(t, err)
	assert.Equal(t, []string{"amsg_01", "amsg_00"}, in.acked)
	log.requests = nil
	_, err = w.Run(context.Background(), payload("worker"))
	require.NoError(t, err)
	assert.NotContains(t, log.first(t).System, "Your inbox")
}

func TestAnUnreadableInboxLeavesTheTaskRunning(t *testing.T) {
	d := bigTeam(2, agent("worker", "", agents.StatusActive))
	in := &fakeInbox{readErr: errors.New("down")}
	log := &requestLog{}
	_, err := teamWorker(d, in, nil, log).Run(context.Background(), payload("worker"))
	require.NoError(t, err)
	assert.NotContains(t, log.first(t).System, "Your inbox")
	assert.Contains(t, log.first(t).System, "Your team")
}

// The attempt that delegated and waits has ended well: what it saw is
// read. The resumed attempt is told the same team block (its saved
// state), without reading the inbox again.
func TestAResumedAttemptKeepsTheTeamBlockItWasGiven(t *testing.T) {
	d := bigTeam(2, agent("boss", "delegate:agent00", agents.StatusActive))
	in := fullInbox(1)
	log := &requestLog{}
	w := teamWorker(d, in, delegating{}, log)
	p := payload("boss")
	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	assert.Equal(t, []string{"amsg_00"}, in.acked, "read once the wait is saved")
	shown := log.first(t).System

	in.unread = fullInbox(2).unread // new mail meanwhile: for the next task
	p.Resume = &workflow.Resume{State: first.Waiting.State, Child: workflow.ChildOutcome{TaskID: "task_child", Status: "completed", Summary: "done"}}
	log.requests = nil
	_, err = w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, shown, log.first(t).System, "the same prompt as the first attempt's")
	assert.Equal(t, 1, in.reads, "the resumed attempt reads no inbox")
}

// recordingTracker keeps the payloads of the events it records.
type recordingTracker struct {
	fakeTracker
	payloads []map[string]any
}

func (r *recordingTracker) Record(ctx context.Context, p workflow.TaskInput, u worker.Usage, evs ...worker.TrackEvent) error {
	for _, e := range evs {
		r.payloads = append(r.payloads, e.Payload)
	}
	return r.fakeTracker.Record(ctx, p, u, evs...)
}

func (r *recordingTracker) inboxShown() []string {
	for _, pl := range r.payloads {
		if ids, ok := pl["inbox_shown"].([]string); ok {
			return ids
		}
	}
	return nil
}
