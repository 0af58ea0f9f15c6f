// Package worker runs one agent on one task through the model port, inside
// the task's budgets: tokens, tool calls and time. It is the body of the
// delegation state machine's task state; retries, timeouts and the
// dead-letter queue belong to the state machine, so the worker only reports
// failure by returning an error whose type name becomes the Step Functions
// error name.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// ErrNotRunnable is what a Tracker returns when the task is no longer
// running.
var ErrNotRunnable = errors.New("task is not running")

// Usage is what one attempt consumed.
type Usage struct {
	Tokens    int
	ToolCalls int
	CostUSD   float64
}

// TrackEvent is one entry for the task's timeline.
type TrackEvent struct {
	Type    string
	Payload map[string]any
}

// Tracker connects the worker to the task record: Begin checks the task is
// running and returns its deadline; Record appends timeline events and adds
// usage. Both return ErrNotRunnable once the task was canceled, which stops
// the worker at its next step (cooperative cancellation).
type Tracker interface {
	Begin(ctx context.Context, p workflow.TaskInput) (deadline time.Time, err error)
	Record(ctx context.Context, p workflow.TaskInput, u Usage, events ...TrackEvent) error
	// StillRunning is polled during the attempt so a cancel stops a model
	// call that is under way, not only the next step.
	StillRunning(ctx context.Context, p workflow.TaskInput) (bool, error)
}

// WatchInterval is how often a running attempt checks for cancellation.
const WatchInterval = time.Second

var errStopped = errors.New("task stopped while running")

// AgentReader is what the worker needs from the agent store.
type AgentReader interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Tools executes the collaboration tools an agent may call. Nil means the
// agent has no tools yet; calls then get a "not available" result.
type Tools interface {
	// Specs are the tools agent a may call (the stage's flags, its
	// declared tools); the worker runs no other.
	Specs(a agents.Agent) []models.Tool
	Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error)
}

// Brief is what the agent is told about its task beyond what the delegation
// machine's payload carries (kept small: the payload travels through every
// state): the task record's type, priority and input artifacts, and the
// last messages of the conversation the task came from.
type Brief struct {
	Type           string
	Priority       string
	InputArtifacts []string
	// Input is the task's JSON input as one clipped line (prompts.Task).
	Input        string
	Conversation []prompts.Line
	// ConversationID is the task's conversation, if any: its model calls
	// are charged to it (budget usage by conversation).
	ConversationID string
	// CostCapUSD is the task's delegation tree's cost cap: what a
	// delegation from it is estimated to cost (approvals.EstimatedCost).
	CostCapUSD float64
	// UserID is the person the task works for, if any: its model calls
	// reserve on that person's monthly budget too, and the agent reads
	// that person's profile beside the team's.
	UserID string
}

// Policies reads a team's approval policy (approvals.Service): which tool
// calls wait for a human before they run.
type Policies interface {
	Policy(ctx context.Context, teamID string) (approvals.Policy, error)
}

// Briefs reads a task's brief at the start of each attempt. An error is
// the attempt's (a read of the task's own record: the machine retries).
type Briefs interface {
	Brief(ctx context.Context, p workflow.TaskInput) (Brief, error)
}

// Memories gives the agent its memory context, as a chat reply gets it
// (memory.Service).
type Memories interface {
	ForPerson(ctx context.Context, teamID, agent, person string) (memory.Context, error)
}

// TeamReader reads a team's agents that are not archived in one call: the
// worker finds the assignee among them (instead of reading it alone, so
// the roster costs no extra call) and lists the others in its prompt.
type TeamReader interface {
	TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
}

// Inbox brings the assignee's unread messages into its task context
// (messaging.Service implements it): read once per task, at its first
// attempt, and marked read when that attempt ends without error.
type Inbox interface {
	Unread(ctx context.Context, teamID, agent string) ([]messaging.Message, error)
	Acknowledge(ctx context.Context, teamID, agent string, ids []string) (int, error)
}

