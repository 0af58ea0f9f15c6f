package consultations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// SuggestionBonus is what a suggestion adds to the suggested agent's gate
// score: enough to break a near tie in its favour, never enough to beat a
// clearly better specialist.
const SuggestionBonus = 0.05

// Service runs consultations.
type Service struct {
	Store    Store
	Dir      Directory
	Gate     Gate
	Model    models.Model
	Memories Memories
	Bus      Publisher
	// Tasks resolves tasks' escalations (task_overdue); nil where no
	// route resolves escalations (the chat's and tasks' tools).
	Tasks TaskResolver
	// Specialists creates and reads the specialists' tasks of
	// asynchronous consultations (RequestInput.Async); nil where none
	// is asked (POST /v1/consultations answers within the request).
	Specialists SpecialistTasks
	// Conversations checks a request's conversation_id (POST
	// /v1/consultations); nil where the caller names its own
	// conversation (a chat reply's tools), which is taken as it is.
	Conversations Conversations
	// ModelID is the default model id ("" the provider's default).
	ModelID string
	Log     *slog.Logger
	Now     clock.Func
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// RequestInput is POST /v1/consultations and the consult_specialist tool.
type RequestInput struct {
	RequestingAgent string         `json:"requesting_agent"`
	Question        string         `json:"question"`
	Context         RequestContext `json:"context"`
	SuggestedAgent  string         `json:"suggested_agent"`
	Urgency         string         `json:"urgency"`
	// ConversationID links the consultation to a conversation of the
	// team (optional): it is listed among the conversation's work.
	ConversationID string `json:"conversation_id"`

	// Async has the specialist answer in a task of its own, executed
	// through the delegation workflow, instead of within the request: a
	// chat reply's or a task's consultation returns at once, pending,
	// with its TaskID, and SyncTask records the answer when that task
	// ends. Never from a request body (the HTTP API stays synchronous).
	Async bool `json:"-"`
	// ParentTaskID is the asking task, if any: the specialist's task is
	// its child, which the asking task waits for in its workflow.
	ParentTaskID string `json:"-"`
	// Creator is who the specialist's task is requested by.
	Creator tasks.Creator `json:"-"`
}

func (in *RequestInput) validate() error {
	in.Question = strings.TrimSpace(in.Question)
	if in.Urgency == "" {
		in.Urgency = "normal"
	}
	switch {
	case in.RequestingAgent == "":
		return apperr.Invalid("requesting_agent", "requesting_agent is required")
	case !agents.ValidSlug(in.RequestingAgent):
		return apperr.Invalid("requesting_agent", "requesting_agent must be an agent slug")
	case in.Question == "" || utf8.RuneCountInString(in.Question) > MaxQuestion:
		return apperr.Invalid("question", "question must be 1 to %d characters", MaxQuestion)
	case in.SuggestedAgent != "" && !agents.ValidSlug(in.SuggestedAgent):
		return apperr.Invalid("suggested_agent", "suggested_agent must be an agent slug")
	case !slices.Contains(Urgencies, in.Urgency):
		return apperr.Invalid("urgency", "urgency must be one of %s", strings.Join(Urgencies, ", "))
	case utf8.RuneCountInString(in.Context.CurrentTask) > MaxField:
		return apperr.Invalid("context.current_task", "context.current_task is longer than %d characters", MaxField)
	case utf8.RuneCountInString(in.Context.SpecificConcern) > MaxField:
		return apperr.Invalid("context.specific_concern", "context.specific_concern is longer than %d characters", MaxField)
	}
	for name, list := range map[string][]string{"attempted_approaches": in.Context.AttemptedApproaches,
		"relevant_files": in.Context.RelevantFiles, "error_messages": in.Context.ErrorMessages} {
		if len(list) > MaxListItems {
			return apperr.Invalid("context."+name, "context.%s holds at most %d items", name, MaxListItems)
		}
		for _, it := range list {
			if n := utf8.RuneCountInString(strings.TrimSpace(it)); n == 0 || n > MaxListItem {
				return apperr.Invalid("context."+name, "each of context.%s must be 1 to %d characters", name, MaxListItem)
			}
		}
	}
	return nil
}

// Request runs a consultation: validate, choose the specialist, detect
// loops, curate the context, record it (the requester's active counter is
// a condition of the same write), ask the specialist and record the
// answer. A detected loop records the consultation escalated, with its
// evidence and an escalation, and asks no agent. Bad input writes nothing.
// Returns EINVALID, ENOTFOUND (a conversation_id not of the team),
// ECONFLICT (NoSpecialist: no other active agent).
func (s *Service) Request(ctx context.Context, teamID string, in RequestInput) (Consultation, error) {
	if err := in.validate(); err != nil {
		return Consultation{}, err
	}
	if err := s.checkConversation(ctx, teamID, in.ConversationID); err != nil {
		return Consultation{}, err
	}
	if id, err := idempotency.Stored(ctx, s.Store, teamID, RefKind); err != nil || id != "" {
		return s.replay(ctx, teamID, id, err)
	}
	team, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return Consultation{}, err
	}
	var active []agents.Agent
	requesterActive := false
	for _, a := range team {
		if a.Status != agents.StatusActive {
			continue
		}
		if a.Slug == in.RequestingAgent {
			requesterActive = true
			continue
		}
		active = append(active, a)
	}
	if !requesterActive {
		return Consultation{}, apperr.Invalid("requesting_agent", "requesting_agent must be an active agent of the team")
	}
	if len(active) == 0 {
		return Consultation{}, apperr.New(apperr.ECONFLICT, "the team has no other active agent to consult").WithReason("NoSpecialist")
	}
	// Redact before anything is stored, scored or shown to an agent.
	red := map[string]int{}
	in.Question = Redact(in.Question, red)
	rc := RequestContext{
		CurrentTask: Redact(strings.TrimSpace(in.Context.CurrentTask), red), SpecificConcern: Redact(strings.TrimSpace(in.Context.SpecificConcern), red),
		AttemptedApproaches: redactAll(in.Context.AttemptedApproaches, red), RelevantFiles: redactAll(in.Context.RelevantFiles, red),
		ErrorMessages: redactAll(in.Context.ErrorMessages, red),
	}
	decision, err := s.decide(ctx, teamID, in, active)
	if err != nil {
		return Consultation{}, err
	}
	now := s.Now.UTC()
	c := Consultation{
		TeamID: teamID, ID: ids.New("cons"), Status: Pending, RequestingAgent: in.RequestingAgent,
		ConsultedAgent: decision.Selected, Question: in.Question, Context: rc, SuggestedAgent: in.SuggestedAgent,
		Urgency: in.Urgency, ConversationID: in.ConversationID, ConsultationReason: reasonOf(decision), Decision: decision, SuggestedNextSteps: []string{}, Exchanges: []Exchange{},
		Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	history, err := s.history(ctx, teamID)
	if err != nil {
		return Consultation{}, err
	}
	c.ContextPackage, err = s.curate(ctx, teamID, c, history, red)
	if err != nil {
		return Consultation{}, err
	}
	if loop := s.detect(c, history, c.Question, now); loop != nil {
		return s.escalateNew(ctx, c, *loop)
	}
	return s.record(ctx, c, in, team, history, now)
}

// record stores the new consultation c, taking one of its requester's
// slots, and has the specialist answer: within the request, or in a task
// of its own (in.Async).
func (s *Service) record(ctx context.Context, c Consultation, in RequestInput, team []agents.Agent, history []Consultation, now time.Time) (Consultation, error) {
	teamID := c.TeamID
	live, err := s.takeSlot(ctx, teamID, c.RequestingAgent, history, now, func() error {
		return s.Store.CreateConsultation(ctx, c, MaxActivePerAgent)
	})
	if id, ok := idempotency.ReplayedID(err); ok {
		return s.replay(ctx, teamID, id, nil)
	}
	if errors.Is(err, ErrActiveLimit) {
		return s.escalateNew(ctx, c, Loop{Type: LoopTooManyActive, DetectedAt: now, Evidence: map[string]any{
			"active_consultations": live, "limit": MaxActivePerAgent,
			"description": fmt.Sprintf("%s already has %d active consultations", c.RequestingAgent, MaxActivePerAgent)}})
	}
	if err != nil {
		return Consultation{}, err
	}
	if in.Async {
		return s.delegate(ctx, c, in)
	}
	return s.ask(ctx, c, "question", c.Question, team)
}

// checkConversation is ENOTFOUND unless id ("" for none) is a
// conversation of the team: another team's is as unknown as one that
// does not exist (404, with nothing written). Without a Conversations
// port the id is the caller's own (a chat reply's) and is taken as it is.
func (s *Service) checkConversation(ctx context.Context, teamID, id string) error {
	if id == "" || s.Conversations == nil {
		return nil
	}
	if !ids.Valid("conv", id) {
		return apperr.NotFound("conversation", id)
	}
	return s.Conversations.CheckConversation(ctx, teamID, id)
}

// decide asks the gate to score the candidates and applies the
// suggestion's bonus; the decision says why the suggestion was or was not
// taken.
func (s *Service) decide(ctx context.Context, teamID string, in RequestInput, active []agents.Agent) (Decision, error) {
	query := in.Question
	if in.Context.SpecificConcern != "" {
		query += "\n" + in.Context.SpecificConcern
	}
	var include []string
	if in.SuggestedAgent != "" {
		include = []string{in.SuggestedAgent}
	}
	scores, err := s.Gate.Score(ctx, teamID, clip.Clip(query, 8000), active, include...)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Suggested: in.SuggestedAgent, Candidates: []Candidate{}}
	suggestedActive := false
	for _, sc := range scores {
		c := Candidate{Slug: sc.AgentSlug, Score: round(sc.Overall), Matched: sc.MatchingSkills}
		if c.Matched == nil {
			c.Matched = []string{}
		}
		if sc.AgentSlug == in.SuggestedAgent {
			c.Bonus, suggestedActive = SuggestionBonus, true
		}
		c.Total = round(c.Score + c.Bonus)
		d.Candidates = append(d.Candidates, c)
	}
	if len(d.Candidates) == 0 {
		return Decision{}, apperr.New(apperr.ECONFLICT, "the team has no other active agent to consult").WithReason("NoSpecialist")
	}
	sort.SliceStable(d.Candidates, func(i, j int) bool { return d.Candidates[i].Total > d.Candidates[j].Total })
	best := d.Candidates[0]
	d.Selected = best.Slug
	switch {
	case in.SuggestedAgent == "":
		d.Reason = fmt.Sprintf("the gate's best match for the question: %s (score %.3f)", best.Slug, best.Score)
	case in.SuggestedAgent == in.RequestingAgent:
		d.Reason = fmt.Sprintf("suggestion %s not taken: an agent cannot consult itself; the gate chose %s (score %.3f)", in.SuggestedAgent, best.Slug, best.Score)
	case !suggestedActive:
		d.Reason = fmt.Sprintf("suggestion %s not taken: not an active agent of the team; the gate chose %s (score %.3f)", in.SuggestedAgent, best.Slug, best.Score)
	case best.Slug == in.SuggestedAgent:
		d.SuggestionTaken = true
		d.Reason = fmt.Sprintf("suggestion %s taken: the best match (score %.3f + %.2f suggestion bonus)", best.Slug, best.Score, SuggestionBonus)
	default:
		var sug Candidate
		for _, c := range d.Candidates {
			if c.Slug == in.SuggestedAgent {
				sug = c
			}
		}
		d.Reason = fmt.Sprintf("suggestion %s overridden: %s scored %.3f, above the suggestion's %.3f (%.3f + %.2f bonus)",
			in.SuggestedAgent, best.Slug, best.Total, sug.Total, sug.Score, SuggestionBonus)
	}
	// At exactly five the slice is the whole: `>=` changes nothing (a
	// harmless mutation testing survivor).
	if len(d.Candidates) > 5 {
		d.Candidates = d.Candidates[:5]
	}
	return d, nil
}

