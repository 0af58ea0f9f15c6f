package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// A stage of an agent outside the team (an A2A agent) waits in its
// session's machine, never in a Lambda: the turn's state sends the A2A
// message (returning at once), records the wait on the session
// (RemoteWaits) and answers WaitSeconds; the machine waits that long in a
// Wait state, with nothing running, and runs the state again, which reads
// the remote task once: 1, 2, 4, then 8 seconds apart (as a delegated
// task's, worker/remote.go). The stage is a task of the task model from
// the send to the answer, holding its agent's slot; its budget of
// workflow.MaxTaskSeconds runs from the send, and past it (or past the
// session's deadline) the remote task is canceled. A session that ends
// meanwhile (cancelled, failed, swept) ends the stage's task and cancels
// the remote task (endRemoteWaits).

// remoteWaiting is a remote stage still running: Step answers its
// machine with WaitSeconds instead of an error.
type remoteWaiting struct{ seconds int }

func (r remoteWaiting) Error() string {
	return fmt.Sprintf("waiting %ds for the remote agent", r.seconds)
}

// remoteCallTimeout bounds one send or read of a remote task: a stalled
// agent is read again after the next wait, not waited for here.
const remoteCallTimeout = 15 * time.Second

// promptText is the output as another agent's prompt shows it: a remote
// agent's text fenced (prompts.RemoteOutput), data and not instructions.
func (o StageOutput) promptText() string {
	if o.Remote {
		return prompts.RemoteOutput(o.Agent, o.Output)
	}
	return o.Output
}

// remoteWait returns the wait recorded for the stage key.
func (s Session) remoteWait(key string) (RemoteWait, bool) {
	for _, w := range s.RemoteWaits {
		if w.Key == key {
			return w, true
		}
	}
	return RemoteWait{}, false
}

func dropWait(ws []RemoteWait, key string) []RemoteWait {
	return slices.DeleteFunc(slices.Clone(ws), func(w RemoteWait) bool { return w.Key == key })
}

// remoteText is what the remote agent is asked: the turn's own prompt
// (the goal and the earlier outputs it builds on), never the team's
// system prompt, roster or memories; a structured turn asks for its JSON
// (a remote agent has no tools), which parse reads from the text.
func remoteText(t turn) string {
	if t.Tool == nil {
		return t.Prompt
	}
	schema, _ := json.Marshal(t.Tool.InputSchema())
	return fmt.Sprintf("%s\n\nAnswer with a single JSON object and nothing else (%s: %s), matching this JSON Schema:\n%s",
		t.Prompt, t.Tool.Name, t.Tool.Description, schema)
}

// runRemote runs the turn t of the remote agent a: the first run sends
// the message, a run with a recorded wait reads the remote task.
func (s *Service) runRemote(ctx context.Context, ses Session, a agents.Agent, t turn) (StageOutput, error) {
	if s.Remote == nil {
		return StageOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is an A2A agent and this function has no A2A client", a.Slug)}
	}
	if w, ok := ses.remoteWait(t.Key); ok {
		ctx = logctx.With(ctx, "task_id", w.TaskID)
		if w.RemoteTaskID == "" {
			// An earlier run began the stage and stopped before the
			// remote task was recorded (a crash, a cut-off send): sent
			// again, on the same task.
			return s.sendRemote(ctx, ses, a, t, w, remoteText(t))
		}
		return s.pollRemote(ctx, ses, a, t, w)
	}
	taskID, err := s.beginStage(ctx, ses, t)
	if err != nil {
		return StageOutput{}, err
	}
	ctx = logctx.With(ctx, "task_id", taskID)
	w := RemoteWait{Key: t.Key, Agent: t.Agent, TaskID: taskID, Attempt: 1, SentAt: s.Now.UTC()}
	// The wait is recorded before anything is sent, so a session that
	// ends from here on ends this stage's task too (endRemoteWaits), and
	// a run that stops half-way leaves a record the retry picks up.
	if err := s.saveWait(ctx, ses, w); err != nil {
		return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
	}
	return s.sendRemote(ctx, ses, a, t, w, remoteText(t))
}