// Worker runs tasks.
type Worker struct {
	Agents AgentReader
	// Team, when set, reads the assignee with its team: the prompt carries
	// the roster (prompts.TeamBlock). Nil: the assignee alone, no roster.
	Team TeamReader
	// Inbox, when set, summarizes the assignee's unread messages in the
	// prompt; nil: none.
	Inbox   Inbox
	Model   models.Model
	Tools   Tools
	Tracker Tracker // nil: run without a task record (unit tests)
	// Briefs adds the task record's fields and its conversation to the
	// prompt; nil: the payload alone.
	Briefs Briefs
	// Memories adds the agent's memory context to the prompt; nil: none.
	// A context that cannot be read is left out (and noted on the task's
	// timeline): the task still runs.
	Memories Memories
	Log      *slog.Logger
	// Tiers maps a task's model tier to the model asked when the agent
	// names none of its own (MODEL_TIERS); nil or a missing tier leaves
	// the provider's default.
	Tiers map[string]string
	// Reviewer holds a report task's answer to its template; nil accepts
	// every answer as it is.
	Reviewer Reviewer
	// Approvals, when set, holds the tool calls the team's approval
	// policy (or a supports_hitl skill of the agent) gates until a human
	// decides (docs/approvals.md); nil runs every call (skills gate
	// nothing either).
	Approvals Policies
	// Remote runs the tasks of A2A agents (remote.go).
	Remote Remote
}

// Run executes p inside the task's deadline and records the attempt on the
// task: its start, every tool call and result, and what it consumed.
// Returns InvalidTask, BudgetExceeded, ModelFailed, TaskTimedOut or
// TaskNotRunnable; their type names are the state machine's error names.
//
// Kept whole: the attempt's life in order (acknowledge, watch the deadline,
// run, record), each step a helper call.
func (w *Worker) Run(ctx context.Context, p workflow.TaskInput) (workflow.TaskResult, error) {
	ctx = logctx.With(ctx, "team_id", p.TeamID, "task_id", p.TaskID, "step", "run")
	if w.Tracker == nil {
		res, seen, err := w.run(ctx, p, nopRecord)
		if err == nil {
			w.acknowledge(ctx, p, seen)
		}
		return res, err
	}
	deadline, err := w.Tracker.Begin(ctx, p)
	if errors.Is(err, ErrNotRunnable) {
		return workflow.TaskResult{}, workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " is no longer running"}
	}
	if err != nil {
		return workflow.TaskResult{}, err
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go w.watch(ctx, p, stop)
	record := func(u Usage, evs ...TrackEvent) error {
		// Recording must outlive the task's deadline: the attempt's usage
		// is written even when the deadline is what ended it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return w.Tracker.Record(rctx, p, u, evs...)
	}
	started := map[string]any{"message": "attempt started"}
	if p.Resume != nil {
		started["resumed"] = true
	}
	if err := record(Usage{}, TrackEvent{Type: "progress", Payload: started}); err != nil {
		return workflow.TaskResult{}, notRunnable(p, err)
	}
	res, seen, runErr := w.run(ctx, p, record)
	if res.Waiting != nil && !deadline.IsZero() {
		res.Waiting.TimeoutSeconds = max(1, int(math.Ceil(time.Until(deadline).Seconds())))
	}
	if runErr != nil && errors.Is(context.Cause(ctx), errStopped) {
		return res, workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " was canceled or reassigned while running"}
	}
	if runErr != nil && ctx.Err() == context.DeadlineExceeded && !deadline.IsZero() && !time.Now().Before(deadline) {
		runErr = workflow.TaskTimedOut{Msg: fmt.Sprintf("task timed out after %ds", p.Budgets.TimeoutSeconds)}
	}
	summary := map[string]any{"message": "attempt finished", "tokens_used": res.TokensUsed, "tool_calls": res.ToolCalls, "cost_usd": res.CostUSD}
	if res.Waiting != nil && len(res.Waiting.Approvals) > 0 {
		summary["message"], summary["waiting_for"] = "attempt waiting for approval", strings.Join(res.Waiting.ApprovalIDs, ",")
	} else if res.Waiting != nil && res.Waiting.Remote != nil {
		summary["message"], summary["waiting_for"] = "attempt waiting for the remote agent", res.Waiting.Remote.TaskID
	} else if res.Waiting != nil {
		summary["message"], summary["waiting_for"] = "attempt waiting for a delegated task", strings.Join(res.Waiting.ChildTaskIDs, ",")
	}
	if runErr != nil {
		summary["message"], summary["error"] = "attempt failed", runErr.Error()
		summary["error_type"] = fmt.Sprintf("%T", runErr)
	}
	if len(seen) > 0 {
		// What the agent was shown of its inbox: read once this attempt
		// has ended well, unread again (shown to the retry) otherwise.
		summary["inbox_shown"] = seen
	}
	// A resumed attempt's result carries the usage of the attempts before
	// it (the budgets span them); only this attempt's share is added.
	prior := resumedUsage(p)
	used := Usage{Tokens: max(0, res.TokensUsed-prior.Tokens), ToolCalls: max(0, res.ToolCalls-prior.ToolCalls), CostUSD: max(0, res.CostUSD-prior.CostUSD)}
	if err := record(used, TrackEvent{Type: "progress", Payload: summary}); err != nil && runErr == nil {
		if res.Waiting != nil && !errors.Is(err, ErrNotRunnable) {
			// The child already exists: failing here would make the
			// machine retry the attempt and the model delegate again. This
			// attempt's usage stays in the saved state, which the resumed
			// attempt's budgets count; only its record on the task is lost.
			w.acknowledge(ctx, p, seen)
			return res, nil
		}
		return res, notRunnable(p, err)
	}
	if runErr == nil {
		w.acknowledge(ctx, p, seen)
	}
	return res, runErr
}

