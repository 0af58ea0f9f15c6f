package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/admin"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

// An admin action's line names the action and its team, the team it
// created included (it had no id when the action began).
func TestAdminLinesNameTheActionAndTeam(t *testing.T) {
	var buf bytes.Buffer
	h := &admin.Handler{Teams: teams.NewService(teamfake.New(nil)), Log: logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))}
	line := func() map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &m), buf.String())
		buf.Reset()
		return m
	}

	created, err := h.Handle(context.Background(), admin.Request{Action: admin.ActionCreateTeam, Name: "Acme"})
	require.NoError(t, err)
	require.NotNil(t, created.Team)
	l := line()
	assert.Equal(t, "admin action", l["msg"])
	assert.Equal(t, admin.ActionCreateTeam, l["action"])
	assert.Equal(t, created.Team.ID, l["team_id"])

	_, err = h.Handle(context.Background(), admin.Request{Action: admin.ActionListKeys, TeamID: created.Team.ID})
	require.NoError(t, err)
	l = line()
	assert.Equal(t, admin.ActionListKeys, l["action"])
	assert.Equal(t, created.Team.ID, l["team_id"])
}
