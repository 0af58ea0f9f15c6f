package streams_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// A change's events take the numbers after the stream's last, in order,
// and the last of them is the owner's new counter; anything else is
// refused as mis-numbered.
func TestNumberAndCheckNumbered(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	a, err := streams.New("A", at, map[string]int{"n": 1})
	require.NoError(t, err)
	assert.Equal(t, time.UTC, a.At.Location())
	assert.JSONEq(t, `{"n":1}`, string(a.Detail))
	evs := []streams.Event{a, a, a}
	head := streams.Number(7, evs)
	assert.Equal(t, int64(10), head)
	assert.Equal(t, []int64{8, 9, 10}, []int64{evs[0].Seq, evs[1].Seq, evs[2].Seq})
	assert.NoError(t, streams.CheckNumbered(head, evs))
	assert.NoError(t, streams.CheckNumbered(7, nil), "no events: any head")
	assert.ErrorIs(t, streams.CheckNumbered(head+1, evs), streams.ErrNumbering, "a gap before the head")
	assert.ErrorIs(t, streams.CheckNumbered(head-1, evs), streams.ErrNumbering)
	evs[1].Seq = 8
	assert.ErrorIs(t, streams.CheckNumbered(head, evs), streams.ErrNumbering, "a repeat")
	zero := []streams.Event{a}
	streams.Number(-1, zero)
	assert.ErrorIs(t, streams.CheckNumbered(0, zero), streams.ErrNumbering, "numbers start at 1")
	assert.Equal(t, "session#s", streams.Session("s"))
	assert.Equal(t, "plan#p", streams.Plan("p"))
	assert.Equal(t, "conv#c", streams.Conversation("c"))
}

// A batch keeps its events in order at its time, numbered after the head
// it is given; a detail that does not marshal fails it whole.
func TestBatch(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := streams.Batch{At: at}
	b.Add("A", 1)
	b.Add("B", "two")
	evs, head, err := b.Numbered(4)
	require.NoError(t, err)
	assert.Equal(t, int64(6), head)
	require.Len(t, evs, 2)
	assert.Equal(t, []string{"A", "B"}, []string{evs[0].Type, evs[1].Type})
	assert.Equal(t, []int64{5, 6}, []int64{evs[0].Seq, evs[1].Seq})
	assert.True(t, at.Equal(evs[1].At))

	var empty streams.Batch
	evs, head, err = empty.Numbered(4)
	require.NoError(t, err)
	assert.Empty(t, evs)
	assert.Equal(t, int64(4), head, "no event: the head stays")

	bad := streams.Batch{At: at}
	bad.Add("A", func() {})
	bad.Add("B", 1)
	_, head, err = bad.Numbered(4)
	assert.Error(t, err)
	assert.Equal(t, int64(4), head)
}