// remoteDeadline is when the stage gives up: its budget from the send,
// or the session's deadline if that comes first.
func (s *Service) remoteDeadline(ses Session, w RemoteWait) time.Time {
	end := w.SentAt.Add(workflow.MaxTaskSeconds * time.Second)
	if ses.Deadline != nil && ses.Deadline.Before(end) {
		end = *ses.Deadline
	}
	return end
}

// callDeadline bounds one call to the remote agent: remoteCallTimeout,
// or the stage's deadline if that comes first. (The context's deadline is
// the wall clock's; the stage's is the service's clock, which tests set.)
func (s *Service) callDeadline(ses Session, w RemoteWait) time.Time {
	left := min(s.remoteDeadline(ses, w).Sub(s.Now.UTC()), remoteCallTimeout)
	return time.Now().Add(max(left, time.Second))
}

// charge adds a remote call's estimated tokens to the session, at no
// cost; a session already exhausted refuses it.
func (s *Service) charge(ctx context.Context, ses Session, tokens int) error {
	err := s.Store.Charge(ctx, ses.TeamID, ses.ID, 0, tokens)
	if errors.Is(err, ErrBudget) {
		return workflow.BudgetExhausted{Msg: fmt.Sprintf("the session's budget of $%.2f is exhausted", ses.MaxCostUSD)}
	}
	return err
}

// sendRemote sends text as a new remote task of the stage w and answers
// at once, or records the wait.
func (s *Service) sendRemote(ctx context.Context, ses Session, a agents.Agent, t turn, w RemoteWait, text string) (StageOutput, error) {
	cur, err := s.Store.GetSession(ctx, ses.TeamID, ses.ID)
	if err != nil {
		return StageOutput{}, err
	}
	switch {
	case cur.BudgetExhausted:
		err = workflow.BudgetExhausted{Msg: fmt.Sprintf("the session's budget of $%.2f is exhausted", cur.MaxCostUSD)}
	case !cur.Status.Running():
		err = workflow.SessionNotRunnable{Msg: fmt.Sprintf("session %s is %s", ses.ID, cur.Status)}
	}
	if err != nil {
		return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
	}
	sctx, cancel := context.WithDeadline(ctx, s.callDeadline(ses, w))
	ans, err := s.Remote.Send(sctx, a, text)
	cancel()
	if err != nil {
		return s.endRemote(ctx, ses, t, w, StageOutput{}, workflow.ModelFailed{Msg: err.Error()})
	}
	recorded := w.RemoteTaskID
	w.RemoteTaskID, w.Polls = ans.TaskID, 0
	// The remote party bills its own work: the session is charged the
	// call and its tokens (estimated), at no cost.
	tokens := models.EstimateTokens(text)
	w.Tokens += tokens
	if err := s.charge(ctx, ses, tokens); err != nil {
		if !ans.Done {
			s.cancelRemote(ctx, ses.TeamID, a, w)
		}
		return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
	}
	return s.remoteAnswered(ctx, ses, a, t, w, recorded, ans)
}

