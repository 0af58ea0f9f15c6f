package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// turn is one agent's stage: what it is asked, the structured answer it
// must give (nil: free text) and the protocol message its answer becomes.
type turn struct {
	Key       string
	Agent     string
	Kind      string // work, contribution, critique, vote, plan, synthesis, stage
	Stage     int
	Round     int
	Title     string
	Prompt    string
	Tool      *models.Tool
	MsgType   MessageType // the protocol type of a free-text answer
	Recipient string
	// MaxRounds makes a request for changes in the last round a rejection.
	MaxRounds int
}

// maxTurnTokens is a stage's token budget (the task model's).
const maxTurnTokens = workflow.MaxTaskTokens

// errProtocol is an answer that broke the protocol (recorded, refused).
var errProtocol = errors.New("protocol violation")

// run runs t unless its output is stored already (a retried state or a
// resumed session: no model call for a done stage). The stage is a task of
// the task model from start to end.
func (s *Service) run(ctx context.Context, ses Session, t turn) (StageOutput, error) {
	if o, ok := ses.Output(t.Key); ok {
		return o, nil
	}
	a, err := s.Store.GetAgent(ctx, ses.TeamID, t.Agent)
	if err != nil {
		return StageOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q: %v", t.Agent, err)}
	}
	if a.Status != agents.StatusActive {
		return StageOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is %s", t.Agent, a.Status)}
	}
	if a.IsRemote() {
		// An agent outside the team: its A2A task runs while the machine
		// waits (remote.go).
		return s.runRemote(ctx, ses, a, t)
	}
	taskID, err := s.beginStage(ctx, ses, t)
	if err != nil {
		return StageOutput{}, err
	}
	// The stage is a task: its lines carry the task's id too.
	ctx = logctx.With(ctx, "task_id", taskID)
	start := time.Now()
	actx, stop := s.bounded(ctx, ses)
	out, err := s.answer(actx, ses, a, t)
	switch {
	case err == nil:
	case actx.Err() == context.DeadlineExceeded && ses.Deadline != nil && !s.Now.UTC().Before(*ses.Deadline):
		err = workflow.TaskTimedOut{Msg: fmt.Sprintf("%s's stage ran past the session's deadline", t.Agent)}
	case actx.Err() == context.DeadlineExceeded:
		// The stage's own budget: retried, as a task's would be.
		err = fmt.Errorf("%s's stage ran past its budget of %ds", t.Agent, workflow.MaxTaskSeconds)
	case actx.Err() != nil && ctx.Err() == nil:
		err = workflow.SessionNotRunnable{Msg: fmt.Sprintf("session %s ended while %s worked", ses.ID, t.Agent)}
	}
	stop()
	out.Key, out.Stage, out.Round, out.Kind, out.Agent, out.TaskID = t.Key, t.Stage, t.Round, t.Kind, t.Agent, taskID
	out.DurationSeconds = time.Since(start).Seconds()
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	failure := ""
	if err != nil {
		failure = err.Error()
	}
	if eerr := s.Tasks.EndStage(ectx, ses.TeamID, taskID, t.Agent, out.Output, failure, out.Tokens, out.CostUSD); eerr != nil {
		s.log().WarnContext(ctx, "end stage task", "session_id", ses.ID, "error", eerr.Error())
	}
	if err != nil {
		s.markParticipant(ectx, ses, t.Agent, PartFailed, taskID, t.Kind)
		return out, err
	}
	return out, s.store(ctx, ses, out)
}

// beginStage creates and starts the stage's task, on the slot handed to
// its ticket when it waited for one, and marks its agent working.
func (s *Service) beginStage(ctx context.Context, ses Session, t turn) (string, error) {
	ticket := TicketKey(ses, t.Key)
	taskID, err := s.Tasks.BeginStage(ctx, ses.TeamID, StageTask{SessionID: ses.ID, Lead: ses.Lead, Agent: t.Agent,
		Title: clip.Clip(fmt.Sprintf("Session %s: %s", ses.ID, t.Title), 480), Prompt: t.Prompt, Context: ses.Context, CapUSD: ses.MaxCostUSD,
		Ticket: ticket})
	if ae, ok := apperr.As(err); ok && ae.Reason == tasks.ReasonConcurrency {
		// The agent holds its five tasks: the machine waits in line for
		// a slot (await_slot) and runs this stage again when one is
		// handed over. Not a failure, and no retry spent.
		return "", workflow.StageBusy(t.Agent, ticket)
	}
	if err != nil {
		return "", err
	}
	s.slotGranted(ctx, ses, ticket)
	s.markParticipant(ctx, ses, t.Agent, PartWorking, taskID, t.Kind)
	return taskID, nil
}

