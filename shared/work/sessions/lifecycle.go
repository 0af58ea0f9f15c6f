package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// maxStaleRetries bounds re-reads when a concurrent stage changed the
// session between our read and our write.
const maxStaleRetries = 20

// errSkip ends an update without writing (nothing to change).
var errSkip = errors.New("no change")

// update is the read–change–conditional-write loop every change of a
// session goes through: change edits the copy it is given, and the write
// is conditioned on the version read.
func (s *Service) update(ctx context.Context, teamID, id string, change func(before Session, after *Session) error) (Session, error) {
	return s.updateFrom(ctx, teamID, id, nil, change)
}

// updateFrom is update whose first attempt starts from read, the session
// as this invocation has just read it (nil: read it now). A workflow step
// reads the session to check it may run and then changes it: starting from
// that read saves one GetItem per step (see docs/testing.md, "AWS calls per
// operation"). The write is still conditioned on the version read, so a
// copy made stale by a concurrent stage only costs the re-read the retry
// would have made anyway.
func (s *Service) updateFrom(ctx context.Context, teamID, id string, read *Session, change func(before Session, after *Session) error) (Session, error) {
	for range maxStaleRetries {
		var before Session
		var err error
		if read != nil {
			before, read = *read, nil
		} else if before, err = s.Store.GetSession(ctx, teamID, id); err != nil {
			return Session{}, err
		}
		after := before
		after.Participants = append([]Participant(nil), before.Participants...)
		after.StageOutputs = append([]StageOutput(nil), before.StageOutputs...)
		if err := change(before, &after); err != nil {
			if errors.Is(err, errSkip) {
				return before, nil
			}
			return Session{}, err
		}
		now := s.Now.UTC()
		after.Version, after.UpdatedAt = before.Version+1, now
		var waits []RemoteWait
		if after.Status.Terminal() && !before.Status.Terminal() {
			after.CompletedAt = &now
			after.Waiter = ""
			// Stages left waiting for remote agents end with the session.
			waits, after.RemoteWaits = after.RemoteWaits, nil
		}
		// The stream's events are written with the change, in its
		// transaction, under its version condition: a change refused
		// here writes none, and one stored has all of them.
		if err := WithEvents(before, &after, now); err != nil {
			return Session{}, apperr.Wrap(apperr.EINTERNAL, err, "session events")
		}
		err = s.Store.PutSession(ctx, after)
		if errors.Is(err, ErrChanged) {
			continue
		}
		if err != nil {
			return Session{}, err
		}
		if after.Status != before.Status {
			s.publishStatus(ctx, after, before.Status)
		}
		// len > 0 saves a call that would release nothing: `>= 0` survives
		// mutation testing and changes nothing but that call.
		if after.Status.Terminal() && !before.Status.Terminal() && len(after.SlotWaits) > 0 {
			s.releaseSlots(ctx, after)
		}
		if len(waits) > 0 {
			s.endRemoteWaits(ctx, after, waits)
		}
		return after, nil
	}
	return Session{}, apperr.New(apperr.ECONFLICT, "session %s is changing too fast; try again", id).WithReason("Contention")
}

// end moves an unfinished session to a terminal status.
func (s *Service) end(ctx context.Context, teamID, id string, to Status, reason, outcome, convergence string) (Session, error) {
	return s.update(ctx, teamID, id, func(before Session, after *Session) error {
		if before.Status.Terminal() {
			return errSkip
		}
		after.Status, after.StatusReason, after.Outcome, after.Convergence = to, reason, outcome, convergence
		return nil
	})
}

