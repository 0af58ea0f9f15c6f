package sessions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

func keyed(key string) context.Context {
	return idempotency.Scope(idempotency.WithKey(context.Background(), key), sessions.RefKind)
}

// blind hides the store's references from the read before a create, as
// when the first request's write lands while the repeat runs: only the
// create's own reference refuses the repeat.
type blind struct{ sessions.Store }

// A session created again under the Idempotency-Key of one whose answer
// was lost is that session, read back before anything is written; when
// the read misses it, the create's reference refuses the second.
func TestASessionCreatedAgainUnderItsKeyIsTheStoredOne(t *testing.T) {
	for _, c := range []struct {
		name  string
		blind bool
	}{{"read back first", false}, {"refused by the reference", true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			in := sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "Name the release",
				Participants: []sessions.ParticipantInput{{Agent: "luke", Role: "contributor"}, {Agent: "archie", Role: "contributor"}}}
			first, err := f.svc.Create(keyed("k-1"), team, "key_test", in)
			require.NoError(t, err)
			if c.blind {
				f.svc.Store = blind{f.store}
			}
			again, err := f.svc.Create(keyed("k-1"), team, "key_test", in)
			require.NoError(t, err)
			assert.Equal(t, first.ID, again.ID)
			list, _, err := f.store.ListSessions(context.Background(), team, sessions.Filter{}, paging.Page{Limit: 10})
			require.NoError(t, err)
			assert.Len(t, list, 1, "one session")

			other, err := f.svc.Create(keyed("k-2"), team, "key_test", in)
			require.NoError(t, err)
			assert.NotEqual(t, first.ID, other.ID, "another key, another session")
			unscoped, err := f.svc.Create(idempotency.WithKey(context.Background(), "k-1"), team, "key_test", in)
			require.NoError(t, err)
			assert.NotEqual(t, first.ID, unscoped.ID, "a key scoped to another create (a turn starting a session) is not the session's")
		})
	}
}