// history is the team's recent consultations, newest first.
func (s *Service) history(ctx context.Context, teamID string) ([]Consultation, error) {
	return paging.Collect(historyLimit, paging.MaxLimit, func(p paging.Page) ([]Consultation, string, error) {
		return s.Store.ListConsultations(ctx, teamID, Filter{}, p)
	})
}

// takeSlot runs take, a write that takes one of agent's slots on the
// counter's condition. Refused (ErrActiveLimit), the slots may be held by
// consultations whose requests were cut off: those are closed (giving
// their slots back) and take is tried once more, as it is when a slot
// came free meanwhile (an answer was saved). The counter names the
// consultations holding the slots: they may have been created by
// concurrent requests after history was read, or be older than its
// newest historyLimit. Still refused, it returns ErrActiveLimit and the
// ids of the consultations found holding the slots.
func (s *Service) takeSlot(ctx context.Context, teamID, agent string, history []Consultation, now time.Time, take func() error) ([]string, error) {
	err := take()
	if !errors.Is(err, ErrActiveLimit) {
		return nil, err
	}
	live, freed, rerr := s.reclaim(ctx, teamID, agent, history, now)
	if rerr != nil {
		return nil, rerr
	}
	// A shortcut: with nothing freed and every slot live the second take
	// would be refused the same way. Mutating either bound (`>= 0`, `<=`)
	// only adds that refused write; mutation testing lets both live. So
	// does `freed <= 0`: every active consultation holds a slot, so
	// freed > 0 leaves fewer than MaxActivePerAgent live and the second
	// test takes again anyway.
	if freed > 0 || len(live) < MaxActivePerAgent {
		err = take()
	}
	return live, err
}

