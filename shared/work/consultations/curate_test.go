package consultations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// words repeats each word its count of times: a question whose
// similarity to the one word "kafka" is exactly kafka's count over 10
// when the counts' squares add up to 100.
func words(counts map[string]int) string {
	var b []string
	for w, n := range counts {
		for range n {
			b = append(b, w)
		}
	}
	return strings.Join(b, " ")
}

func included(c consultations.Consultation, what string) bool {
	for _, s := range c.ContextPackage.Included {
		if strings.Contains(s, what) {
			return true
		}
	}
	return false
}

// A past resolution exactly at the 0.3 similarity is in the package;
// the most similar come first, ties in the history's order (newest
// first), and the package says how many there are.
func TestSimilarPastResolutionsFromTheThresholdInOrder(t *testing.T) {
	svc, _, _ := fixture(t)
	clock, _ := withClock(svc)
	ctx := context.Background()
	var past []consultations.Consultation
	for _, q := range []struct{ from, question string }{
		{"frontend", words(map[string]int{"kafka": 3, "zetas": 9, "omega": 3, "sigma": 1})}, // 3/10
		{"frontend", "kafka"},
		{"security", "kafka"},
	} {
		c, err := svc.Request(ctx, team, ask(q.from, q.question))
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, c.Status)
		past = append(past, c)
		clock.Advance(time.Minute)
	}
	assert.False(t, included(past[0], "similar past"), "none yet")
	c, err := svc.Request(ctx, team, ask("backend", "kafka"))
	require.NoError(t, err)
	var got []string
	for _, p := range c.ContextPackage.SimilarPast {
		got = append(got, p.ConsultationID)
	}
	assert.Equal(t, []string{past[2].ID, past[1].ID, past[0].ID}, got)
	assert.InDelta(t, 0.3, c.ContextPackage.SimilarPast[2].Similarity, 1e-9)
	assert.True(t, included(c, "3 similar past resolution(s)"), c.ContextPackage.Included)
}

// A shared memory exactly at the 0.2 similarity is in the package, and
// the package says so; without one it says nothing of memories.
func TestASharedMemoryAtTheThresholdIsIncluded(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	c, err := svc.Request(ctx, team, ask("frontend", "kafka"))
	require.NoError(t, err)
	assert.Empty(t, c.ContextPackage.Memories)
	assert.False(t, included(c, "memory"), c.ContextPackage.Included)
	content := words(map[string]int{"kafka": 2, "zetas": 9, "omega": 3, "sigma": 2, "delta": 1, "theta": 1}) // 2/10
	require.NoError(t, store.PutMemory(ctx, memory.Memory{ID: "mem_kafka", TeamID: team, Author: "backend", Type: "fact", Visibility: memory.Shared, Content: content, CreatedAt: time.Now()}))
	c, err = svc.Request(ctx, team, ask("security", "kafka"))
	require.NoError(t, err)
	require.Len(t, c.ContextPackage.Memories, 1)
	assert.Equal(t, "mem_kafka", c.ContextPackage.Memories[0].MemoryID)
	assert.True(t, included(c, "1 relevant shared memory(ies)"), c.ContextPackage.Included)
}
