package sessions

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// ParticipantInput is one participant of a new session.
type ParticipantInput struct {
	Agent string `json:"agent"`
	Role  string `json:"role"`
	Stage int    `json:"stage"`
}

// CreateInput is a new session.
type CreateInput struct {
	Pattern            Pattern            `json:"pattern"`
	Lead               string             `json:"lead"`
	Goal               string             `json:"goal"`
	Context            string             `json:"context"`
	Participants       []ParticipantInput `json:"participants"`
	ConversationID     string             `json:"conversation_id"`
	MaxDurationSeconds *int               `json:"max_duration_seconds"`
	MaxCostUSD         *float64           `json:"max_cost_usd"`
	MaxRounds          *int               `json:"max_rounds"`
	Approval           string             `json:"approval"`
}

// Limits of a new session's fields.
const (
	maxGoal         = 4000
	maxContext      = 20000
	maxParticipants = 10
)

func (in CreateInput) validate() error {
	if !contains(Patterns, in.Pattern) {
		return apperr.Invalid("pattern", "pattern must be one of supervisor_worker, pipeline, peer_review, brainstorm, consensus")
	}
	if !agents.ValidSlug(in.Lead) {
		return apperr.Invalid("lead", "lead must be an agent slug")
	}
	if strings.TrimSpace(in.Goal) == "" || utf8.RuneCountInString(in.Goal) > maxGoal {
		return apperr.Invalid("goal", "goal is required and at most %d characters", maxGoal)
	}
	if utf8.RuneCountInString(in.Context) > maxContext {
		return apperr.Invalid("context", "context is at most %d characters", maxContext)
	}
	if d := in.MaxDurationSeconds; d != nil && (*d < 1 || *d > MaxDurationSeconds) {
		return apperr.Invalid("max_duration_seconds", "max_duration_seconds must be between 1 and %d", MaxDurationSeconds)
	}
	if c := in.MaxCostUSD; c != nil && (*c <= 0 || *c > MaxCostUSD) {
		return apperr.Invalid("max_cost_usd", "max_cost_usd must be above 0 and at most %.2f", MaxCostUSD)
	}
	if r := in.MaxRounds; r != nil && (*r < 1 || *r > MaxRounds) {
		return apperr.Invalid("max_rounds", "max_rounds must be between 1 and %d", MaxRounds)
	}
	if in.Approval != "" && in.Approval != ApprovalNone && in.Approval != ApprovalFinal {
		return apperr.Invalid("approval", "approval must be none or final")
	}
	if len(in.Participants) > maxParticipants {
		return apperr.Invalid("participants", "at most %d participants", maxParticipants)
	}
	seen := map[string]bool{}
	for i, p := range in.Participants {
		field := fmt.Sprintf("participants[%d]", i)
		if !agents.ValidSlug(p.Agent) {
			return apperr.Invalid(field+".agent", "agent must be an agent slug")
		}
		if p.Agent == in.Lead {
			return apperr.Invalid(field+".agent", "the lead %q leads; it is not also a participant", p.Agent)
		}
		if seen[p.Agent] {
			return apperr.Invalid(field+".agent", "agent %q is listed twice", p.Agent)
		}
		seen[p.Agent] = true
		if p.Role != RoleWorker && p.Role != RoleReviewer && p.Role != RoleContributor {
			return apperr.Invalid(field+".role", "role must be worker, reviewer or contributor")
		}
		if p.Stage < 0 {
			return apperr.Invalid(field+".stage", "stage must be positive")
		}
	}
	return fitsPattern(in.Pattern, in.Participants)
}

// fitsPattern checks the participants against the pattern: peer review
// needs exactly one worker and at least one reviewer, a pipeline stages
// 1..n without gaps, the others at least two participants.
func fitsPattern(p Pattern, parts []ParticipantInput) error {
	roles := map[string]int{}
	for _, x := range parts {
		roles[x.Role]++
	}
	switch p {
	case PeerReview:
		if roles[RoleWorker] != 1 || roles[RoleReviewer] < 1 || len(parts) != roles[RoleWorker]+roles[RoleReviewer] {
			return apperr.Invalid("participants", "peer_review needs exactly one worker and at least one reviewer")
		}
	case Pipeline:
		stages := make([]int, 0, len(parts))
		for _, x := range parts {
			stages = append(stages, x.Stage)
		}
		sort.Ints(stages)
		for i, st := range stages {
			if st != i+1 {
				return apperr.Invalid("participants", "pipeline stages must be 1..%d without gaps or repeats", len(parts))
			}
		}
		if len(parts) < 2 {
			return apperr.Invalid("participants", "a pipeline needs at least two stages")
		}
	default:
		if len(parts) < 2 {
			return apperr.Invalid("participants", "%s needs at least two participants", p)
		}
	}
	return nil
}

