package reportstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ reports.Store = (*Store)(nil)

// roleReport is the report's write in a transaction.
const roleReport = "report"

// reportItem is a report; see keys.go for its key.
//
// The parameters and a json report's section values are JSON text, for
// the reason AgentMessageItem's metadata is: they are free-form objects
// (the client's, the model's), not domain types, and DynamoDB cannot hold
// every JSON object as a map.
type reportItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
	// GSI4PK and GSI4SK: the work of its conversation (with a
	// conversation_id only).
	GSI4PK string `dynamodbav:"gsi4pk,omitempty"`
	GSI4SK string `dynamodbav:"gsi4sk,omitempty"`
	// Type is the item type; ReportType the report's.
	Type            string             `dynamodbav:"type"`
	ID              string             `dynamodbav:"id"`
	ReportType      string             `dynamodbav:"report_type"`
	Title           string             `dynamodbav:"title"`
	To              string             `dynamodbav:"to"`
	From            string             `dynamodbav:"from,omitempty"`
	RequestedByType string             `dynamodbav:"requested_by_type"`
	RequestedByID   string             `dynamodbav:"requested_by_id"`
	UserID          string             `dynamodbav:"user_id,omitempty"`
	ConversationID  string             `dynamodbav:"conversation_id,omitempty"`
	ParentTaskID    string             `dynamodbav:"parent_task_id,omitempty"`
	Parameters      string             `dynamodbav:"parameters_json"`
	Format          string             `dynamodbav:"format"`
	MaxSections     int                `dynamodbav:"max_sections"`
	Complexity      string             `dynamodbav:"complexity"`
	ModelTier       string             `dynamodbav:"model_tier"`
	TaskID          string             `dynamodbav:"task_id"`
	Status          string             `dynamodbav:"status"`
	Sections        []sectionItem      `dynamodbav:"sections"`
	MissingSections []string           `dynamodbav:"missing_sections"`
	InvalidSections []sectionErrorItem `dynamodbav:"invalid_sections,omitempty"`
	DroppedSections []string           `dynamodbav:"dropped_sections,omitempty"`
	Revisions       int                `dynamodbav:"revisions"`
	Reason          string             `dynamodbav:"reason,omitempty"`
	Error           string             `dynamodbav:"error,omitempty"`
	MemoryID        string             `dynamodbav:"memory_id,omitempty"`
	TokensUsed      int                `dynamodbav:"tokens_used"`
	CostUSD         float64            `dynamodbav:"cost_usd"`
	Version         int                `dynamodbav:"version"`
	CreatedAt       time.Time          `dynamodbav:"created_at"`
	UpdatedAt       time.Time          `dynamodbav:"updated_at"`
	CompletedAt     *time.Time         `dynamodbav:"completed_at,omitempty"`
}

// sectionItem is one section of a report (a nested map).
type sectionItem struct {
	Name    string `dynamodbav:"name"`
	Content string `dynamodbav:"content"`
	Value   string `dynamodbav:"value_json,omitempty"`
}

// sectionErrorItem is a json report's invalid section (a nested map).
type sectionErrorItem struct {
	Section string `dynamodbav:"section"`
	Message string `dynamodbav:"message"`
}

func toReportItem(r reports.Report) (reportItem, error) {
	params, err := json.Marshal(r.Parameters)
	if err != nil {
		return reportItem{}, err
	}
	it := reportItem{
		PK: dynamo.TeamPK(r.TeamID), SK: dynamo.ReportSK(r.ID), Type: "report", ID: r.ID, ReportType: r.Type, Title: r.Title,
		To: r.To, From: r.From, RequestedByType: r.RequestedBy.Type, RequestedByID: r.RequestedBy.ID, UserID: r.UserID,
		ConversationID: r.ConversationID, ParentTaskID: r.ParentTaskID, Parameters: string(params), Format: r.Format,
		MaxSections: r.MaxSections, Complexity: r.Complexity, ModelTier: r.ModelTier, TaskID: r.TaskID, Status: string(r.Status),
		MissingSections: r.MissingSections, DroppedSections: r.DroppedSections, Revisions: r.Revisions, Reason: r.Reason,
		Error: r.Error, MemoryID: r.MemoryID, TokensUsed: r.TokensUsed, CostUSD: r.CostUSD, Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CompletedAt: r.CompletedAt,
	}
	it.GSI4PK, it.GSI4SK = dynamo.ConvWorkKeys(r.TeamID, r.ConversationID, r.CreatedAt, r.ID)
	for _, s := range r.Sections {
		si := sectionItem{Name: s.Name, Content: s.Content}
		if s.Value != nil {
			v, err := json.Marshal(s.Value)
			if err != nil {
				return reportItem{}, err
			}
			si.Value = string(v)
		}
		it.Sections = append(it.Sections, si)
	}
	for _, e := range r.InvalidSections {
		it.InvalidSections = append(it.InvalidSections, sectionErrorItem(e))
	}
	return it, nil
}

