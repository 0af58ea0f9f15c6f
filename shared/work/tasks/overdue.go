package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// Due dates act (issue 26, item 4). A task past its due_at that has not
// ended is overdue: it shows overdue: true at once (computed when the
// task is represented), and the sweeper flags it within a minute
// (OverdueAt, one conditional write through apply), which publishes
// TaskOverdue once. Under the team's board policy (escalate_overdue) the
// same write escalates it: the task's escalated event and an escalation
// of type task_overdue, listed by GET /v1/escalations, resolved by a
// human (ResolveEscalation). The due date applies to every task that has
// one, board task or delegation alike.

// DetailTypeOverdue is the detail type of TaskOverdue.
const DetailTypeOverdue = "TaskOverdue"

// Event types of the timeline written by due dates.
const (
	// EvOverdue: the sweeper found the task past its due date.
	EvOverdue = "overdue"
	// EvEscalationResolved: a human resolved the task's escalation; the
	// payload holds the note and the action taken.
	EvEscalationResolved = "escalation_resolved"
)

// EscalationTypeOverdue is the type of a task's escalation (beside the
// consultations' loop types).
const EscalationTypeOverdue = "task_overdue"

// Escalation statuses (the consultations' escalation statuses).
const (
	EscalationOpen     = "open"
	EscalationResolved = "resolved"
)

// Actions a human's resolution may take on the task.
const (
	// ResolveCancel cancels the task (as POST /cancel).
	ResolveCancel = "cancel"
	// ResolveRequeue puts the task back in its assignee's queue: the
	// assign transition to the same assignee (queued, running or blocked
	// → queued); an executed task's execution is stopped and it runs
	// again, as a reassigned one does.
	ResolveRequeue = "requeue"
)

// ResolveActions lists the actions, for validation.
var ResolveActions = []string{ResolveCancel, ResolveRequeue}

// MaxNote bounds a resolution's note, in characters (the consultations'
// answer bound).
const MaxNote = 8000

// overdueBatch is how many due entries one sweep reads.
const overdueBatch = 100

// ItemEscalation is the item a change of a task's escalation can fail on:
// its listing is not open any more (a resolution written from a stale
// read), or (opened) already exists.
const ItemEscalation = "escalation"

// Escalation is a task's task_overdue escalation as the task holds it;
// the store writes its listing (EscalationRecord) in the same
// transaction.
type Escalation struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	Resolution string     `json:"resolution,omitempty"`
	ResolvedBy string     `json:"resolved_by,omitempty"`
	Action     string     `json:"action,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// EscalationRecord is a task's escalation as GET /v1/escalations lists
// it, in the JSON shape of the consultations' escalations (the stores
// keep it beside them; a contract test reads it back through the
// consultations' store).
type EscalationRecord struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	TaskID     string         `json:"task_id"`
	Evidence   map[string]any `json:"evidence"`
	Status     string         `json:"status"`
	Resolution string         `json:"resolution,omitempty"`
	ResolvedBy string         `json:"resolved_by,omitempty"`
	Action     string         `json:"action,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	ResolvedAt *time.Time     `json:"resolved_at,omitempty"`
}

// EscalationRecord returns the listing of t's escalation (t.Escalation
// must be set). The evidence is what does not change after the escalation.
func (t Task) EscalationRecord() EscalationRecord {
	e := t.Escalation
	ev := map[string]any{"task_title": t.Title, "assignee": t.Assignee, "priority": t.Priority,
		"description": "task " + t.ID + " (" + t.Title + ") is past its due date and has not ended"}
	if t.DueAt != nil {
		ev["due_at"] = t.DueAt.UTC().Format(time.RFC3339Nano)
	}
	if t.OverdueAt != nil {
		ev["overdue_at"] = t.OverdueAt.UTC().Format(time.RFC3339Nano)
	}
	return EscalationRecord{ID: e.ID, Type: EscalationTypeOverdue, TaskID: t.ID, Evidence: ev, Status: e.Status,
		Resolution: e.Resolution, ResolvedBy: e.ResolvedBy, Action: e.Action, CreatedAt: e.CreatedAt, ResolvedAt: e.ResolvedAt}
}

// DueWatched reports whether t belongs in the due-date index: it has a
// due date, has not ended and has not been flagged overdue.
func (t Task) DueWatched() bool { return t.DueAt != nil && t.OverdueAt == nil && !t.Status.Terminal() }

// IsOverdue reports whether t is overdue at now: it has not ended and its
// due date has come.
func (t Task) IsOverdue(now time.Time) bool {
	return t.DueAt != nil && !t.Status.Terminal() && !now.Before(*t.DueAt)
}

// MarshalJSON is the task's representation with overdue computed at the
// time it is written, so a task created with a past due date shows
// overdue at once (the flag the sweeper writes is overdue_at).
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	return json.Marshal(struct {
		plain
		Overdue bool `json:"overdue"`
	}{plain(t), t.IsOverdue(time.Now())})
}

