package ids_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/ids"
)

// Ids made one after another sort in the order they were made, even within
// one millisecond (the messages of a chat turn rely on it).
func TestIdsIncreaseWithinAProcess(t *testing.T) {
	prev := ids.New("msg")
	for range 10000 {
		id := ids.New("msg")
		require.Greater(t, id, prev)
		prev = id
	}
}

func TestIdsAreUniqueUnderConcurrency(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				id := ids.New("x")
				mu.Lock()
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, seen, 16000)
}

func TestFloorBoundsIdsByTime(t *testing.T) {
	before := ids.Floor("msg", time.Now().Add(-time.Second))
	id := ids.New("msg")
	after := ids.Floor("msg", time.Now().Add(time.Second))
	assert.Less(t, before, id)
	assert.Greater(t, after, id)
	assert.True(t, strings.HasPrefix(id, "msg_"))
}
