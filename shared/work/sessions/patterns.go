package sessions

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// plan is the supervisor's assignment: the lead gives each worker a
// sub-goal (a structured answer), recorded as delegations. The Map runs
// the workers on the returned items.
func (s *Service) plan(ctx context.Context, ses Session) (workflow.SessionStepOutput, error) {
	var workers []string
	for _, p := range ses.Participants {
		workers = append(workers, p.Agent)
	}
	prompt := fmt.Sprintf("Goal: %s\nYou lead this session. Assign one sub-goal to each worker (%s) with %s.", ses.Goal, strings.Join(workers, ", "), ToolPlan)
	o, err := s.run(ctx, ses, turn{Key: "plan", Agent: ses.Lead, Kind: "plan", Title: "plan the work", Prompt: prompt,
		Tool: planTool(workers), Recipient: "all"})
	if err != nil {
		return workflow.SessionStepOutput{}, err
	}
	subGoals := map[string]string{}
	list, _ := o.Data["assignments"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		agent, _ := m["agent"].(string)
		goal, _ := m["sub_goal"].(string)
		subGoals[agent] = goal
	}
	items := s.items(ses, 1)
	for i := range items {
		items[i].SubGoal = subGoals[items[i].Agent]
		if items[i].SubGoal == "" {
			items[i].SubGoal = ses.Goal
		}
	}
	return workflow.SessionStepOutput{Items: items, Round: 1, Status: string(ses.Status)}, nil
}

// stage runs one agent's turn of the pattern.
func (s *Service) stage(ctx context.Context, ses Session, it workflow.SessionItem) error {
	t, err := s.stageTurn(ctx, ses, it)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, ses, t)
	return err
}

func (s *Service) stageTurn(ctx context.Context, ses Session, it workflow.SessionItem) (turn, error) {
	t := turn{Agent: it.Agent, Kind: it.Kind, Stage: it.Stage, Round: it.Round, Recipient: ses.Lead, MaxRounds: ses.MaxRounds}
	base := fmt.Sprintf("Goal: %s\n", ses.Goal)
	switch it.Kind {
	case "work": // a supervisor's worker
		t.Key, t.Title, t.MsgType = "work:"+it.Agent, "work on: "+it.SubGoal, MsgProposal
		t.Prompt = base + "Your assignment from " + ses.Lead + ": " + it.SubGoal
	case "contribution":
		t.Key, t.Title, t.MsgType = "contribution:"+it.Agent, "a perspective", MsgProposal
		t.Prompt = base + "Give your own perspective on the goal, from your expertise."
	case "stage":
		t.Key, t.Title, t.MsgType = fmt.Sprintf("stage:%d", it.Stage), fmt.Sprintf("pipeline stage %d", it.Stage), MsgProposal
		t.Prompt = base + fmt.Sprintf("You are stage %d of a pipeline.", it.Stage) + earlier(ses, "stage:")
		t.Recipient = "next stage"
	case "proposal", "revision":
		return s.workTurn(ctx, ses, it)
	case "critique":
		t.Key, t.Title, t.Tool = fmt.Sprintf("critique:%d:%s", it.Round, it.Agent), fmt.Sprintf("review round %d", it.Round), reviewTool()
		work, _ := latestWork(ses)
		t.Recipient = worker(ses)
		t.Prompt = base + fmt.Sprintf("Review round %d of %d. Review this work by %s and submit your verdict with %s:\n%s", it.Round, ses.MaxRounds, t.Recipient, ToolReview, work.promptText())
	case "vote":
		t.Key, t.Title, t.Tool = fmt.Sprintf("vote:%d:%s", it.Round, it.Agent), fmt.Sprintf("vote round %d", it.Round), voteTool()
		t.Prompt = base + fmt.Sprintf("Voting round %d of %d. Assess the question independently and vote with %s.", it.Round, ses.MaxRounds, ToolVote)
		if it.Round > 1 {
			t.Prompt += " The previous round had no two-thirds majority; the others' reasons were:" + earlier(ses, fmt.Sprintf("vote:%d:", it.Round-1))
		}
		t.Recipient = "all"
	default:
		return t, workflow.InvalidTask{Msg: fmt.Sprintf("unknown stage kind %q", it.Kind)}
	}
	return t, nil
}

