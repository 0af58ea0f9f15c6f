package plans

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Steps is the plan machine's entry in the plan-steps function.
func (s *Service) Steps() workflow.Step {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in workflow.PlanStepInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, workflow.InvalidTask{Msg: "unreadable plan step payload: " + err.Error()}
		}
		return s.Step(ctx, in)
	}
}

// Step runs one state of the plan machine. A plan that ended (cancelled)
// is workflow.TaskNotRunnable, which the machine catches and ends on.
func (s *Service) Step(ctx context.Context, in workflow.PlanStepInput) (workflow.PlanStepOutput, error) {
	if in.TeamID == "" || in.PlanID == "" {
		return workflow.PlanStepOutput{}, workflow.InvalidTask{Msg: "team_id and plan_id are required"}
	}
	p, err := s.Store.GetPlan(ctx, in.TeamID, in.PlanID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return workflow.PlanStepOutput{}, workflow.InvalidTask{Msg: err.Error()}
	}
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	if in.Action == workflow.PlanFail {
		return s.fail(ctx, p, in)
	}
	if p.Status.Terminal() {
		if in.Action == workflow.PlanStartStep && in.StepID != 0 {
			// A slot granted to this step after the plan ended: given back.
			_, _ = s.Tasks.ReleaseTickets(ctx, p.TeamID, TicketKey(p.ID, in.StepID))
		}
		return workflow.PlanStepOutput{Status: string(p.Status)}, workflow.TaskNotRunnable{Msg: fmt.Sprintf("plan %s is %s", p.ID, p.Status)}
	}
	switch in.Action {
	case workflow.PlanBegin:
		return s.begin(ctx, p, in.ExecutionARN)
	case workflow.PlanStartStep:
		return s.startStep(ctx, p, in)
	case workflow.PlanAwaitSlot:
		return workflow.PlanStepOutput{}, s.awaitSlot(ctx, p, in)
	case workflow.PlanAwaitStep:
		return workflow.PlanStepOutput{}, s.awaitStep(ctx, p, in)
	case workflow.PlanEndStep:
		return workflow.PlanStepOutput{}, s.endStep(ctx, p, in)
	case workflow.PlanNext:
		return s.next(ctx, p)
	case workflow.PlanSynthesize:
		return workflow.PlanStepOutput{}, s.synthesizeStep(ctx, p)
	case workflow.PlanComplete:
		return s.complete(ctx, p)
	}
	return workflow.PlanStepOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("unknown plan action %q", in.Action)}
}

func items(ids []int) []workflow.PlanItem {
	out := make([]workflow.PlanItem, 0, len(ids))
	for _, id := range ids {
		out = append(out, workflow.PlanItem{StepID: id})
	}
	return out
}

// begin runs the root task for this execution and answers the first
// round.
func (s *Service) begin(ctx context.Context, p Plan, arn string) (workflow.PlanStepOutput, error) {
	if _, err := s.Tasks.ExecStartPlan(ctx, p.TeamID, p.RootTaskID, arn); err != nil {
		return workflow.PlanStepOutput{}, err
	}
	p, err := s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		if x.ExecutionARN == arn {
			return errSkip
		}
		x.ExecutionARN = arn
		return nil
	})
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	ready := p.Ready()
	return workflow.PlanStepOutput{Ready: items(ready), More: len(ready) > 0}, nil
}

// TicketKey is a step's slot ticket (unique in the team; prefixed by the
// plan so its end finds every ticket it left).
func TicketKey(planID string, step int) string { return fmt.Sprintf("%s#%d", planID, step) }