// acknowledge marks read the inbox messages an attempt that ended well
// showed (its answer, or its wait for a delegation whose saved state keeps
// the summary). It outlives the task's deadline as recording does. A
// failure is logged and loses nothing: the messages stay unread and are
// shown again in the agent's next context.
func (w *Worker) acknowledge(ctx context.Context, p workflow.TaskInput, seen []string) {
	if w.Inbox == nil || len(seen) == 0 {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := w.Inbox.Acknowledge(actx, p.TeamID, p.Assignee, seen); err != nil {
		w.log().WarnContext(ctx, "marking the inbox messages a task saw read failed; they will be shown again", "messages", seen, "error", err.Error())
	}
}

func (w *Worker) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

// watch cancels the attempt once the task is no longer running.
func (w *Worker) watch(ctx context.Context, p workflow.TaskInput, stop context.CancelCauseFunc) {
	t := time.NewTicker(WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ok, err := w.Tracker.StillRunning(ctx, p); err == nil && !ok {
				stop(errStopped)
				return
			}
		}
	}
}

func notRunnable(p workflow.TaskInput, err error) error {
	if errors.Is(err, ErrNotRunnable) {
		return workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " is no longer running"}
	}
	return err
}

func nopRecord(Usage, ...TrackEvent) error { return nil }

// run is one attempt; it returns the ids of the inbox messages its prompt
// showed, for Run to mark read once the attempt has ended well.
func (w *Worker) run(ctx context.Context, p workflow.TaskInput, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, []string, error) {
	b := p.Budgets
	if b.MaxTokens <= 0 || b.MaxTokens > workflow.MaxTaskTokens {
		b.MaxTokens = workflow.MaxTaskTokens
	}
	// Zero means "not set" (the field was omitted): the default applies.
	if b.MaxToolCalls <= 0 || b.MaxToolCalls > workflow.MaxTaskToolCalls {
		b.MaxToolCalls = workflow.MaxTaskToolCalls
	}
	if p.Resume != nil && p.Resume.Remote != nil {
		res, err := w.checkRemote(ctx, p, b)
		return res, nil, err
	}
	req, res, rv, tc, err := w.prepare(ctx, p, b, record)
	if err != nil {
		return res, nil, err
	}
	if tc.remote {
		res, err = w.sendRemote(ctx, p, b, tc.agent, res, record)
		return res, nil, err
	}
	res, err = w.loop(ctx, p, b, req, res, rv, tc, record)
	return res, tc.seen, err
}

