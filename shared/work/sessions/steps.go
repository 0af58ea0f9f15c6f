package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Steps is the session machines' entry in the session-steps function's
// step table (one entry per pattern machine).
func (s *Service) Steps() workflow.Step {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in workflow.SessionStepInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, workflow.InvalidTask{Msg: "unreadable session step payload: " + err.Error()}
		}
		return s.Step(ctx, in)
	}
}

// Step runs one state of a session machine. A session that is no longer
// this execution's (cancelled, ended, resumed by a newer run) is
// workflow.SessionNotRunnable, which the machines catch and end on.
func (s *Service) Step(ctx context.Context, in workflow.SessionStepInput) (workflow.SessionStepOutput, error) {
	if in.TeamID == "" || in.SessionID == "" {
		return workflow.SessionStepOutput{}, workflow.InvalidTask{Msg: "team_id and session_id are required"}
	}
	// Every line the step logs, in the task and memory services too, says
	// which team, session and state it belongs to (shared/platform/logctx).
	ctx = logctx.With(ctx, "team_id", in.TeamID, "session_id", in.SessionID, "step", in.Action)
	ses, err := s.Store.GetSession(ctx, in.TeamID, in.SessionID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return workflow.SessionStepOutput{}, workflow.InvalidTask{Msg: err.Error()}
	}
	if err != nil {
		return workflow.SessionStepOutput{}, err
	}
	if in.Run != 0 && ses.Runs != in.Run {
		return workflow.SessionStepOutput{}, notRunnable(ses, "resumed by a newer run")
	}
	switch in.Action {
	case workflow.SessionBegin:
		return s.begin(ctx, ses, in)
	case workflow.SessionFail:
		return s.fail(ctx, ses, in)
	}
	if ses.Status.Terminal() {
		return workflow.SessionStepOutput{}, notRunnable(ses, "ended")
	}
	if ses.Deadline != nil && ses.Status != AwaitingApproval && !s.Now.UTC().Before(*ses.Deadline) &&
		in.Action != workflow.SessionComplete && in.Action != workflow.SessionAwait {
		return workflow.SessionStepOutput{}, workflow.TaskTimedOut{Msg: fmt.Sprintf("session %s is past its deadline", ses.ID)}
	}
	var out workflow.SessionStepOutput
	switch in.Action {
	case workflow.SessionPlan:
		out, err = s.plan(ctx, ses)
	case workflow.SessionStage:
		if in.Item == nil {
			return out, workflow.InvalidTask{Msg: "a stage needs its item"}
		}
		err = s.stage(ctx, ses, *in.Item)
	case workflow.SessionDecide:
		out, err = s.decide(ctx, ses, in.Round)
	case workflow.SessionSynthesize:
		err = s.synthesize(ctx, ses)
	case workflow.SessionAwait:
		err = s.await(ctx, ses, in.TaskToken)
	case workflow.SessionAwaitSlot:
		err = s.awaitSlot(ctx, ses, in)
	case workflow.SessionComplete:
		err = s.complete(ctx, ses, in.Decision)
	default:
		return out, workflow.InvalidTask{Msg: fmt.Sprintf("unknown session action %q", in.Action)}
	}
	var wait remoteWaiting
	if errors.As(err, &wait) {
		// A remote agent's turn still running: the machine waits and runs
		// this state again (remote.go).
		out, err = workflow.SessionStepOutput{Items: []workflow.SessionItem{}, Status: string(ses.Status), WaitSeconds: wait.seconds}, nil
	}
	if err != nil {
		return out, err
	}
	out.SecondsLeft = s.secondsLeft(ses)
	return out, nil
}

func notRunnable(ses Session, why string) error {
	return workflow.SessionNotRunnable{Msg: fmt.Sprintf("session %s is %s (%s)", ses.ID, ses.Status, why)}
}