// reclaim closes agent's active consultations (as requester) that are
// stale at now, each with its slot released in the same write, and
// returns the ids of those still active and how many it closed. The
// candidates are the ids the agent's counter records (at most
// MaxActivePerAgent, however many consultations the team has) and, for a
// counter written before it recorded ids, the agent's active ones in
// history; each is read again, consistently, before it is judged. A
// consultation changed meanwhile (a follow-up) is not stale and is left
// alone: the version condition decides.
func (s *Service) reclaim(ctx context.Context, teamID, agent string, history []Consultation, now time.Time) ([]string, int, error) {
	ids, err := s.Store.ActiveConsultations(ctx, teamID, agent)
	if err != nil {
		return nil, 0, err
	}
	for _, h := range history {
		if h.RequestingAgent == agent && h.Status.Active() && !slices.Contains(ids, h.ID) {
			ids = append(ids, h.ID)
		}
	}
	live, freed := []string{}, 0
	for _, id := range ids {
		c, err := s.Store.GetConsultation(ctx, teamID, id)
		switch {
		case apperr.Is(err, apperr.ENOTFOUND):
			continue
		case err != nil:
			return nil, 0, err
		case !c.Status.Active() || c.RequestingAgent != agent:
			continue
		case !c.Stale(now):
			live = append(live, c.ID)
			continue
		}
		c.Status, c.ClosedReason, c.CompletedAt, c.UpdatedAt = Completed, ClosedIdle, &now, now
		c.Version++
		switch err := s.Store.SaveConsultation(ctx, Save{Consultation: c, Release: true}); {
		case err == nil:
			freed++
			s.log().InfoContext(ctx, "closed an idle consultation", "team_id", teamID, "consultation_id", c.ID, "agent", agent)
		case errors.Is(err, ErrChanged):
			live = append(live, c.ID)
		default:
			return nil, 0, err
		}
	}
	return live, freed, nil
}

