// Package localmodel is the deterministic model of make run and the tests,
// an adapter of the models port: the same request always gets the same
// answer, and an agent can be scripted to make it misbehave on purpose.
//
// The local model stands in for the agent's configured model, so it reads
// what it needs from the agent record rather than from the request: the
// agent named in the request metadata (models.MetadataTeamID and
// models.MetadataAgent) gives it its script (the agent's model.script) and
// its voice (the agent's name and user-facing skills). The request stays
// what every provider receives; nothing in it exists only for this adapter.
//
// It reads the agent through a port of its own (AgentReader, Agent): the
// models wing is below the team wing, so the wire layer adapts the agent
// store to it (shared/wire/providers).
package localmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	textclip "github.com/conclave-ai/conclave/shared/platform/clip"
)

// ModelID is the id the local model reports when the request names none.
const ModelID = "local-deterministic"

// AgentReader reads the agent a request is attributed to
// (shared/wire/localmodelwiring adapts the agent store to it).
type AgentReader interface {
	// GetAgent returns ENOTFOUND for an unknown agent.
	GetAgent(ctx context.Context, teamID, slug string) (Agent, error)
}

// Agent is what the local model reads of an agent record: no more than
// its script and its voice.
type Agent struct {
	Name string
	// Script makes the model misbehave on purpose (see Model); "" for none.
	Script string
	// Skills are the agent's skills in its order.
	Skills []Skill
}

// Skill is one skill of an Agent.
type Skill struct {
	Name        string
	Description string
	// InternalOnly marks a skill other agents reach the agent for, which
	// it does not tell a user about.
	InternalOnly bool
}

// Model is the deterministic model. Scripts, read from the agent's
// Script, make it misbehave on purpose:
//
//	fail       every call returns models.ErrModel
//	timeout    the call blocks until its context ends
//	tools:N    the first N calls ask for one tool each, then it answers
//	tokens:N   the answer reports N output tokens
//	delegate:S the first call delegates the task's instructions to agent S
//	           (delegate_task), then it answers with the result
//	delegate2:S,T  the first call delegates the task's instructions to
//	           agents S and T at once (two delegate_task calls in one
//	           response), then it answers with both results (a fan-out)
//	delegate-fail:S  the same first call, then every later call fails
//	           (models.ErrModel): work done for a reply that never comes
//	refuse     the answer is a refusal (as a provider's content filter)
//	report:S   the first call requests a research_summary report on the
//	           task's instructions from agent S (request_report, waiting
//	           for it), then it answers with the report
//	delegate-async:S  the first call delegates to agent S without waiting
//	           (wait_for_result false), the second checks the task it got
//	           (check_task_status), then it answers with both results
//	collab:S,T the first call starts a brainstorm session with agents S
//	           and T on the last user message (start_collaboration)
//	handoff:S  the first call hands the conversation to agent S
//	           (handoff_to), then it answers saying so
//	message:S  the first call sends agent S a message (send_agent_message),
//	           the second reads its own inbox (get_agent_inbox)
//	recall     the first call searches the memories (search_memories) for
//	           the last user message
//	report-async:S  the first call requests a research_summary report from
//	           agent S without waiting for it (request_report)
//	spend:N    every call asks for one of the offered tools (in turn) and
//	           reports N output tokens: only a token budget stops it
//
// The tier-0 router model's call (a request offering choose_agent, made
// for no agent: see router.go) has no script; a marker in the question
// makes it misbehave: [tier0:fail] fails, [tier0:timeout] blocks until
// its context ends, [tier0:garbage] answers with input that is not JSON.
// Otherwise it chooses the candidate sharing the most words with the
// question.
//
// The tool packs' markers ([list-tools], [request-pack:NAME]) and the
// answers to extract_structured_data are in packs.go.
//
// Each scripted call is made only when the request offers its tool (the
// flags and the agent's declared tools decide): otherwise the model
// answers at once, as a model without the tool would.
//
//	omit:A,B   a report leaves out sections A and B, also when asked to
//	           revise it (the report fails with MissingSections)
//	omit-once:A,B  a report leaves them out of its first answer only and
//	           writes them when asked to revise it
//
// A task whose instructions are a report request (shared/work/reports) is
// answered with the report they ask for: the sections named, in the
// format named, a json report valid against the schema given.
//
// and, for the structured answers of collaboration sessions (a request
// offering submit_review, submit_vote or submit_plan; see structured.go):
//
//	approve-after:N  request changes (review) or reject (vote) before round N, then approve
//	never-approve    always request changes, or reject
//	reject           the same for votes: always reject
//	violate:N        the first N reviews are labelled "revision" (a protocol violation)
//	overspend        every answer reports 3,500 output tokens (costly with a priced model id)
//
// Without a script a reviewer approves and a voter approves.
//
// Without metadata, without Agents, or when the agent cannot be read, it
// answers plainly: no script and no voice. A model call must not fail
// because attribution is missing, and a provider would not know the agent
// either.
type Model struct {
	Agents AgentReader
}

