package reports

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Service requests, reads and finishes reports.
type Service struct {
	Store Store
	// Tasks creates and reads the reports' tasks; it must be able to start
	// executions (a report's task always executes).
	Tasks         *tasks.Service
	Conversations ConversationReader
	Bus           Publisher
	Log           *slog.Logger
	Now           clock.Func
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// RequestInput is a report request (POST /v1/reports, the request_report
// tool).
type RequestInput struct {
	Type string `json:"type"`
	// To is the author's slug; From the requesting agent's (optional: a
	// user may ask). With ParentTaskID the request is a delegation from
	// that running task, whose assignee is then the requester.
	To             string          `json:"to"`
	From           string          `json:"from"`
	Title          string          `json:"title"`
	Parameters     json.RawMessage `json:"parameters"`
	MaxSections    *int            `json:"max_sections"`
	Format         string          `json:"format"`
	ConversationID string          `json:"conversation_id"`
	ParentTaskID   string          `json:"parent_task_id"`

	// A plan's report step (shared/work/plans): its plan, the slot ticket
	// it waited on, and the bridged results of earlier steps. Never from
	// a request body.
	PlanID  string `json:"-"`
	Ticket  string `json:"-"`
	Context string `json:"-"`
}

// request is a validated RequestInput.
type request struct {
	RequestInput
	template Template
	params   map[string]any
	max      int
}

func (in RequestInput) validate() (request, error) {
	t, ok := Templates[in.Type]
	if in.Type == "" {
		return request{}, apperr.Invalid("type", "type is required")
	}
	if !ok {
		return request{}, apperr.Invalid("type", "type must be one of %s", strings.Join(Types, ", "))
	}
	r := request{RequestInput: in, template: t, max: MaxSections}
	r.Format = cmp.Or(in.Format, Markdown)
	switch {
	case in.To == "":
		return r, apperr.Invalid("to", "to (the author's slug) is required")
	case !agents.ValidSlug(in.To):
		return r, apperr.Invalid("to", "to must be an agent slug")
	case in.From != "" && !agents.ValidSlug(in.From):
		return r, apperr.Invalid("from", "from must be an agent slug")
	case strings.TrimSpace(in.Title) == "":
		return r, apperr.Invalid("title", "title is required")
	case utf8.RuneCountInString(in.Title) > maxTitle:
		return r, apperr.Invalid("title", "title is longer than %d characters", maxTitle)
	case !slices.Contains(AllFormats, r.Format):
		return r, apperr.Invalid("format", "format must be one of %s", strings.Join(AllFormats, ", "))
	case !t.Supports(r.Format):
		return r, apperr.Invalid("format", "a %s report can be written in %s", t.Type, strings.Join(t.Formats, " or "))
	}
	if in.MaxSections != nil {
		r.max = *in.MaxSections
	}
	if r.max < len(t.Required) || r.max > MaxSections {
		return r, apperr.Invalid("max_sections", "max_sections must be between %d (the %s template's required sections) and %d", len(t.Required), t.Type, MaxSections)
	}
	params, err := validateParams(t, in.Parameters)
	if err != nil {
		return r, err
	}
	r.params = params
	r.Title = strings.TrimSpace(in.Title)
	return r, nil
}

// validateParams checks the parameters against the keys the template
// expects: an object, every required key, no unknown key, each value of
// its kind.
func validateParams(t Template, raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	params := map[string]any{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' || json.Unmarshal(raw, &params) != nil {
			return nil, apperr.Invalid("parameters", "parameters must be a JSON object")
		}
	}
	if len(raw) > maxParams {
		return nil, apperr.Invalid("parameters", "parameters are longer than %d bytes of JSON", maxParams)
	}
	known := map[string]Param{}
	var names []string
	for _, p := range t.Params {
		known[p.Name] = p
		names = append(names, p.Name)
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, ok := known[k]
		if !ok {
			return nil, apperr.Invalid("parameters."+k, "a %s report takes the parameters %s, not %q", t.Type, strings.Join(names, ", "), k)
		}
		if err := p.check(params[k]); err != nil {
			return nil, err
		}
	}
	for _, p := range t.Params {
		if _, ok := params[p.Name]; p.Required && !ok {
			return nil, apperr.Invalid("parameters."+p.Name, "a %s report needs parameters.%s (%s)", t.Type, p.Name, p.Description)
		}
	}
	return params, nil
}