// Cancel ends a session that has not finished and stops its execution.
// The execution is stopped first, so it ends ABORTED rather than noticing
// the cancel and ending on its own.
func (s *Service) Cancel(ctx context.Context, teamID, id, by string) (Session, error) {
	if err := s.enabled(); err != nil {
		return Session{}, err
	}
	cur, err := s.Store.GetSession(ctx, teamID, id)
	if err != nil {
		return Session{}, err
	}
	if cur.Status.Terminal() {
		return Session{}, conflict("cancel", cur.Status)
	}
	s.stop(ctx, cur, "cancelled by "+by)
	ses, err := s.updateFrom(ctx, teamID, id, &cur, func(before Session, after *Session) error {
		if before.Status.Terminal() {
			return conflict("cancel", before.Status)
		}
		after.Status, after.StatusReason, after.Outcome = Cancelled, ReasonCancelled, OutcomeCancelled
		after.Convergence = "cancelled by " + by
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return s.decorate(ses), nil
}

func (s *Service) stop(ctx context.Context, ses Session, cause string) {
	if s.Workflows == nil {
		return
	}
	arn := s.Workflows.ExecutionARN(string(ses.Pattern), ExecutionName(ses.ID, ses.Runs))
	if err := s.Workflows.Stop(ctx, arn, cause); err != nil {
		s.log().WarnContext(ctx, "stop session execution", "session_id", ses.ID, "execution", arn, "error", err.Error())
	}
}

func conflict(verb string, st Status) error {
	return apperr.New(apperr.ECONFLICT, "cannot %s a session that is %s", verb, st).
		WithReason("InvalidTransition").WithDetail("status", string(st))
}

// ApproveInput is a human's decision on a session awaiting approval.
type ApproveInput struct {
	Decision string `json:"decision"`
	Comment  string `json:"comment"`
}

// Decision is what the approval state's task token receives.
type Decision struct {
	Decision string `json:"decision"`
	Comment  string `json:"comment,omitempty"`
	By       string `json:"by"`
}

// Approve hands a human's decision to the execution waiting for it.
func (s *Service) Approve(ctx context.Context, teamID, id, by string, in ApproveInput) (Session, error) {
	if err := s.enabled(); err != nil {
		return Session{}, err
	}
	if in.Decision != "approve" && in.Decision != "reject" {
		return Session{}, apperr.Invalid("decision", "decision must be approve or reject")
	}
	var token string
	ses, err := s.update(ctx, teamID, id, func(before Session, after *Session) error {
		if before.Status != AwaitingApproval || before.Waiter == "" {
			return conflict("approve or reject", before.Status)
		}
		token = before.Waiter
		after.Waiter = ""
		after.ApprovalComment = in.Comment
		after.Status = Synthesizing
		// The work ended when the session began to wait; what is left is
		// recording the decision. Should the execution be gone, the
		// sweeper ends the session a grace after this.
		d := s.Now.UTC().Add(approvalGrace)
		after.Deadline = &d
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	if s.Callbacks == nil {
		return Session{}, apperr.New(apperr.EINTERNAL, "this function cannot complete the approval")
	}
	if err := s.Callbacks.Succeed(ctx, token, Decision{Decision: in.Decision, Comment: in.Comment, By: by}); err != nil {
		// The execution did not get the decision: the session waits again,
		// with its token, so the human can retry.
		_, rerr := s.update(ctx, teamID, id, func(before Session, after *Session) error {
			if before.Status != Synthesizing || before.Waiter != "" {
				return errSkip
			}
			after.Status, after.Waiter = AwaitingApproval, token
			return nil
		})
		if rerr != nil {
			s.log().ErrorContext(ctx, "restore the approval wait", "session_id", id, "error", rerr.Error())
		}
		return Session{}, apperr.Wrap(apperr.EINTERNAL, err, "could not hand the decision to the session's execution")
	}
	return s.decorate(ses), nil
}

// Resume runs a failed or timed-out session again under a new execution
// (<id>-r<N>): the stages already done keep their stored outputs and are
// not run again, and the budget left is what the first runs left.
func (s *Service) Resume(ctx context.Context, teamID, id string) (Session, error) {
	if err := s.enabled(); err != nil {
		return Session{}, err
	}
	ses, err := s.update(ctx, teamID, id, func(before Session, after *Session) error {
		if before.Status != Failed && before.Status != TimedOut {
			return conflict("resume", before.Status)
		}
		if before.BudgetExhausted || before.TotalCostUSD >= before.MaxCostUSD {
			return apperr.New(apperr.EREJECTED, "the session's budget of $%.2f is spent; it cannot resume", before.MaxCostUSD).WithReason(ReasonBudget)
		}
		after.Runs = before.Runs + 1
		after.Status, after.StatusReason, after.Outcome, after.Convergence = Planning, "", "", ""
		after.CompletedAt = nil
		d := s.Now.UTC().Add(durationOf(before.MaxDurationSeconds))
		after.Deadline = &d
		for i := range after.Participants {
			if after.Participants[i].Status != PartCompleted {
				after.Participants[i].Status = PartWaiting
			}
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	if s.Workflows != nil {
		arn, err := s.Workflows.Start(ctx, string(ses.Pattern), ExecutionName(ses.ID, ses.Runs), Payload(ses, ses.Runs))
		if err != nil {
			// Resumed (planning): the reconciler starts the run (Reconcile).
			s.log().ErrorContext(ctx, "start resumed session execution; the reconciler will start it", "session_id", id, "error", err.Error())
			return s.decorate(ses), nil
		}
		ses.ExecutionARN = arn
	}
	return s.decorate(ses), nil
}

// Sweep ends every unfinished session more than SweepGrace past its
// deadline as timed_out and stops its execution: the Catch of a machine
// does not run when the execution itself times out or is stopped. A
// session waiting for a human has no deadline while it waits.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	refs, err := s.Store.DueSessions(ctx, s.Now.UTC().Add(-SweepGrace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		// Each session's lines say whose it is (shared/platform/logctx).
		ctx := logctx.With(ctx, "team_id", r.TeamID, "session_id", r.ID)
		swept := false
		ses, err := s.update(ctx, r.TeamID, r.ID, func(before Session, after *Session) error {
			swept = false
			if before.Status.Terminal() || before.Status == AwaitingApproval || before.Deadline == nil || before.Deadline.After(s.Now.UTC().Add(-SweepGrace)) {
				return errSkip
			}
			after.Status, after.StatusReason, after.Outcome = TimedOut, ReasonTimeout, OutcomeTimedOut
			after.Convergence = "the session's deadline passed"
			swept = true
			return nil
		})
		if err != nil || !swept {
			if err != nil {
				s.log().ErrorContext(ctx, "sweep session", "error", err.Error())
			}
			continue
		}
		n++
		s.stop(ctx, ses, "deadline passed")
	}
	return n, nil
}

// approvalGrace is the time a decided session has to complete.
const approvalGrace = time.Minute

func durationOf(seconds int) time.Duration { return time.Duration(seconds) * time.Second }

// StartGrace is how long a session may stay planning before the
// reconciler starts its execution: longer than the sessions function runs
// (15 s), so a create or resume still under way is never raced, and the
// execution's first state (begin) moves a started session on within a
// second.
const StartGrace = 20 * time.Second

// Reconcile starts the execution of every session left planning for
// StartGrace: its create or resume stored it but the start did not happen
// or its outcome is unknown (Step Functions did not answer). The name is
// the run's (ExecutionName), so an execution that did start is not
// started twice (Step Functions answers a repeated start of a running
// execution with the same name and input with that execution). A session
// whose deadline passed before it started ends timed_out. The task-sweeper
// runs it every minute, so a session starts within StartGrace and a
// minute. It returns how many it started.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	if s.Workflows == nil {
		return 0, nil
	}
	refs, err := s.Store.UnstartedSessions(ctx, s.Now.UTC().Add(-StartGrace), 50)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range refs {
		ctx := logctx.With(ctx, "team_id", r.TeamID, "session_id", r.ID)
		ses, err := s.Store.GetSession(ctx, r.TeamID, r.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ses.Status != Planning {
			continue
		}
		if ses.Deadline != nil && !s.Now.UTC().Before(*ses.Deadline) {
			if _, err := s.end(ctx, ses.TeamID, ses.ID, TimedOut, ReasonTimeout, OutcomeTimedOut, "the session's deadline passed before it started"); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if _, err := s.Workflows.Start(ctx, string(ses.Pattern), ExecutionName(ses.ID, ses.Runs), Payload(ses, ses.Runs)); err != nil {
			s.log().WarnContext(ctx, "reconcile: start session execution", "error", err.Error())
		} else {
			n++
			s.log().InfoContext(ctx, "reconcile: started a session left planning")
		}
		// Touched (its updated_at moves), so it is looked at again only
		// after another StartGrace, not every sweep while begin is due.
		if _, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, _ *Session) error {
			if before.Status != Planning {
				return errSkip
			}
			return nil
		}); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
