package worker_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// picky is a Reviewer that is never satisfied: the worker must still ask
// only once and then merge.
type picky struct{ reviews, merges int }

func (p *picky) Review(workflow.TaskInput, string) *worker.Revision {
	p.reviews++
	return &worker.Revision{Missing: []string{"findings"}, Invalid: []string{}, Prompt: "Sections to write: findings"}
}

func (p *picky) Merge(_ workflow.TaskInput, answer, revised string) string {
	p.merges++
	return answer + " | " + revised
}

func reportPayload(assignee string) workflow.TaskInput {
	p := payload(assignee)
	p.Report = &workflow.ReportCheck{ReportID: "rep_1", Type: "code_review", Format: "markdown", MaxSections: 10}
	return p
}

func TestAReportAnswerIsRevisedOnceInTheSameConversation(t *testing.T) {
	rv := &picky{}
	tr := &fakeTracker{running: true}
	w := newWorker(nil)
	w.Tracker, w.Reviewer = tr, rv
	res, err := w.Run(context.Background(), reportPayload("ok"))
	require.NoError(t, err)
	assert.Equal(t, 1, rv.reviews, "one revision, however the second answer looks")
	assert.Equal(t, 1, rv.merges)
	first, second, ok := strings.Cut(res.Output, " | ")
	require.True(t, ok, res.Output)
	assert.Contains(t, first, "review the parser")
	assert.Contains(t, second, "Sections to write: findings", "the revision prompt is the agent's next message")
	assert.Equal(t, []string{"progress", "revision_requested", "progress"}, tr.events)
	assert.LessOrEqual(t, res.TokensUsed, workflow.MaxTaskTokens, "both answers count against the task's budget")

	single, err := newWorker(nil).Run(context.Background(), reportPayload("ok"))
	require.NoError(t, err)
	assert.Greater(t, res.TokensUsed, single.TokensUsed, "the revision's tokens are the task's")
}

func TestOnlyReportTasksAreReviewed(t *testing.T) {
	rv := &picky{}
	w := newWorker(nil)
	w.Reviewer = rv
	_, err := w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.Zero(t, rv.reviews)
}

// recording is a model that remembers the model ids it was asked for.
type recording struct {
	models.Model
	mu  sync.Mutex
	ids []string
}

func (r *recording) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	r.ids = append(r.ids, req.ModelID)
	r.mu.Unlock()
	return r.Model.Converse(ctx, req)
}

func TestTheTasksTierPicksTheModelUnlessTheAgentNamesOne(t *testing.T) {
	w := newWorker(nil)
	rec := &recording{Model: w.Model}
	w.Model, w.Tiers = rec, map[string]string{"tier_2": "anthropic.claude-3-5-sonnet-20240620-v1:0"}
	a := agent("pinned", "", agents.StatusActive)
	a.Model.ID = "amazon.nova-pro-v1:0"
	w.Agents.(agentMap)["t/pinned"] = a

	p := payload("ok")
	p.ModelTier = "tier_2"
	res, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "anthropic.claude-3-5-sonnet-20240620-v1:0", res.ModelID)
	p = payload("pinned")
	p.ModelTier = "tier_2"
	_, err = w.Run(context.Background(), p)
	require.NoError(t, err)
	_, err = w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.Equal(t, []string{"anthropic.claude-3-5-sonnet-20240620-v1:0", "amazon.nova-pro-v1:0", ""}, rec.ids,
		"the tier's model; the agent's own; the provider's default without a tier")
}