var _ models.Model = Model{}

// New returns the local model reading agents from r.
func New(r AgentReader) Model { return Model{Agents: r} }

// voice is what the local model knows of the agent answering.
type voice struct {
	script string
	name   string
	// skills are the agent's user-facing skill names and notes their
	// descriptions, in the agent's order.
	skills []string
	notes  []string
}

// voiceOf looks up the agent the metadata names. Internal-only skills are
// left out: they are what other agents reach the agent for, not what it
// tells a user about. An agent that is not found has no script; one that
// cannot be read now fails the call (as a provider's error would): a
// scripted agent never answers as an unscripted one because a read
// failed under load.
func (l Model) voiceOf(ctx context.Context, md map[string]string) (voice, error) {
	team, slug := md[models.MetadataTeamID], md[models.MetadataAgent]
	if l.Agents == nil || team == "" || slug == "" {
		return voice{}, nil
	}
	a, err := l.Agents.GetAgent(ctx, team, slug)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return voice{}, nil
	}
	if err != nil {
		return voice{}, fmt.Errorf("%w: the agent's script could not be read: %v", models.ErrModel, err)
	}
	v := voice{name: a.Name, script: a.Script}
	for _, sk := range a.Skills {
		if !sk.InternalOnly {
			v.skills = append(v.skills, sk.Name)
			v.notes = append(v.notes, sk.Description)
		}
	}
	return v, nil
}

// streamWords is how many words each delta of a streamed answer holds.
const streamWords = 3

// Converse implements models.Model. A request with OnDelta gets its answer's
// text in pieces of a few words (models.Chunks) before Converse returns, at
// once: the tests that use the local model directly want no pacing (the
// edge's Bedrock paces what it streams).
func (l Model) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	resp, err := l.answer(ctx, req)
	if err == nil && req.OnDelta != nil {
		for _, piece := range models.Chunks(resp.Text, streamWords) {
			req.OnDelta(piece)
		}
	}
	return resp, err
}

