package reports

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// syncAttempts bounds re-reads when the report changed between our read
// and our write (another delivery of an event of the same task).
const syncAttempts = 5

// Sync brings a report up to date with its task: its status, author,
// tokens and cost while the task runs, and when the task ends its final
// state. A completed task's answer is parsed into sections and checked
// against the template: the report is completed and stored, in the same
// transaction, as a procedural memory of its author shared with the
// requesting agent; or it fails with MissingSections (InvalidSections)
// naming them. Sync reads the task rather than trusting the event that
// triggered it, so events arriving late, twice or out of order change
// nothing; an ended report never changes again. The report-finalizer
// calls it on every status change of the report's task, and reads of a
// report that has not ended call it too: the event is published after the
// task's change commits and a failed publish is only logged, so a report
// whose event was lost still catches up when it is read.
func (s *Service) Sync(ctx context.Context, teamID, reportID string) (Report, error) {
	for range syncAttempts {
		r, err := s.Store.GetReport(ctx, teamID, reportID)
		if err != nil || r.Status.Terminal() {
			return r, err
		}
		t, err := s.Tasks.Store.GetTask(ctx, teamID, r.TaskID)
		if err != nil {
			return Report{}, err
		}
		if t.Status == tasks.Completed {
			// The timeline says whether the author revised its answer.
			if t.Events, err = s.Tasks.Store.ListTaskEvents(ctx, teamID, t.ID); err != nil {
				return Report{}, err
			}
		}
		next, mem := s.reconcile(r, t)
		if !changed(r, next) {
			return r, nil
		}
		err = s.Store.SaveReport(ctx, next, mem)
		if errors.Is(err, ErrChanged) {
			continue
		}
		if err != nil {
			return Report{}, err
		}
		if next.Status.Terminal() {
			s.publish(ctx, next)
		}
		return next, nil
	}
	return Report{}, fmt.Errorf("report %s kept changing while it was synced", reportID)
}

func changed(a, b Report) bool {
	return a.Status != b.Status || a.To != b.To || a.TokensUsed != b.TokensUsed || a.CostUSD != b.CostUSD
}

// reconcile is the report as its task says it now is, and the memory a
// report completing becomes.
func (s *Service) reconcile(r Report, t tasks.Task) (Report, *memory.Memory) {
	now := s.Now.UTC()
	next := r
	next.Version, next.UpdatedAt = r.Version+1, now
	next.To, next.TokensUsed, next.CostUSD = t.Assignee, t.TokensUsed, t.CostUSD
	switch t.Status {
	case tasks.Queued, tasks.Blocked:
		next.Status = Queued
	case tasks.Running:
		next.Status = Running
	case tasks.Failed, tasks.TimedOut, tasks.Canceled:
		next.Status = map[tasks.Status]Status{tasks.Failed: Failed, tasks.TimedOut: TimedOut, tasks.Canceled: Canceled}[t.Status]
		next.Reason, next.Error = ReasonTaskEnded, t.Error
	case tasks.Completed:
		next = s.judge(next, t)
	}
	if !next.Status.Terminal() {
		return next, nil
	}
	next.CompletedAt = &now
	if next.Status != Completed {
		return next, nil
	}
	m := s.memoryOf(next)
	next.MemoryID = m.ID
	return next, &m
}

// judge checks the completed task's answer against the template.
func (s *Service) judge(r Report, t tasks.Task) Report {
	check := workflow.ReportCheck{ReportID: r.ID, Type: r.Type, Format: r.Format, MaxSections: r.MaxSections}
	o := Check(check, t.Result)
	r.Sections, r.MissingSections, r.InvalidSections, r.DroppedSections = o.Sections, o.Missing, o.Invalid, o.Dropped
	if r.Sections == nil {
		r.Sections = []Section{}
	}
	if r.MissingSections == nil {
		r.MissingSections = []string{}
	}
	r.Revisions = revisions(t.Events)
	switch {
	case len(o.Missing) > 0:
		r.Status, r.Reason = Failed, ReasonMissingSections
		r.Error = "required sections still missing after the revision: " + strings.Join(o.Missing, ", ")
		if r.Revisions == 0 {
			r.Error = "required sections missing: " + strings.Join(o.Missing, ", ")
		}
	case len(o.Invalid) > 0:
		names := make([]string, len(o.Invalid))
		for i, e := range o.Invalid {
			names[i] = e.Message
		}
		r.Status, r.Reason, r.Error = Failed, ReasonInvalidSections, "sections not as the template's schema says: "+strings.Join(names, "; ")
	default:
		r.Status = Completed
	}
	return r
}

// revisions counts the revisions asked in the attempt that produced the
// answer: a retried attempt starts over (a resumed one does not).
func revisions(events []tasks.Event) int {
	n := 0
	for _, e := range events {
		switch {
		case e.Type == tasks.EvProgress && e.Payload["message"] == "attempt started" && e.Payload["resumed"] != true:
			n = 0
		case e.Type == tasks.EvRevision:
			n++
		}
	}
	return n
}

// memoryOf is the procedural memory a completed report becomes: private
// to its author and the agent that asked for it (a user's report is its
// author's alone).
func (s *Service) memoryOf(r Report) memory.Memory {
	var b strings.Builder
	fmt.Fprintf(&b, "Report %s (%s) %q by %s", r.ID, r.Type, r.Title, r.To)
	if r.From != "" {
		fmt.Fprintf(&b, " for %s", r.From)
	}
	b.WriteString(":\n")
	b.WriteString(Render(Markdown, r.Sections))
	content := clip.Clip(strings.TrimSpace(b.String()), memory.MaxContent)
	m := memory.Memory{TeamID: r.TeamID, Author: r.To, Type: "procedural", Visibility: memory.Private,
		Content: content, Source: "report", CreatedAt: s.Now.UTC()}
	m.ID = ids.New("mem")
	if r.From != "" && r.From != r.To {
		m.Agents = []string{r.From}
	}
	return m
}

func (s *Service) publish(ctx context.Context, r Report) {
	if s.Bus == nil {
		return
	}
	ev := Finished{TeamID: r.TeamID, ReportID: r.ID, TaskID: r.TaskID, Type: r.Type, Author: r.To, RequestedBy: r.From,
		Status: r.Status, Reason: r.Reason, MissingSections: r.MissingSections, MemoryID: r.MemoryID, TokensUsed: r.TokensUsed, CostUSD: r.CostUSD,
		ConversationID: r.ConversationID}
	if ev.MissingSections == nil {
		ev.MissingSections = []string{}
	}
	// The report is already written; a failed publish is logged, not
	// undone (the report record is the truth).
	if err := s.Bus.Publish(ctx, DetailType, ev); err != nil {
		s.log().ErrorContext(ctx, "publish ReportFinished", "report_id", r.ID, "error", err.Error())
	}
}

// Concerns reports whether a task's status change may change a report: it
// is a report's task, and not its creation (the report is stored as queued
// just after its task; the creation's event may even arrive first).
func Concerns(ev tasks.TaskStatusChanged) bool {
	return ev.ReportID != "" && !(ev.Status == tasks.Queued && ev.PreviousStatus == "")
}