// loop is the attempt's model loop: the model answers, or asks for tools
// that run until it answers or a budget ends it.
func (w *Worker) loop(ctx context.Context, p workflow.TaskInput, b workflow.Budgets, req models.Request, res workflow.TaskResult, rv review, tc teamContext, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, error) {
	if tc.resumed != nil {
		// The response that waited for approvals runs now, each gated
		// call as a human decided.
		answers, waiting, err := w.runCalls(ctx, p, b, &req.Tools, &tc, tc.resumed.calls, tc.resumed.decisions, &res, record)
		if err != nil {
			return res, err
		}
		if waiting {
			return suspend(res, req.Messages, answers, rv, tc)
		}
		req.Messages = appendAnswers(req.Messages, answers)
	}
	if h := p.HeldCall; h != nil && p.Resume == nil {
		// A chat reply's call that waits for approval: the task starts
		// where the reply stopped, with that call made and nothing run.
		return w.holdChatCall(res, req, *h, rv, tc, p, record)
	}
	var policy *approvals.Policy
	for {
		resp, err := w.Model.Converse(ctx, req)
		if err != nil {
			return res, modelError(ctx, err)
		}
		res.ModelID = resp.ModelID
		res.TokensUsed += resp.InputTokens + resp.OutputTokens
		res.CostUSD += models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
		if res.TokensUsed > b.MaxTokens {
			return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("token budget exceeded: used %d of %d tokens", res.TokensUsed, b.MaxTokens)}
		}
		if len(resp.ToolCalls) == 0 {
			rev, out := w.reviewAnswer(p, &rv, resp.Text)
			if rev == nil {
				res.Output = out
				return res, nil
			}
			payload := map[string]any{"missing_sections": rev.Missing, "invalid_sections": rev.Invalid}
			if err := record(Usage{}, TrackEvent{Type: "revision_requested", Payload: payload}); err != nil {
				return res, notRunnable(p, err)
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: resp.Text}, models.Message{Role: "user", Content: rev.Prompt})
			continue
		}
		// The budget counts every call of the response before any runs: a
		// response over it starts nothing (no child left running for an
		// answer that never comes).
		if res.ToolCalls+len(resp.ToolCalls) > b.MaxToolCalls {
			return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("tool call budget exceeded: the agent asked for more than %d tool calls", b.MaxToolCalls)}
		}
		req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: resp.ToolCalls})
		// A call that needs a human's approval holds the whole response:
		// nothing of it runs until every gated call is decided.
		gated, err := w.gate(ctx, p, tc, req.Tools, resp.ToolCalls, &policy)
		if err != nil {
			return res, err
		}
		if len(gated) > 0 {
			return w.awaitApprovals(res, req.Messages, resp.ToolCalls, gated, rv, tc, p, record)
		}
		// Every call of the response runs, in order: one that waits for a
		// task it delegated (a fan-out when there are several) leaves its
		// answer to the resumed attempt; the others are answered now.
		answers, waiting, err := w.runCalls(ctx, p, b, &req.Tools, &tc, resp.ToolCalls, nil, &res, record)
		if err != nil {
			return res, err
		}
		if waiting {
			return suspend(res, req.Messages, answers, rv, tc)
		}
		req.Messages = appendAnswers(req.Messages, answers)
	}
}

