// Package workfake is the in-memory fake of conversations.WorkLister (the
// work a conversation started), as conversationstore's ListWork is the
// DynamoDB one (on the conversation's gsi4 partition); both are held to
// the store contract (shared/testkit/storetest).
package workfake

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/consultationfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/planfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/reportfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/sessionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/taskfake"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ conversations.WorkLister = (*Work)(nil)

// Work is conversations.WorkLister on a memtable.Table: it reads the
// tasks, sessions, plans, reports and consultations through their fakes,
// as the adapter reads their items on the conversation's index. Safe for
// concurrent use.
type Work struct {
	tasks         *taskfake.Tasks
	sessions      *sessionfake.Sessions
	plans         *planfake.Plans
	reports       *reportfake.Reports
	consultations *consultationfake.Consultations
}

// New returns the work listing of tb (nil: a table of its own).
func New(tb *memtable.Table) *Work {
	if tb == nil {
		tb = memtable.New()
	}
	return &Work{tasks: taskfake.New(tb), sessions: sessionfake.New(tb), plans: planfake.New(tb), reports: reportfake.New(tb),
		consultations: consultationfake.New(tb)}
}

// row is an entry of the index: the entry, and whether it is a report's
// own task (in the index, filtered out of the listing).
type row struct {
	entry      conversations.WorkEntry
	reportTask bool
}

// ListWork implements conversations.WorkLister as the adapter's query:
// the conversation's work by creation time then id, newest first, a
// report's own task filtered out after the limit and the page refilled
// (memtable.QueryFill). Each store is read whole, one at a time (each
// under the table's lock): the adapter's index is eventually consistent
// too.
func (w *Work) ListWork(ctx context.Context, teamID, convID string, p paging.Page) ([]conversations.WorkEntry, string, error) {
	var rows []memtable.Row[row]
	add := func(r row) {
		r.entry.Label = clip.Clip(r.entry.Label, conversations.MaxWorkLabel)
		rows = append(rows, memtable.Row[row]{SK: memtable.WorkKey(r.entry.CreatedAt, r.entry.ID), V: r})
	}
	ts, err := all(func(pg paging.Page) ([]tasks.Task, string, error) {
		return w.tasks.ListTasks(ctx, teamID, tasks.Filter{ConversationID: convID}, pg)
	})
	if err != nil {
		return nil, "", err
	}
	for _, t := range ts {
		add(row{entry: conversations.WorkEntry{Type: conversations.WorkTask, ID: t.ID, Status: string(t.Status), Agent: t.Assignee,
			Label: t.Title, CreatedAt: t.CreatedAt}, reportTask: t.Report != nil || t.ConsultationID != ""})
	}
	ss, err := all(func(pg paging.Page) ([]sessions.Session, string, error) {
		return w.sessions.ListSessions(ctx, teamID, sessions.Filter{}, pg)
	})
	if err != nil {
		return nil, "", err
	}
	for _, s := range ss {
		if s.ConversationID == convID {
			add(row{entry: conversations.WorkEntry{Type: conversations.WorkSession, ID: s.ID, Status: string(s.Status), Agent: s.Lead,
				Label: s.Goal, CreatedAt: s.CreatedAt}})
		}
	}
	ps, err := all(func(pg paging.Page) ([]plans.Plan, string, error) { return w.plans.ListPlans(ctx, teamID, "", pg) })
	if err != nil {
		return nil, "", err
	}
	for _, pl := range ps {
		if pl.ConversationID == convID {
			add(row{entry: conversations.WorkEntry{Type: conversations.WorkPlan, ID: pl.ID, Status: string(pl.Status), Agent: pl.Lead,
				Label: pl.Message, CreatedAt: pl.CreatedAt}})
		}
	}
	rs, err := all(func(pg paging.Page) ([]reports.Report, string, error) {
		return w.reports.ListReports(ctx, teamID, reports.Filter{}, pg)
	})
	if err != nil {
		return nil, "", err
	}
	for _, r := range rs {
		if r.ConversationID == convID {
			add(row{entry: conversations.WorkEntry{Type: conversations.WorkReport, ID: r.ID, Status: string(r.Status), Agent: r.To,
				Label: r.Title, CreatedAt: r.CreatedAt}})
		}
	}
	cs, err := all(func(pg paging.Page) ([]consultations.Consultation, string, error) {
		return w.consultations.ListConsultations(ctx, teamID, consultations.Filter{}, pg)
	})
	if err != nil {
		return nil, "", err
	}
	for _, c := range cs {
		if c.ConversationID == convID {
			add(row{entry: conversations.WorkEntry{Type: conversations.WorkConsultation, ID: c.ID, Status: string(c.Status),
				Agent: c.ConsultedAgent, Label: c.Question, CreatedAt: c.CreatedAt}})
		}
	}
	list, next, err := memtable.QueryFill(rows, true, "convwork:"+teamID+":"+convID, p, func(r row) bool { return !r.reportTask })
	if err != nil {
		return nil, "", err
	}
	out := make([]conversations.WorkEntry, len(list))
	for i, r := range list {
		out[i] = r.entry
	}
	return out, next, nil
}

// all reads every page of a listing.
func all[T any](fetch func(paging.Page) ([]T, string, error)) ([]T, error) {
	var out []T
	p := paging.Page{Limit: paging.MaxLimit}
	for {
		list, next, err := fetch(p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" {
			return out, nil
		}
		p.Token = next
	}
}
