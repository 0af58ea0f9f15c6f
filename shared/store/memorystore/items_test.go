package memorystore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

func TestMemoryItemsKeepEveryStoredField(t *testing.T) {
	t.Run("memory and context", func(t *testing.T) {
		mem := dynamotest.Filled[memory.Memory](t)
		mem.TeamID = "" // the key holds it
		assert.Equal(t, mem, dynamotest.RoundTrip(t, ToMemoryItem(mem)).toMemory())
		c := dynamotest.Filled[memory.Context](t)
		c.Cached = false // set by the service on a hit
		for _, l := range [][]memory.Memory{c.Shared, c.UserProfile, c.Private} {
			l[0].TeamID = ""
		}
		c.Private = []memory.Memory{}
		assert.Equal(t, c, dynamotest.RoundTrip(t, toContextItem("t", c)).toContext())
	})
}