// teamContext is the team block of an attempt's prompt and the inbox
// messages it shows, with what the approval gate needs: the agent, its
// task's cost cap, and the response a resumed attempt runs first.
type teamContext struct {
	block   string
	seen    []string
	agent   agents.Agent
	costCap float64
	resumed *approvedCalls
	// remote: the agent is outside the team (remote.go); nothing else
	// of the context is built.
	remote bool
	// packs are the tool packs the attempt offers the tools of: the
	// task's (workflow.TaskInput.ToolPacks), a resumed attempt's saved
	// ones, and those request_tool_pack added.
	packs []string
}

// prepare checks the payload and the agent and returns the model request
// and the result so far: a fresh conversation, or the one a resumed
// attempt saved with the delegated result appended as its tool's answer.
//
// Kept whole: the checks run in the payload's order and each returns the same
// five values; split, every piece would return them all.
func (w *Worker) prepare(ctx context.Context, p workflow.TaskInput, b workflow.Budgets, record func(Usage, ...TrackEvent) error) (models.Request, workflow.TaskResult, review, teamContext, error) {
	res := workflow.TaskResult{TaskID: p.TaskID}
	fail := func(err error) (models.Request, workflow.TaskResult, review, teamContext, error) {
		return models.Request{}, res, review{}, teamContext{}, err
	}
	if p.TeamID == "" || p.TaskID == "" || p.Assignee == "" || strings.TrimSpace(p.Instructions) == "" {
		return fail(workflow.InvalidTask{Msg: "team_id, task_id, assignee and instructions are required"})
	}
	a, team, err := w.assignee(ctx, p)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return fail(workflow.InvalidTask{Msg: fmt.Sprintf("agent %q not found", p.Assignee)})
	}
	if err != nil {
		return fail(err)
	}
	if a.Status != agents.StatusActive {
		return fail(workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is %s", p.Assignee, a.Status)})
	}
	if a.IsRemote() {
		return models.Request{}, res, review{}, teamContext{agent: a, remote: true}, nil
	}
	task := prompts.Task{Title: p.Title, Context: p.Context, ExpectedOutput: p.ExpectedOutput}
	costCap, convID, userID := 0.0, "", ""
	if w.Briefs != nil {
		br, err := w.Briefs.Brief(ctx, p)
		if apperr.Is(err, apperr.ENOTFOUND) {
			return fail(workflow.InvalidTask{Msg: "task " + p.TaskID + " not found"})
		}
		if err != nil {
			return fail(err)
		}
		task.Type, task.Priority, task.InputArtifacts, task.Conversation = br.Type, br.Priority, br.InputArtifacts, br.Conversation
		task.Input = br.Input
		costCap, convID, userID = br.CostCapUSD, br.ConversationID, br.UserID
	}
	// A resumed attempt is told what the first one was (its saved team
	// block): the model's conversation so far was written with it, and
	// the messages it showed are read by now.
	var st savedState
	if p.Resume != nil {
		if err := json.Unmarshal(p.Resume.State, &st); err != nil || len(st.answers(p.Resume)) == 0 && len(st.Pending) == 0 {
			return fail(workflow.InvalidTask{Msg: "the resumed attempt's saved state is unreadable"})
		}
	}
	// The agent's own tools, and those of the task's packs (its own and,
	// resumed, the ones it added): for this task only.
	packs := slices.Clone(p.ToolPacks)
	for _, pk := range st.Packs {
		if !slices.Contains(packs, pk) {
			packs = append(packs, pk)
		}
	}
	var tools []models.Tool
	if w.Tools != nil {
		tools = w.augment(ctx, p.TeamID, a, w.Tools.Specs(a), packs)
	}
	tc := teamContext{block: st.Team}
	if p.Resume == nil {
		tc = w.teamContext(ctx, p, a, team, tools)
	}
	tc.agent, tc.costCap, tc.packs = a, costCap, packs
	system := prompts.System(a, task) + tc.block
	if w.Memories != nil {
		mc, err := w.Memories.ForPerson(ctx, p.TeamID, a.Slug, userID)
		if err != nil {
			w.log().WarnContext(ctx, "memory context unavailable; the task runs without it", "agent", a.Slug, "error", err.Error())
			if rerr := record(Usage{}, TrackEvent{Type: "progress", Payload: map[string]any{"message": "memory context unavailable; working without it"}}); rerr != nil {
				return fail(notRunnable(p, rerr))
			}
		} else {
			system += prompts.Memories(mc)
		}
	}
	// The task's tier picks the model unless the agent names its own.
	req := prompts.Request(p.TeamID, a, system, b.MaxTokens, w.Tiers[p.ModelTier])
	if convID != "" {
		req.Metadata[models.MetadataConversationID] = convID
	}
	if userID != "" {
		req.Metadata[models.MetadataUserID] = userID
	}
	req.Tools = tools
	if p.Resume == nil {
		req.Messages = []models.Message{{Role: "user", Content: p.Instructions}}
		return req, res, review{}, tc, nil
	}
	res.TokensUsed, res.ToolCalls, res.CostUSD, res.ModelID = st.TokensUsed, st.ToolCalls, st.CostUSD, st.ModelID
	res.ResultArtifacts = st.Artifacts
	if len(st.Pending) > 0 {
		tc.resumed = resumedCalls(st.Pending, p.Resume.Approvals)
		req.Messages = st.Messages
		return req, res, st.Review, tc, nil
	}
	answers := resumeAnswers(st.answers(p.Resume), p.Resume.Outcomes())
	fenceRemote(answers, p.Resume.Outcomes(), team)
	// Every child's result on the timeline in one write (the calls
	// answered before the wait were recorded then).
	var results []TrackEvent
	for _, a := range answers {
		if a.ChildTaskID != "" {
			results = append(results, TrackEvent{Type: "tool_result", Payload: map[string]any{"tool": a.Tool, "task_id": a.ChildTaskID, "output": clip.Clip(a.Output, 500)}})
		}
	}
	if err := record(Usage{}, results...); err != nil {
		return fail(notRunnable(p, err))
	}
	req.Messages = appendAnswers(st.Messages, answers)
	return req, res, st.Review, tc, nil
}

