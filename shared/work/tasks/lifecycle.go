package tasks

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// mutation fills in the task after a transition and returns its events.
type mutation func(before Task, after *Task) ([]Event, error)

// maxStaleRetries bounds re-reads when another writer changed the task
// between our read and our write (the worker appending progress, say).
const maxStaleRetries = 10

// transition applies action act to the task: read, check the lifecycle,
// write conditioned on the version read and the allowed source states.
func (s *Service) transition(ctx context.Context, teamID, id string, act Action, by string, m mutation) (Task, error) {
	tr := Transitions[act]
	return s.apply(ctx, teamID, id, tr.From, tr.To, by, func(before Task, after *Task) ([]Event, error) {
		if !Allowed(act, before.Status) {
			return nil, apperr.New(apperr.ECONFLICT, "cannot %s a task that is %s", act, before.Status).
				WithReason(ReasonState).WithDetail("status", string(before.Status))
		}
		return m(before, after)
	})
}

// apply is the read–check–conditional-write loop every change goes through.
// to == "" keeps the status (progress and tool events).
func (s *Service) apply(ctx context.Context, teamID, id string, from []Status, to Status, by string, m mutation) (Task, error) {
	return s.applyFrom(ctx, nil, teamID, id, from, to, by, m)
}

// applyFrom is apply whose first attempt starts from seed, a copy of the
// task already read (nil reads it): a stale seed fails the version
// condition like any stale read, and the loop reads the task again.
//
// Kept whole: the loop's read, checks and conditional write share the read and
// the retry; split, the loop's invariant would be spread out.
func (s *Service) applyFrom(ctx context.Context, seed *Task, teamID, id string, from []Status, to Status, by string, m mutation) (Task, error) {
	// settled are approvals of the task found no longer pending (decided
	// meanwhile, or not stored yet): not ended with it. Finding one does
	// not count as a stale read (each approval is settled at most once).
	settled := map[string]bool{}
	// handoff and force say how a slot this change frees is given back:
	// to a waiting ticket, or released even though tickets wait (see
	// handOff); found by a first write that failed on ItemWaiting.
	var handoff *Ticket
	force := s.Callbacks == nil
	for stale := 0; stale < maxStaleRetries; stale++ {
		var before Task
		var err error
		if seed != nil {
			before, seed = *seed, nil
		} else if before, err = s.Store.GetTask(ctx, teamID, id); err != nil {
			return Task{}, err
		}
		after := before
		after.Chain = slices.Clone(before.Chain)
		if to != "" {
			after.Status = to
		}
		now := s.Now.UTC()
		after.UpdatedAt = now
		after.Version = before.Version + 1
		events, err := m(before, &after)
		if err != nil {
			return Task{}, err
		}
		if after.Status == Running && before.Status != Running {
			after.StartedAt = coalesce(before.StartedAt, now)
			d := now.Add(time.Duration(after.Budgets.TimeoutSeconds) * time.Second)
			after.Deadline = &d
		}
		// A work item runs at a person's pace: its due_at says when it is
		// late (and nothing ends it), not the 120 s of an agent's run. A
		// plan's root lasts as long as its steps: the plan machine's
		// timeout bounds it.
		if after.Status != Running || after.WorkItem() || after.PlanRoot() {
			after.Deadline = nil
		}
		var ends []ApprovalEnd
		if after.Status != Blocked {
			after.StatusReason = ""
			after.ApprovalIDs = nil
			// A task leaving blocked for anything but running (canceled,
			// failed, reassigned) leaves its execution's wait behind: its
			// approvals still pending end as canceled in the same
			// transaction, so none stays listed or takes a decision.
			if before.Status == Blocked && after.Status != Running {
				for _, aid := range before.ApprovalIDs {
					if !settled[aid] {
						ends = append(ends, ApprovalEnd{ID: aid, Reason: endedReason(after.Status), By: by, At: now})
					}
				}
			}
		}
		if after.Status.Terminal() {
			after.CompletedAt = &now
		}
		// Spend is charged to the collaboration as it happens, so a
		// delegation sees the tree's live cost.
		var charge float64
		// A delta of 0 adds nothing: `>= 0` survives mutation testing and
		// changes nothing.
		if delta := after.CostUSD - before.CostUSD; delta > 0 {
			if after.RootID == after.ID {
				after.TreeCostUSD += delta
			} else {
				charge = delta
			}
		}
		seq := before.EventSeq
		for i := range events {
			seq++
			events[i].Seq = seq
			events[i].At = now
			if events[i].Actor == "" {
				events[i].Actor = by
			}
		}
		after.EventSeq = seq
		err = s.Store.ApplyTask(ctx, Change{Before: before, After: after, From: from, Events: events, RootCharge: charge, EndApprovals: ends,
			Handoff: handoff, ForceRelease: force})
		switch item := failedItem(err); {
		case item == "":
		case item == ItemTask:
			continue // changed under us: read again and re-check
		case item == ItemWaiting:
			// Tickets wait for a slot of the agent: hand this one over.
			if handoff, force, err = s.nextTicket(ctx, before.TeamID, before.Assignee); err != nil {
				return Task{}, err
			}
			stale--
			continue
		case item == ItemTicket && handoff != nil:
			handoff = nil // granted or dropped meanwhile: look again
			continue
		case strings.HasPrefix(item, ItemApproval):
			if aid := strings.TrimPrefix(item, ItemApproval); !settled[aid] {
				settled[aid] = true
				stale--
			}
			continue // that approval is not pending: write without it
		default:
			return Task{}, s.rejection(ctx, after, nil, item)
		}
		if err != nil {
			return Task{}, err
		}
		if handoff != nil && before.HoldsSlot() && (!after.HoldsSlot() || before.Assignee != after.Assignee) {
			s.wakeTicket(ctx, *handoff)
		}
		if after.Status != before.Status {
			s.publish(ctx, after, before.Status)
		}
		if after.Status.Terminal() && !before.Status.Terminal() && after.Waiter != "" {
			_ = s.wake(ctx, after) // logged; the change stands (see wake)
		}
		return after, nil
	}
	return Task{}, apperr.New(apperr.ECONFLICT, "task %s is changing too fast; try again", id).WithReason("Contention")
}