// workTurn is the peer review worker's proposal (round 1) or revision.
func (s *Service) workTurn(_ context.Context, ses Session, it workflow.SessionItem) (turn, error) {
	w := worker(ses)
	t := turn{Agent: w, Kind: "work", Round: it.Round, Recipient: "reviewers", MaxRounds: ses.MaxRounds,
		Key: fmt.Sprintf("work:%d", it.Round), Title: fmt.Sprintf("work, round %d", it.Round)}
	t.Prompt = fmt.Sprintf("Goal: %s\nProduce the work for review.", ses.Goal)
	t.MsgType = MsgProposal
	if it.Round > 1 {
		t.MsgType = MsgRevision
		prev, _ := ses.Output(fmt.Sprintf("work:%d", it.Round-1))
		t.Prompt = fmt.Sprintf("Goal: %s\nRevise your work (round %d) to address the reviewers' critiques.\nYour last version:\n%s\nCritiques:%s",
			ses.Goal, it.Round, prev.promptText(), earlier(ses, fmt.Sprintf("critique:%d:", it.Round-1)))
	}
	return t, nil
}

// worker is the peer review's one worker.
func worker(ses Session) string {
	for _, p := range ses.Participants {
		if p.Role == RoleWorker {
			return p.Agent
		}
	}
	return ses.Lead
}

// latestWork is the newest proposal or revision of a peer review.
func latestWork(ses Session) (StageOutput, bool) {
	for r := ses.MaxRounds; r >= 1; r-- {
		if o, ok := ses.Output(fmt.Sprintf("work:%d", r)); ok {
			return o, true
		}
	}
	return StageOutput{}, false
}

// earlier lists the stored outputs whose key starts with prefix, with
// their authors.
func earlier(ses Session, prefix string) string {
	var b strings.Builder
	for _, o := range ses.StageOutputs {
		if strings.HasPrefix(o.Key, prefix) {
			fmt.Fprintf(&b, "\n[%s, %s] %s", o.Agent, o.Kind, o.promptText())
		}
	}
	return b.String()
}

// decide closes a round of a peer review (every reviewer approved:
// converged) or of a consensus (a two-thirds majority: decided); otherwise
// another round, counted with a write conditioned on the round read, or
// the end at max_rounds.
func (s *Service) decide(ctx context.Context, ses Session, round int) (workflow.SessionStepOutput, error) {
	items := s.items(ses, round)
	done, why := false, ""
	if ses.Pattern == Consensus {
		done, why = tally(ses, round, len(items))
	} else {
		approvals := 0
		for _, it := range items {
			if o, ok := ses.Output(fmt.Sprintf("critique:%d:%s", round, it.Agent)); ok && o.Data["verdict"] == "approve" {
				approvals++
			}
		}
		done, why = approvals == len(items), fmt.Sprintf("approval received from every reviewer in round %d", round)
	}
	out := workflow.SessionStepOutput{Round: round, Status: string(ses.Status)}
	if done {
		if ses.Pattern == PeerReview {
			msg := Message{Round: round, Sender: "session", Recipient: "all", Type: MsgApproval, Content: why, Status: MsgAccepted, Data: map[string]any{"converged": true}}
			if err := s.record(ctx, ses, msg); err != nil {
				return out, err
			}
		}
		_, err := s.update(ctx, ses.TeamID, ses.ID, func(_ Session, after *Session) error {
			after.Outcome, after.Convergence = OutcomeConverged, why
			return nil
		})
		out.Next = workflow.NextDone
		return out, err
	}
	if round >= ses.MaxRounds {
		out.Next = workflow.NextMaxRounds
		return out, nil
	}
	_, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		if before.Rounds >= round+1 {
			return errSkip // retried: already counted
		}
		// round < MaxRounds (returned above) and Rounds == round here, so `>=`
		// and `>` alike are false: a mutation testing survivor that changes nothing.
		if before.Rounds != round || before.Rounds >= before.MaxRounds {
			return workflow.InvalidTask{Msg: fmt.Sprintf("round %d cannot follow round %d of %d", round+1, before.Rounds, before.MaxRounds)}
		}
		after.Rounds = round + 1
		return nil
	})
	out.Next, out.Round, out.Items = workflow.NextAgain, round+1, s.items(ses, round+1)
	return out, err
}

