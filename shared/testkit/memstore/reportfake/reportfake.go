// Package reportfake is the in-memory fake of reports.Store, as
// shared/store/reportstore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package reportfake

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

var _ reports.Store = (*Reports)(nil)

// Reports is reports.Store on a memtable.Table: the report documents, and
// the memory a completed report becomes (memtable.KindMemory) with the
// cached contexts it ends. Safe for concurrent use.
type Reports struct{ tb *memtable.Table }

// New returns the reports of tb (nil: a table of their own).
func New(tb *memtable.Table) *Reports {
	if tb == nil {
		tb = memtable.New()
	}
	return &Reports{tb: tb}
}

// docs are the report documents. Call with the table locked.
func (s *Reports) docs() map[memtable.Key][]byte {
	return *memtable.Part(s.tb, "reports", func() *map[memtable.Key][]byte { m := map[memtable.Key][]byte{}; return &m })
}

// reportOf reads a stored report document; the team comes from the key,
// as from the adapter's.
func reportOf(teamID string, b []byte) reports.Report {
	r := memtable.ReadDoc[reports.Report](b)
	r.TeamID = teamID
	if r.Sections == nil {
		r.Sections = []reports.Section{}
	}
	if r.MissingSections == nil {
		r.MissingSections = []string{}
	}
	return r
}

// CreateReport implements reports.Store.
func (s *Reports) CreateReport(ctx context.Context, r reports.Report) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if err := memtable.RefTaken(ctx, s.tb, r.TeamID, reports.RefKind); err != nil {
		return err
	}
	k := memtable.Key{Team: r.TeamID, ID: r.ID}
	if _, ok := s.docs()[k]; ok {
		return apperr.New(apperr.ECONFLICT, "report %s exists", r.ID)
	}
	s.docs()[k] = memtable.Doc(r)
	memtable.RefSet(ctx, s.tb, r.TeamID, reports.RefKind, r.ID)
	return nil
}

// GetReport implements reports.Store.
func (s *Reports) GetReport(_ context.Context, teamID, id string) (reports.Report, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := s.docs()[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return reports.Report{}, apperr.NotFound("report", id)
	}
	return reportOf(teamID, b), nil
}

// ListReports implements reports.Store, newest first, the filters applied
// after the page's rows are read (as the adapter's filter expressions).
func (s *Reports) ListReports(_ context.Context, teamID string, f reports.Filter, p paging.Page) ([]reports.Report, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[reports.Report]
	for k, b := range s.docs() {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[reports.Report]{SK: k.ID, V: reportOf(teamID, b)})
		}
	}
	keep := func(r reports.Report) bool {
		return (f.Type == "" || r.Type == f.Type) && (f.To == "" || r.To == f.To) &&
			(f.From == "" || r.From == f.From) && (f.Status == "" || r.Status == f.Status) &&
			(f.UserID == "" || r.UserID == f.UserID)
	}
	return memtable.Query(rows, true, "reports:"+teamID, p, keep)
}

// SaveReport implements reports.Store: the version condition (ErrChanged),
// then the memory's (an id taken is ECONFLICT, reason
// TransactionConflict, as the adapter reports that cancellation), then
// the report, the memory and the dropped contexts together.
func (s *Reports) SaveReport(_ context.Context, r reports.Report, mem *memory.Memory) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: r.TeamID, ID: r.ID}
	b, ok := s.docs()[k]
	if !ok || memtable.ReadDoc[reports.Report](b).Version != r.Version-1 {
		return reports.ErrChanged
	}
	if mem != nil {
		mk := memtable.Key{Team: r.TeamID, ID: mem.ID}
		if _, taken := memtable.Docs(s.tb, memtable.KindMemory)[mk]; taken {
			// The adapter's memory create fails in the report's
			// transaction: a conflict to try again, not an internal error.
			return apperr.New(apperr.ECONFLICT, "the report's change conflicted with a concurrent one; try again").WithReason("TransactionConflict")
		}
		m := *mem
		m.TeamID = r.TeamID
		memtable.Docs(s.tb, memtable.KindMemory)[mk] = memtable.Doc(m)
		memtable.DropContexts(s.tb, r.TeamID, append([]string{m.Author}, m.Agents...))
	}
	s.docs()[k] = memtable.Doc(r)
	return nil
}
