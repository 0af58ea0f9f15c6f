// Package catalog is the catalog of the tools an agent may call, in a chat
// reply or while working on a task: their names, the feature flag each
// needs, and which an agent gets without declaring them. The tools
// themselves are implemented by shared/agenttools; agent validation
// (shared/team/agents) refuses a declared tool the catalog does not know.
//
// Who gets what follows the seed's flag progression (settings.Flags.On):
// with collaboration off an agent gets no tool at all; task_delegation
// adds delegation and reports; sessions adds start_collaboration. An
// agent's declared tools (skills[].tools) are the tools it may call beyond
// the collaboration tools, each still behind its flag. Every tool's input
// schema is generated from the Go type its handler decodes
// (shared/agenttools); GET /v1/agents/{slug}/tools shows them.
package catalog

import (
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// Tool names.
const (
	DelegateTask       = "delegate_task"
	CheckTaskStatus    = "check_task_status"
	NextTask           = "next_task"
	RequestReport      = "request_report"
	GetReport          = "get_report"
	StartCollaboration = "start_collaboration"
	SendAgentMessage   = "send_agent_message"
	GetAgentInbox      = "get_agent_inbox"
	HandoffTo          = "handoff_to"
	SearchMemories     = "search_memories"
	ShareMemory        = "share_memory"
	// A consultation is four tools, one per step, each with one input
	// shape: ask, follow up, close (with a rating), read.
	ConsultSpecialist    = "consult_specialist"
	ConsultationFollowUp = "consultation_follow_up"
	CloseConsultation    = "close_consultation"
	ReadConsultation     = "read_consultation"
	FindColleagues       = "find_colleagues"
	// RequestToolPack adds a tool pack (shared/tools/toolpacks) to the running
	// task or chat reply, for the rest of it only.
	RequestToolPack = "request_tool_pack"
	// The bridging tools: the bridging pack's (shared/tools/toolpacks). The
	// first three ask the model; the clipboard is the plan's or the
	// conversation's.
	SummarizeText         = "summarize_text"
	ExtractStructuredData = "extract_structured_data"
	CompareTexts          = "compare_texts"
	ClipboardStore        = "clipboard_store"
	ClipboardGet          = "clipboard_get"
)

// Where a tool is called from.
type Where int

// Places.
const (
	InTask Where = 1 << iota
	InChat
	Anywhere = InTask | InChat
)

// Tool is one catalog entry.
type Tool struct {
	Name string
	// Flag is the feature flag the tool needs (settings.Flag*).
	Flag string
	// Declared tools are given only to agents whose skills list them;
	// the others are every agent's while their flag is on.
	Declared bool
	Where    Where
}

// Catalog lists every tool, in the order they are offered.
var Catalog = []Tool{
	{Name: DelegateTask, Flag: settings.FlagTaskDelegation, Where: Anywhere},
	{Name: CheckTaskStatus, Flag: settings.FlagTaskDelegation, Where: Anywhere},
	// The agent's own board: start its best queued work item (POST
	// /v1/agents/{slug}/next-task).
	{Name: NextTask, Flag: settings.FlagTaskDelegation, Where: Anywhere},
	{Name: RequestReport, Flag: settings.FlagTaskDelegation, Where: Anywhere},
	{Name: GetReport, Flag: settings.FlagTaskDelegation, Where: Anywhere},
	{Name: StartCollaboration, Flag: settings.FlagSessions, Where: Anywhere},
	{Name: SendAgentMessage, Flag: settings.FlagCollaboration, Where: Anywhere},
	{Name: GetAgentInbox, Flag: settings.FlagCollaboration, Where: Anywhere},
	// A handoff moves a conversation; a task has none to move.
	{Name: HandoffTo, Flag: settings.FlagCollaboration, Where: InChat},
	{Name: SearchMemories, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	{Name: ShareMemory, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	// A consultation: the orchestrator picks the specialist and curates
	// the context (shared/work/consultations).
	{Name: ConsultSpecialist, Flag: settings.FlagCollaboration, Where: Anywhere},
	{Name: ConsultationFollowUp, Flag: settings.FlagCollaboration, Where: Anywhere},
	{Name: CloseConsultation, Flag: settings.FlagCollaboration, Where: Anywhere},
	{Name: ReadConsultation, Flag: settings.FlagCollaboration, Where: Anywhere},
	// Who fits a need, by the ExpertGate (the same as GET
	// /v1/agents/recommend), with availability and load: what the
	// delegation and messaging tools need to name a colleague.
	{Name: FindColleagues, Flag: settings.FlagCollaboration, Where: Anywhere},
	// Every running task, and every chat reply, may pull in a tool pack
	// (shared/tools/toolpacks) for the rest of it.
	{Name: RequestToolPack, Flag: settings.FlagCollaboration, Where: Anywhere},
	// The bridging tools come with the bridging pack, or to an agent
	// whose skills declare them.
	{Name: SummarizeText, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	{Name: ExtractStructuredData, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	{Name: CompareTexts, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	{Name: ClipboardStore, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
	{Name: ClipboardGet, Flag: settings.FlagCollaboration, Declared: true, Where: Anywhere},
}

// Get returns the catalog entry of name.
func Get(name string) (Tool, bool) {
	i := slices.IndexFunc(Catalog, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return Catalog[i], true
}

// Usable reports whether a pack's tool may be given at where with flags:
// a pack adds tools an agent did not declare, never a tool its flag (or
// the collaboration flag) turns off, nor one of another place.
func Usable(flags settings.Flags, name string, where Where) bool {
	t, ok := Get(name)
	return ok && t.Where&where != 0 && flags.On(t.Flag) && flags.On(settings.FlagCollaboration)
}

// Known reports whether name is a tool of the catalog.
func Known(name string) bool {
	return slices.ContainsFunc(Catalog, func(t Tool) bool { return t.Name == name })
}

// Names lists the catalog's tool names.
func Names() []string {
	out := make([]string, len(Catalog))
	for i, t := range Catalog {
		out[i] = t.Name
	}
	return out
}

// Allowed lists, in catalog order, the tools an agent that declared the
// tools in declared may call at where, with flags. Each tool's own flag is
// its one check: every flag needs collaboration (settings.Flags.On), so
// collaboration off leaves no tool, and TestEveryToolHasAFlag keeps every
// entry behind one.
func Allowed(flags settings.Flags, declared []string, where Where) []string {
	var out []string
	for _, t := range Catalog {
		if t.Where&where == 0 || !flags.On(t.Flag) {
			continue
		}
		if t.Declared && !slices.Contains(declared, t.Name) {
			continue
		}
		out = append(out, t.Name)
	}
	return out
}

// Contexts in which an agent's model receives tools (GET
// /v1/agents/{slug}/tools?context=).
const (
	ContextChat = "chat"
	ContextTask = "task"
)

// Offered is what an agent's model receives in one context: GET
// /v1/agents/{slug}/tools.
type Offered struct {
	Agent   string `json:"agent"`
	Context string `json:"context"`
	// Skill is the skill the list is for (its tools); "" is the agent
	// answering without a skill match: every skill's tools.
	Skill string        `json:"skill,omitempty"`
	Tools []OfferedTool `json:"tools"`
}

// OfferedTool is one tool as the model receives it: Bedrock's toolSpec
// (name, description, inputSchema.json).
type OfferedTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}