// pollRemote reads the remote task of the stage w once; past the stage's
// deadline it cancels it instead.
func (s *Service) pollRemote(ctx context.Context, ses Session, a agents.Agent, t turn, w RemoteWait) (StageOutput, error) {
	end := s.remoteDeadline(ses, w)
	if !s.Now.UTC().Before(end) {
		s.cancelRemote(ctx, ses.TeamID, a, w)
		var err error = workflow.TaskTimedOut{Msg: fmt.Sprintf("%s's stage ran past the session's deadline", t.Agent)}
		if ses.Deadline == nil || s.Now.UTC().Before(*ses.Deadline) {
			// The stage's own budget: retried, as a task's would be.
			err = fmt.Errorf("%s's stage ran past its budget of %ds", t.Agent, workflow.MaxTaskSeconds)
		}
		return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
	}
	cctx, cancel := context.WithDeadline(ctx, s.callDeadline(ses, w))
	ans, err := s.Remote.Check(cctx, a, w.RemoteTaskID)
	cancel()
	w.Polls++
	if err != nil {
		// The remote agent did not answer this read: read again after
		// the next wait, until the stage's deadline (an agent that stays
		// unreachable ends the stage there, its task canceled).
		s.log().WarnContext(ctx, "reading a remote stage's task failed; waiting again", "agent", a.Slug, "remote_task_id", w.RemoteTaskID, "error", err.Error())
		ans = agents.RemoteAnswer{TaskID: w.RemoteTaskID}
	}
	return s.remoteAnswered(ctx, ses, a, t, w, w.RemoteTaskID, ans)
}

// remoteAnswered ends the stage with the remote answer, or records the
// wait and asks the machine to wait. recorded is the remote task id the
// session's stored wait already carries (empty before the first send).
func (s *Service) remoteAnswered(ctx context.Context, ses Session, a agents.Agent, t turn, w RemoteWait, recorded string, ans agents.RemoteAnswer) (StageOutput, error) {
	switch {
	case !ans.Done:
		if err := s.saveWait(ctx, ses, w); err != nil {
			// The session ended meanwhile (or the write failed): the
			// remote task is not waited for. A session that ended took
			// its stored waits and cancels their remote tasks itself
			// (endRemoteWaits): this stage cancels only a task the
			// session had not recorded (one just sent), so the remote
			// agent is told once.
			var ended workflow.SessionNotRunnable
			if !errors.As(err, &ended) || w.RemoteTaskID != recorded {
				s.cancelRemote(ctx, ses.TeamID, a, w)
			}
			return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
		}
		wait := agents.RemotePollSeconds(w.Polls)
		left := int(s.remoteDeadline(ses, w).Sub(s.Now.UTC()).Seconds()) + 1
		return StageOutput{}, remoteWaiting{seconds: max(1, min(wait, left))}
	case ans.Failed != "":
		return s.endRemote(ctx, ses, t, w, StageOutput{}, workflow.ModelFailed{Msg: fmt.Sprintf("the remote agent %s did not answer: %s", a.Slug, ans.Failed)})
	}
	tokens := models.EstimateTokens(ans.Text)
	w.Tokens += tokens
	if err := s.charge(ctx, ses, tokens); err != nil {
		return s.endRemote(ctx, ses, t, w, StageOutput{}, err)
	}
	text := ans.Text
	if t.Tool != nil {
		text = jsonIn(text)
	}
	msg, perr := parse(t, models.Response{Text: text})
	if perr == nil {
		perr = s.record(ctx, ses, msg)
	}
	var unreadable workflow.ModelFailed
	switch {
	case perr == nil:
		return s.endRemote(ctx, ses, t, w, StageOutput{Output: msg.Content, Data: msg.Data}, nil)
	case (errors.Is(perr, errProtocol) || errors.As(perr, &unreadable)) && w.Attempt == 1:
		// An answer that breaks the protocol, or is not the JSON a
		// structured turn needs (a remote agent writes prose more often
		// than a model given a tool does):
		// Asked once more with the rule it broke, as a local agent is.
		w.Attempt++
		return s.sendRemote(ctx, ses, a, t, w, remoteText(t)+"\n\nYour previous answer was refused: "+perr.Error()+". Answer again following the protocol.")
	case errors.Is(perr, errProtocol):
		perr = workflow.ProtocolViolation{Msg: fmt.Sprintf("%s broke the collaboration protocol twice", t.Agent)}
	}
	return s.endRemote(ctx, ses, t, w, StageOutput{}, perr)
}

// jsonIn is the JSON object in an agent's text: the text itself, or the
// object inside prose or a code fence (from the first "{" to the last
// "}"). Text with no object is returned as it is, for parse to refuse.
func jsonIn(text string) string {
	var v map[string]any
	if json.Unmarshal([]byte(text), &v) == nil {
		return text
	}
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return text
	}
	return text[i : j+1]
}

