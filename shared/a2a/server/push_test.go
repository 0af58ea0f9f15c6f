package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// pushWorld is a world whose stage offers push notifications (loopback
// URLs only, as locally) on a memstore.
func pushWorld() (*world, *memstore.Store) {
	w := newWorld()
	store := memstore.New()
	w.svc.Push, w.svc.PushPolicy = store, toolpacks.NetPolicy{LoopbackOnly: true}
	return w, store
}

func TestPushConfigsAreKeptForTheTasksThisAgentCreated(t *testing.T) {
	w, store := pushWorld()
	ctx := teamA()
	card, err := w.svc.PublicCard(ctx)
	require.NoError(t, err)
	assert.True(t, card.Capabilities.PushNotifications, "the card says so")

	// SendMessage with a config: the task and its config.
	res, err := w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("Hello"), Config: &a2a.SendMessageConfig{ReturnImmediately: true,
		PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1:9/hook", Token: "tok-1", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "s3cret"}}}})
	require.NoError(t, err)
	id := res.(*a2a.Task).ID
	list, err := w.svc.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: id})
	require.NoError(t, err)
	require.Len(t, list.Configs, 1)
	got := list.Configs[0]
	assert.Equal(t, "http://127.0.0.1:9/hook", got.URL)
	assert.Equal(t, "tok-1", got.Token)
	assert.Equal(t, &a2a.PushAuthInfo{Scheme: "Bearer"}, got.Auth, "the credentials are never shown")
	kept, err := store.ListPushConfigs(context.Background(), "team_a", string(id))
	require.NoError(t, err)
	assert.Equal(t, "s3cret", kept[0].AuthCredentials, "kept for the sender")

	// Create, get, delete; up to five per task.
	made, err := w.svc.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: id, URL: "http://localhost:9/b"})
	require.NoError(t, err)
	one, err := w.svc.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: id, ID: made.ID})
	require.NoError(t, err)
	assert.Equal(t, made, one)
	require.NoError(t, w.svc.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: id, ID: made.ID}))
	_, err = w.svc.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: id, ID: made.ID})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound, "gone")
	for range server.MaxPushConfigs - 1 {
		_, err := w.svc.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: id, URL: "http://localhost:9/c"})
		require.NoError(t, err)
	}
	_, err = w.svc.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: id, URL: "http://localhost:9/d"})
	_, data := protocolErr(t, err)
	assert.Equal(t, server.ReasonPushLimit, data["reason"], "five per task")

	// Another team's endpoint sees none of it.
	other := server.With(context.Background(), server.Endpoint{TeamID: "team_b", BaseURL: "https://api.example/a2a/a2a_y"})
	_, err = w.svc.ListTaskPushConfigs(other, &a2a.ListTaskPushConfigRequest{TaskID: id})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
	_, err = w.svc.CreateTaskPushConfig(other, &a2a.PushConfig{TaskID: id, URL: "http://localhost:9/e"})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
}

