package routing_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
)

func TestLoadsAreSortedWithTheLastOfASlugKept(t *testing.T) {
	l := routing.NewLoads([]routing.AgentLoad{
		{Slug: "wren", Load: routing.Load{ActiveTasks: 1}},
		{Slug: "kyra", Load: routing.Load{ActiveTasks: 2}},
		{Slug: "wren", Load: routing.Load{ActiveTasks: 3}},
		{Slug: "luke", Load: routing.Load{ActiveConversations: 4}},
	})
	var slugs []string
	for slug := range l.All() {
		slugs = append(slugs, slug)
	}
	assert.Equal(t, []string{"kyra", "luke", "wren"}, slugs)
	assert.Equal(t, 3, l.Len())
	assert.Equal(t, 3, l.Of("wren").ActiveTasks, "the last of a slug given twice")
	assert.Equal(t, 4, l.Of("luke").ActiveConversations)
	assert.Equal(t, routing.Load{}, l.Of("nobody"), "an agent without a load is idle")
	assert.Equal(t, routing.Load{}, routing.Loads{}.Of("kyra"))
}

// On the wire Loads is the object it was as a map, byte for byte, and
// reads back the same.
func TestLoadsTravelAsTheObjectTheyWere(t *testing.T) {
	m := map[string]routing.Load{"wren": {ActiveTasks: 1, LatencyMS: 12.5}, "kyra": {ActiveConversations: 2}, "a-1": {}}
	want, err := json.Marshal(m)
	require.NoError(t, err)
	got, err := json.Marshal(routing.LoadsOf(m))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	assert.Equal(t, string(want), string(got), "the same bytes")
	empty, err := json.Marshal(routing.Loads{})
	require.NoError(t, err)
	assert.Equal(t, "{}", string(empty))

	var back routing.Loads
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, routing.LoadsOf(m), back)
	require.NoError(t, json.Unmarshal([]byte("null"), &back))
	assert.Zero(t, back.Len())
	assert.Error(t, json.Unmarshal([]byte(`[1]`), &back))
}
