// Package suggestionfake is the in-memory fake of suggestions.Store (the
// agents' example suggestions), as shared/store/suggestionstore is the
// DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package suggestionfake

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ suggestions.Store = (*Suggestions)(nil)

// Suggestions is suggestions.Store on a memtable.Table: the suggestions
// by team, agent and id, each with whether it was dismissed, on the
// table's clock (memtable.Table.Now). Safe for concurrent use.
type Suggestions struct{ tb *memtable.Table }

// New returns the suggestions of tb (nil: a table of their own).
func New(tb *memtable.Table) *Suggestions {
	if tb == nil {
		tb = memtable.New()
	}
	return &Suggestions{tb: tb}
}

// key names a suggestion: its team, its agent and its id.
type key struct{ team, agent, id string }

// row is a stored suggestion (without its team, which the key holds, its
// times in UTC as the adapter stores them) and whether it was dismissed.
type row struct {
	s         suggestions.Suggestion
	dismissed bool
}

// rows are the stored suggestions, expired ones too until an add of
// their agent removes them (as DynamoDB's TTL is late). Call with the
// table locked.
func (f *Suggestions) rows() map[key]row {
	return *memtable.Part(f.tb, "suggestions", func() *map[key]row { m := map[key]row{}; return &m })
}

// live: the suggestion has not expired at now, to the second, as the
// adapter's TTL attribute.
func live(s suggestions.Suggestion, now time.Time) bool { return s.ExpiresAt.Unix() > now.Unix() }

// withTeam is a stored suggestion as a read returns it: with its team.
func withTeam(k key, r row) suggestions.Suggestion {
	s := r.s
	s.TeamID = k.team
	return s
}

// AddSuggestion implements suggestions.Store, as the adapter's one
// transaction: (false, nil) when the agent has a live suggestion of the
// id, dismissed or not; otherwise it is stored (over an expired one of
// the id), its agent's expired ones are removed, and so are its oldest
// live ones (by created_at, then id; dismissed ones too) that would pass
// limit. EINVALID for a limit below 1.
func (f *Suggestions) AddSuggestion(_ context.Context, sg suggestions.Suggestion, limit int) (bool, error) {
	if limit < 1 {
		return false, apperr.Invalid("max", "at most %d suggestions kept: at least one must be", limit)
	}
	f.tb.Lock()
	defer f.tb.Unlock()
	now := memtable.Time(f.tb)
	rows := f.rows()
	k := key{sg.TeamID, sg.Agent, sg.ID}
	if r, ok := rows[k]; ok && live(r.s, now) {
		return false, nil
	}
	var kept []key
	for rk, r := range rows {
		switch {
		case rk.team != sg.TeamID || rk.agent != sg.Agent || rk == k:
		case !live(r.s, now):
			delete(rows, rk)
		default:
			kept = append(kept, rk)
		}
	}
	slices.SortFunc(kept, func(a, b key) int {
		return cmp.Or(rows[a].s.CreatedAt.Compare(rows[b].s.CreatedAt), cmp.Compare(a.id, b.id))
	})
	for _, rk := range kept[:max(len(kept)-limit+1, 0)] {
		delete(rows, rk)
	}
	s := sg
	s.TeamID, s.CreatedAt, s.ExpiresAt = "", sg.CreatedAt.UTC(), sg.ExpiresAt.UTC()
	rows[k] = row{s: s}
	return true, nil
}

// GetSuggestion implements suggestions.Store (ENOTFOUND for an unknown,
// expired or dismissed one, or another team's).
func (f *Suggestions) GetSuggestion(_ context.Context, teamID, agent, id string) (suggestions.Suggestion, error) {
	f.tb.Lock()
	defer f.tb.Unlock()
	k := key{teamID, agent, id}
	r, ok := f.rows()[k]
	if !ok || r.dismissed || !live(r.s, memtable.Time(f.tb)) {
		return suggestions.Suggestion{}, apperr.NotFound("example suggestion", id)
	}
	return withTeam(k, r), nil
}

// ListSuggestions implements suggestions.Store: the agent's live,
// undismissed suggestions newest first (ids sort by time), filtered after
// the page's limit is counted, as the adapter's query.
func (f *Suggestions) ListSuggestions(_ context.Context, teamID, agent string, p paging.Page) ([]suggestions.Suggestion, string, error) {
	f.tb.Lock()
	defer f.tb.Unlock()
	now := memtable.Time(f.tb)
	var rows []memtable.Row[row]
	for k, r := range f.rows() {
		if k.team == teamID && k.agent == agent {
			r.s.TeamID = teamID
			rows = append(rows, memtable.Row[row]{SK: k.id, V: r})
		}
	}
	list, next, err := memtable.Query(rows, true, "suggestions:"+teamID+"#"+agent, p, func(r row) bool { return !r.dismissed && live(r.s, now) })
	if err != nil {
		return nil, "", err
	}
	out := make([]suggestions.Suggestion, len(list))
	for i, r := range list {
		out[i] = r.s
	}
	return out, next, nil
}

// DeleteSuggestion implements suggestions.Store: a live suggestion is
// removed, dismissed or not (ENOTFOUND otherwise).
func (f *Suggestions) DeleteSuggestion(_ context.Context, teamID, agent, id string) error {
	f.tb.Lock()
	defer f.tb.Unlock()
	k := key{teamID, agent, id}
	r, ok := f.rows()[k]
	if !ok || !live(r.s, memtable.Time(f.tb)) {
		return apperr.NotFound("example suggestion", id)
	}
	delete(f.rows(), k)
	return nil
}

// DismissSuggestion implements suggestions.Store: a live, undismissed
// suggestion is marked dismissed, keeping its place and its id
// (ENOTFOUND otherwise).
func (f *Suggestions) DismissSuggestion(_ context.Context, teamID, agent, id string) error {
	f.tb.Lock()
	defer f.tb.Unlock()
	k := key{teamID, agent, id}
	r, ok := f.rows()[k]
	if !ok || r.dismissed || !live(r.s, memtable.Time(f.tb)) {
		return apperr.NotFound("example suggestion", id)
	}
	r.dismissed = true
	f.rows()[k] = r
	return nil
}
