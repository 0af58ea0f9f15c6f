package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// report is a new queued report of typ, written by to for from (not
// stored).
func (f *fixture) report(typ, to, from string) reports.Report {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return reports.Report{TeamID: f.team, ID: ids.New("rep"), Type: typ, Title: "contract " + typ, To: to, From: from,
		RequestedBy: tasks.Creator{Type: "agent", ID: from}, Parameters: map[string]any{"topic": "contracts"}, Format: "markdown",
		MaxSections: 5, Complexity: "low", ModelTier: "small", TaskID: ids.New("task"), Status: reports.Queued,
		Sections: []reports.Section{}, MissingSections: []string{}, Version: 1, CreatedAt: now, UpdatedAt: now}
}

// reportsListed: a report is created once (an id taken, or a request's
// Idempotency-Key used, refuses the create and writes nothing) and reads
// back whole; the team's are listed newest first, a page at a time, by
// type, author, requester and status; another team reads none.
func reportsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	a, b, c := f.report("status", "ann", "bob"), f.report("security_audit", "bob", "ann"), f.report("status", "bob", "cat")
	c.Status = reports.Completed
	for _, r := range []reports.Report{a, b, c} {
		require.NoError(t, f.Reports.CreateReport(ctx, r))
	}
	again := a
	again.Title = "written twice"
	refused(t, f.Reports.CreateReport(ctx, again), apperr.ECONFLICT, "")
	got, err := f.Reports.GetReport(ctx, f.team, a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.Title, got.Title, "the report as first written")
	assert.Equal(t, f.team, got.TeamID)
	assert.Equal(t, a.RequestedBy, got.RequestedBy)
	assert.Equal(t, map[string]any{"topic": "contracts"}, got.Parameters)
	assert.Equal(t, []string{}, got.MissingSections)
	assert.True(t, got.CreatedAt.Equal(a.CreatedAt))
	for _, miss := range []struct{ team, id string }{{f.team, ids.New("rep")}, {f.otherTeam(), a.ID}} {
		_, err := f.Reports.GetReport(ctx, miss.team, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	key := ids.New("key")
	keyed := idempotency.Scope(idempotency.WithKey(ctx, key), reports.RefKind)
	first, second := f.report("status", "cat", "ann"), f.report("status", "cat", "ann")
	require.NoError(t, f.Reports.CreateReport(keyed, first))
	var r idempotency.Replayed
	require.True(t, errors.As(f.Reports.CreateReport(keyed, second), &r), "a create under a used key is replayed")
	assert.Equal(t, idempotency.Replayed{Kind: reports.RefKind, ID: first.ID}, r)
	_, err = f.Reports.GetReport(ctx, f.team, second.ID)
	refused(t, err, apperr.ENOTFOUND, "")

	list := func(filter reports.Filter) func(paging.Page) ([]reports.Report, string, error) {
		return func(p paging.Page) ([]reports.Report, string, error) {
			return f.Reports.ListReports(ctx, f.team, filter, p)
		}
	}
	rkey := func(r reports.Report) string { return r.ID }
	for _, tc := range []struct {
		name   string
		filter reports.Filter
		want   []string
	}{
		{"all", reports.Filter{}, []string{first.ID, c.ID, b.ID, a.ID}},
		{"a type", reports.Filter{Type: "status"}, []string{first.ID, c.ID, a.ID}},
		{"an author", reports.Filter{To: "bob"}, []string{c.ID, b.ID}},
		{"a requester", reports.Filter{From: "ann"}, []string{first.ID, b.ID}},
		{"a status, with a type", reports.Filter{Status: reports.Queued, Type: "status"}, []string{first.ID, a.ID}},
	} {
		assert.Equal(t, tc.want, pages(t, 1, list(tc.filter), rkey), "%s, newest first, a page at a time", tc.name)
	}
	none, _, err := f.Reports.ListReports(ctx, f.otherTeam(), reports.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, none)
	boundToken(t, list(reports.Filter{}), func(p paging.Page) ([]reports.Report, string, error) {
		return f.Reports.ListReports(ctx, f.otherTeam(), reports.Filter{}, p)
	})
}

// reportSaved: a save is conditioned on the version read (ErrChanged,
// also for a report that does not exist); with the memory a completed
// report becomes, the memory is stored and the cached contexts of the
// agents who may see it end, in the same write; a save whose memory id is
// taken is refused and writes nothing.
func reportSaved(t *testing.T, f *fixture) {
	ctx := context.Background()
	r := f.report("status", "ann", "bob")
	require.NoError(t, f.Reports.CreateReport(ctx, r))
	running := r
	running.Status, running.Version = reports.Running, 2
	require.NoError(t, f.Reports.SaveReport(ctx, running, nil))
	stale := r
	stale.Version, stale.Status = 2, reports.Canceled
	assert.ErrorIs(t, f.Reports.SaveReport(ctx, stale, nil), reports.ErrChanged, "a write from a stale read")
	missing := f.report("status", "ann", "bob")
	missing.Version = 2
	assert.ErrorIs(t, f.Reports.SaveReport(ctx, missing, nil), reports.ErrChanged, "a report never created")

	f.cacheContext(t, "ann")
	f.cacheContext(t, "cat")
	epoch, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	taken := f.memory("ann", "taken")
	require.NoError(t, f.Memories.PutMemory(ctx, taken))
	done := running
	done.Status, done.Version, done.MemoryID = reports.Completed, 3, taken.ID
	refused(t, f.Reports.SaveReport(ctx, done, &taken), apperr.ECONFLICT, "TransactionConflict")
	got, err := f.Reports.GetReport(ctx, f.team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, reports.Running, got.Status, "a refused save writes nothing")
	_, hit, err := f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.True(t, hit, "not even the end of a context")

	mem := f.memory("ann", "what the report found")
	mem.Type = "procedural"
	done.MemoryID = mem.ID
	require.NoError(t, f.Reports.SaveReport(ctx, done, &mem))
	got, err = f.Reports.GetReport(ctx, f.team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, reports.Completed, got.Status)
	assert.Equal(t, 3, got.Version)
	assert.Contains(t, f.memoryIDs(t), mem.ID)
	_, hit, err = f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.False(t, hit, "the author's context ended with the save")
	_, hit, err = f.Memories.GetContext(ctx, f.team, "cat")
	require.NoError(t, err)
	assert.True(t, hit, "an agent the memory does not name keeps its context")
	now, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	assert.Greater(t, now, epoch, "the epoch moved on, so a context being built now is not cached")
}
