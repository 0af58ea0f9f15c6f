// Package evaluations is the routing evaluation a team runs on its own
// labelled messages (issue 42, POST /v1/routing/evaluations): each
// message scored by the expert gate as a new conversation's first turn
// would be (TOP_1, the team's default agent as the fallback), without
// asking any model or storing a turn, and the outcome measured at the
// default threshold and at one the team gives: top-1 by agent and skill,
// declines and false declines, a confusion table and every miss with its
// scores. An evaluation is created running (202), announced
// (RoutingEvaluationRequested), run by the routing-evaluator function in
// the background, and kept Retention.
package evaluations

import (
	"context"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The limits of one evaluation (the issue's): at most MaxMessages
// messages, each 1 to expertgate.MaxQuery characters; the request body's
// 64 KiB is the HTTP layer's (httpapi) bound for this route.
const (
	MaxMessages = 200
	MaxBody     = 64 << 10
	// Retention is how long an evaluation is kept (a TTL).
	Retention = 30 * 24 * time.Hour
	// MaxMisses bounds the misses an evaluation lists (every message
	// may be one).
	MaxMisses = MaxMessages
	// scoresPerMiss is how many of the best scores a miss shows.
	scoresPerMiss = 3
	// batch is how many messages are scored at once.
	batch = 8
)

// DetailType is the event that asks for an evaluation to run.
const DetailType = "RoutingEvaluationRequested"

// RequestedEvent is the RoutingEvaluationRequested detail.
type RequestedEvent struct {
	TeamID       string `json:"team_id"`
	EvaluationID string `json:"evaluation_id"`
}

// Statuses of an evaluation.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Message is one labelled message: ExpectedAgent nil (JSON null, or left
// out) for a message nobody should take (the default agent, by fallback).
type Message struct {
	Content       string `json:"content"`
	ExpectedAgent *Slug  `json:"expected_agent"`
	ExpectedSkill string `json:"expected_skill,omitempty"`
}

// Slug is an expected agent's slug. Its JSON null is a value (nobody),
// which the API's strict decoding refuses everywhere else.
type Slug string

// NullIsAValue implements httpapi.Nullable.
func (*Slug) NullIsAValue() {}

// Input is the body of POST /v1/routing/evaluations.
type Input struct {
	Messages []Message `json:"messages"`
	// ConfidenceThreshold is a second threshold to measure at, beside the
	// default (routing.DefaultThreshold).
	ConfidenceThreshold *float64 `json:"confidence_threshold"`
}

// Evaluation is one run and, once completed, its Result.
type Evaluation struct {
	ID          string     `json:"id"`
	TeamID      string     `json:"-"`
	Status      string     `json:"status"`
	Messages    []Message  `json:"messages,omitempty"`
	Count       int        `json:"message_count"`
	Threshold   float64    `json:"threshold"`
	Given       *float64   `json:"confidence_threshold"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Error       string     `json:"error,omitempty"`
	Result      *Result    `json:"result"`
}

// Result is what an evaluation measured.
type Result struct {
	InScope    int `json:"in_scope"`
	OutOfScope int `json:"out_of_scope"`
	// AgentTop1 and SkillTop1: the share of in-scope messages whose
	// expected agent (and skill, among those that name one) ranks first,
	// whatever the threshold.
	AgentTop1 float64 `json:"agent_top1"`
	SkillTop1 float64 `json:"skill_top1"`
	// AtDefault and AtGiven: what a user gets at the default threshold
	// and at the one given (nil when none was).
	AtDefault Outcome  `json:"at_default"`
	AtGiven   *Outcome `json:"at_given"`
	// Confusion counts, at the default threshold, each (expected, routed)
	// pair: agent slugs, "" for a message nobody should take or one
	// declined.
	Confusion []Cell `json:"confusion"`
	Misses    []Miss `json:"misses"`
}

// Outcome is the evaluation at one threshold.
type Outcome struct {
	Threshold float64 `json:"threshold"`
	// Right: the share of in-scope messages the expected agent answered,
	// chosen by the gate (a decline is a miss).
	Right float64 `json:"right"`
	// FalselyDeclined: the share of in-scope messages the default agent
	// answered by fallback.
	FalselyDeclined float64 `json:"falsely_declined"`
	// Declined: the share of out-of-scope messages declined (the default
	// agent by fallback, or the default chosen).
	Declined float64 `json:"declined"`
}

// Cell is one entry of the confusion table.
type Cell struct {
	Expected string `json:"expected"`
	Routed   string `json:"routed"`
	Count    int    `json:"count"`
}

// Miss is a message routed otherwise than expected at the default
// threshold, with the best scores the gate gave.
type Miss struct {
	Index         int     `json:"index"`
	Content       string  `json:"content"`
	ExpectedAgent string  `json:"expected_agent"`
	ExpectedSkill string  `json:"expected_skill,omitempty"`
	Routed        string  `json:"routed"`
	Skill         string  `json:"skill"`
	Declined      bool    `json:"declined"`
	Confidence    float64 `json:"confidence"`
	Scores        []Score `json:"scores"`
}

// Score is one agent's score for a missed message.
type Score struct {
	Agent      string  `json:"agent"`
	Confidence float64 `json:"confidence"`
	Skill      string  `json:"skill"`
}

// Store keeps evaluations (shared/store/evaluationstore).
type Store interface {
	// CreateEvaluation stores a new evaluation (running).
	CreateEvaluation(ctx context.Context, e Evaluation) error
	// GetEvaluation returns one (ENOTFOUND, for another team's too).
	GetEvaluation(ctx context.Context, teamID, id string) (Evaluation, error)
	// ListEvaluations returns the team's, newest first, without their
	// messages and results.
	ListEvaluations(ctx context.Context, teamID string, p paging.Page) ([]Evaluation, string, error)
	// FinishEvaluation records the end of a running evaluation (its
	// status, result or error, completed_at); ECONFLICT when it is no
	// longer running (a redelivered request: done once).
	FinishEvaluation(ctx context.Context, e Evaluation) error
}

// Agents reads the team's active agents and default agent.
type Agents interface {
	ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	DefaultAgent(ctx context.Context, teamID string) (string, error)
}

// Publisher announces events.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service creates, reads and runs evaluations.
type Service struct {
	Store  Store
	Agents Agents
	Gate   expertgate.Gate
	Bus    Publisher
	Now    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Create validates in, stores the evaluation running and announces it.
// EINVALID naming the field.
func (s *Service) Create(ctx context.Context, teamID string, in Input) (Evaluation, error) {
	if err := validate(in); err != nil {
		return Evaluation{}, err
	}
	e := Evaluation{ID: ids.New("reval"), TeamID: teamID, Status: StatusRunning, Messages: in.Messages, Count: len(in.Messages),
		Threshold: routing.DefaultThreshold, Given: in.ConfidenceThreshold, CreatedAt: s.now()}
	for i := range e.Messages {
		e.Messages[i].Content = strings.TrimSpace(e.Messages[i].Content)
	}
	if err := s.Store.CreateEvaluation(ctx, e); err != nil {
		return Evaluation{}, err
	}
	if err := s.Bus.Publish(ctx, DetailType, RequestedEvent{TeamID: teamID, EvaluationID: e.ID}); err != nil {
		// Not run, and never will be: recorded as failed, so a client
		// polling it sees why instead of waiting.
		now := s.now()
		e.Status, e.Error, e.CompletedAt = StatusFailed, "the evaluation could not be started; create it again", &now
		if ferr := s.Store.FinishEvaluation(ctx, e); ferr != nil {
			return Evaluation{}, apperr.Wrap(apperr.EINTERNAL, err, "announcing the evaluation")
		}
		return Evaluation{}, apperr.Wrap(apperr.EINTERNAL, err, "announcing the evaluation")
	}
	return e, nil
}

func validate(in Input) error {
	if len(in.Messages) == 0 || len(in.Messages) > MaxMessages {
		return apperr.Invalid("messages", "messages must hold 1 to %d labelled messages", MaxMessages)
	}
	for i, m := range in.Messages {
		field := "messages[" + itoa(i) + "]"
		c := strings.TrimSpace(m.Content)
		if c == "" || len([]rune(c)) > expertgate.MaxQuery {
			return apperr.Invalid(field+".content", "content must be 1 to %d characters", expertgate.MaxQuery)
		}
		if m.ExpectedAgent != nil && !agents.ValidSlug(string(*m.ExpectedAgent)) {
			return apperr.Invalid(field+".expected_agent", "expected_agent must be an agent's slug, or null for a message nobody should take")
		}
		if m.ExpectedSkill != "" && m.ExpectedAgent == nil {
			return apperr.Invalid(field+".expected_skill", "expected_skill needs an expected_agent")
		}
		if len(m.ExpectedSkill) > 64 {
			return apperr.Invalid(field+".expected_skill", "expected_skill must be at most 64 characters")
		}
	}
	if t := in.ConfidenceThreshold; t != nil && (*t < 0 || *t > 1) {
		return apperr.Invalid("confidence_threshold", "confidence_threshold must be between 0 and 1")
	}
	return nil
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// Get returns one evaluation (ENOTFOUND for an unknown id or another
// team's).
func (s *Service) Get(ctx context.Context, teamID, id string) (Evaluation, error) {
	if !ids.Valid("reval", id) {
		return Evaluation{}, apperr.NotFound("evaluation", id)
	}
	return s.Store.GetEvaluation(ctx, teamID, id)
}

// List returns the team's evaluations, newest first.
func (s *Service) List(ctx context.Context, teamID string, p paging.Page) ([]Evaluation, string, error) {
	return s.Store.ListEvaluations(ctx, teamID, p)
}