// secondsLeft is a stage state's timeout: the session's time left, but
// no more than a task's budget, each plus a margin. The stage's own context
// ends at the budget or the deadline, whichever comes first, so the
// function answers (TaskTimedOut past the deadline) before the state gives
// up; the state's timeout is only the backstop for a function that never
// answers. Without the margin the two raced: on a busy machine the state's
// States.Timeout could come first, and moto's interpreter turns a
// States.Timeout inside a Map iteration into a runtime error, so the
// session ended failed instead of timed_out.
func (s *Service) secondsLeft(ses Session) int {
	limit := workflow.MaxTaskSeconds + stageMarginSeconds
	if ses.Deadline == nil {
		return limit
	}
	return min(limit, max(1, int(math.Ceil(ses.Deadline.Sub(s.Now.UTC()).Seconds())))+stageMarginSeconds)
}

// stageMarginSeconds is how much longer a stage state waits than the
// stage's budget or the session's deadline.
const stageMarginSeconds = 15

// begin marks the session active for this execution, records the opening
// delegation and invites the participants. Retried, it succeeds again.
func (s *Service) begin(ctx context.Context, ses Session, in workflow.SessionStepInput) (workflow.SessionStepOutput, error) {
	ses, err := s.updateFrom(ctx, ses.TeamID, ses.ID, &ses, func(before Session, after *Session) error {
		if before.Status.Running() && before.ExecutionARN == in.ExecutionARN {
			return errSkip
		}
		if before.Status != Planning {
			return notRunnable(before, "not planning")
		}
		now := s.Now.UTC()
		after.Status, after.ExecutionARN = Active, in.ExecutionARN
		if after.StartedAt == nil {
			after.StartedAt = &now
		}
		d := now.Add(durationOf(before.MaxDurationSeconds))
		after.Deadline = &d
		after.Rounds = max(1, before.Rounds)
		return nil
	})
	if err != nil {
		return workflow.SessionStepOutput{}, err
	}
	history, err := s.Store.ListSessionMessages(ctx, ses.TeamID, ses.ID)
	if err != nil {
		return workflow.SessionStepOutput{}, err
	}
	if len(history) == 0 {
		s.notify(ctx, ses, "collab_invite", fmt.Sprintf("You are invited to a %s session led by %s: %s", ses.Pattern, ses.Lead, ses.Goal))
		if ses.Pattern != PeerReview {
			open := Message{Sender: ses.Lead, Recipient: "all", Type: MsgDelegation, Content: ses.Goal, Status: MsgAccepted}
			if err := s.record(ctx, ses, open); err != nil {
				return workflow.SessionStepOutput{}, err
			}
		}
	}
	return workflow.SessionStepOutput{Items: s.items(ses, ses.Rounds), Round: ses.Rounds, SecondsLeft: s.secondsLeft(ses), Status: string(ses.Status)}, nil
}

// items are the Map items of round of the session's fan-out: the workers
// (supervisor-worker; see plan), stages in order (pipeline), contributors
// (brainstorm), voters (consensus) or reviewers (peer review).
func (s *Service) items(ses Session, round int) []workflow.SessionItem {
	kind := map[Pattern]string{SupervisorWorker: "work", Pipeline: "stage", Brainstorm: "contribution", Consensus: "vote", PeerReview: "critique"}[ses.Pattern]
	out := []workflow.SessionItem{}
	for _, p := range ses.Participants {
		if ses.Pattern == PeerReview && p.Role != RoleReviewer {
			continue
		}
		out = append(out, workflow.SessionItem{Agent: p.Agent, Kind: kind, Stage: p.Stage, Round: round, SecondsLeft: s.secondsLeft(ses)})
	}
	return out
}