// startStep creates the step's task: a child of the root, executed by its
// agent with the step's question and the bridged results of the steps it
// depends on. An agent holding its five tasks is workflow.StageBusy: the
// machine waits for a slot (await_slot) and starts the step again, on the
// slot handed to its ticket. A retried start finds the task it created.
func (s *Service) startStep(ctx context.Context, p Plan, in workflow.PlanStepInput) (workflow.PlanStepOutput, error) {
	st := p.Step(in.StepID)
	if st == nil {
		return workflow.PlanStepOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("plan %s has no step %d", p.ID, in.StepID)}
	}
	if st.TaskID != "" {
		return workflow.PlanStepOutput{TaskID: st.TaskID}, nil
	}
	// A retried start whose first attempt created the task but did not
	// record it: the step's task is found among the root's children (by
	// its title), not created twice.
	title := clip.Clip(fmt.Sprintf("Plan %s step %d: %s", p.ID, st.StepID, oneLine(st.SubQuery)), 480)
	kids, _, err := s.Tasks.List(ctx, p.TeamID, tasks.Filter{Parent: p.RootTaskID}, paging.Page{Limit: 50})
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	for _, k := range kids {
		if k.Title == title {
			return workflow.PlanStepOutput{TaskID: k.ID}, s.recordStart(ctx, p, in.StepID, k.ID)
		}
	}
	results := map[int]Result{}
	for _, x := range p.Steps {
		if x.Status == StepCompleted {
			results[x.StepID] = Result{Response: x.Output, Agent: x.Agent}
		}
	}
	bridged := Bridge(st.Step, results, bridgeRunes(len(st.DependsOn)))
	ticket := TicketKey(p.ID, st.StepID)
	create := tasks.CreateInput{
		Assignee: st.Agent, ParentID: p.RootTaskID, PlanID: p.ID, Type: "execute",
		Title:        title,
		Instructions: st.SubQuery, Context: bridgeText(bridged), Execute: ptr(true),
		// The step's packs, for this step only (the next step does not
		// get them).
		ToolPacks: st.ToolPacks,
	}
	if _, granted, err := s.Tasks.GrantedTicket(ctx, p.TeamID, ticket); err != nil {
		return workflow.PlanStepOutput{}, err
	} else if granted {
		create.Ticket = ticket
	}
	if st.Report != "" {
		return s.startReport(ctx, p, *st, create)
	}
	t, err := s.Tasks.Create(ctx, p.TeamID, tasks.Creator{Type: "agent", ID: p.Lead}, create, true)
	if ae, ok := apperr.As(err); ok && ae.Reason == tasks.ReasonConcurrency {
		return workflow.PlanStepOutput{}, workflow.StageBusy(st.Agent, ticket)
	}
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	return workflow.PlanStepOutput{TaskID: t.ID}, s.recordStart(ctx, p, in.StepID, t.ID)
}

// startReport requests a report step's report from the step's agent: a
// report of the task model (its template's instructions, sections and
// check) whose task is the step's, under the plan's root. Its required
// parameters hold the step's question (reports.ParametersFrom), and the
// bridged results of earlier steps are its context.
func (s *Service) startReport(ctx context.Context, p Plan, st StepState, create tasks.CreateInput) (workflow.PlanStepOutput, error) {
	if s.Reports == nil {
		return workflow.PlanStepOutput{}, workflow.InvalidTask{Msg: "this function requests no reports"}
	}
	params, err := json.Marshal(reports.ParametersFrom(st.Report, st.SubQuery))
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	rep, err := s.Reports.Request(ctx, p.TeamID, tasks.Creator{Type: "agent", ID: p.Lead}, reports.RequestInput{
		Type: st.Report, To: st.Agent, Title: create.Title, Parameters: params, ParentTaskID: p.RootTaskID,
		PlanID: p.ID, Ticket: create.Ticket, Context: create.Context,
	})
	if ae, ok := apperr.As(err); ok && ae.Reason == tasks.ReasonConcurrency {
		return workflow.PlanStepOutput{}, workflow.StageBusy(st.Agent, TicketKey(p.ID, st.StepID))
	}
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	_, err = s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		xs := x.Step(st.StepID)
		if xs.TaskID == rep.TaskID {
			return errSkip
		}
		now := s.Now.UTC()
		xs.TaskID, xs.ReportID, xs.Status, xs.StartedAt = rep.TaskID, rep.ID, StepRunning, &now
		return nil
	})
	return workflow.PlanStepOutput{TaskID: rep.TaskID}, err
}

// recordStart records the step's task on the plan.
func (s *Service) recordStart(ctx context.Context, p Plan, step int, taskID string) error {
	now := s.Now.UTC()
	_, err := s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		xs := x.Step(step)
		if xs.TaskID == taskID {
			return errSkip
		}
		xs.TaskID, xs.Status, xs.StartedAt = taskID, StepRunning, &now
		return nil
	})
	return err
}

func ptr[T any](v T) *T { return &v }