// curate builds the context package: the request's fields, up to three
// similar resolved consultations of the team, and the shared memories
// relevant to the question, each with why it is there.
func (s *Service) curate(ctx context.Context, teamID string, c Consultation, history []Consultation, red map[string]int) (ContextPackage, error) {
	p := ContextPackage{RequestingAgent: c.RequestingAgent, Context: c.Context, SimilarPast: []PastResolution{}, Memories: []MemoryRef{}, Redactions: red}
	p.Included = []string{"question and the requester's own context fields (what the specialist needs to answer)"}
	for _, h := range history {
		if h.ID == c.ID || h.Status != Completed || h.Response == nil {
			continue
		}
		sim := Similarity(c.Question, h.Question)
		if sim < 0.3 {
			continue
		}
		res := h.Response.Answer
		if h.Outcome != nil && h.Outcome.LessonsLearned != "" {
			res = h.Outcome.LessonsLearned + " (answer: " + h.Response.Answer + ")"
		}
		p.SimilarPast = append(p.SimilarPast, PastResolution{ConsultationID: h.ID, Question: h.Question,
			Resolution: Redact(clip.Clip(res, 1500), red), Similarity: round(sim),
			Why: fmt.Sprintf("a resolved consultation of the team with a similar question (similarity %.2f)", sim)})
	}
	sort.SliceStable(p.SimilarPast, func(i, j int) bool { return p.SimilarPast[i].Similarity > p.SimilarPast[j].Similarity })
	// At exactly the limit the slice is the whole: `>=` is a harmless survivor.
	if len(p.SimilarPast) > SimilarPast {
		p.SimilarPast = p.SimilarPast[:SimilarPast]
	}
	if len(p.SimilarPast) > 0 {
		p.Included = append(p.Included, fmt.Sprintf("%d similar past resolution(s) of the team", len(p.SimilarPast)))
	}
	if s.Memories != nil {
		mems, err := s.Memories.RecentMemories(ctx, teamID, 500)
		if err != nil {
			return p, err
		}
		for _, m := range mems {
			if m.Visibility != memory.Shared {
				continue
			}
			sim := Similarity(c.Question+" "+c.Context.SpecificConcern, m.Content)
			if sim < 0.2 {
				continue
			}
			p.Memories = append(p.Memories, MemoryRef{MemoryID: m.ID, Content: Redact(m.Content, red), Similarity: round(sim),
				Why: fmt.Sprintf("a shared memory of the team relevant to the question (similarity %.2f)", sim)})
		}
		sort.SliceStable(p.Memories, func(i, j int) bool { return p.Memories[i].Similarity > p.Memories[j].Similarity })
		// At exactly the limit the slice is the whole: `>=` is a harmless survivor.
		if len(p.Memories) > MaxMemories {
			p.Memories = p.Memories[:MaxMemories]
		}
		if len(p.Memories) > 0 {
			p.Included = append(p.Included, fmt.Sprintf("%d relevant shared memory(ies)", len(p.Memories)))
		}
	}
	p.Included = append(p.Included, "left out: conversation histories, unrelated tasks, private memories")
	return p, nil
}

