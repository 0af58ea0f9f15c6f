package plans

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// ReportRequester requests reports (reports.Service).
type ReportRequester interface {
	Request(ctx context.Context, teamID string, creator tasks.Creator, in reports.RequestInput) (reports.Report, error)
}

// Publisher puts the plan's events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service runs plans: Start from a chat turn, the machine's steps, reads
// and cancel for the API.
type Service struct {
	Store Store
	Tasks *tasks.Service
	// Reports requests a report step's report (reports.Service); nil
	// fails report steps.
	Reports   ReportRequester
	Model     models.Model
	Workflows workflow.Starter
	Callbacks workflow.Callbacks
	Bus       Publisher
	Log       *slog.Logger
	Now       clock.Func
}

// Start records a validated plan and starts its machine: the root task
// (the lead's, linked to the plan) first, then the plan, then the
// execution named by the plan id. A plan whose machine cannot start is
// failed at once (its root with it), so nothing waits for it.
func (s *Service) Start(ctx context.Context, teamID, conversationID, lead, message, trigger string, ep ExecutionPlan) (Plan, error) {
	now := s.Now.UTC()
	p := Plan{TeamID: teamID, ID: ids.New("plan"), ConversationID: conversationID, Lead: lead, Message: message,
		Reasoning: ep.Reasoning, Trigger: trigger, Status: Running, Version: 1, CreatedAt: now, UpdatedAt: now, UserID: authctx.CallerOf(ctx).UserID,
		TraceID: tracing.TraceID(ctx)}
	for _, st := range ep.Steps {
		kind, agent, skill, _ := ParseTarget(st.Target)
		if kind != KindSkill {
			skill = ""
		}
		state := StepState{Step: st, Agent: cmp.Or(st.writer, agent), Skill: skill, Report: st.report, Status: StepPending}
		p.Steps = append(p.Steps, state)
	}
	sort.Slice(p.Steps, func(i, j int) bool { return p.Steps[i].StepID < p.Steps[j].StepID })
	root, err := s.Tasks.Create(ctx, teamID, tasks.Creator{Type: "user", ID: "plan:" + p.ID}, tasks.CreateInput{
		Assignee: lead, Type: "plan", Title: "Plan: " + clip.Clip(oneLine(message), 400), Instructions: message, PlanID: p.ID,
	}, false)
	if err != nil {
		return Plan{}, err
	}
	p.RootTaskID = root.ID
	// The stream starts with the plan: PlanStarted is written with it.
	if err := WithEvents(Plan{}, &p, now); err != nil {
		s.cancelRoot(ctx, p, "the plan could not be recorded")
		return Plan{}, apperr.Wrap(apperr.EINTERNAL, err, "plan events")
	}
	if err := s.Store.CreatePlan(ctx, p); err != nil {
		s.cancelRoot(ctx, p, "the plan could not be recorded")
		return Plan{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	_, err = s.Workflows.Start(sctx, workflow.PlanMachine, p.ID, workflow.PlanStepInput{TeamID: teamID, PlanID: p.ID})
	cancel()
	if err != nil {
		// The plan is stored: it is answered as started, and the sweep
		// starts its execution, by the same name, within StartGrace and a
		// minute (Sweep). Failing it here would fail a plan whose
		// execution may have started (an unknown outcome).
		s.Log.ErrorContext(ctx, "start plan execution; the sweep will start it", "plan_id", p.ID, "error", err.Error())
	}
	s.announce(ctx, p)
	return p, nil
}

// Get returns a plan (ENOTFOUND).
func (s *Service) Get(ctx context.Context, teamID, id string) (Plan, error) {
	if !ids.Valid("plan", id) {
		return Plan{}, apperr.NotFound("plan", id)
	}
	return s.Store.GetPlan(ctx, teamID, id)
}

// List returns the team's plans, newest first; with a userID, the plans
// that person's turns started only (a member's listing).
func (s *Service) List(ctx context.Context, teamID, userID string, pg paging.Page) ([]Plan, string, error) {
	return s.Store.ListPlans(ctx, teamID, userID, pg)
}

// Cancel ends a running plan cancelled: its execution is stopped, its
// running steps and its root cancelled (their slots given back).
func (s *Service) Cancel(ctx context.Context, teamID, id, by string) (Plan, error) {
	p, err := s.Get(ctx, teamID, id)
	if err != nil {
		return Plan{}, err
	}
	if p.Status.Terminal() {
		return Plan{}, apperr.New(apperr.ECONFLICT, "cannot cancel a plan that is %s", p.Status).WithReason("InvalidTransition").WithDetail("status", string(p.Status))
	}
	// Ended first: a step's end that wakes the execution now finds the
	// plan cancelled and the execution ends on its own (Superseded); the
	// stop after the steps' cancels is for an execution still elsewhere.
	// Its PlanCompleted says so ("The plan was cancelled by …":
	// completedSynthesis).
	p, _, err = s.end(ctx, teamID, id, Cancelled, "cancelled by "+by)
	if err != nil {
		return Plan{}, err
	}
	for _, st := range p.Steps {
		if st.TaskID != "" && (st.Status == StepRunning) {
			_, _ = s.Tasks.Cancel(ctx, teamID, st.TaskID, by, "the plan was cancelled")
		}
	}
	_, _ = s.Tasks.Cancel(ctx, teamID, p.RootTaskID, by, "the plan was cancelled")
	_, _ = s.Tasks.ReleaseTickets(ctx, teamID, p.ID+"#")
	if s.Workflows != nil && p.ExecutionARN != "" {
		if err := s.Workflows.Stop(ctx, p.ExecutionARN, "cancelled by "+by); err != nil {
			s.Log.WarnContext(ctx, "stop plan execution", "plan_id", p.ID, "error", err.Error())
		}
	}
	return p, nil
}

// update is the read–change–conditional-write loop of every plan change;
// errSkip leaves the plan as it is. The events the change tells of
// (changeEvents) are written on the plan's stream in the same write, and
// published on the bus once it is stored.
func (s *Service) update(ctx context.Context, teamID, id string, change func(p *Plan) error) (Plan, error) {
	for range 10 {
		p, err := s.Store.GetPlan(ctx, teamID, id)
		if err != nil {
			return Plan{}, err
		}
		before := p
		p.Steps = append([]StepState(nil), before.Steps...)
		if err := change(&p); err != nil {
			if errors.Is(err, errSkip) {
				return before, nil
			}
			return Plan{}, err
		}
		now := s.Now.UTC()
		p.Version, p.UpdatedAt = before.Version+1, now
		if p.Status.Terminal() && !before.Status.Terminal() {
			p.CompletedAt = &now
		}
		if err := WithEvents(before, &p, now); err != nil {
			return Plan{}, apperr.Wrap(apperr.EINTERNAL, err, "plan events")
		}
		err = s.Store.PutPlan(ctx, p)
		if errors.Is(err, ErrChanged) {
			continue
		}
		if err == nil {
			s.announce(ctx, p)
		}
		return p, err
	}
	return Plan{}, apperr.New(apperr.ECONFLICT, "plan %s is changing too fast; try again", id).WithReason("Contention")
}

var errSkip = errors.New("skip")

// end moves a running plan to a terminal status (a terminal one is left:
// changed is false, and the plan is as stored).
func (s *Service) end(ctx context.Context, teamID, id string, to Status, why string) (Plan, bool, error) {
	changed := false
	p, err := s.update(ctx, teamID, id, func(p *Plan) error {
		if p.Status.Terminal() {
			return errSkip
		}
		p.Status, p.Error, changed = to, why, true
		return nil
	})
	return p, changed, err
}

// cancelRoot ends the plan's root task when the plan will not run (it was
// never started by the machine, or the machine failed): no task of the
// plan stays open.
func (s *Service) cancelRoot(ctx context.Context, p Plan, why string) {
	if _, err := s.Tasks.Cancel(ctx, p.TeamID, p.RootTaskID, "plan", why); err != nil && apperr.Code(err) != apperr.ECONFLICT {
		s.Log.WarnContext(ctx, "cancel the root of a plan that will not run", "plan_id", p.ID, "error", err.Error())
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// synthesisPrompt is what the lead is asked to answer with: the request
// and every step's result, attributed.
func synthesisPrompt(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The user asked: %s\n\nYour team worked on it in steps:\n", clip.Clip(p.Message, 4000))
	for _, st := range p.Steps {
		switch st.Status {
		case StepCompleted:
			fmt.Fprintf(&b, "- step %d, @%s (%s): %s\n", st.StepID, st.Agent, st.Skill, clip.Clip(oneLine(st.Output), 2000))
		default:
			fmt.Fprintf(&b, "- step %d, @%s (%s): %s, no result (%s)\n", st.StepID, st.Agent, st.Skill, st.Status, clip.Clip(st.Error, 300))
		}
	}
	b.WriteString("\nWrite one answer for the user from these results, naming each contributor (@agent) beside what they found. " +
		"If a step has no result, say what is missing.")
	return b.String()
}

// synthesize asks the lead for the answer (a model call charged to the
// plan; the machine retries a model failure).
func (s *Service) synthesize(ctx context.Context, p Plan) (string, float64, error) {
	lead, err := s.Tasks.Store.GetAgent(ctx, p.TeamID, p.Lead)
	if err != nil {
		return "", 0, err
	}
	req := prompts.Request(p.TeamID, lead, prompts.System(lead, nil), workflow.MaxTaskTokens, "")
	if p.ConversationID != "" {
		req.Metadata[models.MetadataConversationID] = p.ConversationID
	}
	req.Messages = []models.Message{{Role: "user", Content: synthesisPrompt(p)}}
	resp, err := s.Model.Converse(ctx, req)
	if err != nil {
		return "", 0, workflow.ModelFailed{Msg: err.Error()}
	}
	return resp.Text, models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens), nil
}

// Sweep starts the execution of every plan whose machine has not begun
// StartGrace after its creation (Plan.Due; by the plan's id, so an
// execution that did start is not started twice: Step Functions answers a
// repeated start of a running execution with the same name and input with
// that execution), and fails every running plan past its backstop: its
// machine was lost (a state that never answered, an execution stopped
// from outside), so nothing else would end it. It ends as MarkFailed
// would: the plan failed, no task of it open, its tickets released, the
// conversation told. Returns how many it ended.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	refs, err := s.Store.DuePlans(ctx, s.Now.UTC(), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		p, err := s.Store.GetPlan(ctx, r.TeamID, r.ID)
		if err != nil || p.Status.Terminal() || !p.Due().Before(s.Now.UTC()) {
			continue
		}
		if p.Due().Before(p.backstop()) {
			// Not begun: started (again), and looked at each sweep until
			// its machine begins or its backstop passes.
			if s.Workflows != nil {
				if _, err := s.Workflows.Start(ctx, workflow.PlanMachine, p.ID, workflow.PlanStepInput{TeamID: p.TeamID, PlanID: p.ID}); err != nil {
					s.Log.WarnContext(ctx, "sweep: start plan execution", "plan_id", p.ID, "error", err.Error())
				} else {
					s.Log.InfoContext(ctx, "sweep: started a plan whose machine had not begun", "plan_id", p.ID)
				}
			}
			continue
		}
		if s.Workflows != nil && p.ExecutionARN != "" {
			_ = s.Workflows.Stop(ctx, p.ExecutionARN, "the plan was still running past its backstop")
		}
		out, err := s.fail(ctx, p, workflow.PlanStepInput{TeamID: r.TeamID, PlanID: r.ID,
			Error: workflow.StepError{Error: "PlanTimedOut", Cause: "the plan was still running past its backstop"}})
		if err != nil {
			s.Log.ErrorContext(ctx, "sweep plan", "plan_id", r.ID, "error", err.Error())
			continue
		}
		if out.Status == string(Failed) {
			n++
		}
	}
	return n, nil
}