// DueStore is the store's part for due dates and the board policy.
type DueStore interface {
	// OverdueTasks returns up to limit tasks across teams whose due date
	// is before before and that are DueWatched, earliest first (a sparse
	// index the task's own writes keep).
	OverdueTasks(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	// DropDueEntry removes a task's entry from that index (one found
	// that no longer belongs there).
	DropDueEntry(ctx context.Context, r Ref) error
	// GetBoardPolicy returns the team's board policy (the zero policy
	// when it set none).
	GetBoardPolicy(ctx context.Context, teamID string) (BoardPolicy, error)
	// PutBoardPolicy replaces the team's board policy.
	PutBoardPolicy(ctx context.Context, teamID string, p BoardPolicy) error
}

// BoardPolicy is a team's policy for its task board.
type BoardPolicy struct {
	// EscalateOverdue escalates a task when it becomes overdue (default
	// false).
	EscalateOverdue bool       `json:"escalate_overdue"`
	UpdatedAt       *time.Time `json:"updated_at,omitempty"`
}

// BoardPolicyInput is the body of PUT /v1/board-policy: the whole policy
// (an omitted field takes its default).
type BoardPolicyInput struct {
	EscalateOverdue *bool `json:"escalate_overdue"`
}

// BoardPolicy returns the team's board policy.
func (s *Service) BoardPolicy(ctx context.Context, teamID string) (BoardPolicy, error) {
	return s.Store.GetBoardPolicy(ctx, teamID)
}

// SetBoardPolicy replaces the team's board policy; it applies to tasks
// that become overdue from then on.
func (s *Service) SetBoardPolicy(ctx context.Context, teamID string, in BoardPolicyInput) (BoardPolicy, error) {
	now := s.Now.UTC()
	p := BoardPolicy{EscalateOverdue: in.EscalateOverdue != nil && *in.EscalateOverdue, UpdatedAt: &now}
	if err := s.Store.PutBoardPolicy(ctx, teamID, p); err != nil {
		return BoardPolicy{}, err
	}
	return p, nil
}

// TaskOverdue is the TaskOverdue detail: published once per task, when
// the sweeper flags it.
type TaskOverdue struct {
	TeamID       string    `json:"team_id"`
	TaskID       string    `json:"task_id"`
	Assignee     string    `json:"assignee"`
	Title        string    `json:"title"`
	Priority     string    `json:"priority"`
	Status       Status    `json:"status"`
	DueAt        time.Time `json:"due_at"`
	OverdueAt    time.Time `json:"overdue_at"`
	EscalationID string    `json:"escalation_id,omitempty"`
}

// Outcomes of flagging one due entry.
var (
	errNotDue     = errors.New("not due yet")
	errNotWatched = errors.New("not in the due index")
)

// SweepOverdue flags every task past its due date that is not flagged
// yet (the sweeper's schedule, every minute): the flag, its overdue
// event and, under the team's board policy, the escalation, in one
// conditional write; TaskOverdue is published by the write that set the
// flag, so concurrent sweeps publish it once. Returns how many it flagged.
func (s *Service) SweepOverdue(ctx context.Context) (int, error) {
	now := s.Now.UTC()
	refs, err := s.Store.OverdueTasks(ctx, now, overdueBatch)
	if err != nil {
		return 0, err
	}
	policies := map[string]BoardPolicy{}
	n := 0
	for _, r := range refs {
		ctx := logctx.With(ctx, "team_id", r.TeamID, "task_id", r.ID)
		p, ok := policies[r.TeamID]
		if !ok {
			if p, err = s.Store.GetBoardPolicy(ctx, r.TeamID); err != nil {
				s.Log.ErrorContext(ctx, "sweep overdue: board policy", "error", err.Error())
				continue
			}
			policies[r.TeamID] = p
		}
		t, err := s.flagOverdue(ctx, r, p, now)
		switch {
		case err == nil:
			n++
			s.publishOverdue(ctx, t)
		case errors.Is(err, errNotWatched) || apperr.Is(err, apperr.ENOTFOUND):
			// Flagged or ended by a write the index has not caught up
			// with, or an entry left behind: dropped, so it is not read
			// again.
			if derr := s.Store.DropDueEntry(ctx, r); derr != nil {
				s.Log.WarnContext(ctx, "sweep overdue: drop due entry", "error", derr.Error())
			}
		case errors.Is(err, errNotDue):
		default:
			s.Log.ErrorContext(ctx, "sweep overdue", "error", err.Error())
		}
	}
	return n, nil
}

// flagOverdue is one task's flag: conditioned, as every change, on the
// version read, so of two sweeps only one writes it.
func (s *Service) flagOverdue(ctx context.Context, r Ref, p BoardPolicy, now time.Time) (Task, error) {
	return s.apply(ctx, r.TeamID, r.ID, []Status{Queued, Running, Blocked}, "", "sweeper", func(before Task, after *Task) ([]Event, error) {
		if !before.DueWatched() {
			return nil, errNotWatched
		}
		if before.DueAt.After(now) {
			return nil, errNotDue
		}
		at := after.UpdatedAt
		after.OverdueAt = &at
		due := before.DueAt.UTC().Format(time.RFC3339Nano)
		evs := []Event{{Type: EvOverdue, Payload: map[string]any{"due_at": due, "status": string(before.Status)}}}
		if p.EscalateOverdue {
			after.Escalation = &Escalation{ID: ids.New("esc"), Status: EscalationOpen, CreatedAt: at}
			evs = append(evs, Event{Type: EvEscalated, Payload: map[string]any{
				"escalation_id": after.Escalation.ID, "type": EscalationTypeOverdue, "due_at": due}})
		}
		return evs, nil
	})
}

// publishOverdue announces a flagged task; the flag is committed, so a
// failed publish is logged, not undone.
func (s *Service) publishOverdue(ctx context.Context, t Task) {
	if s.Bus == nil {
		return
	}
	ev := TaskOverdue{TeamID: t.TeamID, TaskID: t.ID, Assignee: t.Assignee, Title: t.Title, Priority: t.Priority,
		Status: t.Status, DueAt: t.DueAt.UTC(), OverdueAt: t.OverdueAt.UTC()}
	if t.Escalation != nil {
		ev.EscalationID = t.Escalation.ID
	}
	if err := s.Bus.Publish(ctx, DetailTypeOverdue, ev); err != nil {
		s.Log.ErrorContext(ctx, "publish TaskOverdue", "error", err.Error())
	}
}

// EscalationResolution is a human's resolution of a task's escalation.
type EscalationResolution struct {
	EscalationID string
	// Note is recorded on the task's timeline (and as the resolution).
	Note string
	// Action is "", ResolveCancel or ResolveRequeue.
	Action string
	By     string
}

// CheckResolution validates a resolution's note and action. EINVALID
// naming answer or action.
func CheckResolution(note, action string) error {
	if n := utf8.RuneCountInString(strings.TrimSpace(note)); n == 0 || n > MaxNote {
		return apperr.Invalid("answer", "answer must be 1 to %d characters", MaxNote)
	}
	if action != "" && !slices.Contains(ResolveActions, action) {
		return apperr.Invalid("action", "action must be %s", strings.Join(ResolveActions, " or "))
	}
	return nil
}

// ResolveEscalation resolves the task's open escalation in one
// conditional write: the escalation resolved with the note, the note on
// the timeline and, with an action, the task canceled or requeued. An
// executed task's execution is stopped (and, requeued, started again).
// EINVALID, ENOTFOUND (task or escalation), ECONFLICT (Resolved, or
// InvalidTransition when the action does not apply to its status).
func (s *Service) ResolveEscalation(ctx context.Context, teamID, taskID string, in EscalationResolution) (Task, error) {
	if err := CheckResolution(in.Note, in.Action); err != nil {
		return Task{}, err
	}
	var from []Status
	var to Status
	switch in.Action {
	case ResolveCancel:
		from, to = Transitions[ActCancel].From, Canceled
	case ResolveRequeue:
		from, to = Transitions[ActAssign].From, Queued
	}
	var prev Task
	t, err := s.apply(ctx, teamID, taskID, from, to, "human", func(before Task, after *Task) ([]Event, error) {
		prev = before
		return resolution(before, after, in, from)
	})
	if err != nil {
		return Task{}, err
	}
	if prev.Execute && in.Action != "" {
		s.stop(ctx, prev, "escalation "+in.EscalationID+" resolved: "+in.Action)
		if in.Action == ResolveRequeue {
			return s.launch(ctx, t)
		}
	}
	return t, nil
}

// resolution is ResolveEscalation's change of the task.
func resolution(before Task, after *Task, in EscalationResolution, from []Status) ([]Event, error) {
	e := before.Escalation
	if e == nil || e.ID != in.EscalationID {
		return nil, apperr.NotFound("escalation", in.EscalationID)
	}
	if e.Status != EscalationOpen {
		return nil, apperr.New(apperr.ECONFLICT, "escalation %s is already resolved", e.ID).WithReason("Resolved")
	}
	if in.Action != "" && !slices.Contains(from, before.Status) {
		return nil, apperr.New(apperr.ECONFLICT, "cannot %s a task that is %s", in.Action, before.Status).
			WithReason(ReasonState).WithDetail("status", string(before.Status))
	}
	note := strings.TrimSpace(in.Note)
	at := after.UpdatedAt
	resolved := *e
	resolved.Status, resolved.Resolution, resolved.ResolvedBy, resolved.Action, resolved.ResolvedAt = EscalationResolved, note, in.By, in.Action, &at
	after.Escalation = &resolved
	evs := []Event{{Type: EvEscalationResolved, Payload: map[string]any{
		"escalation_id": e.ID, "note": note, "action": in.Action, "resolved_by": in.By}}}
	switch in.Action {
	case ResolveCancel:
		after.Error = "canceled by a human resolving escalation " + e.ID
		evs = append(evs, Event{Type: EvCanceled, Payload: map[string]any{"reason": after.Error, "previous_status": string(before.Status)}})
	case ResolveRequeue:
		after.Error = ""
		if before.Execute {
			after.Runs = before.Runs + 1
		}
		evs = append(evs, Event{Type: EvAssigned, Payload: map[string]any{
			"from": before.Assignee, "to": before.Assignee, "previous_status": string(before.Status), "requeued": true}})
	}
	return evs, nil
}