// endRemote ends the stage's task with out, or with failure; a completed
// stage's output is stored (the wait dropped in the same write), a failed
// one's wait dropped.
func (s *Service) endRemote(ctx context.Context, ses Session, t turn, w RemoteWait, out StageOutput, failure error) (StageOutput, error) {
	out.Key, out.Stage, out.Round, out.Kind, out.Agent, out.TaskID = t.Key, t.Stage, t.Round, t.Kind, t.Agent, w.TaskID
	out.Tokens, out.Remote = w.Tokens, true
	out.DurationSeconds = s.Now.UTC().Sub(w.SentAt).Seconds()
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	reason := ""
	if failure != nil {
		reason = failure.Error()
	}
	if err := s.Tasks.EndStage(ectx, ses.TeamID, w.TaskID, t.Agent, out.Output, reason, out.Tokens, 0); err != nil {
		s.log().WarnContext(ctx, "end stage task", "session_id", ses.ID, "error", err.Error())
	}
	if failure == nil {
		return out, s.store(ctx, ses, out)
	}
	s.markParticipant(ectx, ses, t.Agent, PartFailed, w.TaskID, t.Kind)
	if _, err := s.update(ectx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		if _, ok := before.remoteWait(t.Key); !ok {
			return errSkip
		}
		after.RemoteWaits = dropWait(before.RemoteWaits, t.Key)
		return nil
	}); err != nil {
		s.log().WarnContext(ctx, "drop a remote stage's wait", "session_id", ses.ID, "stage", t.Key, "error", err.Error())
	}
	return out, failure
}

// saveWait records (or updates) the wait of a remote stage.
func (s *Service) saveWait(ctx context.Context, ses Session, w RemoteWait) error {
	_, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		if before.Status.Terminal() {
			return notRunnable(before, "ended while its agent worked")
		}
		after.RemoteWaits = append(dropWait(before.RemoteWaits, w.Key), w)
		return nil
	})
	return err
}

// cancelRemote tells the remote agent to stop the stage's task (best
// effort: the stage ends either way).
func (s *Service) cancelRemote(ctx context.Context, teamID string, a agents.Agent, w RemoteWait) {
	if s.Remote == nil || w.RemoteTaskID == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Remote.Cancel(cctx, a, w.RemoteTaskID); err != nil {
		s.log().WarnContext(ctx, "cancel a remote stage's task", "team_id", teamID, "agent", a.Slug, "remote_task_id", w.RemoteTaskID, "error", err.Error())
	}
}

// endRemoteWaits ends the stages a session left waiting for remote
// agents when it ended (cancelled, failed, timed out): each stage's task
// fails and gives its agent's slot back, and the remote task is canceled.
//
// The tasks end first (the table: what holds the slots), then the remote
// tasks are canceled at once, together within endRemoteBound, so the
// request that ended the session (a cancel, 15 s) still answers.
func (s *Service) endRemoteWaits(ctx context.Context, ses Session, waits []RemoteWait) {
	ctx = context.WithoutCancel(ctx)
	for _, w := range waits {
		if s.Tasks == nil {
			break
		}
		if err := s.Tasks.EndStage(ctx, ses.TeamID, w.TaskID, w.Agent, "", fmt.Sprintf("the session ended (%s) while the remote agent worked", ses.Status), w.Tokens, 0); err != nil {
			s.log().WarnContext(ctx, "end a remote stage's task", "session_id", ses.ID, "task_id", w.TaskID, "error", err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, endRemoteBound)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range waits {
		a, err := s.Store.GetAgent(ctx, ses.TeamID, w.Agent)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.cancelRemote(ctx, ses.TeamID, a, w)
		}()
	}
	wg.Wait()
}

// endRemoteBound bounds the cancels of a session's remote stages.
const endRemoteBound = 5 * time.Second
