// Package expertgatefake is the in-memory fake of expertgate.Source (the
// team's active agents, their loads, the ratings of their replies) and
// expertgate.ClassifierStore (the teams' routing classifiers), as
// shared/store/expertgatestore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package expertgatefake

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ expertgate.Source = (*Gate)(nil)

// Gate is expertgate.Source on a memtable.Table: the agents (agentfake)
// and their counters, and the ratings a conversation's rating writes
// (memtable.KindRating). Safe for concurrent use.
type Gate struct {
	*agentfake.Agents
	tb *memtable.Table
}

// New returns the expert gate's reads of tb (nil: a table of their own).
func New(tb *memtable.Table) *Gate {
	if tb == nil {
		tb = memtable.New()
	}
	return &Gate{Agents: agentfake.New(tb), tb: tb}
}

// AgentLoads implements expertgate.Source and discovery.Directory: every
// agent's counters that has any, negative counters read as zero.
func (s *Gate) AgentLoads(_ context.Context, teamID string) (routing.Loads, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var out []routing.AgentLoad
	for slug, l := range agentfake.Loads(s.tb, teamID) {
		out = append(out, routing.AgentLoad{Slug: slug, Load: routing.Load{ActiveTasks: max(0, l.ActiveTasks), ActiveConversations: max(0, l.ActiveConversations), LatencyMS: l.LatencyMS}})
	}
	return routing.NewLoads(out), nil
}

// RecentRatings implements expertgate.Source: ratings of replies made
// since (the key range starts at the floor id of since, as reply ids sort
// by time) and rated since, newest reply first, at most limit. Like the
// adapter's filter expression, "rated since" compares RFC 3339 strings
// with nanoseconds, which is not chronological within one second when the
// fractions have different lengths (a whole second "…:05Z" sorts after
// "…:05.5Z"); it is mirrored, not corrected.
func (s *Gate) RecentRatings(_ context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	from := ids.Floor("msg", since)
	bound := since.UTC().Format(time.RFC3339Nano)
	var rows []memtable.Row[routing.Rating]
	for k, b := range memtable.Docs(s.tb, memtable.KindRating) {
		if k.Team == teamID && k.ID >= from {
			rows = append(rows, memtable.Row[routing.Rating]{SK: k.ID, V: memtable.ReadDoc[routing.Rating](b)})
		}
	}
	list, _, err := memtable.Query(rows, true, "ratings", memtable.PageAll, func(r routing.Rating) bool {
		return r.At.UTC().Format(time.RFC3339Nano) >= bound
	})
	if err != nil {
		return nil, err
	}
	var out []routing.Rating
	for _, r := range list {
		if len(out) == limit {
			break
		}
		out = append(out, r)
	}
	return out, nil
}