// fail ends the session after the machine's Catch (and the dead-letter
// queue): timed_out when the deadline passed, failed otherwise with the
// error as its reason. MaxRoundsReached and NoConsensus are the machine's
// own ends of a loop that did not converge.
func (s *Service) fail(ctx context.Context, ses Session, in workflow.SessionStepInput) (workflow.SessionStepOutput, error) {
	name, cause := in.Error.Error, causeMessage(in.Error.Cause)
	to, reason, outcome := Failed, ReasonStage, OutcomeFailed
	switch name {
	case "States.Timeout", "TaskTimedOut":
		// A state's timeout is the session's time left, or the stage's
		// budget: only the first ends the session timed_out.
		if ses.Deadline == nil || s.Now.UTC().Add(time.Second).Before(*ses.Deadline) {
			cause = "a stage ran past its time budget"
			break
		}
		to, reason, outcome, cause = TimedOut, ReasonTimeout, OutcomeTimedOut, "a stage ran past the session's deadline"
	case "BudgetExhausted":
		reason = ReasonBudget
	case "ProtocolViolation":
		reason = ReasonProtocol
	case ReasonRounds, ReasonNoMajority:
		reason, outcome = name, OutcomeMaxRounds
	case "SessionNotRunnable":
		return workflow.SessionStepOutput{Status: string(ses.Status)}, nil
	}
	if cause == "" {
		cause = name
	}
	if in.ExecutionARN != "" && ses.ExecutionARN != "" && ses.ExecutionARN != in.ExecutionARN {
		return workflow.SessionStepOutput{}, notRunnable(ses, "another execution's")
	}
	ended, err := s.end(ctx, ses.TeamID, ses.ID, to, reason, outcome, cause)
	if err != nil {
		return workflow.SessionStepOutput{}, err
	}
	s.notify(ctx, ended, "collab_update", fmt.Sprintf("the session ended %s: %s", ended.Status, cause))
	return workflow.SessionStepOutput{Status: string(ended.Status)}, nil
}

// causeMessage extracts the message of a Lambda error cause.
func causeMessage(cause string) string {
	var c struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(cause), &c) == nil && c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return cause
}

// await records the approval state's task token: the execution waits for
// a human with nothing running (no polling, nothing billed).
func (s *Service) await(ctx context.Context, ses Session, token string) error {
	if token == "" {
		return workflow.InvalidTask{Msg: "await needs task_token"}
	}
	_, err := s.updateFrom(ctx, ses.TeamID, ses.ID, &ses, func(before Session, after *Session) error {
		if !before.Status.Running() && before.Status != AwaitingApproval {
			return notRunnable(before, "not running")
		}
		after.Status, after.Waiter = AwaitingApproval, token
		return nil
	})
	if err == nil {
		s.notify(ctx, ses, "collab_update", "the final output waits for a human's approval")
	}
	return err
}

// complete ends the session completed, or failed when the human rejected
// the final output. Its SessionStatusChanged has the result-poster post
// the outcome into the session's conversation.
func (s *Service) complete(ctx context.Context, ses Session, raw json.RawMessage) error {
	var d Decision
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &d); err != nil {
			return workflow.InvalidTask{Msg: "unreadable decision: " + err.Error()}
		}
	}
	to, reason, outcome, conv := Completed, "", ses.Outcome, ses.Convergence
	if outcome == "" {
		outcome, conv = OutcomeCompleted, "every stage completed"
	}
	if d.Decision == "reject" {
		to, reason, outcome, conv = Failed, ReasonRejected, OutcomeRejected, "the final output was rejected by "+d.By
	} else if d.Decision != "" {
		conv += "; approved by " + d.By
	}
	ended, err := s.updateFrom(ctx, ses.TeamID, ses.ID, &ses, func(before Session, after *Session) error {
		if before.Status.Terminal() {
			return notRunnable(before, "ended")
		}
		after.Status, after.StatusReason, after.Outcome, after.Convergence = to, reason, outcome, conv
		return nil
	})
	if errors.As(err, new(workflow.SessionNotRunnable)) {
		return nil
	}
	if err != nil {
		return err
	}
	s.notify(ctx, ended, "collab_update", "the session ended "+string(ended.Status))
	return nil
}
