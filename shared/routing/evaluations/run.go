package evaluations

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
)

// finishTimeout bounds the write of an evaluation's end, made even when
// the invocation's time is up.
const finishTimeout = 5 * time.Second

// missContent bounds the message a miss quotes (its index finds it whole
// in the evaluation's messages): 200 misses of it keep the stored
// evaluation well within an item however its messages were written.
const missContent = 200

// scored is one message as the gate ranked it.
type scored struct {
	scores  []routing.ExpertScore
	mention string // the agent the message @mentions ("": none), who answers whatever the gate says
}

// Run scores a running evaluation's messages through the gate, in
// batches, and records the result; nothing for an evaluation that is no
// longer running or no longer kept (a redelivered event). A gate that
// fails ends the evaluation as failed, with why; a store that fails is
// the caller's to retry.
func (s *Service) Run(ctx context.Context, teamID, id string) error {
	e, err := s.Store.GetEvaluation(ctx, teamID, id)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.Status != StatusRunning {
		return nil
	}
	list, err := s.Agents.ActiveAgents(ctx, teamID)
	if err != nil {
		return err
	}
	def, err := s.Agents.DefaultAgent(ctx, teamID)
	if err != nil {
		return err
	}
	out := make([]scored, len(e.Messages))
	var gateErr error
	for start := 0; start < len(e.Messages) && gateErr == nil; start += batch {
		end := min(start+batch, len(e.Messages))
		errs := make([]error, end-start)
		done := make(chan struct{}, end-start)
		for i := start; i < end; i++ {
			go func() {
				defer func() { done <- struct{}{} }()
				m := e.Messages[i]
				if slug := routing.Mention(m.Content, list); slug != "" {
					out[i].mention = slug
					return
				}
				res, err := s.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: m.Content, Agents: list})
				out[i].scores, errs[i-start] = res.Scores, err
			}()
		}
		for range end - start {
			<-done
		}
		gateErr = errors.Join(errs...)
	}
	now := s.now()
	e.CompletedAt = &now
	if gateErr != nil {
		e.Status, e.Error = StatusFailed, fmt.Sprintf("the expert gate failed: %v", gateErr)
	} else {
		e.Status = StatusCompleted
		r := measure(e.Messages, out, def, e.Threshold, e.Given)
		e.Result = &r
	}
	// Recorded even when ctx ran out while scoring (then as failed): an
	// evaluation must not stay running for its 30 days.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	err = s.Store.FinishEvaluation(fctx, e)
	if apperr.Is(err, apperr.ECONFLICT) {
		return nil // finished meanwhile by another delivery
	}
	return err
}

// routedAt is what a new conversation's first turn would get at
// threshold: the agent, its skill, its confidence, and whether it is the
// default by fallback.
func routedAt(s scored, def string, threshold float64) (agent, skill string, confidence float64, declined bool) {
	if s.mention != "" {
		return s.mention, "", 1, false
	}
	sel := routing.Select(s.scores, routing.SelectOptions{Strategy: routing.Top1, Threshold: threshold, DefaultAgent: def})
	if len(sel.Agents) == 0 {
		return def, "", 0, true
	}
	agent = sel.Agents[0]
	for _, sc := range s.scores {
		if sc.AgentSlug == agent {
			confidence = sc.Confidence
			if len(sc.MatchingSkills) > 0 {
				skill = sc.MatchingSkills[0]
			}
		}
	}
	return agent, skill, confidence, sel.Fallback
}

// measure computes the result of messages as scored.
func measure(msgs []Message, out []scored, def string, threshold float64, given *float64) Result {
	var r Result
	top1, skillTop1, withSkill := 0, 0, 0
	cells := map[[2]string]int{}
	for i, m := range msgs {
		if m.ExpectedAgent == nil {
			r.OutOfScope++
		} else {
			r.InScope++
			agent, skill := out[i].mention, ""
			if agent == "" && len(out[i].scores) > 0 {
				agent = out[i].scores[0].AgentSlug
				if ms := out[i].scores[0].MatchingSkills; len(ms) > 0 {
					skill = ms[0]
				}
			}
			if agent == string(*m.ExpectedAgent) {
				top1++
			}
			if m.ExpectedSkill != "" {
				withSkill++
				if agent == string(*m.ExpectedAgent) && skill == m.ExpectedSkill {
					skillTop1++
				}
			}
		}
		agent, skill, conf, declined := routedAt(out[i], def, threshold)
		expected, routed := "", agent
		if m.ExpectedAgent != nil {
			expected = string(*m.ExpectedAgent)
		}
		if (declined || agent == def && m.ExpectedAgent == nil) && agent != expected {
			routed = ""
		}
		cells[[2]string{expected, routed}]++
		if expected != routed && len(r.Misses) < MaxMisses {
			miss := Miss{Index: i, Content: clip.Prefix(m.Content, missContent), ExpectedAgent: expected, ExpectedSkill: m.ExpectedSkill, Routed: agent, Skill: skill,
				Declined: declined, Confidence: conf, Scores: []Score{}}
			for _, sc := range out[i].scores[:min(scoresPerMiss, len(out[i].scores))] {
				best := ""
				if len(sc.MatchingSkills) > 0 {
					best = sc.MatchingSkills[0]
				}
				miss.Scores = append(miss.Scores, Score{Agent: sc.AgentSlug, Confidence: sc.Confidence, Skill: best})
			}
			r.Misses = append(r.Misses, miss)
		}
	}
	r.AgentTop1 = share(top1, r.InScope)
	r.SkillTop1 = share(skillTop1, withSkill)
	r.AtDefault = outcome(msgs, out, def, threshold)
	if given != nil {
		o := outcome(msgs, out, def, *given)
		r.AtGiven = &o
	}
	r.Confusion = []Cell{}
	for k, n := range cells {
		r.Confusion = append(r.Confusion, Cell{Expected: k[0], Routed: k[1], Count: n})
	}
	sort.Slice(r.Confusion, func(i, j int) bool {
		a, b := r.Confusion[i], r.Confusion[j]
		if a.Expected != b.Expected {
			return a.Expected < b.Expected
		}
		return a.Routed < b.Routed
	})
	if r.Misses == nil {
		r.Misses = []Miss{}
	}
	return r
}

// outcome is the evaluation at one threshold.
func outcome(msgs []Message, out []scored, def string, threshold float64) Outcome {
	o := Outcome{Threshold: threshold}
	right, falsely, declined, in, oos := 0, 0, 0, 0, 0
	for i, m := range msgs {
		agent, _, _, fallback := routedAt(out[i], def, threshold)
		if m.ExpectedAgent == nil {
			oos++
			if fallback || agent == def {
				declined++
			}
			continue
		}
		in++
		switch {
		case agent == string(*m.ExpectedAgent):
			right++ // the default expected, and answering by fallback, is what the user wanted
		case fallback:
			falsely++
		}
	}
	o.Right, o.FalselyDeclined, o.Declined = share(right, in), share(falsely, in), share(declined, oos)
	return o
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(int(1000*float64(n)/float64(of)+0.5)) / 1000
}
