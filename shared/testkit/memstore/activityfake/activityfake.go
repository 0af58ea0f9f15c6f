// Package activityfake is the in-memory fake of activity.Store (the team's
// activity log), as shared/store/activitystore is the DynamoDB one; both
// are held to the store contract (shared/testkit/storetest).
package activityfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ activity.Store = (*Activity)(nil)

// Activity is activity.Store on a memtable.Table. Safe for concurrent use.
type Activity struct{ tb *memtable.Table }

// New returns the activity log of tb (nil: a table of its own).
func New(tb *memtable.Table) *Activity {
	if tb == nil {
		tb = memtable.New()
	}
	return &Activity{tb: tb}
}

// entries are the log's entries by team and sort key (the entry's time,
// RFC 3339 with nanoseconds in UTC, then its event id, as the adapter's
// key). Call with the table locked.
func (s *Activity) entries() map[memtable.Key]activity.Entry {
	return *memtable.Part(s.tb, "activity", func() *map[memtable.Key]activity.Entry {
		m := map[memtable.Key]activity.Entry{}
		return &m
	})
}

func sortKey(e activity.Entry) string { return e.Time.UTC().Format(time.RFC3339Nano) + "#" + e.EventID }

// Record implements activity.Store: an entry is stored where its key (its
// time and event id) has none, so a redelivered event is stored once.
func (s *Activity) Record(_ context.Context, e activity.Entry) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: e.TeamID, ID: sortKey(e)}
	if _, ok := s.entries()[k]; ok {
		return nil
	}
	e.Time, e.Detail = e.Time.UTC(), slices.Clone(e.Detail)
	s.entries()[k] = e
	return nil
}

// List implements activity.Store, newest first.
func (s *Activity) List(_ context.Context, teamID string, p paging.Page) ([]activity.Entry, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[activity.Entry]
	for k, e := range s.entries() {
		if k.Team == teamID {
			e.Detail = slices.Clone(e.Detail)
			rows = append(rows, memtable.Row[activity.Entry]{SK: k.ID, V: e})
		}
	}
	return memtable.Query(rows, true, "activity:"+teamID, p, nil)
}