// check validates one parameter value against its kind.
func (p Param) check(v any) error {
	field := "parameters." + p.Name
	switch p.Kind {
	case "string":
		if s, ok := v.(string); !ok || strings.TrimSpace(s) == "" {
			return apperr.Invalid(field, "%s must be a non-empty string", field)
		}
	case "list":
		items, ok := v.([]any)
		if !ok || len(stringsOf(items)) != len(items) {
			return apperr.Invalid(field, "%s must be a list of strings", field)
		}
		if n := max(p.MinItems, 1); len(items) < n {
			return apperr.Invalid(field, "%s must hold at least %d items", field, n)
		}
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return apperr.Invalid(field, "%s must be an object", field)
		}
	}
	return nil
}

// complexity is the template's, raised to complex when the request asks
// for depth.
func (r request) complexity() string {
	if d, _ := r.params["depth"].(string); d == "comprehensive" || d == "deep" {
		return Complex
	}
	return r.template.Complexity
}

// Request asks r.To for a report: its task is created through the task
// service (so the delegation limits are conditions of the same transaction
// as for any task) and executes at once; then the report is stored. A
// rejected request writes nothing. Returns EINVALID, ENOTFOUND (author,
// requester, parent task, conversation), ECONFLICT (a paused author:
// AgentUnavailable), ELIMIT and EREJECTED as tasks.Service.Create does.
func (s *Service) Request(ctx context.Context, teamID string, creator tasks.Creator, in RequestInput) (Report, error) {
	r, err := in.validate()
	if err != nil {
		return Report{}, err
	}
	if id, err := idempotency.Stored(ctx, s.Store, teamID, RefKind); err != nil || id != "" {
		return s.replay(ctx, teamID, id, err)
	}
	if r.ConversationID != "" {
		if !ids.Valid("conv", r.ConversationID) {
			return Report{}, apperr.NotFound("conversation", r.ConversationID)
		}
		// The task's transaction checks it again; this read answers
		// before anything is created.
		if _, err := s.Conversations.GetConversation(ctx, teamID, r.ConversationID); err != nil {
			return Report{}, err
		}
	}
	rep := r.newReport(teamID, creator, s.Now.UTC())
	check := &workflow.ReportCheck{ReportID: rep.ID, Type: rep.Type, Format: rep.Format, MaxSections: rep.MaxSections}
	execute := true
	task, err := s.Tasks.Create(ctx, teamID, creator, tasks.CreateInput{
		Assignee: r.To, CreatedByAgent: r.From, ParentID: r.ParentTaskID, ConversationID: r.ConversationID,
		Type: r.template.TaskType, Title: rep.Title, Instructions: Instructions(r.template, rep.Title, rep.Format, rep.MaxSections, r.params),
		ExpectedOutput: ExpectedOutput(r.template, rep.Format), ModelTier: rep.ModelTier, Report: check, Execute: &execute,
		PlanID: r.PlanID, Ticket: r.Ticket, Context: r.Context,
	}, true)
	if err != nil {
		return Report{}, renameFields(err)
	}
	rep.TaskID, rep.RequestedBy, rep.ConversationID, rep.UserID = task.ID, task.CreatedBy, task.ConversationID, task.UserID
	if task.CreatedBy.Type == "agent" {
		rep.From = task.CreatedBy.ID
	}
	if err := s.Store.CreateReport(ctx, rep); err != nil {
		// The task runs for a report that does not exist: stop it, so
		// nothing works for a request that failed, or for the repeat of
		// one whose report was stored meanwhile (its answer lost).
		id, replayed := idempotency.ReplayedID(err)
		why := "the report could not be recorded"
		if replayed {
			why = "a repeated request: its report is " + id
		}
		if _, cerr := s.Tasks.Cancel(ctx, teamID, task.ID, "system", why); cerr != nil {
			s.log().ErrorContext(ctx, "cancel the task of an unrecorded report", "task_id", task.ID, "error", cerr.Error())
		}
		if replayed {
			return s.replay(ctx, teamID, id, nil)
		}
		return Report{}, err
	}
	return rep, nil
}