func changed(err error) error {
	if errors.Is(err, ErrChanged) {
		return apperr.Wrap(apperr.ECONFLICT, err, "the consultation changed meanwhile; read it and try again").WithReason("ConsultationChanged")
	}
	return err
}

// specialistReply is the JSON a specialist is asked to answer with.
type specialistReply struct {
	Answer             string   `json:"answer"`
	AdditionalContext  string   `json:"additional_context"`
	CodeReference      string   `json:"code_reference"`
	SuggestedNextSteps []string `json:"suggested_next_steps"`
}

// ask sends one exchange of the active (pending or in_progress)
// consultation c to the specialist and records the answer: c is completed
// and its slot given back in the same transaction. A failed call
// escalates (specialist_failed), giving the slot back too, so nothing
// stays active.
func (s *Service) ask(ctx context.Context, c Consultation, kind, msg string, team []agents.Agent) (Consultation, error) {
	var spec agents.Agent
	for _, a := range team {
		if a.Slug == c.ConsultedAgent {
			spec = a
		}
	}
	req := prompts.Request(c.TeamID, spec, s.system(spec, c), maxAnswerTokens, s.ModelID)
	for _, e := range c.Exchanges {
		req.Messages = append(req.Messages, models.Message{Role: "user", Content: e.Message}, models.Message{Role: "assistant", Content: e.Response})
	}
	req.Messages = append(req.Messages, models.Message{Role: "user", Content: msg})
	actx, cancel := context.WithTimeout(ctx, AnswerTimeout)
	start := time.Now()
	resp, err := s.Model.Converse(actx, req)
	cancel()
	elapsed := time.Since(start).Milliseconds()
	now := s.Now.UTC()
	// The caller's deadline may have passed during the call (a chat
	// turn's tool bound): what follows must still be written, or the
	// consultation would stay pending and hold its requester's slot.
	wctx, wcancel := answerby.Detached(ctx, writeTimeout)
	defer wcancel()
	if err == nil && resp.Refused {
		err = errors.New("the specialist's model refused to answer")
	}
	if err != nil {
		s.log().WarnContext(ctx, "specialist failed", "team_id", c.TeamID, "consultation_id", c.ID, "agent", c.ConsultedAgent, "error", err.Error())
		return s.escalate(wctx, c, Loop{Type: EscalSpecialistError, DetectedAt: now, Evidence: map[string]any{
			"agent": c.ConsultedAgent, "exchange": len(c.Exchanges) + 1, "description": "the specialist could not answer: " + clip.Clip(err.Error(), 300)}})
	}
	reply := parseReply(resp.Text)
	tokens := resp.InputTokens + resp.OutputTokens
	cost := models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
	c.Exchanges = append(c.Exchanges, Exchange{Number: len(c.Exchanges) + 1, Type: kind, From: c.RequestingAgent, To: c.ConsultedAgent,
		Message: msg, Response: reply.Answer, TokensUsed: tokens, CostUSD: cost, ResponseMS: elapsed, CreatedAt: now})
	c.Response = &Answer{Answer: reply.Answer, AdditionalContext: reply.AdditionalContext, CodeReference: reply.CodeReference}
	c.SuggestedNextSteps = reply.SuggestedNextSteps
	c.TokensUsed += tokens
	c.CostUSD += cost
	by := ResolvedBySpecialist
	if spec.IsRemote() {
		by = ResolvedByRemote
	}
	c.Status, c.ResolvedBy, c.UpdatedAt, c.CompletedAt = Completed, by, now, &now
	c.Version++
	if err := s.Store.SaveConsultation(wctx, Save{Consultation: c, Release: true}); err != nil {
		return Consultation{}, changed(err)
	}
	return c, nil
}