// Bad configs are refused and create nothing, the task included; a task
// not created over A2A takes none.
func TestBadPushConfigsAreRefusedAndCreateNothing(t *testing.T) {
	for name, cfg := range map[string]*a2a.PushConfig{
		"no url":             {},
		"not loopback":       {URL: "https://hooks.example.com/x"},
		"user info":          {URL: "http://u:p@127.0.0.1/x"},
		"long url":           {URL: "http://127.0.0.1/" + strings.Repeat("a", server.MaxPushURLBytes)},
		"long token":         {URL: "http://127.0.0.1/x", Token: strings.Repeat("t", server.MaxPushToken+1)},
		"token on two lines": {URL: "http://127.0.0.1/x", Token: "a\nb"},
		"odd scheme":         {URL: "http://127.0.0.1/x", Auth: &a2a.PushAuthInfo{Scheme: "Digest", Credentials: "x"}},
		"no credentials":     {URL: "http://127.0.0.1/x", Auth: &a2a.PushAuthInfo{Scheme: "Bearer"}},
	} {
		t.Run(name, func(t *testing.T) {
			w, store := pushWorld()
			_, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Hello"), Config: &a2a.SendMessageConfig{PushConfig: cfg}})
			assert.ErrorIs(t, err, a2a.ErrInvalidParams)
			assert.Empty(t, w.tasks.created, "no task")
			assert.Empty(t, store.ListPushConfigsOfTeam("team_a"), "no config")
		})
	}
	w, _ := pushWorld()
	w.tasks.byID["task_board"] = tasks.Task{TeamID: "team_a", ID: "task_board", CreatedBy: tasks.Creator{Type: "user", ID: "key_1"}, Status: tasks.Queued}
	_, err := w.svc.CreateTaskPushConfig(teamA(), &a2a.PushConfig{TaskID: "task_board", URL: "http://127.0.0.1/x"})
	_, data := protocolErr(t, err)
	assert.Equal(t, "NotAnA2ATask", data["reason"])

	plain := newWorld()
	_, err = plain.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Hello"), Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1/x"}}})
	assert.ErrorIs(t, err, a2a.ErrPushNotificationNotSupported, "a stage without push says so")
	assert.Empty(t, plain.tasks.created)
}

type taskByID map[string]tasks.Task

func (m taskByID) GetTask(_ context.Context, _, id string) (tasks.Task, error) { return m[id], nil }

// The notifier sends each config the task as A2A shows it, with the
// config's token and credentials, through the policy: a refused address
// or a failing receiver is an error (the queue retries it).
func TestTheNotifierSendsTheTaskToEachConfig(t *testing.T) {
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got, bodies = append(got, r), append(bodies, string(body))
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	store := memstore.New()
	ctx := context.Background()
	now := time.Now().UTC()
	require.NoError(t, store.PutPushConfig(ctx, "team_a", server.PushConfig{ID: "push_1", TaskID: "task_1", URL: srv.URL + "/a", Token: "tok-1", AuthScheme: "Bearer", AuthCredentials: "s3cret", CreatedAt: now}))
	require.NoError(t, store.PutPushConfig(ctx, "team_a", server.PushConfig{ID: "push_2", TaskID: "task_1", URL: srv.URL + "/b", CreatedAt: now}))
	n := &server.Notifier{Tasks: taskByID{"task_1": {TeamID: "team_a", ID: "task_1", Status: tasks.Completed, Result: "Done.", ConversationID: "conv_1"}},
		Configs: store, Sender: &remote.PushSender{Client: remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: true}}}}
	sent, err := n.Notify(ctx, "team_a", "task_1")
	require.NoError(t, err)
	assert.Equal(t, 2, sent)
	require.Len(t, got, 2)
	assert.Equal(t, "tok-1", got[0].Header.Get("A2A-Notification-Token"))
	assert.Equal(t, "Bearer s3cret", got[0].Header.Get("Authorization"))
	assert.Empty(t, got[1].Header.Get("Authorization"))
	assert.Contains(t, bodies[0], `"TASK_STATE_COMPLETED"`)
	assert.Contains(t, bodies[0], `"task_1"`)

	sent, err = n.Notify(ctx, "team_a", "task_none")
	require.NoError(t, err)
	assert.Zero(t, sent, "a task without configs sends nothing")

	require.NoError(t, store.PutPushConfig(ctx, "team_a", server.PushConfig{ID: "push_3", TaskID: "task_1", URL: srv.URL + "/fail", CreatedAt: now}))
	_, err = n.Notify(ctx, "team_a", "task_1")
	assert.Error(t, err, "a failing receiver fails the message")

	far := &server.Notifier{Tasks: n.Tasks, Configs: memstore.New(), Sender: n.Sender}
	require.NoError(t, far.Configs.PutPushConfig(ctx, "team_a", server.PushConfig{ID: "push_9", TaskID: "task_1", URL: "https://hooks.example.com/x", CreatedAt: now}))
	_, err = far.Notify(ctx, "team_a", "task_1")
	assert.Error(t, err, "the policy refuses an address outside it")
	assert.False(t, errors.Is(err, context.Canceled))
}
