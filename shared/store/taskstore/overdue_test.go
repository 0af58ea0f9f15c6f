package taskstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// A due entry in the index carries the gsi3 keys keys.go lists; one out
// of it carries none, and expires.
func TestDueEntryKeys(t *testing.T) {
	due := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := due.Add(time.Hour)
	in, err := dynamo.Marshal(dueEntry("t1", "task_1", due, true, now))
	require.NoError(t, err)
	var it dueItem
	require.NoError(t, dynamo.Unmarshal(in, &it))
	assert.Equal(t, []string{"TEAM#t1", "TDUE#task_1", "TDUE", "2026-01-02T03:04:05.000Z#t1#task_1"}, []string{it.PK, it.SK, it.GSI3PK, it.GSI3SK})
	assert.NotContains(t, in, "expires_at")

	out, err := dynamo.Marshal(dueEntry("t1", "task_1", due, false, now))
	require.NoError(t, err)
	assert.NotContains(t, out, "gsi3pk", "out of the sparse index")
	assert.NotContains(t, out, "gsi3sk")
	require.NoError(t, dynamo.Unmarshal(out, &it))
	assert.Equal(t, now.Add(dueGone).Unix(), it.ExpiresAt)
}