// bridgeRunes is each bridged result's share of a step's context: the
// task's context field holds 20,000 characters, shared by its
// predecessors (and a step's 4,000 tokens read about 16,000 characters).
func bridgeRunes(deps int) int { return 12000 / max(1, deps) }

// bridgeText lays the bridged results out for the step's agent.
func bridgeText(b map[string]string) string {
	if len(b) == 0 {
		return ""
	}
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	out.WriteString("Results of the earlier steps of this plan:\n")
	for _, k := range keys {
		fmt.Fprintf(&out, "%s: %s\n", k, b[k])
	}
	return out.String()
}

// awaitSlot puts a step whose agent is full in line for a slot (see
// shared/work/tasks, slots.go); a slot free by now wakes the state at once.
func (s *Service) awaitSlot(ctx context.Context, p Plan, in workflow.PlanStepInput) error {
	agent, ticket, ok := workflow.ParseStageBusy(causeOf(in.Error.Cause))
	if !ok || !strings.HasPrefix(ticket, p.ID+"#") || in.TaskToken == "" {
		return workflow.InvalidTask{Msg: "await_slot needs the step's AgentBusy error and a task token"}
	}
	waiting, err := s.Tasks.WaitForSlot(ctx, tasks.Ticket{TeamID: p.TeamID, Agent: agent, Key: ticket, Token: in.TaskToken,
		Rank: tasks.PriorityRank("normal"), Expires: p.CreatedAt.Add(workflow.PlanMaxSeconds * time.Second)})
	if err != nil {
		return err
	}
	if !waiting {
		return s.Callbacks.Succeed(ctx, in.TaskToken, tasks.SlotGranted{Agent: agent})
	}
	_, err = s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		if xs := x.Step(in.StepID); xs != nil && xs.Status == StepPending {
			xs.Status = StepWaiting
			return nil
		}
		return errSkip
	})
	return err
}

// causeOf is the message of a Lambda error's cause ({"errorMessage": …}).
func causeOf(cause string) string {
	var c struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(cause), &c) == nil && c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return cause
}

// awaitStep registers the state's token on the step's task: its end (or
// its having ended) completes the token with the outcome.
func (s *Service) awaitStep(ctx context.Context, p Plan, in workflow.PlanStepInput) error {
	st := p.Step(in.StepID)
	if st == nil || st.TaskID == "" || in.TaskToken == "" {
		return workflow.InvalidTask{Msg: fmt.Sprintf("step %d of plan %s has no task to wait for", in.StepID, p.ID)}
	}
	err := s.Tasks.Await(ctx, p.TeamID, p.RootTaskID, p.ExecutionARN, st.TaskID, in.TaskToken)
	if err == tasks.ErrNotRunnable {
		// The plan is running (Step checked) but its root is not: ended
		// through the tasks API. A failure, so the plan ends failed
		// (MarkFailed), not silently.
		return fmt.Errorf("plan %s's root task is no longer running", p.ID)
	}
	return err
}

// endStep records a step's outcome from its task; a failed step fails
// the steps that depend on it (skipped: they never run).
func (s *Service) endStep(ctx context.Context, p Plan, in workflow.PlanStepInput) error {
	st := p.Step(in.StepID)
	if st == nil || st.TaskID == "" {
		return workflow.InvalidTask{Msg: fmt.Sprintf("step %d of plan %s has no task", in.StepID, p.ID)}
	}
	t, err := s.Tasks.Get(ctx, p.TeamID, st.TaskID)
	if err != nil {
		return err
	}
	if !t.Status.Terminal() {
		// The wait for it ran out (AwaitStep's timeout): the step is ended
		// so the plan goes on without it.
		if t, err = s.Tasks.Cancel(ctx, p.TeamID, t.ID, "plan", "the plan stopped waiting for this step"); err != nil {
			return err
		}
	}
	// Its PlanStepCompleted is the update's (changeEvents).
	now := s.Now.UTC()
	_, err = s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		xs := x.Step(in.StepID)
		if xs.Status == StepCompleted || xs.Status == StepFailed {
			return errSkip // a retried end
		}
		xs.Tokens, xs.CostUSD, xs.CompletedAt = t.TokensUsed, t.CostUSD, &now
		x.CostUSD += t.CostUSD
		if t.Status == tasks.Completed {
			xs.Status, xs.Output = StepCompleted, t.Result
		} else {
			xs.Status, xs.Error = StepFailed, fmt.Sprintf("%s: %s", t.Status, t.Error)
			for _, d := range Dependants(stepsOf(x.Steps), xs.StepID) {
				if ds := x.Step(d); ds.Status == StepPending || ds.Status == StepWaiting {
					ds.Status, ds.Error = StepSkipped, fmt.Sprintf("step %d it depends on failed", xs.StepID)
				}
			}
		}
		return nil
	})
	return err
}

