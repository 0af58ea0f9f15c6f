package ids_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/ids"
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

func TestValidAcceptsOnlyWhatNewMakes(t *testing.T) {
	assert.True(t, ids.Valid("conv", ids.New("conv")))
	assert.True(t, ids.Valid("msg", ids.Floor("msg", time.Now())))
	for _, bad := range []string{"", "conv_", "conv_nope", "msg_" + strings.Repeat("0", 26), "conv" + strings.TrimPrefix(ids.New("conv"), "conv_"),
		ids.New("conv") + "0", strings.ToUpper(ids.New("conv")), strings.Replace(ids.New("conv"), "_", "_i", 1)[:31], "conv_%00" + strings.Repeat("0", 23)} {
		assert.False(t, ids.Valid("conv", bad), bad)
	}
	assert.False(t, ids.Valid("msg", ids.New("conv")), "another kind's id")
}