// WatchInterval is how often a stage checks that its session still runs.
const WatchInterval = time.Second

// bounded is the context of a stage's model calls: it ends at the
// session's deadline, and as soon as the session ends otherwise (a cancel
// stops the work under way, not only the next step).
func (s *Service) bounded(ctx context.Context, ses Session) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	// The time left is reckoned on the service's clock (a test's is set)
	// and becomes a deadline on the wall clock, which contexts use: a
	// deadline taken straight from the service's clock would be past or far
	// ahead whenever the two differ.
	left := workflow.MaxTaskSeconds * time.Second
	if ses.Deadline != nil {
		left = min(left, ses.Deadline.Sub(s.Now.UTC()))
	}
	ctx, dcancel := context.WithTimeout(ctx, left)
	prev := cancel
	cancel = func() { dcancel(); prev() }
	go func() {
		tick := time.NewTicker(WatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				cur, err := s.Store.GetSession(ctx, ses.TeamID, ses.ID)
				if err == nil && cur.Status.Terminal() {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// answer asks the agent, parses and checks its answer. A protocol
// violation is recorded and the agent asked once more with the rule it
// broke; a second one fails the stage.
func (s *Service) answer(ctx context.Context, ses Session, a agents.Agent, t turn) (StageOutput, error) {
	var out StageOutput
	req := prompts.Request(ses.TeamID, a, s.system(ctx, ses, a), maxTurnTokens, "")
	req.Metadata[models.MetadataSessionID] = ses.ID
	if ses.ConversationID != "" {
		req.Metadata[models.MetadataConversationID] = ses.ConversationID
	}
	req.Messages = []models.Message{{Role: "user", Content: t.Prompt}}
	if t.Tool != nil {
		req.Tools = []models.Tool{*t.Tool}
	}
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := s.call(ctx, ses, req)
		out.Tokens += resp.InputTokens + resp.OutputTokens
		out.CostUSD += models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
		if err != nil {
			return out, err
		}
		msg, perr := parse(t, resp)
		if perr == nil {
			perr = s.record(ctx, ses, msg)
		}
		if perr == nil {
			out.Output, out.Data = msg.Content, msg.Data
			return out, nil
		}
		if !errors.Is(perr, errProtocol) {
			return out, perr
		}
		req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) > 0 {
			req.Messages = append(req.Messages, models.Message{Role: "tool", ToolCallID: resp.ToolCalls[0].ID, Content: "refused: " + perr.Error()})
		}
		req.Messages = append(req.Messages, models.Message{Role: "user", Content: "Your message was refused: " + perr.Error() + ". Answer again following the protocol."})
	}
	return out, workflow.ProtocolViolation{Msg: fmt.Sprintf("%s broke the collaboration protocol twice", t.Agent)}
}

// call makes one model call for the session: refused once the budget is
// exhausted, and charged with a conditional add that fails the call that
// would cross the cap.
func (s *Service) call(ctx context.Context, ses Session, req models.Request) (models.Response, error) {
	cur, err := s.Store.GetSession(ctx, ses.TeamID, ses.ID)
	if err != nil {
		return models.Response{}, err
	}
	if cur.BudgetExhausted {
		return models.Response{}, workflow.BudgetExhausted{Msg: fmt.Sprintf("the session's budget of $%.2f is exhausted", cur.MaxCostUSD)}
	}
	if !cur.Status.Running() {
		return models.Response{}, workflow.SessionNotRunnable{Msg: fmt.Sprintf("session %s is %s", ses.ID, cur.Status)}
	}
	resp, err := s.Model.Converse(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		if errors.Is(err, models.ErrBudgetExhausted) {
			// The team's monthly budget: the session ends as on its own.
			return resp, workflow.BudgetExhausted{Msg: err.Error()}
		}
		return resp, workflow.ModelFailed{Msg: err.Error()}
	}
	cost := models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
	err = s.Store.Charge(ctx, ses.TeamID, ses.ID, cost, resp.InputTokens+resp.OutputTokens)
	if errors.Is(err, ErrBudget) {
		return resp, workflow.BudgetExhausted{Msg: fmt.Sprintf("a model call of $%.4f would cross the session's budget of $%.2f", cost, cur.MaxCostUSD)}
	}
	return resp, err
}

// record checks msg against the protocol and appends it to the trace; a
// violation is appended as refused and returned as errProtocol.
func (s *Service) record(ctx context.Context, ses Session, msg Message) error {
	history, err := s.Store.ListSessionMessages(ctx, ses.TeamID, ses.ID)
	if err != nil {
		return err
	}
	msg.At = s.Now.UTC()
	if msg.Status == "" {
		msg.Status = MsgAccepted
	}
	if perr := Check(history, msg, ses.MaxRounds); perr != nil {
		msg.Status, msg.Violation = MsgRefused, perr.Error()
		if err := s.Store.AppendSessionMessage(ctx, ses.TeamID, ses.ID, msg); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", errProtocol, perr.Error())
	}
	return s.Store.AppendSessionMessage(ctx, ses.TeamID, ses.ID, msg)
}

// store adds a stage's output to the session (once per key) and
// announces it.
func (s *Service) store(ctx context.Context, ses Session, o StageOutput) error {
	updated, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		if _, ok := before.Output(o.Key); ok {
			return errSkip
		}
		if before.Status.Terminal() {
			// Ended while the agent worked (cancelled, failed, swept): the
			// late answer is not the session's.
			return notRunnable(before, "ended while its agent worked")
		}
		after.StageOutputs = append(after.StageOutputs, o)
		after.RemoteWaits = dropWait(after.RemoteWaits, o.Key)
		after.StagesCompleted++
		after.CurrentStage = o.Key
		setParticipant(after, o.Agent, PartCompleted, o.TaskID)
		return nil
	})
	if err != nil {
		return err
	}
	s.publishStage(ctx, updated, o)
	return nil
}

