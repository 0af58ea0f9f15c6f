package sessions_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// recording wraps a model and keeps every request it answered.
type recording struct {
	models.Model
	mu   sync.Mutex
	reqs []models.Request
}

func (r *recording) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Converse(ctx, req)
}

// A stage agent answers with its identity, skills, memories and the
// session's goal and context.
func TestStageAgentsAnswerWithTheirIdentityMemoriesAndTheSessionContext(t *testing.T) {
	f := newFixture(t)
	mem := &memory.Service{Store: f.store, Dir: f.store, Bus: f.bus}
	_, err := mem.Create(context.Background(), team, "kyra", memory.CreateInput{Type: "fact", Visibility: memory.Shared, Content: "We ship on Fridays."})
	require.NoError(t, err)
	rec := &recording{Model: f.svc.Model}
	f.svc.Model, f.svc.Memories = rec, mem
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Plan the release", Context: "Version 2 is late.",
		Participants: parts("contributor", "luke", "archie")})
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	_, err = f.step(s, workflow.SessionStage, out.Items[0])
	require.NoError(t, err)
	require.Len(t, rec.reqs, 1)
	req := rec.reqs[0]
	assert.Contains(t, req.System, "(@luke)")
	assert.Contains(t, req.System, "Plan the release")
	assert.Contains(t, req.System, "Version 2 is late.")
	assert.Contains(t, req.System, "We ship on Fridays.")
	assert.Equal(t, "luke", req.Metadata[models.MetadataAgent])
}
