package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// IDPrefix is the prefix of approval ids.
const IDPrefix = "apr"

// NewID is a new approval id (the worker makes it, so a retried
// registration of the same call stores one approval).
func NewID() string { return ids.New(IDPrefix) }

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// ArgumentsValidator checks a call's arguments against its tool's JSON
// Schema (agenttools.ValidateArguments); the error names the field.
type ArgumentsValidator func(tool string, arguments []byte) error

// Service is the approvals API and the approval steps of the delegation
// machine.
type Service struct {
	Store Store
	// Bus publishes ApprovalRequested and ApprovalDecided; nil publishes
	// nothing.
	Bus Publisher
	// Callbacks hands a decision to the execution waiting for it; nil
	// (unit tests) hands nothing.
	Callbacks workflow.Callbacks
	// Validate checks a human's edited arguments; nil accepts any JSON
	// object.
	Validate ArgumentsValidator
	Log      *slog.Logger
	Now      clock.Func
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// PolicyInput is the body of PUT /v1/approval-policy: the whole policy.
type PolicyInput struct {
	Tools               []string `json:"tools"`
	Agents              []string `json:"agents"`
	MinEstimatedCostUSD *float64 `json:"min_estimated_cost_usd"`
	ExpirySeconds       *int     `json:"expiry_seconds"`
	Deciders            []string `json:"deciders"`
}

// Policy returns the team's policy (the zero policy when it set none).
func (s *Service) Policy(ctx context.Context, teamID string) (Policy, error) {
	p, err := s.Store.GetApprovalPolicy(ctx, teamID)
	if err != nil {
		return Policy{}, err
	}
	if p.Tools == nil {
		p.Tools = []string{}
	}
	if p.Agents == nil {
		p.Agents = []string{}
	}
	if p.Deciders == nil {
		// A policy stored before deciders existed names none.
		p.Deciders = []string{}
	}
	p.ExpirySeconds = p.Expiry()
	return p, nil
}

// PutPolicy replaces the team's policy. EINVALID names the field: an
// unknown tool, a malformed slug, a negative cost, an expiry out of
// bounds.
func (s *Service) PutPolicy(ctx context.Context, teamID, by string, in PolicyInput) (Policy, error) {
	p := Policy{Tools: []string{}, Agents: []string{}, Deciders: []string{}, MinEstimatedCostUSD: in.MinEstimatedCostUSD, ExpirySeconds: DefaultExpirySeconds, UpdatedBy: by}
	if len(in.Tools) > MaxListed {
		return Policy{}, apperr.Invalid("tools", "at most %d tools", MaxListed)
	}
	for i, t := range in.Tools {
		if !catalog.Known(t) {
			return Policy{}, apperr.Invalid(fmt.Sprintf("tools[%d]", i), "unknown tool %q; tools are %s", t, strings.Join(catalog.Names(), ", "))
		}
		if !slices.Contains(p.Tools, t) {
			p.Tools = append(p.Tools, t)
		}
	}
	if len(in.Agents) > MaxListed {
		return Policy{}, apperr.Invalid("agents", "at most %d agents", MaxListed)
	}
	for i, a := range in.Agents {
		if !agents.ValidSlug(a) {
			return Policy{}, apperr.Invalid(fmt.Sprintf("agents[%d]", i), "%q is not an agent slug", a)
		}
		if !slices.Contains(p.Agents, a) {
			p.Agents = append(p.Agents, a)
		}
	}
	if len(in.Deciders) > MaxListed {
		return Policy{}, apperr.Invalid("deciders", "at most %d deciders", MaxListed)
	}
	for i, u := range in.Deciders {
		if !authctx.ValidUserID(u) {
			return Policy{}, apperr.Invalid(fmt.Sprintf("deciders[%d]", i), "%q is not a user id of 1 to %d safe characters", u, authctx.MaxUserID)
		}
		if !slices.Contains(p.Deciders, u) {
			p.Deciders = append(p.Deciders, u)
		}
	}
	if c := in.MinEstimatedCostUSD; c != nil && (*c < 0 || *c > 1000) {
		return Policy{}, apperr.Invalid("min_estimated_cost_usd", "must be between 0 and 1000")
	}
	if e := in.ExpirySeconds; e != nil {
		if *e < MinExpirySeconds || *e > MaxExpirySeconds {
			return Policy{}, apperr.Invalid("expiry_seconds", "must be between %d and %d", MinExpirySeconds, MaxExpirySeconds)
		}
		p.ExpirySeconds = *e
	}
	now := s.Now.UTC()
	p.UpdatedAt = &now
	if err := s.Store.PutApprovalPolicy(ctx, teamID, p); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Get returns one approval; ENOTFOUND for an id that is not the team's,
// EFORBIDDEN for a member the policy does not name (mayDecide).
func (s *Service) Get(ctx context.Context, teamID, id string) (Approval, error) {
	if err := s.mayDecide(ctx, teamID); err != nil {
		return Approval{}, err
	}
	return s.get(ctx, teamID, id)
}

func (s *Service) get(ctx context.Context, teamID, id string) (Approval, error) {
	if !ids.Valid(IDPrefix, id) {
		return Approval{}, apperr.NotFound("approval", id)
	}
	return s.Store.GetApproval(ctx, teamID, id)
}

// List lists the team's approvals, newest first: the pending ones unless
// f names another status ("all": every status). EFORBIDDEN for a member
// the policy does not name.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Approval, string, error) {
	if err := s.mayDecide(ctx, teamID); err != nil {
		return nil, "", err
	}
	switch f.Status {
	case "":
		f.Status = Pending
	case "all":
		f.Status = ""
	default:
		if !slices.Contains(Statuses, f.Status) {
			return nil, "", apperr.Invalid("status", "status must be one of pending, approved, rejected, expired, canceled, all")
		}
	}
	return s.Store.ListApprovals(ctx, teamID, f, p)
}

// DecideInput is the body of POST /v1/approvals/{id}.
type DecideInput struct {
	Decision string `json:"decision"`
	// Arguments replace the model's when approving (validated against
	// the tool's schema).
	Arguments json.RawMessage `json:"arguments"`
	Reason    string          `json:"reason"`
}

// Decide records a human's decision once and hands it to the execution
// waiting for it. EINVALID names the field (decision, arguments with the
// tool's field, reason); ECONFLICT (reason AlreadyDecided, with the
// status) when it was decided, expired, or canceled with its task;
// ENOTFOUND; EFORBIDDEN (reason ApprovalForbidden) for a member the policy
// does not name, before anything is read or written.
func (s *Service) Decide(ctx context.Context, teamID, id, by string, in DecideInput) (Approval, error) {
	if err := s.mayDecide(ctx, teamID); err != nil {
		return Approval{}, err
	}
	var status Status
	switch in.Decision {
	case workflow.DecisionApprove:
		status = Approved
	case workflow.DecisionReject:
		status = Rejected
	default:
		return Approval{}, apperr.Invalid("decision", "decision must be approve or reject")
	}
	if utf8.RuneCountInString(in.Reason) > MaxReason {
		return Approval{}, apperr.Invalid("reason", "at most %d characters", MaxReason)
	}
	args := bytes.TrimSpace(in.Arguments)
	if string(args) == "null" {
		args = nil
	}
	if len(args) > 0 {
		if status != Approved {
			return Approval{}, apperr.Invalid("arguments", "arguments can only be given when approving")
		}
		if len(args) > MaxArguments {
			return Approval{}, apperr.Invalid("arguments", "at most %d bytes", MaxArguments)
		}
		if args[0] != '{' {
			return Approval{}, apperr.Invalid("arguments", "arguments must be a JSON object")
		}
	}
	a, err := s.get(ctx, teamID, id)
	if err != nil {
		return Approval{}, err
	}
	if a.Status != Pending {
		return Approval{}, decided(a)
	}
	if !s.Now.UTC().Before(a.ExpiresAt) {
		// Its wait has timed out; the machine's expiry step records it.
		a.Status = Expired
		return Approval{}, decided(a)
	}
	if len(args) > 0 && s.Validate != nil {
		if err := s.Validate(a.Tool, args); err != nil {
			return Approval{}, err
		}
	}
	got, err := s.Store.DecideApproval(ctx, teamID, id, Decision{Status: status, Arguments: args, Reason: strings.TrimSpace(in.Reason), By: by,
		UserID: authctx.CallerOf(ctx).UserID, At: s.Now.UTC()})
	if err != nil {
		return Approval{}, err
	}
	s.decidedEvent(ctx, got)
	s.send(ctx, got)
	return got, nil
}

// mayDecide refuses a member the team's policy does not name among its
// deciders (EFORBIDDEN, reason ApprovalForbidden): approvals are a team's
// business, which a key and an admin run and a member joins only when
// named. Everyone else passes without a read.
func (s *Service) mayDecide(ctx context.Context, teamID string) error {
	c := authctx.CallerOf(ctx)
	if !c.Member() {
		return nil
	}
	p, err := s.Store.GetApprovalPolicy(ctx, teamID)
	if err != nil {
		return err
	}
	if !slices.Contains(p.Deciders, c.UserID) {
		return apperr.New(apperr.EFORBIDDEN, "the approval policy does not name %s among its deciders", c.UserID).WithReason("ApprovalForbidden")
	}
	return nil
}

func decided(a Approval) error {
	return apperr.New(apperr.ECONFLICT, "approval %s is already %s", a.ID, a.Status).
		WithReason("AlreadyDecided").WithDetail("status", string(a.Status))
}

// Outcome is what the waiting execution gets for a.
func Outcome(a Approval) workflow.ApprovalOutcome {
	o := workflow.ApprovalOutcome{ApprovalID: a.ID, Reason: a.Reason}
	switch a.Status {
	case Approved:
		o.Decision, o.Arguments = workflow.DecisionApprove, a.Arguments
		if len(a.ApprovedArguments) > 0 {
			o.Arguments = a.ApprovedArguments
		}
	case Rejected:
		o.Decision = workflow.DecisionReject
	default:
		// Expired, or canceled with its task (whose execution was
		// stopped; a late registration hands it a rejection).
		o.Decision = workflow.DecisionExpire
	}
	return o
}

// sendAttempts bounds the sends of one decision (throttling, a blip).
const sendAttempts = 3

// send hands a decided approval to its waiting execution. A failure is
// logged, not undone: the decision stands, and the execution reads it
// when its wait times out (Expire returns the decision it finds).
func (s *Service) send(ctx context.Context, a Approval) {
	if s.Callbacks == nil || a.Token == "" {
		return
	}
	err := backoff.Retry(ctx, sendAttempts, func(ctx context.Context) error {
		return s.Callbacks.Succeed(ctx, a.Token, Outcome(a))
	})
	if err == nil {
		return
	}
	s.log().WarnContext(ctx, "handing the decision to the waiting task failed; it reads it when its wait ends", "approval_id", a.ID, "task_id", a.TaskID, "error", err.Error())
}

// ApprovalRequested is the event of a new approval.
type ApprovalRequested struct {
	TeamID           string   `json:"team_id"`
	ApprovalID       string   `json:"approval_id"`
	Tool             string   `json:"tool"`
	Agent            string   `json:"agent"`
	TaskID           string   `json:"task_id,omitempty"`
	ConversationID   string   `json:"conversation_id,omitempty"`
	Reasons          []string `json:"reasons"`
	EstimatedCostUSD float64  `json:"estimated_cost_usd"`
	ExpiresAt        string   `json:"expires_at"`
}

// ApprovalDecided is the event of an approval decided or expired.
type ApprovalDecided struct {
	TeamID          string `json:"team_id"`
	ApprovalID      string `json:"approval_id"`
	Tool            string `json:"tool"`
	Agent           string `json:"agent"`
	TaskID          string `json:"task_id,omitempty"`
	ConversationID  string `json:"conversation_id,omitempty"`
	Status          Status `json:"status"`
	ArgumentsEdited bool   `json:"arguments_edited"`
	DecidedBy       string `json:"decided_by"`
	Reason          string `json:"reason,omitempty"`
}

func (s *Service) publish(ctx context.Context, detailType string, detail any) {
	if s.Bus == nil {
		return
	}
	if err := s.Bus.Publish(ctx, detailType, detail); err != nil {
		s.log().ErrorContext(ctx, "publish "+detailType, "error", err.Error())
	}
}

func (s *Service) decidedEvent(ctx context.Context, a Approval) {
	s.publish(ctx, "ApprovalDecided", ApprovalDecided{TeamID: a.TeamID, ApprovalID: a.ID, Tool: a.Tool, Agent: a.Agent, TaskID: a.TaskID,
		ConversationID: a.ConversationID, Status: a.Status, ArgumentsEdited: len(a.ApprovedArguments) > 0, DecidedBy: a.DecidedBy, Reason: a.Reason})
}

// Request stores the approval of call w of the task's execution with its
// task token (a retry replaces the token) and announces it. An approval
// decided before this registration (a retried step) is handed to the new
// token at once.
func (s *Service) Request(ctx context.Context, teamID, taskID, executionARN, token string, w workflow.ApprovalWait) (Approval, error) {
	if !ids.Valid(IDPrefix, w.ApprovalID) || w.Tool == "" || w.Agent == "" {
		return Approval{}, workflow.InvalidTask{Msg: "request_approval needs an approval id, a tool and an agent"}
	}
	args := bytes.TrimSpace(w.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	expiry := w.TimeoutSeconds
	if expiry <= 0 {
		expiry = DefaultExpirySeconds
	}
	now := s.Now.UTC()
	a := Approval{
		TeamID: teamID, ID: w.ApprovalID, Status: Pending, Tool: w.Tool, Arguments: args, Agent: w.Agent, TaskID: taskID,
		ConversationID: w.ConversationID, CallID: w.CallID, Reasons: w.Reasons, EstimatedCostUSD: w.EstimatedCostUSD, CreatedAt: now,
		ExpiresAt: now.Add(time.Duration(expiry) * time.Second), Token: token, ExecutionARN: executionARN,
	}
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	got, created, err := s.Store.RegisterApproval(ctx, a)
	if err != nil {
		return Approval{}, err
	}
	if created {
		s.publish(ctx, "ApprovalRequested", ApprovalRequested{TeamID: teamID, ApprovalID: got.ID, Tool: got.Tool, Agent: got.Agent,
			TaskID: got.TaskID, ConversationID: got.ConversationID, Reasons: got.Reasons, EstimatedCostUSD: got.EstimatedCostUSD, ExpiresAt: got.ExpiresAt.Format(time.RFC3339)})
	}
	if got.Status != Pending {
		got.Token = token
		s.send(ctx, got)
	}
	return got, nil
}

// Expire ends a pending approval whose wait timed out as expired (a
// rejection) and returns the outcome the task resumes with: the expiry,
// or the decision a human made meanwhile.
func (s *Service) Expire(ctx context.Context, teamID, id string) (workflow.ApprovalOutcome, error) {
	got, err := s.Store.DecideApproval(ctx, teamID, id, Decision{Status: Expired, By: "expiry", Reason: "nobody decided before the approval expired", At: s.Now.UTC()})
	if apperr.Code(err) == apperr.ECONFLICT {
		cur, gerr := s.Store.GetApproval(ctx, teamID, id)
		if gerr != nil {
			return workflow.ApprovalOutcome{}, gerr
		}
		return Outcome(cur), nil
	}
	if err != nil {
		return workflow.ApprovalOutcome{}, err
	}
	s.decidedEvent(ctx, got)
	return Outcome(got), nil
}

// Steps wraps next (the delegation machine's task steps) with the
// approval states' actions: request_approval and expire_approval run
// here, every other action in next.
func (s *Service) Steps(next workflow.Step) workflow.Step {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in workflow.ApprovalStep
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, workflow.InvalidTask{Msg: "unreadable step payload: " + err.Error()}
		}
		switch in.Action {
		case workflow.ActionRequestApproval, workflow.ActionExpireApproval:
		default:
			return next(ctx, raw)
		}
		ctx = logctx.With(ctx, "team_id", in.TeamID, "task_id", in.TaskID, "step", in.Action)
		if in.Approval == nil {
			return nil, workflow.InvalidTask{Msg: in.Action + " needs an approval"}
		}
		if in.Action == workflow.ActionExpireApproval {
			out, err := s.Expire(ctx, in.TeamID, in.Approval.ApprovalID)
			if apperr.Is(err, apperr.ENOTFOUND) {
				return nil, workflow.InvalidTask{Msg: err.Error()}
			}
			return out, err
		}
		if in.TaskToken == "" {
			return nil, workflow.InvalidTask{Msg: "request_approval needs a task token"}
		}
		a, err := s.Request(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.TaskToken, *in.Approval)
		if err != nil {
			return nil, err
		}
		return map[string]any{"approval_id": a.ID, "status": a.Status}, nil
	}
}
