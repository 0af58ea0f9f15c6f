package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Remote runs the tasks of agents outside the team (A2A agents:
// shared/a2a/remote). A task assigned to one is sent as one message and
// returns at once; the delegation machine waits in a Wait state (no
// Lambda runs) and the worker reads the remote task once per wake-up,
// until it ends or the task's deadline passes (then it is canceled and
// the task ends timed_out). Nil: remote agents' tasks fail as invalid.
type Remote = agents.RemoteTasks

// RemoteModelID is what a remote agent's usage is recorded under (no
// price: the remote party bills its own work); tokens are estimated from
// the text sent and received.
const RemoteModelID = "a2a-remote"

// remoteState is the saved state of a task waiting for a remote agent:
// its usage so far (the resumed attempt's budgets count it).
type remoteState struct {
	TokensUsed int    `json:"tokens_used"`
	ModelID    string `json:"model_id"`
	Remote     bool   `json:"remote"`
}

// remoteText is what the remote agent is asked: the task's own words,
// never the team's prompt (roster, memories, inbox).
func remoteText(p workflow.TaskInput) string {
	var b strings.Builder
	if p.Title != "" {
		b.WriteString(p.Title + "\n\n")
	}
	b.WriteString(p.Instructions)
	if p.Context != "" {
		b.WriteString("\n\nContext: " + p.Context)
	}
	if p.ExpectedOutput != "" {
		b.WriteString("\n\nExpected output: " + p.ExpectedOutput)
	}
	return b.String()
}

// sendRemote is a remote assignee's first attempt: the message sent.
func (w *Worker) sendRemote(ctx context.Context, p workflow.TaskInput, b workflow.Budgets, a agents.Agent, res workflow.TaskResult, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, error) {
	if w.Remote == nil {
		return res, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is an A2A agent and this worker has no A2A client", a.Slug)}
	}
	text := remoteText(p)
	res.ModelID, res.TokensUsed = RemoteModelID, models.EstimateTokens(text)
	if res.TokensUsed > b.MaxTokens {
		return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("token budget exceeded: the message to the remote agent is about %d of %d tokens", res.TokensUsed, b.MaxTokens)}
	}
	ans, err := w.Remote.Send(ctx, a, text)
	if err != nil {
		return res, modelError(ctx, err)
	}
	if !ans.Done {
		if err := record(Usage{}, TrackEvent{Type: "progress", Payload: map[string]any{"message": "sent to the remote agent", "remote_task_id": ans.TaskID}}); err != nil {
			return res, notRunnable(p, err)
		}
	}
	return w.remoteAnswer(ctx, b, res, ans, 0)
}

// checkRemote is a resumed attempt of a remote assignee: the remote task
// read once. Past the task's deadline the remote task is canceled (best
// effort) and the attempt ends with the deadline's error.
func (w *Worker) checkRemote(ctx context.Context, p workflow.TaskInput, b workflow.Budgets) (workflow.TaskResult, error) {
	res := workflow.TaskResult{TaskID: p.TaskID}
	var st remoteState
	if err := json.Unmarshal(p.Resume.State, &st); err != nil || !st.Remote || p.Resume.Remote.TaskID == "" {
		return res, workflow.InvalidTask{Msg: "the resumed attempt's saved state is unreadable"}
	}
	res.TokensUsed, res.ModelID = st.TokensUsed, st.ModelID
	// The agent is read even past the deadline: the remote task is
	// canceled with it.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	a, err := w.Agents.GetAgent(actx, p.TeamID, p.Assignee)
	if err != nil {
		return res, err
	}
	if w.Remote == nil || !a.IsRemote() {
		return res, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is no longer an A2A agent", p.Assignee)}
	}
	id := p.Resume.Remote.TaskID
	if ctx.Err() == nil {
		var ans agents.RemoteAnswer
		if ans, err = w.Remote.Check(ctx, a, id); err == nil {
			return w.remoteAnswer(ctx, b, res, ans, p.Resume.Remote.Polls+1)
		}
	}
	if ctx.Err() != nil {
		// The deadline passed (or the task was canceled): the remote
		// agent is told to stop.
		if cerr := w.Remote.Cancel(actx, a, id); cerr != nil {
			w.log().WarnContext(ctx, "canceling the remote agent's task failed", "agent", a.Slug, "remote_task_id", id, "error", cerr.Error())
		}
		return res, ctx.Err()
	}
	return res, modelError(ctx, err)
}

// remoteAnswer ends the attempt with the remote answer, or waits again.
func (w *Worker) remoteAnswer(ctx context.Context, b workflow.Budgets, res workflow.TaskResult, ans agents.RemoteAnswer, polls int) (workflow.TaskResult, error) {
	switch {
	case !ans.Done:
		st, err := json.Marshal(remoteState{TokensUsed: res.TokensUsed, ModelID: res.ModelID, Remote: true})
		if err != nil {
			return res, err
		}
		wait := PollSeconds(polls)
		if d, ok := ctx.Deadline(); ok {
			wait = max(1, min(wait, int(time.Until(d).Seconds())+1))
		}
		res.Waiting = &workflow.Waiting{ChildTaskIDs: []string{}, State: st, TimeoutSeconds: workflow.MaxTaskSeconds,
			Remote: &workflow.RemoteWait{TaskID: ans.TaskID, Polls: polls, PollSeconds: wait}}
		return res, nil
	case ans.Failed != "":
		return res, workflow.ModelFailed{Msg: "the remote agent did not answer: " + ans.Failed}
	}
	res.TokensUsed += models.EstimateTokens(ans.Text)
	if res.TokensUsed > b.MaxTokens {
		return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("token budget exceeded: used about %d of %d tokens with the remote agent's answer", res.TokensUsed, b.MaxTokens)}
	}
	res.Output = ans.Text
	return res, nil
}

// PollSeconds is the wait before the n-th read of a remote task
// (agents.RemotePollSeconds).
func PollSeconds(n int) int { return agents.RemotePollSeconds(n) }

// fenceRemote fences the answers of children whose assignee is an agent
// outside the team (team: the roster the attempt read): their text is
// another party's, data for the model, never instructions.
func fenceRemote(answers []answer, outcomes []workflow.ChildOutcome, team []agents.Agent) {
	remote := map[string]bool{}
	for _, a := range team {
		if a.IsRemote() {
			remote[a.Slug] = true
		}
	}
	for _, o := range outcomes {
		if !remote[o.Assignee] {
			continue
		}
		for i := range answers {
			if answers[i].ChildTaskID == o.TaskID {
				answers[i].Output = prompts.RemoteOutput(o.Assignee, answers[i].Output)
			}
		}
	}
}