// taskFields maps the task fields a report request sets to the request's
// own names, so a rejected request names the field the client sent.
var taskFields = map[string]string{"assignee": "to", "created_by_agent": "from"}

func renameFields(err error) error {
	if ae, ok := apperr.As(err); ok && taskFields[ae.Field] != "" {
		c := *ae
		c.Field = taskFields[ae.Field]
		c.Message = strings.ReplaceAll(c.Message, ae.Field, c.Field)
		return &c
	}
	return err
}

func (r request) newReport(teamID string, creator tasks.Creator, now time.Time) Report {
	c := r.complexity()
	return Report{
		TeamID: teamID, ID: ids.New("rep"), Type: r.template.Type, Title: r.Title, To: r.To, From: r.From,
		RequestedBy: creator, ConversationID: r.ConversationID, ParentTaskID: r.ParentTaskID, Parameters: r.params,
		Format: r.Format, MaxSections: r.max, Complexity: c, ModelTier: tierOf(c), Status: Queued,
		Sections: []Section{}, MissingSections: []string{}, Version: 1, CreatedAt: now, UpdatedAt: now,
	}
}

// Get returns a report, brought up to date with its task if it has not
// ended (see Sync). Returns ENOTFOUND.
func (s *Service) Get(ctx context.Context, teamID, id string) (Report, error) {
	return s.Sync(ctx, teamID, id)
}

// Wait returns the report once it has ended or when d has passed,
// whichever comes first (long-poll).
func (s *Service) Wait(ctx context.Context, teamID, id string, d time.Duration) (Report, error) {
	return backoff.Poll(ctx, d, func(ctx context.Context) (Report, bool, error) {
		r, err := s.Sync(ctx, teamID, id)
		return r, r.Status.Terminal(), err
	})
}

// List returns reports newest first. Returns EINVALID for a bad filter.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Report, string, error) {
	if f.Type != "" && Templates[f.Type].Type == "" {
		return nil, "", apperr.Invalid("type", "type must be one of %s", strings.Join(Types, ", "))
	}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, "", apperr.Invalid("status", "status must be one of %s", joinStatuses())
	}
	for name, v := range map[string]string{"to": f.To, "from": f.From} {
		if v != "" && !agents.ValidSlug(v) {
			return nil, "", apperr.Invalid(name, "%s must be an agent slug", name)
		}
	}
	return s.Store.ListReports(ctx, teamID, f, p)
}

func joinStatuses() string {
	out := make([]string, len(Statuses))
	for i, st := range Statuses {
		out[i] = string(st)
	}
	return strings.Join(out, ", ")
}

// Summary is a report as an agent's tool reads it: where it stands, and
// its sections when it is done.
func (r Report) Summary(maxChars int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "report %s (%s, %q) by %s is %s", r.ID, r.Type, r.Title, r.To, r.Status)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s: %s)", r.Reason, r.Error)
	}
	if len(r.Sections) > 0 {
		b.WriteString(":\n")
		b.WriteString(Render(Markdown, r.Sections))
	}
	return clip.Clip(b.String(), maxChars)
}

// RefKind is the kind of a report's idempotency reference: POST
// /v1/reports scopes its request's key to it (its task takes none).
const RefKind = "report"

// replay answers a request sent again under the Idempotency-Key of report
// id (its answer was lost): that report as it is now.
func (s *Service) replay(ctx context.Context, teamID, id string, err error) (Report, error) {
	if err != nil {
		return Report{}, err
	}
	return s.Get(ctx, teamID, id)
}
