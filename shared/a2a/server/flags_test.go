package server_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
)

// With task_delegation off (Service.NoTasks) a new message, sent or
// streamed, is refused before anything is created (no conversation, no
// routing, no task), naming the flag; the card says so; a message to a
// task already accepted still reaches it.
func TestANewMessageNeedsTasks(t *testing.T) {
	w := newWorld()
	w.svc.NoTasks = "task_delegation"
	_, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("review my code")})
	e, data := protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrUnsupportedOperation)
	assert.Equal(t, "task_delegation", data["flag"])
	streaming := server.With(context.Background(), server.Endpoint{TeamID: "team_a", StreamURL: "https://stream.example/a2a/a2a_x"})
	for _, err := range w.svc.SendStreamingMessage(streaming, &a2a.SendMessageRequest{Message: textMessage("review my code")}) {
		_, data := protocolErr(t, err)
		assert.Equal(t, "task_delegation", data["flag"])
		break
	}
	assert.Zero(t, w.contexts.opened)
	assert.Empty(t, w.router.asked)
	assert.Empty(t, w.tasks.created)
	card, err := w.svc.PublicCard(teamA())
	require.NoError(t, err)
	assert.Contains(t, card.Description, "task_delegation is off")

	// The same service with the flag on takes it.
	w.svc.NoTasks = ""
	_, err = w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("review my code")})
	require.NoError(t, err)
	assert.Len(t, w.tasks.created, 1)
	card, err = w.svc.PublicCard(teamA())
	require.NoError(t, err)
	assert.NotContains(t, card.Description, "is off")
}