// tally counts a consensus round's votes: a decision needs two thirds of
// the voters on one side.
func tally(ses Session, round, voters int) (bool, string) {
	count := map[string]int{}
	for _, o := range ses.StageOutputs {
		if strings.HasPrefix(o.Key, fmt.Sprintf("vote:%d:", round)) {
			v, _ := o.Data["vote"].(string)
			count[v]++
		}
	}
	for _, side := range []string{"approve", "reject"} {
		// voters > 0 is a guard: every consensus has two voters at least
		// (validate), so `>= 0` survives mutation testing and changes nothing.
		if 3*count[side] >= 2*voters && voters > 0 {
			return true, fmt.Sprintf("two-thirds majority to %s in round %d (%d of %d)", side, round, count[side], voters)
		}
	}
	return false, ""
}

// synthesize writes the final output: the lead combines the workers' or
// contributors' outputs with attribution, or writes the consensus
// decision with the dissent; a pipeline's is its last stage's, a peer
// review's the approved work.
func (s *Service) synthesize(ctx context.Context, ses Session) error {
	ses, err := s.update(ctx, ses.TeamID, ses.ID, func(before Session, after *Session) error {
		if before.Status == Synthesizing {
			return errSkip
		}
		after.Status = Synthesizing
		return nil
	})
	if err != nil {
		return err
	}
	var final string
	switch ses.Pattern {
	case Pipeline:
		last, _ := ses.Output(fmt.Sprintf("stage:%d", len(ses.Participants)))
		final = last.Output
	case PeerReview:
		w, _ := latestWork(ses)
		final = w.Output
	default:
		prompt := fmt.Sprintf("Goal: %s\nSynthesize the participants' outputs into one final answer, attributing each point to its author:%s", ses.Goal, earlier(ses, map[Pattern]string{SupervisorWorker: "work:", Brainstorm: "contribution:", Consensus: "vote:"}[ses.Pattern]))
		if ses.Pattern == Consensus {
			prompt = fmt.Sprintf("Goal: %s\nWrite the decision of the consensus (%s), recording the dissenting votes and their reasons:%s", ses.Goal, ses.Convergence, earlier(ses, fmt.Sprintf("vote:%d:", ses.Rounds)))
		}
		o, err := s.run(ctx, ses, turn{Key: "synthesis", Agent: ses.Lead, Kind: "synthesis", Title: "synthesize", Prompt: prompt, MsgType: MsgProposal, Recipient: "all"})
		if err != nil {
			return err
		}
		final = o.Output + attribution(ses)
	}
	_, err = s.update(ctx, ses.TeamID, ses.ID, func(_ Session, after *Session) error {
		after.FinalOutput = final
		return nil
	})
	return err
}

// attribution is what the final output records whatever the lead wrote:
// who contributed (supervisor-worker, brainstorm) or, for a consensus, the
// votes of the deciding round that went against the decision.
func attribution(ses Session) string {
	var b strings.Builder
	switch ses.Pattern {
	case SupervisorWorker, Brainstorm:
		var who []string
		for _, o := range ses.StageOutputs {
			if o.Kind == "work" || o.Kind == "contribution" {
				who = append(who, "@"+o.Agent)
			}
		}
		fmt.Fprintf(&b, "\n\nContributors: %s.", strings.Join(who, ", "))
	case Consensus:
		decision := "approve"
		if strings.Contains(ses.Convergence, "to reject") {
			decision = "reject"
		}
		var dissent []string
		for _, o := range ses.StageOutputs {
			vote, _ := o.Data["vote"].(string)
			if strings.HasPrefix(o.Key, fmt.Sprintf("vote:%d:", ses.Rounds)) && vote != decision {
				dissent = append(dissent, fmt.Sprintf("@%s (%s, confidence %v): %s", o.Agent, vote, o.Data["confidence"], o.Output))
			}
		}
		if len(dissent) == 0 {
			b.WriteString("\n\nDissent: none; the decision was unanimous.")
		} else {
			b.WriteString("\n\nDissent: " + strings.Join(dissent, "; "))
		}
	}
	return b.String()
}