func stepsOf(ss []StepState) []Step {
	out := make([]Step, len(ss))
	for i, s := range ss {
		out[i] = s.Step
	}
	return out
}

// next answers the next round: the steps whose dependencies completed.
func (s *Service) next(_ context.Context, p Plan) (workflow.PlanStepOutput, error) {
	ready := p.Ready()
	return workflow.PlanStepOutput{Ready: items(ready), More: len(ready) > 0}, nil
}

// synthesizeStep asks the lead for one answer from the steps' results
// (once: a retried state finds it stored).
func (s *Service) synthesizeStep(ctx context.Context, p Plan) error {
	if p.Synthesis != "" {
		return nil
	}
	if p.Outcome() == Failed {
		_, err := s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
			x.Synthesis = "No step of the plan succeeded: " + firstError(x.Steps)
			return nil
		})
		return err
	}
	text, cost, err := s.synthesize(ctx, p)
	if err != nil {
		return err
	}
	_, err = s.update(ctx, p.TeamID, p.ID, func(x *Plan) error {
		if x.Synthesis != "" {
			return errSkip
		}
		x.Synthesis, x.CostUSD = text, x.CostUSD+cost
		return nil
	})
	return err
}

func firstError(ss []StepState) string {
	for _, s := range ss {
		if s.Error != "" {
			return s.Error
		}
	}
	return "unknown"
}

// complete ends the plan with its outcome and its root task with the
// synthesis; PlanCompleted has the result-poster post it.
func (s *Service) complete(ctx context.Context, p Plan) (workflow.PlanStepOutput, error) {
	outcome := p.Outcome()
	failure := ""
	if outcome == Failed {
		failure = p.Synthesis
	}
	if _, err := s.Tasks.ExecEndPlan(ctx, p.TeamID, p.RootTaskID, p.ExecutionARN, p.Synthesis, failure); err != nil && err != tasks.ErrNotRunnable {
		return workflow.PlanStepOutput{}, err
	}
	ended, _, err := s.end(ctx, p.TeamID, p.ID, outcome, "")
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	return workflow.PlanStepOutput{Status: string(ended.Status)}, nil
}

// fail ends a plan whose machine failed: failed, its root failed, and
// the slot tickets it left released.
func (s *Service) fail(ctx context.Context, p Plan, in workflow.PlanStepInput) (workflow.PlanStepOutput, error) {
	why := in.Error.Error
	if c := causeOf(in.Error.Cause); c != "" {
		why += ": " + c
	}
	if p.Status.Terminal() {
		return workflow.PlanStepOutput{Status: string(p.Status)}, nil
	}
	// Its PlanCompleted says why ("The plan failed: …": completedSynthesis).
	ended, _, err := s.end(ctx, p.TeamID, p.ID, Failed, why)
	if err != nil {
		return workflow.PlanStepOutput{}, err
	}
	// No task of the plan stays open: running steps are cancelled, the
	// root failed (or cancelled when it is not running for this
	// execution: the machine failed before or while it began).
	for _, st := range ended.Steps {
		if st.TaskID != "" && st.Status == StepRunning {
			_, _ = s.Tasks.Cancel(ctx, p.TeamID, st.TaskID, "plan", "the plan failed")
		}
	}
	arn := cmp.Or(p.ExecutionARN, in.ExecutionARN)
	if _, err := s.Tasks.ExecEndPlan(ctx, p.TeamID, p.RootTaskID, arn, "", why); err != nil {
		s.cancelRoot(ctx, p, "the plan failed: "+why)
	}
	_, _ = s.Tasks.ReleaseTickets(ctx, p.TeamID, p.ID+"#")
	return workflow.PlanStepOutput{Status: string(ended.Status)}, nil
}