// assignee reads the task's agent: with its team in one call when the
// worker has a TeamReader (the roster then costs nothing more), alone
// otherwise. Returns ENOTFOUND for an agent that is not on the team.
func (w *Worker) assignee(ctx context.Context, p workflow.TaskInput) (agents.Agent, []agents.Agent, error) {
	if w.Team == nil {
		a, err := w.Agents.GetAgent(ctx, p.TeamID, p.Assignee)
		return a, nil, err
	}
	team, err := w.Team.TeamAgents(ctx, p.TeamID)
	if err != nil {
		return agents.Agent{}, nil, err
	}
	for _, a := range team {
		if a.Slug == p.Assignee {
			return a, team, nil
		}
	}
	return agents.Agent{}, nil, apperr.NotFound("agent", p.Assignee)
}

// teamContext is the first attempt's roster and inbox summary. An inbox
// that cannot be read is left out: the task runs without it.
func (w *Worker) teamContext(ctx context.Context, p workflow.TaskInput, a agents.Agent, team []agents.Agent, tools []models.Tool) teamContext {
	t := prompts.Team{Self: a.Slug, Agents: team, Query: p.Title + "\n" + p.Instructions, Tools: tools}
	if w.Inbox != nil {
		var err error
		if t.Inbox, err = w.Inbox.Unread(ctx, p.TeamID, a.Slug); err != nil {
			w.log().WarnContext(ctx, "inbox unavailable; the task runs without it", "agent", a.Slug, "error", err.Error())
		}
	}
	block, seen := prompts.TeamBlock(t)
	return teamContext{block: block, seen: seen}
}