// Create validates and records a new session (planning) and starts its
// execution, named by the session id. by is who asked (a key id, or an
// agent for start_collaboration).
func (s *Service) Create(ctx context.Context, teamID, by string, in CreateInput) (Session, error) {
	if err := s.enabled(); err != nil {
		return Session{}, err
	}
	if err := in.validate(); err != nil {
		return Session{}, err
	}
	if err := s.checkAgents(ctx, teamID, in); err != nil {
		return Session{}, err
	}
	if in.ConversationID != "" {
		// Another team's conversation is as unknown as one that does not
		// exist: 404, with nothing written and no execution started.
		if !ids.Valid("conv", in.ConversationID) {
			return Session{}, apperr.NotFound("conversation", in.ConversationID)
		}
		if s.Conversations != nil {
			if err := s.Conversations.CheckConversation(ctx, teamID, in.ConversationID); err != nil {
				return Session{}, err
			}
		}
	}
	if id, err := idempotency.Stored(ctx, s.Store, teamID, RefKind); err != nil || id != "" {
		return s.replay(ctx, teamID, id, err)
	}
	ses := in.newSession(teamID, by, s.Now.UTC())
	ses.TraceID = tracing.TraceID(ctx)
	ses.UserID = authctx.CallerOf(ctx).UserID
	// The stream starts with the session: its first SessionStatusChanged
	// (planning) is written with it.
	if err := WithEvents(Session{}, &ses, ses.CreatedAt); err != nil {
		return Session{}, apperr.Wrap(apperr.EINTERNAL, err, "session events")
	}
	if err := s.Store.CreateSession(ctx, ses); err != nil {
		if id, ok := idempotency.ReplayedID(err); ok {
			return s.replay(ctx, teamID, id, nil)
		}
		return Session{}, err
	}
	s.publishStatus(ctx, ses, "")
	if s.Workflows == nil {
		return s.decorate(ses), nil
	}
	arn, err := s.Workflows.Start(ctx, string(ses.Pattern), ExecutionName(ses.ID, 1), Payload(ses, 1))
	if err != nil {
		// The session is stored: it is answered as created (planning), and
		// the reconciler starts its execution, by the same name, within
		// StartGrace and a sweep (Reconcile). An error here would make a
		// client create it twice, and a failed session it did not ask for.
		s.log().ErrorContext(ctx, "start session execution; the reconciler will start it", "session_id", ses.ID, "error", err.Error())
		return s.decorate(ses), nil
	}
	ses.ExecutionARN = arn
	return s.decorate(ses), nil
}

func (s *Service) checkAgents(ctx context.Context, teamID string, in CreateInput) error {
	check := func(field, slug string) error {
		a, err := s.Store.GetAgent(ctx, teamID, slug)
		if apperr.Is(err, apperr.ENOTFOUND) {
			return apperr.Invalid(field, "agent %q not found", slug)
		}
		if err != nil {
			return err
		}
		if a.Status != agents.StatusActive {
			return apperr.Invalid(field, "agent %q is %s", slug, a.Status).WithReason("AgentUnavailable")
		}
		return nil
	}
	if err := check("lead", in.Lead); err != nil {
		return err
	}
	for i, p := range in.Participants {
		if err := check(fmt.Sprintf("participants[%d].agent", i), p.Agent); err != nil {
			return err
		}
	}
	return nil
}

func (in CreateInput) newSession(teamID, by string, now time.Time) Session {
	ses := Session{
		TeamID: teamID, ID: ids.New("ses"), ConversationID: in.ConversationID, Pattern: in.Pattern, Lead: in.Lead,
		Goal: strings.TrimSpace(in.Goal), Context: in.Context, MaxDurationSeconds: MaxDurationSeconds,
		MaxCostUSD: MaxCostUSD, MaxRounds: MaxRounds, Approval: ApprovalNone, Status: Planning,
		StageOutputs: []StageOutput{}, Runs: 1, CreatedBy: by, Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	if in.Approval != "" {
		ses.Approval = in.Approval
	}
	if in.MaxDurationSeconds != nil {
		ses.MaxDurationSeconds = *in.MaxDurationSeconds
	}
	if in.MaxCostUSD != nil {
		ses.MaxCostUSD = *in.MaxCostUSD
	}
	if in.MaxRounds != nil {
		ses.MaxRounds = *in.MaxRounds
	}
	for _, p := range in.Participants {
		ses.Participants = append(ses.Participants, Participant{Agent: p.Agent, Role: p.Role, Stage: p.Stage, Status: PartWaiting})
	}
	if in.Pattern == Pipeline {
		// Stages are 1..n without repeats (validate), so `<` and `<=` sort
		// alike: a mutation testing survivor that changes nothing.
		sort.SliceStable(ses.Participants, func(i, j int) bool { return ses.Participants[i].Stage < ses.Participants[j].Stage })
	}
	// The deadline is set when the execution begins; until then the
	// sweeper finds the session by its creation plus the duration.
	d := now.Add(durationOf(ses.MaxDurationSeconds))
	ses.Deadline = &d
	return ses
}

// Input is a session machine's input: what every state needs to address
// the session. The rest is read from the session item by each step.
type Input struct {
	TeamID    string `json:"team_id"`
	SessionID string `json:"session_id"`
	Run       int    `json:"run"`
	Approval  string `json:"approval"`
}

// Payload is the input of the session's run.
func Payload(s Session, run int) Input {
	return Input{TeamID: s.TeamID, SessionID: s.ID, Run: run, Approval: s.Approval}
}

// RefKind is the kind of a session's idempotency reference: POST
// /v1/sessions scopes its request's key to it, not the sessions a turn's
// tools start.
const RefKind = "session"

// replay answers a create sent again under the Idempotency-Key of session
// id (its answer was lost): that session as it is now; its execution was
// started with it, or is by the reconciler.
func (s *Service) replay(ctx context.Context, teamID, id string, err error) (Session, error) {
	if err != nil {
		return Session{}, err
	}
	return s.Get(ctx, teamID, id)
}
