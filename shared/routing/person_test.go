package routing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/routing"
)

// The person asking weighs their own ratings more: alice rated luke 5 on
// a similar query, bob rated him 1. Asked by alice, luke's past
// performance leans to her rating; by bob, to his; by a key (no person),
// each counts once.
func TestAPersonsOwnRatingsWeighMoreInPastPerformance(t *testing.T) {
	ix := routing.BuildIndex(demoTeam())
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	q := "review this function for bugs"
	ratings := []routing.Rating{
		{Agent: "luke", Rating: 5, Query: q, At: now.Add(-time.Hour), UserID: "alice"},
		{Agent: "luke", Rating: 1, Query: q, At: now.Add(-time.Hour), UserID: "bob"},
	}
	w := float64(routing.OwnRatingWeight)
	for _, tc := range []struct {
		person string
		want   float64
	}{
		{"", (1.0 + 0.0) / 2},
		{"alice", (w*1.0 + 0.0) / (w + 1)},
		{"bob", (1.0 + w*0.0) / (w + 1)},
		{"carol", (1.0 + 0.0) / 2},
	} {
		got := scoreOf(t, ix.Score(q, routing.Signals{Now: now, Ratings: ratings, UserID: tc.person}), "luke")
		assert.InDelta(t, tc.want, got.PastPerformance, 1e-3, "asked by %q", tc.person)
	}
}
