package conversations

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// A single-intent message that routes to an agent because of a skill whose
// kind is report:<type> or session:<pattern> is not a model turn: the turn
// requests that report from the agent, or starts that session led by it,
// through the very tools a reply would call (request_report,
// start_collaboration: the same validation, limits, approvals and
// services), with the conversation linked so the outcome is posted back
// (result_of). The reply lists the work among its pending work and says so.
// When the tool is not offered (the stage's flags), refuses (a limit, an
// approval policy that holds it is not a refusal) or a session has too few
// colleagues to take part, the agent answers as for a chat skill, and the
// reason is logged (docs/skills.md).

// Tool names the kinds run through (shared/tools/catalog's).
const (
	kindReportTool  = "request_report"
	kindSessionTool = "start_collaboration"
)

// MaxKindParticipants bounds the colleagues a session skill brings in.
const MaxKindParticipants = 3

// kindAnswer is the answer of agent a when the skill that chose it has a
// report or session kind; ok is false when the agent answers with its
// model instead (see above). Kinds run only where tools do: one agent
// answering at a time.
func (s *Service) kindAnswer(ctx context.Context, r *run, a agents.Agent) (answer, bool) {
	sk, ok := r.p.chosenSkill(a)
	if !ok || r.budget == nil {
		return answer{}, false
	}
	typ, target, ok := agents.ParseKind(sk.Kind)
	if !ok || typ == agents.KindChat {
		return answer{}, false
	}
	tool, input, why := s.kindCall(r, a, sk, typ, target)
	var offered []models.Tool
	if why == "" {
		if offered = offeredTool(s.tools.Specs(a), tool); offered == nil {
			why = tool + " is not offered in this stage"
		}
	}
	if why != "" {
		s.log.WarnContext(ctx, "a kind skill answers as a chat skill", "agent", a.Slug, "skill", sk.Name, "kind", sk.Kind, "reason", why)
		return answer{}, false
	}
	raw, _ := json.Marshal(input)
	d := r.p.Decision()
	lp := &loop{s: s, a: a, budget: r.budget, byslug: r.byslug, conv: r.p.conv, returning: r.returning,
		caller: ToolCaller{TeamID: d.TeamID, ConversationID: r.p.conv.ID, Agent: a.Slug, Skills: a.Skills, WaitUntil: deadline(ctx).Add(-toolAnswerReserve), Offered: offered, ForUser: r.p.userKey}}
	start := time.Now()
	out := lp.call(ctx, models.ToolCall{ID: ids.New("call"), Name: tool, Input: string(raw)})
	if len(lp.pending) == 0 {
		s.log.WarnContext(ctx, "a kind skill's work was not started; the agent answers as a chat skill", "agent", a.Slug, "skill", sk.Name, "kind", sk.Kind, "tool_output", clip.Clip(out, 300))
		return answer{}, false
	}
	lat := time.Since(start).Milliseconds()
	user := r.user
	msg := Message{
		ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorAssistant, Agent: a.Slug,
		Content:   pendingNote(kindReply(a, sk, typ, target, lp.pending), lp.pending),
		CreatedAt: time.Now().UTC(), ReplyTo: user.ID, DecisionID: d.ID, Strategy: string(d.Strategy), LatencyMS: lat,
		Query: clip.Clip(user.Content, 500), ToolCalls: lp.uses, Pending: lp.pending,
	}
	return answer{agent: a, attempt: cascade.Attempt{Agent: a.Slug, Outcome: cascade.OutcomeAnswered, LatencyMS: lat}, msg: msg}, true
}

// kindCall is the tool call a kind skill makes, or why it makes none.
func (s *Service) kindCall(r *run, a agents.Agent, sk agents.Skill, typ, target string) (tool string, input map[string]any, why string) {
	content := r.user.Content
	if typ == agents.KindReport {
		in := map[string]any{"to_agent": a.Slug, "report_type": target, "title": clip.Clip(content, 500)}
		if p := s.reportParameters(target, clip.Clip(content, 2000)); len(p) > 0 {
			in["parameters"] = p
		}
		return kindReportTool, in, ""
	}
	parts := kindParticipants(r, a, sk)
	if len(parts) < 2 {
		return "", nil, fmt.Sprintf("a %s session needs two colleagues; %d share a domain with the skill or matched the message", target, len(parts))
	}
	list := make([]map[string]any, len(parts))
	for i, slug := range parts {
		p := map[string]any{"slug": slug, "role": "contributor"}
		switch target {
		case "supervisor_worker":
			p["role"] = "worker"
		case "pipeline":
			p["role"], p["stage"] = "worker", i+1
		case "peer_review":
			p["role"] = "reviewer"
			if i == 0 {
				p["role"] = "worker" // the author
			}
		}
		list[i] = p
	}
	return kindSessionTool, map[string]any{"pattern": target, "goal": clip.Clip(content, 4000), "participants": list}, ""
}

// kindParticipants are the colleagues a session skill brings in (the lead,
// a, is not one): the team's other active agents with a user-facing skill
// sharing one of the skill's domains, then those the router found matching
// the message, best first, at most MaxKindParticipants.
func kindParticipants(r *run, a agents.Agent, sk agents.Skill) []string {
	var out []string
	add := func(slug string) {
		if slug != a.Slug && !slices.Contains(out, slug) && len(out) < MaxKindParticipants {
			out = append(out, slug)
		}
	}
	slugs := make([]string, 0, len(r.byslug))
	for slug := range r.byslug {
		slugs = append(slugs, slug)
	}
	// Best scored first when the gate scored them, then by slug.
	slices.SortFunc(slugs, func(x, y string) int {
		if c := compareDesc(r.p.Scores[x], r.p.Scores[y]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	for _, slug := range slugs {
		for _, other := range r.byslug[slug].Skills {
			if !other.InternalOnly && shareAny(other.Domains, sk.Domains) {
				add(slug)
				break
			}
		}
	}
	for _, sc := range r.p.Decision().Scores {
		if len(sc.MatchingSkills) > 0 {
			if _, ok := r.byslug[sc.AgentSlug]; ok {
				add(sc.AgentSlug)
			}
		}
	}
	return out
}

func compareDesc(x, y float64) int {
	switch {
	case x > y:
		return -1
	case x < y:
		return 1
	}
	return 0
}

func shareAny(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// offeredTool is the spec of tool among specs, as the one tool offered.
func offeredTool(specs []models.Tool, tool string) []models.Tool {
	for _, t := range specs {
		if t.Name == tool {
			return []models.Tool{t}
		}
	}
	return nil
}

// kindReply is what the agent says of the work its skill started, or of
// the approval its call waits for (the approval policy held it).
func kindReply(a agents.Agent, sk agents.Skill, typ, target string, pending []WorkRef) string {
	what := fmt.Sprintf("a %s report", target)
	if typ == agents.KindSession {
		what = fmt.Sprintf("a %s session that I lead", target)
	}
	for _, w := range pending {
		if w.Type == WorkApproval {
			return fmt.Sprintf("Starting %s with my %s skill needs a human's approval (%s); once it is decided, the outcome will be posted in this conversation.", what, sk.Name, w.ID)
		}
	}
	w := pending[len(pending)-1]
	if typ == agents.KindReport {
		return fmt.Sprintf("I have requested %s (%s) for this, with my %s skill; it will be posted in this conversation when it is done.", what, w.ID, sk.Name)
	}
	return fmt.Sprintf("I have started %s (%s), with my %s skill; its outcome will be posted in this conversation when it ends.", what, w.ID, sk.Name)
}
