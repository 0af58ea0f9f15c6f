package memstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

var _ reports.Store = (*Store)(nil)

// reportOf reads a stored report document; the team comes from the key,
// as from the adapter's.
func (s *Store) reportOf(teamID string, b []byte) reports.Report {
	r := readDoc[reports.Report](b)
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
func (s *Store) CreateReport(ctx context.Context, r reports.Report) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refTaken(ctx, r.TeamID, reports.RefKind); err != nil {
		return err
	}
	k := key{r.TeamID, r.ID}
	if _, ok := s.reports[k]; ok {
		return apperr.New(apperr.ECONFLICT, "report %s exists", r.ID)
	}
	s.reports[k] = doc(r)
	s.refSet(ctx, r.TeamID, reports.RefKind, r.ID)
	return nil
}

// GetReport implements reports.Store.
func (s *Store) GetReport(_ context.Context, teamID, id string) (reports.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.reports[key{teamID, id}]
	if !ok {
		return reports.Report{}, apperr.NotFound("report", id)
	}
	return s.reportOf(teamID, b), nil
}

// ListReports implements reports.Store, newest first, the filters applied
// after the page's rows are read (as the adapter's filter expressions).
func (s *Store) ListReports(_ context.Context, teamID string, f reports.Filter, p paging.Page) ([]reports.Report, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[reports.Report]
	for k, b := range s.reports {
		if k.team == teamID {
			rows = append(rows, row[reports.Report]{sk: k.id, v: s.reportOf(teamID, b)})
		}
	}
	keep := func(r reports.Report) bool {
		return (f.Type == "" || r.Type == f.Type) && (f.To == "" || r.To == f.To) &&
			(f.From == "" || r.From == f.From) && (f.Status == "" || r.Status == f.Status)
	}
	return query(rows, true, "reports:"+teamID, p, keep)
}

// SaveReport implements reports.Store: the version condition, then the
// report, the memory and the dropped contexts together.
func (s *Store) SaveReport(_ context.Context, r reports.Report, mem *memory.Memory) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{r.TeamID, r.ID}
	b, ok := s.reports[k]
	if !ok || readDoc[reports.Report](b).Version != r.Version-1 {
		return reports.ErrChanged
	}
	if mem != nil {
		mk := key{r.TeamID, mem.ID}
		if _, taken := s.memories[mk]; taken {
			return internal("SaveReport: memory " + mem.ID + " exists")
		}
		m := *mem
		m.TeamID = r.TeamID
		s.memories[mk] = doc(m)
		s.epochs[r.TeamID]++
		for _, a := range append([]string{m.Author}, m.Agents...) {
			delete(s.contexts, key{r.TeamID, a})
		}
	}
	s.reports[k] = doc(r)
	return nil
}