// answer is the scripted answer to req.
//
// Kept whole: the scripted model's dispatch, one case per script a test or the
// demo asks for.
func (l Model) answer(ctx context.Context, req models.Request) (models.Response, error) {
	if err := ctx.Err(); err != nil {
		return models.Response{}, err
	}
	v, err := l.voiceOf(ctx, req.Metadata)
	if err != nil {
		return models.Response{}, err
	}
	in := models.EstimateTokens(req.System)
	for _, m := range req.Messages {
		in += models.EstimateTokens(m.Content)
	}
	// It reports the agent's configured model id, so costs and budgets
	// behave as they would with that model.
	resp := models.Response{InputTokens: in, ModelID: ModelID}
	if req.ModelID != "" {
		resp.ModelID = req.ModelID
	}
	if hasTool(req, chooseTool) {
		switch q := lastUser(req); {
		case strings.Contains(q, RouterFail):
			return models.Response{}, fmt.Errorf("%w: scripted router model failure", models.ErrModel)
		case strings.Contains(q, RouterTimeout):
			<-ctx.Done()
			return models.Response{}, ctx.Err()
		}
		return routerAnswer(req, resp), nil
	}
	if hasTool(req, plannerTool) {
		return plannerAnswer(req, resp), nil
	}
	kind, arg, _ := strings.Cut(v.script, ":")
	n, _ := strconv.Atoi(arg)
	if v.script == "" || strings.Contains(req.System, ExtractMarker) {
		// The tool packs' markers (packs.go).
		if r, ok := packAnswer(req, resp); ok {
			return r, nil
		}
	}
	if kind != "fail" && kind != "timeout" {
		if r, ok := structuredAnswer(req, resp, kind, n); ok {
			return r, nil
		}
	}
	switch kind {
	case "fail":
		return models.Response{}, fmt.Errorf("%w: scripted failure", models.ErrModel)
	case "timeout":
		<-ctx.Done()
		return models.Response{}, ctx.Err()
	case "refuse":
		resp.Text, resp.Refused, resp.OutputTokens = "I can't help with that.", true, 6
		return resp, nil
	case "delegate", "delegate-fail":
		if toolResults(req) == 0 && hasTool(req, "delegate_task") {
			last := lastUser(req)
			input, _ := json.Marshal(map[string]any{"to_agent": arg, "title": "Help with: " + clip(last, 80), "instructions": last, "task_type": "research"})
			resp.ToolCalls = []models.ToolCall{{ID: "call-1", Name: "delegate_task", Input: string(input)}}
			resp.OutputTokens = 24
			return resp, nil
		}
		if kind == "delegate-fail" {
			return models.Response{}, fmt.Errorf("%w: scripted failure after delegating", models.ErrModel)
		}
		resp.Text = answer(req, v) + " Delegated work: " + lastTool(req)
		resp.OutputTokens = models.EstimateTokens(resp.Text)
		return resp, nil
	case "delegate2":
		if toolResults(req) == 0 && hasTool(req, "delegate_task") {
			last := lastUser(req)
			for i, slug := range strings.SplitN(arg, ",", 2) {
				input, _ := json.Marshal(map[string]any{"to_agent": slug, "title": fmt.Sprintf("Help with (part %d): %s", i+1, clip(last, 80)), "instructions": last, "task_type": "research"})
				resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: fmt.Sprintf("call-%d", i+1), Name: "delegate_task", Input: string(input)})
			}
			resp.OutputTokens = 48
			return resp, nil
		}
		resp.Text = answer(req, v) + " Delegated work: " + strings.Join(toolOutputs(req), " | ")
		resp.OutputTokens = models.EstimateTokens(resp.Text)
		return resp, nil
	case "report":
		if toolResults(req) == 0 && hasTool(req, "request_report") {
			last := lastUser(req)
			input, _ := json.Marshal(map[string]any{"to_agent": arg, "report_type": "research_summary", "title": "Research: " + clip(last, 80),
				"parameters": map[string]any{"topic": clip(last, 200)}, "wait_for_result": true})
			resp.ToolCalls = []models.ToolCall{{ID: "call-1", Name: "request_report", Input: string(input)}}
			resp.OutputTokens = 30
			return resp, nil
		}
		resp.Text = answer(req, v) + " Report: " + lastTool(req)
		resp.OutputTokens = models.EstimateTokens(resp.Text)
		return resp, nil
	case "spend":
		if len(req.Tools) > 0 {
			calls := toolResults(req)
			t := req.Tools[calls%len(req.Tools)]
			resp.ToolCalls = []models.ToolCall{{ID: fmt.Sprintf("call-%d", calls+1), Name: t.Name, Input: "{}"}}
		} else {
			resp.Text = answer(req, v)
		}
		resp.OutputTokens = n
		return resp, nil
	case "delegate-async", "collab", "handoff", "message", "recall", "report-async", "consult":
		if call, ok := scripted(req, kind, arg); ok {
			resp.ToolCalls, resp.OutputTokens = []models.ToolCall{call}, 24
			return resp, nil
		}
		resp.Text = answer(req, v) + " Tools: " + strings.Join(toolOutputs(req), " | ")
		resp.OutputTokens = models.EstimateTokens(resp.Text)
		return resp, nil
	case "tools":
		if calls := toolResults(req); calls < n && len(req.Tools) > 0 {
			t := req.Tools[calls%len(req.Tools)]
			resp.ToolCalls = []models.ToolCall{{ID: fmt.Sprintf("call-%d", calls+1), Name: t.Name, Input: "{}"}}
			resp.OutputTokens = 12
			return resp, nil
		}
	}
	resp.Text = answer(req, v)
	if strings.Contains(lastUser(req), ListTools) {
		resp.Text += " " + offered(req)
	}
	resp.OutputTokens = models.EstimateTokens(resp.Text)
	if kind == "tokens" {
		resp.OutputTokens = n
	}
	if kind == "overspend" {
		resp.OutputTokens = overspendTokens
	}
	return resp, nil
}

