package agenttools_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

var requestedRE = regexp.MustCompile(`^requested report (rep_\S+) \(([a-z_]+)\) from ([a-z-]+) as task (task_\S+); read it with get_report$`)

func (f *fixture) withReports() *reports.Service {
	svc := &reports.Service{Store: f.store, Tasks: f.tasks, Conversations: f.store, Bus: f.bus, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f.tools.Reports = svc
	return svc
}

// request_report is the API's service: the report's task is a delegation
// from the task being worked on, so its limits hold.
func TestRequestReportDelegatesFromTheTaskBeingWorkedOn(t *testing.T) {
	f := newFixture(t)
	svc := f.withReports()
	ctx := context.Background()
	p := f.working(t, "kyra")
	out := f.call(t, p, "request_report", map[string]any{
		"to_agent": "luke", "report_type": "code_review", "title": "Review auth",
		"parameters": map[string]any{"files": []string{"src/auth/"}}, "format": "json",
	})
	m := requestedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, []string{"code_review", "luke"}, m[2:4])

	r, err := svc.Get(ctx, team, m[1])
	require.NoError(t, err)
	assert.Equal(t, "kyra", r.From, "the working agent asks")
	assert.Equal(t, p.TaskID, r.ParentTaskID)
	assert.Equal(t, map[string]any{"files": []any{"src/auth/"}}, r.Parameters)
	child, err := f.tasks.Get(ctx, team, m[4])
	require.NoError(t, err)
	assert.Equal(t, p.TaskID, child.ParentID)
	assert.Equal(t, 1, child.Depth)
	assert.Equal(t, "review", child.Type)

	got := f.call(t, p, "get_report", map[string]any{"report_id": r.ID})
	assert.Contains(t, got, "report "+r.ID+` (code_review, "Review auth") by luke is queued`)

	// One name for the colleague (to_agent): the seed's from_agent is
	// not an argument of the tool.
	out = f.call(t, p, "request_report", map[string]any{"from_agent": "dana", "report_type": "data_analysis", "title": "May",
		"parameters": map[string]any{"dataset": "signups", "question": "why?"}})
	assert.Contains(t, out, `"field":"from_agent"`, out)

	for input, want := range map[string]string{
		`{"to_agent":"luke","report_type":"poem","title":"x"}`:                                  `"field":"report_type"`,
		`{"to_agent":"kyra","report_type":"action_plan","title":"x","parameters":{"goal":"g"}}`: "rejected (SelfDelegation)",
		`{"to_agent":"luke","report_type":"code_review","title":"x","parameters":"not json"}`:   `"field":"parameters"`,
		`[`: `"error":"invalid_arguments"`,
	} {
		assert.Contains(t, f.call(t, p, "request_report", input), want, input)
	}
	assert.Contains(t, f.call(t, p, "get_report", map[string]any{"report_id": "rep_nope"}), "rejected: report")
	other := f.working(t, "sage")
	other.TeamID = "team_other"
	assert.Contains(t, f.call(t, other, "get_report", map[string]any{"report_id": r.ID}), "not found", "another team's report")
}

func TestRequestReportCanWaitForItsTask(t *testing.T) {
	f := newFixture(t)
	f.withReports()
	p := f.working(t, "kyra")
	_, err := f.tools.Call(context.Background(), p, models.ToolCall{Name: "request_report",
		Input: `{"to_agent":"luke","report_type":"action_plan","title":"Plan","parameters":{"goal":"ship"},"wait_for_result":true}`})
	var wait worker.WaitFor
	require.ErrorAs(t, err, &wait)
	child, err := f.tasks.Get(context.Background(), team, wait.ChildTaskID)
	require.NoError(t, err)
	assert.NotNil(t, child.Report)
}

func TestReportToolsWithoutTheService(t *testing.T) {
	f := newFixture(t)
	p := f.working(t, "kyra")
	assert.Equal(t, "reports are not available", f.call(t, p, "request_report", map[string]any{"to_agent": "luke", "report_type": "code_review", "title": "x"}))
	assert.Equal(t, "reports are not available", f.call(t, p, "get_report", map[string]any{"report_id": "rep_1"}))
}

func TestTheReviewerIsTheReportsCheck(t *testing.T) {
	p := workflow.TaskInput{Report: &workflow.ReportCheck{Type: "code_review", Format: "markdown", MaxSections: 10}}
	rv := agenttools.Reviewer{}
	rev := rv.Review(p, "## summary\nok\n## recommendations\n- r\n")
	require.NotNil(t, rev)
	assert.Equal(t, []string{"findings", "severity_breakdown"}, rev.Missing)
	assert.Empty(t, rev.Invalid)
	assert.Contains(t, rev.Prompt, "Sections to write: findings, severity_breakdown")
	merged := rv.Merge(p, "## summary\nok\n## recommendations\n- r\n", "## findings\nf\n## severity_breakdown\nb\n")
	assert.Nil(t, rv.Review(p, merged))
}