func (s *Service) markParticipant(ctx context.Context, ses Session, agent, status, taskID, kind string) {
	_, err := s.update(ctx, ses.TeamID, ses.ID, func(_ Session, after *Session) error {
		if !setParticipant(after, agent, status, taskID) && status != PartWorking {
			return errSkip
		}
		if status == PartWorking {
			after.CurrentStage = kind + ":" + agent
		}
		return nil
	})
	if err != nil && !apperr.Is(err, apperr.ENOTFOUND) {
		s.log().WarnContext(ctx, "mark participant", "session_id", ses.ID, "agent", agent, "error", err.Error())
	}
}

// setParticipant sets the status (and task) of agent's participant entry;
// the lead has none.
func setParticipant(ses *Session, agent, status, taskID string) bool {
	for i := range ses.Participants {
		if ses.Participants[i].Agent == agent {
			ses.Participants[i].Status = status
			if taskID != "" {
				ses.Participants[i].TaskID = taskID
			}
			return true
		}
	}
	return false
}

// parse turns a model answer into the turn's protocol message.
func parse(t turn, resp models.Response) (Message, error) {
	msg := Message{Round: t.Round, Sender: t.Agent, Recipient: t.Recipient, Type: t.MsgType, Content: resp.Text}
	if t.Tool == nil {
		if resp.Text == "" {
			return msg, workflow.ModelFailed{Msg: t.Agent + " gave an empty answer"}
		}
		return msg, nil
	}
	var raw string
	for _, c := range resp.ToolCalls {
		if c.Name == t.Tool.Name {
			raw = c.Input
		}
	}
	if raw == "" {
		raw = resp.Text // a JSON answer without the tool
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		return msg, workflow.ModelFailed{Msg: fmt.Sprintf("%s's %s is not valid JSON", t.Agent, t.Tool.Name)}
	}
	return structured(t, msg, data)
}

func itoa(n int) string { return fmt.Sprintf("%d", n) }