// scripted is the next tool call of a multi-step script, if any is left
// and its tool is offered.
func scripted(req models.Request, kind, arg string) (models.ToolCall, bool) {
	step := toolResults(req)
	last := lastUser(req)
	var name string
	var input map[string]any
	switch {
	case kind == "delegate-async" && step == 0:
		name, input = "delegate_task", map[string]any{"to_agent": arg, "title": "Help with: " + clip(last, 80), "instructions": last, "task_type": "research", "wait_for_result": false}
	case kind == "delegate-async" && step == 1:
		id := taskIDRE.FindString(lastTool(req))
		if id == "" {
			return models.ToolCall{}, false
		}
		name, input = "check_task_status", map[string]any{"task_id": id}
	case kind == "collab" && step == 0:
		var parts []map[string]any
		for _, slug := range strings.Split(arg, ",") {
			parts = append(parts, map[string]any{"slug": slug, "role": "contributor"})
		}
		name, input = "start_collaboration", map[string]any{"pattern": "brainstorm", "goal": clip(last, 400), "participants": parts}
	case kind == "handoff" && step == 0:
		name, input = "handoff_to", map[string]any{"to_agent": arg, "reason": "they are better placed to help with this", "context_summary": "The user asked: " + clip(last, 200)}
	case kind == "message" && step == 0:
		name, input = "send_agent_message", map[string]any{"to_agent": arg, "message": "The user asked: " + clip(last, 300), "message_type": "info_request"}
	case kind == "message" && step == 1:
		name, input = "get_agent_inbox", map[string]any{"unread_only": true}
	case kind == "report-async" && step == 0:
		name, input = "request_report", map[string]any{"to_agent": arg, "report_type": "research_summary", "title": "Research: " + clip(last, 80),
			"parameters": map[string]any{"topic": clip(last, 200)}, "wait_for_result": false}
	case kind == "consult" && step == 0:
		name, input = "consult_specialist", map[string]any{"question": clip(last, 400), "suggested_agent": arg}
	case kind == "recall" && step == 0:
		name, input = "search_memories", map[string]any{"query": clip(last, 200)}
	default:
		return models.ToolCall{}, false
	}
	if !hasTool(req, name) {
		return models.ToolCall{}, false
	}
	raw, _ := json.Marshal(input)
	return models.ToolCall{ID: fmt.Sprintf("call-%d", step+1), Name: name, Input: string(raw)}, true
}

var taskIDRE = regexp.MustCompile(`task_[0-9a-z]+`)

// toolOutputs are the tool results of the request, in order.
func toolOutputs(req models.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

func toolResults(req models.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

func hasTool(req models.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func lastUser(req models.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func lastTool(req models.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Content
		}
	}
	return ""
}

// clip trims before it clips: the scripted model quotes the user's words
// in its tool arguments, and a leading newline would read as a blank.
func clip(s string, n int) string { return textclip.Clip(strings.TrimSpace(s), n) }

// answer composes a reply in the agent's voice from the last user message
// and the agent's skills; the opener is picked by a hash of the agent's
// name and the message so the answer is stable for a given input. The
// closing sentence is the same for every agent, which is what an aggregator
// must deduplicate.
func answer(req models.Request, v voice) string {
	if r, ok := readReport(req); ok {
		return reportAnswer(req, r, v.script)
	}
	last := lastUser(req)
	h := fnv.New32a()
	h.Write([]byte(v.name + last))
	openers := []string{"Here is my take.", "Short answer first.", "Let me work through this."}
	var b strings.Builder
	b.WriteString(openers[int(h.Sum32())%len(openers)])
	skills := append([]string(nil), v.skills...)
	sort.Strings(skills)
	switch {
	case v.name != "" && len(v.notes) > 0:
		fmt.Fprintf(&b, " As %s, on %s: %s.", v.name, strings.ReplaceAll(v.skills[0], "-", " "), strings.TrimSuffix(lowerFirst(v.notes[0]), "."))
	case len(skills) > 0:
		fmt.Fprintf(&b, " Drawing on %s:", strings.Join(skills, ", "))
	}
	topic := strings.TrimSpace(last)
	if len(topic) > 160 {
		topic = topic[:160] + "…"
	}
	fmt.Fprintf(&b, " On %q: the key points are scope, risks and next steps.", topic)
	return b.String()
}

func lowerFirst(s string) string {
	r := []rune(s)
	if len(r) > 1 && r[0] >= 'A' && r[0] <= 'Z' && r[1] >= 'a' && r[1] <= 'z' {
		r[0] += 'a' - 'A'
	}
	return string(r)
}
