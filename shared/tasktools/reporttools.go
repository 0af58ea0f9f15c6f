package tasktools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/shared/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// maxReportSummary bounds what get_report hands the model.
const maxReportSummary = 3000

type reportInput struct {
	ToAgent string `json:"to_agent"`
	// FromAgent is the seed's name for the specialist asked (the report
	// comes from it); to_agent wins when both are given.
	FromAgent   string          `json:"from_agent"`
	ReportType  string          `json:"report_type"`
	Title       string          `json:"title"`
	Parameters  json.RawMessage `json:"parameters"`
	Format      string          `json:"format"`
	MaxSections *int            `json:"max_sections"`
	// WaitForResult waits for the report's task to end (as
	// delegate_task does) and returns its answer; by default the tool
	// returns the report id at once.
	WaitForResult bool `json:"wait_for_result"`
}

// requestReport asks a specialist for a report through the same service as
// POST /v1/reports: a delegation from the task being worked on (its depth,
// chain, collaboration budget and the author's slots all apply). It
// returns the report id; get_report reads the report.
func (t *Tools) requestReport(ctx context.Context, c caller, input []byte) (result, error) {
	if t.Reports == nil {
		return text("reports are not available")
	}
	var in reportInput
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	params := bytes.TrimSpace(in.Parameters)
	// The seed's tool takes the parameters as a JSON string; an object is
	// accepted as it is.
	var asText string
	if len(params) > 0 && params[0] == '"' && json.Unmarshal(params, &asText) == nil {
		params = json.RawMessage(asText)
	}
	to := in.ToAgent
	if to == "" {
		to = in.FromAgent
	}
	req := reports.RequestInput{
		Type: in.ReportType, To: to, Title: in.Title, Parameters: params, Format: in.Format,
		MaxSections: in.MaxSections, ParentTaskID: c.taskID, ConversationID: c.conversationID,
	}
	r, err := t.Reports.Request(ctx, c.teamID, tasks.Creator{Type: "agent", ID: c.agent}, req)
	if err != nil {
		return refused(err)
	}
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
func (t *Tools) getReport(ctx context.Context, c caller, input []byte) (result, error) {
	if t.Reports == nil {
		return text("reports are not available")
	}
	var in struct {
		ReportID string `json:"report_id"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
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
