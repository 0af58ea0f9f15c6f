package agenttools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// maxReportSummary bounds what get_report hands the model.
const maxReportSummary = 3000

type reportInput struct {
	ToAgent     string         `json:"to_agent" jsonschema:"slug of the colleague who writes the report"`
	ReportType  string         `json:"report_type" jsonschema:"the report's template"`
	Title       string         `json:"title" jsonschema:"the report's title"`
	Parameters  map[string]any `json:"parameters,omitempty" jsonschema:"what the report is about, as the template reads it (for example topic, scope, files)"`
	Format      string         `json:"format,omitempty" jsonschema:"how it is written (default markdown)"`
	MaxSections int            `json:"max_sections,omitempty" jsonschema:"how many sections at most"`
	// WaitForResult waits for the report's task to end (as
	// delegate_task does) and returns its answer; by default the tool
	// returns the report id at once.
	WaitForResult bool `json:"wait_for_result,omitempty" jsonschema:"wait for the report (in a task only; default false: the report id comes back at once)"`
}

func (reportInput) constrain(c constraints) {
	c.slug("to_agent")
	c.enum("report_type", reports.Types...)
	c.length("title", 1, 500)
	c.enum("format", reports.AllFormats...)
	c.between("max_sections", 1, reports.MaxSections)
}

type reportIDInput struct {
	ReportID string `json:"report_id" jsonschema:"the id of a report you requested (rep_…)"`
}

func (reportIDInput) constrain(c constraints) { c.length("report_id", 1, maxID) }

// requestReport asks a specialist for a report through the same service as
// POST /v1/reports: a delegation from the task being worked on (its depth,
// chain, collaboration budget and the author's slots all apply). It
// returns the report id; get_report reads the report.
func (t *Tools) requestReport(ctx context.Context, c caller, in reportInput) (result, error) {
	if t.Reports == nil {
		return text("reports are not available")
	}
	var params json.RawMessage
	if in.Parameters != nil {
		raw, err := json.Marshal(in.Parameters)
		if err != nil {
			return invalidArguments("parameters", err.Error())
		}
		params = raw
	}
	req := reports.RequestInput{
		Type: in.ReportType, To: in.ToAgent, Title: in.Title, Parameters: params, Format: in.Format,
		ParentTaskID: c.taskID, ConversationID: c.conversationID,
	}
	if in.MaxSections > 0 {
		req.MaxSections = &in.MaxSections
	}
	r, err := t.Reports.Request(ctx, c.teamID, c.requester(), req)
	if err != nil {
		return refused(err)
	}
	// The report, not its task: the report is what the caller reads.
	worker.Produced(ctx, r.ID)
	switch {
	case c.inChat():
		// A report of a chat is never waited for in the reply: it is
		// posted in the conversation when it is done (result_of), so it
		// is delivered once, whenever it ends.
		return result{text: fmt.Sprintf("requested report %s (%s) from %s; it will be posted in this conversation when it is done (or read it with get_report). Tell the user.", r.ID, r.Type, r.To),
			pending: &conversations.WorkRef{Type: "report", ID: r.ID, Agent: r.To, Status: string(r.Status)}}, nil
	case in.WaitForResult:
		return result{}, worker.WaitFor{ChildTaskID: r.TaskID}
	}
	return text(fmt.Sprintf("requested report %s (%s) from %s as task %s; read it with get_report", r.ID, r.Type, r.To, r.TaskID))
}

// getReport reads a report of the team: where it stands, and its sections
// once it is done.
func (t *Tools) getReport(ctx context.Context, c caller, in reportIDInput) (result, error) {
	if t.Reports == nil {
		return text("reports are not available")
	}
	r, err := t.Reports.Get(ctx, c.teamID, strings.TrimSpace(in.ReportID))
	if err != nil {
		return refused(err)
	}
	return text(r.Summary(maxReportSummary))
}

// Reviewer holds a report task's answer to its template for the worker
// (worker.Reviewer) with the reports package's check, the same one the
// report's end runs. It lives here so that the worker does not import
// reports.
type Reviewer struct{}

var _ worker.Reviewer = Reviewer{}

// Review implements worker.Reviewer.
func (Reviewer) Review(p workflow.TaskInput, answer string) *worker.Revision {
	o := reports.Check(*p.Report, answer)
	if o.OK() {
		return nil
	}
	_, prompt := reports.Revision(*p.Report, o)
	rev := &worker.Revision{Missing: o.Missing, Invalid: []string{}, Prompt: prompt}
	if rev.Missing == nil {
		rev.Missing = []string{}
	}
	for _, e := range o.Invalid {
		rev.Invalid = append(rev.Invalid, e.Section)
	}
	return rev
}

// Merge implements worker.Reviewer.
func (Reviewer) Merge(p workflow.TaskInput, answer, revised string) string {
	return reports.Merge(*p.Report, answer, revised)
}