// endedReason is the reason of an approval ended with its task, which
// left blocked for st.
func endedReason(st Status) string {
	if st == Queued {
		return "the task was reassigned while the approval was pending"
	}
	return "the task was " + string(st) + " while the approval was pending"
}

func coalesce(t *time.Time, now time.Time) *time.Time {
	if t != nil {
		return t
	}
	return &now
}

// TaskStatusChanged is the event published on every status change; the
// assignee learns of cancellation and reassignment through it.
type TaskStatusChanged struct {
	TeamID         string  `json:"team_id"`
	TaskID         string  `json:"task_id"`
	Assignee       string  `json:"assignee"`
	Status         Status  `json:"status"`
	PreviousStatus Status  `json:"previous_status,omitempty"`
	ParentID       string  `json:"parent_task_id,omitempty"`
	RootID         string  `json:"root_task_id"`
	Depth          int     `json:"delegation_depth"`
	TokensUsed     int     `json:"tokens_used"`
	CostUSD        float64 `json:"cost_usd"`
	Error          string  `json:"error,omitempty"`
	// ReportID is set when the task delivers a report, so the report's
	// consumer can skip every other task without reading it.
	ReportID string `json:"report_id,omitempty"`
	// ConsultationID is set when the task answers a consultation, so
	// the consultation's consumer can skip every other task.
	ConsultationID string `json:"consultation_id,omitempty"`
	// ConversationID is set when the task's result may be posted into a
	// conversation (it has a result delivery), so the result-poster can
	// skip every other task without reading it.
	ConversationID string `json:"conversation_id,omitempty"`
	// A2A is set on a task created over A2A (CreatedOverA2A), so the
	// a2a-push function hears of those alone (its rule asks for the
	// field), and reads their push configs.
	A2A bool `json:"a2a,omitempty"`
}

// CreatorA2A is the creator id the A2A endpoint (shared/a2a/server) records
// on the tasks it creates.
const CreatorA2A = "a2a"

// CreatedOverA2A reports whether the A2A endpoint created t.
func CreatedOverA2A(t Task) bool { return t.CreatedBy.Type == "user" && t.CreatedBy.ID == CreatorA2A }

// publish announces a status change. The change is already committed; a
// failed publish is logged, not undone (the task record is the truth).
func (s *Service) publish(ctx context.Context, t Task, prev Status) {
	if s.Bus == nil {
		return
	}
	ev := TaskStatusChanged{
		TeamID: t.TeamID, TaskID: t.ID, Assignee: t.Assignee, Status: t.Status, PreviousStatus: prev,
		ParentID: t.ParentID, RootID: t.RootID, Depth: t.Depth, TokensUsed: t.TokensUsed, CostUSD: t.CostUSD, Error: t.Error,
	}
	if t.Report != nil {
		ev.ReportID = t.Report.ReportID
	}
	if t.ResultDelivery != "" || t.ConsultationID != "" && t.ParentID == "" {
		// A consultation asked from a chat reply (no parent task: one
		// asked from a task answers that task) posts its answer there.
		ev.ConversationID = t.ConversationID
	}
	ev.ConsultationID = t.ConsultationID
	ev.A2A = CreatedOverA2A(t)
	if err := s.Bus.Publish(ctx, "TaskStatusChanged", ev); err != nil {
		s.Log.ErrorContext(ctx, "publish TaskStatusChanged", "task_id", t.ID, "error", err.Error())
	}
}
