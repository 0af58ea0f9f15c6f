package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// pushConfigs: a config reads back whole, by team and task, oldest
// first; a deleted one is gone and frees its place; another team's or
// task's are not seen.
func pushConfigs(t *testing.T, f *fixture) {
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	a := server.PushConfig{ID: "push_01", TaskID: "task_p", URL: "https://hooks.example/a", Token: "tok", AuthScheme: "Bearer", AuthCredentials: "cred", CreatedAt: at}
	b := server.PushConfig{ID: "push_02", TaskID: "task_p", URL: "https://hooks.example/b", CreatedAt: at.Add(time.Second)}
	require.NoError(t, f.Push.PutPushConfig(ctx, f.team, a))
	require.NoError(t, f.Push.PutPushConfig(ctx, f.team, b))
	got, err := f.Push.GetPushConfig(ctx, f.team, "task_p", "push_01")
	require.NoError(t, err)
	assert.Equal(t, a, got)
	list, err := f.Push.ListPushConfigs(ctx, f.team, "task_p")
	require.NoError(t, err)
	assert.Equal(t, []server.PushConfig{a, b}, list)
	for _, miss := range []func() error{
		func() error { _, err := f.Push.GetPushConfig(ctx, "another-team", "task_p", "push_01"); return err },
		func() error { _, err := f.Push.GetPushConfig(ctx, f.team, "task_q", "push_01"); return err },
		func() error { return f.Push.DeletePushConfig(ctx, "another-team", "task_p", "push_01") },
	} {
		assert.Equal(t, apperr.ENOTFOUND, apperr.Code(miss()))
	}
	other, err := f.Push.ListPushConfigs(ctx, f.team, "task_q")
	require.NoError(t, err)
	assert.Empty(t, other)
	require.NoError(t, f.Push.DeletePushConfig(ctx, f.team, "task_p", "push_01"))
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(f.Push.DeletePushConfig(ctx, f.team, "task_p", "push_01")), "deleted once")
	for i := range server.MaxPushConfigs - 1 {
		require.NoError(t, f.Push.PutPushConfig(ctx, f.team, server.PushConfig{ID: fmt.Sprintf("push_1%d", i), TaskID: "task_p", URL: "https://h.example/", CreatedAt: at}))
	}
	err = f.Push.PutPushConfig(ctx, f.team, server.PushConfig{ID: "push_99", TaskID: "task_p", URL: "https://h.example/", CreatedAt: at})
	assert.Equal(t, apperr.ELIMIT, apperr.Code(err), "the deleted one freed exactly one place")
}

// pushConfigsConcurrent: 12 creates race for a task's MaxPushConfigs
// places; exactly that many are stored.
func pushConfigsConcurrent(t *testing.T, f *fixture) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, limited := 0, 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := server.PushConfig{ID: fmt.Sprintf("push_r%02d", i), TaskID: "task_race", URL: "https://h.example/", CreatedAt: time.Now().UTC()}
			err := f.Push.PutPushConfig(ctx, f.team, c)
			for apperr.Is(err, apperr.ECONFLICT) {
				err = f.Push.PutPushConfig(ctx, f.team, c)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case apperr.Is(err, apperr.ELIMIT):
				limited++
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, server.MaxPushConfigs, made)
	assert.Equal(t, 12-server.MaxPushConfigs, limited)
	list, err := f.Push.ListPushConfigs(ctx, f.team, "task_race")
	require.NoError(t, err)
	assert.Len(t, list, server.MaxPushConfigs)
}
