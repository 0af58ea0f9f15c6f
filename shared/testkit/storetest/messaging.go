package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// messageReplay: the reference from a request's Idempotency-Key is
// written with the message; a second message under the key (a request
// sent again after its answer was lost) is Replayed naming the first and
// stores nothing, also when eight race; another team's key is its own.
func messageReplay(t *testing.T, f *fixture) {
	if f.Messages == nil {
		t.Skip("no messaging store under contract")
	}
	ctx := context.Background()
	key := ids.New("key")
	msg := func(team string) messaging.Message {
		return messaging.Message{ID: ids.New("amsg"), TeamID: team, From: "ann", To: "bob", Channel: "direct", Type: "info",
			Content: "hello", Metadata: map[string]any{}, CreatedAt: time.Now().UTC(), IdempotencyKey: key}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		stored   []string
		replayed []string
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := msg(f.team)
			err := f.Messages.PutAgentMessage(ctx, m)
			var r messaging.Replayed
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				stored = append(stored, m.ID)
			case errors.As(err, &r):
				replayed = append(replayed, r.ID)
			default:
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, stored, 1, "one message under the key")
	assert.Len(t, replayed, 7)
	for _, id := range replayed {
		assert.Equal(t, stored[0], id, "each replay names the stored message")
	}
	_, err := f.Messages.GetAgentMessage(ctx, f.team, stored[0])
	require.NoError(t, err)

	other := msg("team_other_" + ids.New("t"))
	assert.NoError(t, f.Messages.PutAgentMessage(ctx, other), "the key is the team's own")
	plain := msg(f.team)
	plain.IdempotencyKey = ""
	assert.NoError(t, f.Messages.PutAgentMessage(ctx, plain), "without a key, no reference")
}
