// Package reports is the report system: structured deliverables an agent
// asks another agent for (a code review, a security audit, a comparison…)
// from eight templates. A report is a task of the task model (type review
// or analyze) created through the task service, so every delegation limit,
// budget, timeout, retry and dead-letter rule holds for it; what the report
// adds is the template in the task's instructions, the model tier its
// complexity asks for, and the check of the answer against the template.
//
// The check runs twice, with the same code (Check): in the worker, which
// asks the author for one revision of exactly the sections that are missing
// (the agenttools adapter plugs it into the worker), and when the task ends,
// when the report-finalizer function (TaskStatusChanged → rule → SQS)
// parses the final answer into sections, marks the report completed or
// failed (MissingSections), and stores a completed report as a procedural
// memory of its author shared with the agent that asked for it.
package reports

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Status is a report's state. It follows its task until the task ends;
// a completed task's report is completed or, when its answer does not
// follow the template, failed.
type Status string

// Statuses.
const (
	Queued    Status = "queued"
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
	TimedOut  Status = "timed_out"
)

// Statuses lists every status, for validation.
var Statuses = []Status{Queued, Running, Completed, Failed, Canceled, TimedOut}

// Terminal reports whether s never changes again.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Canceled || s == TimedOut
}

// Reasons a report ends other than completed (the report's reason field).
const (
	// ReasonMissingSections: required sections were still missing after
	// the one revision.
	ReasonMissingSections = "MissingSections"
	// ReasonInvalidSections: a json report's sections still did not match
	// the template's schema after the one revision.
	ReasonInvalidSections = "InvalidSections"
	// ReasonTaskEnded: the report's task failed, timed out or was
	// canceled; the report's error is the task's.
	ReasonTaskEnded = "TaskEnded"
)

// DetailType is the event a report that ends publishes.
const DetailType = "ReportFinished"

// Limits of a request.
const (
	// MaxSections is the default and the most sections a report may have.
	MaxSections = 10
	maxTitle    = 500
	// maxParams bounds the parameters as JSON, so the instructions stay
	// within the task's limit.
	maxParams = 8000
)

// Report is one requested report.
type Report struct {
	TeamID string `json:"-"`
	ID     string `json:"id"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	// To is the author (the task's assignee); From the agent that asked,
	// if an agent did. RequestedBy is who made the request (an agent or
	// the API key's user).
	To             string         `json:"to"`
	From           string         `json:"from,omitempty"`
	RequestedBy    tasks.Creator  `json:"requested_by"`
	UserID         string         `json:"user_id,omitempty"` // the person it was requested for (its task's)
	ConversationID string         `json:"conversation_id,omitempty"`
	ParentTaskID   string         `json:"parent_task_id,omitempty"`
	Parameters     map[string]any `json:"parameters"`
	Format         string         `json:"format"`
	MaxSections    int            `json:"max_sections"`
	Complexity     string         `json:"complexity"`
	ModelTier      string         `json:"model_tier"`
	TaskID         string         `json:"task_id"`
	Status         Status         `json:"status"`
	Sections       []Section      `json:"sections"`
	// MissingSections are the required sections the final answer lacked.
	MissingSections []string       `json:"missing_sections"`
	InvalidSections []SectionError `json:"invalid_sections,omitempty"`
	// DroppedSections were past max_sections and left out.
	DroppedSections []string `json:"dropped_sections,omitempty"`
	// Revisions is how many revisions the author was asked for (0 or 1).
	Revisions int    `json:"revisions"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	// MemoryID is the procedural memory a completed report became.
	MemoryID    string     `json:"memory_id,omitempty"`
	TokensUsed  int        `json:"tokens_used"`
	CostUSD     float64    `json:"cost_usd"`
	Version     int        `json:"version"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// Filter narrows a listing.
type Filter struct {
	Type   string
	To     string
	From   string
	Status Status
	UserID string // the person it was requested for: a member's own
}

// ErrChanged is SaveReport finding the report changed since it was read.
var ErrChanged = errors.New("the report changed since it was read")

// Store persists reports.
type Store interface {
	// CreateReport stores a new report.
	CreateReport(ctx context.Context, r Report) error
	// GetReport returns ENOTFOUND for a report not in the team.
	GetReport(ctx context.Context, teamID, id string) (Report, error)
	// ListReports returns reports newest first.
	ListReports(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Report, string, error)
	// SaveReport writes r if the stored report is still at version
	// r.Version-1 (else ErrChanged). With mem it creates the memory and
	// drops the cached memory contexts of its author and the agents it
	// names in the same transaction, so the memory and the caches' end
	// commit together.
	SaveReport(ctx context.Context, r Report, mem *memory.Memory) error
}

// ConversationReader finds a team's conversation (ENOTFOUND otherwise).
type ConversationReader interface {
	GetConversation(ctx context.Context, teamID, id string) (conversations.Conversation, error)
}

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Finished is the ReportFinished detail.
type Finished struct {
	TeamID          string   `json:"team_id"`
	ReportID        string   `json:"report_id"`
	TaskID          string   `json:"task_id"`
	Type            string   `json:"type"`
	Author          string   `json:"author"`
	RequestedBy     string   `json:"requested_by,omitempty"`
	Status          Status   `json:"status"`
	Reason          string   `json:"reason,omitempty"`
	MissingSections []string `json:"missing_sections"`
	MemoryID        string   `json:"memory_id,omitempty"`
	TokensUsed      int      `json:"tokens_used"`
	CostUSD         float64  `json:"cost_usd"`
	// ConversationID is the conversation the report is posted into (the
	// result-poster function), when it was requested from one.
	ConversationID string `json:"conversation_id,omitempty"`
}