func (s *Service) system(a agents.Agent, c Consultation) string {
	return prompts.System(a, brief(c))
}

// brief is what the specialist is told of consultation c, whether it
// answers within the request (the system prompt) or in a task of its own
// (the task's title, context and expected output).
func brief(c Consultation) prompts.Task {
	pkg, _ := json.Marshal(c.ContextPackage)
	return prompts.Task{
		Title:          fmt.Sprintf("Consultation %s: @%s asks for your help (urgency %s)", c.ID, c.RequestingAgent, c.Urgency),
		Context:        "The orchestrator curated this context package for you (secrets are redacted): " + string(pkg),
		ExpectedOutput: `JSON {"answer": "...", "additional_context": "...", "code_reference": "...", "suggested_next_steps": ["..."]}, or a plain-text answer`,
	}
}

// parseReply reads the JSON answer the specialist was asked for, or takes
// its whole text as the answer.
func parseReply(text string) specialistReply {
	t := strings.TrimSpace(text)
	t = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(t, "```json"), "```"), "```")
	var r specialistReply
	if err := json.Unmarshal([]byte(strings.TrimSpace(t)), &r); err != nil || strings.TrimSpace(r.Answer) == "" {
		r = specialistReply{Answer: strings.TrimSpace(text)}
	}
	if r.SuggestedNextSteps == nil {
		r.SuggestedNextSteps = []string{}
	}
	r.Answer = clip.Clip(r.Answer, MaxAnswer)
	return r
}

// Get returns a consultation. Returns ENOTFOUND.
func (s *Service) Get(ctx context.Context, teamID, id string) (Consultation, error) {
	return s.Store.GetConsultation(ctx, teamID, id)
}

// Wait returns the consultation once no answer is being written for it
// (it is neither pending nor in_progress) or when d has passed
// (long-poll).
func (s *Service) Wait(ctx context.Context, teamID, id string, d time.Duration) (Consultation, error) {
	return backoff.Poll(ctx, d, func(ctx context.Context) (Consultation, bool, error) {
		c, err := s.Store.GetConsultation(ctx, teamID, id)
		return c, !c.Status.Active(), err
	})
}

// List returns consultations newest first. Returns EINVALID.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Consultation, string, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, "", apperr.Invalid("status", "status must be one of pending, in_progress, completed, escalated")
	}
	if f.Agent != "" && !agents.ValidSlug(f.Agent) {
		return nil, "", apperr.Invalid("agent", "agent must be an agent slug")
	}
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	return s.Store.ListConsultations(ctx, teamID, f, p)
}

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// RefKind is the kind of a consultation's idempotency reference: POST
// /v1/consultations scopes its request's key to it.
const RefKind = "consultation"

// replay answers a request sent again under the Idempotency-Key of
// consultation id (its answer was lost): that consultation as it is now,
// its consulted agent not asked again.
func (s *Service) replay(ctx context.Context, teamID, id string, err error) (Consultation, error) {
	if err != nil {
		return Consultation{}, err
	}
	return s.Get(ctx, teamID, id)
}
