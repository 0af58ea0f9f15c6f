// Package toolpacks is the registry of tool packs: named groups of tools a
// task is given for that task only, on top of its agent's own (seed 003,
// phase 8: "tool packs and mid-execution augmentation"). Whoever creates a
// task names its packs (tasks.CreateInput.ToolPacks: POST /v1/tasks, a plan
// step), and a running task pulls one in with the request_tool_pack tool
// for the rest of that task. The next task does not get it: augmentation
// never changes the agent or its skills. A skill may name packs too
// (agents.Skill.Packs): a chat reply that skill answers is given their
// tools, and request_tool_pack adds one for the rest of a reply.
//
// The built-in packs group Conclave's own tools (shared/tools/catalog) and the
// bridging tools, which exist for packs: summarize_text,
// extract_structured_data, compare_texts, clipboard_store and
// clipboard_get (shared/agenttools implements them). A tool may belong to
// more than one pack. A pack's tool is still behind its feature flag and
// still needs the service it calls: packs add tools an agent did not
// declare, never tools the stage turned off.
//
// The package also holds the clipboard's rules (Clipboard): the key/value
// store the bridging tools share between the steps of one plan (the tasks
// of one delegation tree) or the turns of one conversation.
package toolpacks

import (
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
)

// Pack is a named group of tools.
type Pack struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tools       []string `json:"tools"`
}

// Names of the built-in packs.
const (
	Collaboration = "collaboration"
	Memory        = "memory"
	Board         = "board"
	Reporting     = "reporting"
	Bridging      = "bridging"
)

// MaxPerTask bounds the packs one task may be created with (there are
// five; naming all of them is allowed, naming one twice is not).
const MaxPerTask = 5

// Builtin lists the built-in packs, in the order they are shown.
//
// Members, and why:
//   - collaboration: working with colleagues — delegate, start a session,
//     message, consult a specialist (the four consultation steps) and find
//     who fits a need. handoff_to is left out: it moves a conversation,
//     and a pack is for a task.
//   - memory: the declared memory tools (search_memories, share_memory),
//     for an agent whose skills do not declare them.
//   - board: the task board — start one's own next queued task, check a
//     task, and put a task on a colleague's board (delegate_task, also in
//     collaboration).
//   - reporting: request a structured report and read it.
//   - bridging: text tools that pass work between steps — summarize,
//     extract to a JSON Schema, compare, and the plan's clipboard.
var Builtin = []Pack{
	{Name: Collaboration, Description: "Work with colleagues: delegate, start a collaboration session, message, consult a specialist and find who fits a need.",
		Tools: []string{catalog.DelegateTask, catalog.StartCollaboration, catalog.SendAgentMessage, catalog.GetAgentInbox,
			catalog.ConsultSpecialist, catalog.ConsultationFollowUp, catalog.CloseConsultation, catalog.ReadConsultation, catalog.FindColleagues}},
	{Name: Memory, Description: "Search what the team remembers and share what it should.",
		Tools: []string{catalog.SearchMemories, catalog.ShareMemory}},
	{Name: Board, Description: "The task board: start your next queued task, check a task, and put a task on a colleague's board.",
		Tools: []string{catalog.NextTask, catalog.CheckTaskStatus, catalog.DelegateTask}},
	{Name: Reporting, Description: "Request a structured report from a colleague and read it.",
		Tools: []string{catalog.RequestReport, catalog.GetReport}},
	{Name: Bridging, Description: "Pass work between steps: summarize a text, extract structured data to a JSON Schema, compare two texts, and keep values on the plan's clipboard.",
		Tools: []string{catalog.SummarizeText, catalog.ExtractStructuredData, catalog.CompareTexts, catalog.ClipboardStore, catalog.ClipboardGet}},
}

// Get returns the built-in pack name. Returns ENOTFOUND for any other.
func Get(name string) (Pack, error) {
	i := slices.IndexFunc(Builtin, func(p Pack) bool { return p.Name == name })
	if i < 0 {
		return Pack{}, apperr.NotFound("tool pack", name)
	}
	p := Builtin[i]
	p.Tools = slices.Clone(p.Tools)
	return p, nil
}

// Known reports whether name is a pack.
func Known(name string) bool {
	_, err := Get(name)
	return err == nil
}

// Names lists the packs' names.
func Names() []string {
	out := make([]string, len(Builtin))
	for i, p := range Builtin {
		out[i] = p.Name
	}
	return out
}

// Validate checks the packs a task is created with: known, each once, at
// most MaxPerTask. Returns EINVALID naming field (tool_packs).
func Validate(field string, packs []string) error {
	if len(packs) > MaxPerTask {
		return apperr.Invalid(field, "%s names at most %d packs", field, MaxPerTask)
	}
	for i, p := range packs {
		if !Known(p) {
			return apperr.Invalid(field, "%s: unknown tool pack %q (known: %s)", field, p, strings.Join(Names(), ", "))
		}
		if slices.Contains(packs[:i], p) {
			return apperr.Invalid(field, "%s names %q twice", field, p)
		}
	}
	return nil
}

// ValidateNames checks the packs a task is created with before the
// team's own packs are known: at most MaxPerTask, each once, each a
// built-in pack or a name an MCP pack may have (whether the team has it
// is the caller's to check). Returns EINVALID naming field.
func ValidateNames(field string, packs []string) error {
	if len(packs) > MaxPerTask {
		return apperr.Invalid(field, "%s names at most %d packs", field, MaxPerTask)
	}
	for i, p := range packs {
		if !Known(p) && !mcpPackName.MatchString(p) {
			return apperr.Invalid(field, "%s: unknown tool pack %q (known: %s)", field, p, strings.Join(Names(), ", "))
		}
		if slices.Contains(packs[:i], p) {
			return apperr.Invalid(field, "%s names %q twice", field, p)
		}
	}
	return nil
}

// Tools is the union of the packs' tools, in pack order, each once;
// unknown packs are skipped (they were validated when the task was
// created).
func Tools(packs []string) []string {
	var out []string
	for _, name := range packs {
		p, err := Get(name)
		if err != nil {
			continue
		}
		for _, t := range p.Tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// View is a pack as GET /v1/tool-packs shows it: each tool as the model
// receives it (name, description, input schema), with the feature flag it
// needs.
type View struct {
	Name string `json:"name"`
	// Kind is KindBuiltin or KindMCP.
	Kind        string     `json:"kind"`
	Description string     `json:"description"`
	Tools       []ViewTool `json:"tools"`
	// MCP is the server of an MCP pack (absent for a built-in one).
	MCP *MCPView `json:"mcp,omitempty"`
}

// Kinds of pack.
const (
	KindBuiltin = "builtin"
	KindMCP     = "mcp"
)

// MCPView is an MCP pack's server as the routes show it: never the
// credential, only whether there is one and its header.
type MCPView struct {
	URL              string    `json:"url"`
	HasCredential    bool      `json:"has_credential"`
	CredentialHeader string    `json:"credential_header,omitempty"`
	ListedAt         time.Time `json:"listed_at"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// ViewTool is one tool of a View.
type ViewTool struct {
	catalog.OfferedTool
	// Flag is the feature flag the tool needs (settings.Flag*).
	Flag string `json:"flag"`
	// Where is where it can be given: "task" or "anywhere" (a task or a
	// chat reply). An MCP pack's tools are given anywhere.
	Where string `json:"where"`
	// ServerName is an MCP tool's name on its server (Name is what the
	// model calls it).
	ServerName string `json:"server_name,omitempty"`
}

// List is GET /v1/tool-packs.
type List struct {
	ToolPacks []View `json:"tool_packs"`
}