func (it reportItem) toReport(teamID string) (reports.Report, error) {
	r := reports.Report{
		TeamID: teamID, ID: it.ID, Type: it.ReportType, Title: it.Title, To: it.To, From: it.From,
		RequestedBy: tasks.Creator{Type: it.RequestedByType, ID: it.RequestedByID}, UserID: it.UserID, ConversationID: it.ConversationID,
		ParentTaskID: it.ParentTaskID, Format: it.Format, MaxSections: it.MaxSections, Complexity: it.Complexity,
		ModelTier: it.ModelTier, TaskID: it.TaskID, Status: reports.Status(it.Status), Sections: []reports.Section{},
		MissingSections: it.MissingSections, DroppedSections: it.DroppedSections, Revisions: it.Revisions, Reason: it.Reason,
		Error: it.Error, MemoryID: it.MemoryID, TokensUsed: it.TokensUsed, CostUSD: it.CostUSD, Version: it.Version,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, CompletedAt: it.CompletedAt,
	}
	if err := json.Unmarshal([]byte(it.Parameters), &r.Parameters); err != nil {
		return reports.Report{}, err
	}
	for _, s := range it.Sections {
		sec := reports.Section{Name: s.Name, Content: s.Content}
		if s.Value != "" {
			if err := json.Unmarshal([]byte(s.Value), &sec.Value); err != nil {
				return reports.Report{}, err
			}
		}
		r.Sections = append(r.Sections, sec)
	}
	for _, e := range it.InvalidSections {
		r.InvalidSections = append(r.InvalidSections, reports.SectionError(e))
	}
	if r.MissingSections == nil {
		r.MissingSections = []string{}
	}
	return r, nil
}

func fromReportItem(teamID string, m map[string]types.AttributeValue) (reports.Report, error) {
	var it reportItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return reports.Report{}, err
	}
	return it.toReport(teamID)
}

// CreateReport implements reports.Store.
func (s *Store) CreateReport(ctx context.Context, r reports.Report) error {
	it, err := toReportItem(r)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	created, err := s.PutNewKeyed(ctx, r.TeamID, reports.RefKind, r.ID, it)
	if err == nil && !created {
		return apperr.New(apperr.ECONFLICT, "report %s exists", r.ID)
	}
	return err
}

// GetReport implements reports.Store.
func (s *Store) GetReport(ctx context.Context, teamID, id string) (reports.Report, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ReportSK(id)), "report", id, func(m map[string]types.AttributeValue) (reports.Report, error) { return fromReportItem(teamID, m) })
}

// ListReports implements reports.Store, newest first (report ids sort by
// time); the filters are filter expressions on the team's REPORT# range.
func (s *Store) ListReports(ctx context.Context, teamID string, f reports.Filter, p paging.Page) ([]reports.Report, string, error) {
	var filters []expression.ConditionBuilder
	for _, fv := range [][2]string{{"report_type", f.Type}, {"to", f.To}, {"from", f.From}, {"status", string(f.Status)}, {"user_id", f.UserID}} {
		if fv[1] != "" {
			filters = append(filters, dynamo.Name(fv[0]).Equal(dynamo.Value(fv[1])))
		}
	}
	keyCond := dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixReport))
	in, err := dynamo.BuiltQuery("", keyCond, dynamo.AllOf(filters), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []reports.Report{}
	next, err := s.QueryPage(ctx, in, "reports:"+teamID, p, func(m map[string]types.AttributeValue) error {
		r, err := fromReportItem(teamID, m)
		list = append(list, r)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// SaveReport implements reports.Store: the report conditioned on the
// version read; with a memory, the memory and the end of the cached
// contexts of the agents who may see it (the team's epoch bumped, so a
// context being built now is not cached stale) in the same transaction.
func (s *Store) SaveReport(ctx context.Context, r reports.Report, mem *memory.Memory) error {
	it, err := toReportItem(r)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Put(roleReport, it, dynamo.Name("version").Equal(dynamo.Value(r.Version-1)))
	if mem != nil {
		m := *mem
		m.TeamID = r.TeamID
		tx.Create(dynamo.RoleMemory, memorystore.ToMemoryItem(m))
		tx.Update(dynamo.RoleEpoch, dynamo.Key(dynamo.TeamPK(r.TeamID), dynamo.SKMemEpoch),
			expression.Set(dynamo.Name("team_id"), dynamo.Value(r.TeamID)).Add(dynamo.Name("epoch"), dynamo.Value(1)), expression.ConditionBuilder{})
		for _, a := range append([]string{m.Author}, m.Agents...) {
			tx.Add(dynamo.RoleContext, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(r.TeamID), dynamo.ContextSK(a))}})
		}
	}
	err = tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == roleReport {
			return errors.Join(reports.ErrChanged, err)
		}
		return dynamo.RetryConflict(err, "the report's change conflicted with a concurrent one; try again")
	}
	return err
}
