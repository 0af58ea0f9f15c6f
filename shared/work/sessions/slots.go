package sessions

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// A stage whose agent holds its five tasks does not fail: run returns
// workflow.StageBusy, the machine catches it and waits in its await_slot
// state (a task token, nothing running) until the transaction that frees
// a slot of that agent hands it to the stage's ticket (shared/work/tasks,
// slots.go), then runs the stage again, which creates its task on that
// slot. The wait lasts at most until the session's deadline; the
// session's record lists it (SlotWaits, in the trace).

// TicketKey is the slot ticket of a session's stage: unique in the team,
// per run (a resumed session waits afresh), and prefixed by the session
// so its end finds every ticket it left (ticketPrefix).
func TicketKey(ses Session, stage string) string {
	return fmt.Sprintf("%s%d#%s", ticketPrefix(ses.ID), ses.Runs, stage)
}

func ticketPrefix(sessionID string) string { return sessionID + "#" }

// awaitSlot is the await_slot step: the caught StageBusy names the agent
// and the ticket; the ticket is put in line with the state's token. When
// a slot is free by now, the token is completed at once and the stage
// runs again.
func (s *Service) awaitSlot(ctx context.Context, ses Session, in workflow.SessionStepInput) error {
	if in.TaskToken == "" {
		return workflow.InvalidTask{Msg: "await_slot needs task_token"}
	}
	agent, ticket, ok := workflow.ParseStageBusy(causeMessage(in.Error.Cause))
	if !ok || !strings.HasPrefix(ticket, ticketPrefix(ses.ID)) {
		return workflow.InvalidTask{Msg: "await_slot needs the stage's AgentBusy error"}
	}
	until := s.Now.UTC().Add(durationOf(ses.MaxDurationSeconds))
	if ses.Deadline != nil {
		until = *ses.Deadline
	}
	waiting, err := s.Tasks.AwaitSlot(ctx, ses.TeamID, agent, ticket, in.TaskToken, until)
	if err != nil {
		return err
	}
	if !waiting {
		if s.Callbacks == nil {
			return workflow.InvalidTask{Msg: "no callbacks to resume the stage"}
		}
		return s.Callbacks.Succeed(ctx, in.TaskToken, map[string]string{"granted": "", "agent": agent})
	}
	stage := strings.TrimPrefix(ticket, fmt.Sprintf("%s%d#", ticketPrefix(ses.ID), ses.Runs))
	now := s.Now.UTC()
	_, err = s.updateFrom(ctx, ses.TeamID, ses.ID, &ses, func(before Session, after *Session) error {
		for _, w := range before.SlotWaits {
			if w.Stage == stage && w.GrantedAt == nil {
				return errSkip // a retried step
			}
		}
		after.SlotWaits = append(append([]SlotWait(nil), before.SlotWaits...), SlotWait{Agent: agent, Stage: stage, Since: now})
		setParticipant(after, agent, PartWaitingForSlot, "")
		return nil
	})
	if err == nil {
		s.notify(ctx, ses, "collab_update", fmt.Sprintf("%s holds its five tasks: the stage %s waits for a slot", agent, stage))
	}
	return err
}

// slotGranted records on the session that the stage whose ticket this is
// got the slot it waited for (nothing when it did not wait).
func (s *Service) slotGranted(ctx context.Context, ses Session, ticket string) {
	stage := strings.TrimPrefix(ticket, fmt.Sprintf("%s%d#", ticketPrefix(ses.ID), ses.Runs))
	waited := false
	for _, w := range ses.SlotWaits {
		waited = waited || (w.Stage == stage && w.GrantedAt == nil)
	}
	if !waited {
		return
	}
	now := s.Now.UTC()
	_, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		after.SlotWaits = append([]SlotWait(nil), before.SlotWaits...)
		for i, w := range after.SlotWaits {
			if w.Stage == stage && w.GrantedAt == nil {
				after.SlotWaits[i].GrantedAt = &now
				return nil
			}
		}
		return errSkip
	})
	if err != nil {
		s.log().WarnContext(ctx, "record a granted slot", "session_id", ses.ID, "stage", stage, "error", err.Error())
	}
}

// releaseSlots ends the tickets a session that ended left behind (its
// machine stopped while a stage waited, or before a granted stage ran).
func (s *Service) releaseSlots(ctx context.Context, ses Session) {
	if s.Tasks == nil {
		return
	}
	if err := s.Tasks.ReleaseSlots(ctx, ses.TeamID, ticketPrefix(ses.ID)); err != nil {
		s.log().WarnContext(ctx, "release the slot tickets of an ended session", "session_id", ses.ID, "error", err.Error())
	}
}
