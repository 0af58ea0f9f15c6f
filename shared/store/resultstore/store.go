// Package resultstore posts the results of finished work (tasks, reports,
// session runs) into their conversations on the single table. Posting reads
// the work it reports on, so the store composes the task, report and
// session stores; a function that posts results serves those domains too.
package resultstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Store implements results.Store: its own PostResult on the core, the
// reads of the work by the stores of its domains.
type Store struct {
	*dynamo.Store
	tasks    *taskstore.Store
	reports  *reportstore.Store
	sessions *sessionstore.Store
}

// New returns the store on table.
func New(db dynamo.API, table string) *Store {
	return &Store{Store: dynamo.New(db, table), tasks: taskstore.New(db, table), reports: reportstore.New(db, table), sessions: sessionstore.New(db, table)}
}

// GetTask implements results.Store (taskstore.Store.GetTask).
func (s *Store) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	return s.tasks.GetTask(ctx, teamID, id)
}

// GetReport implements results.Store (reportstore.Store.GetReport).
func (s *Store) GetReport(ctx context.Context, teamID, id string) (reports.Report, error) {
	return s.reports.GetReport(ctx, teamID, id)
}

// GetSession implements results.Store (sessionstore.Store.GetSession).
func (s *Store) GetSession(ctx context.Context, teamID, id string) (sessions.Session, error) {
	return s.sessions.GetSession(ctx, teamID, id)
}
