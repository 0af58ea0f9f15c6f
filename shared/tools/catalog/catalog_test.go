package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
)

var all = settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true}

func TestEveryFlagGatesItsTools(t *testing.T) {
	chat := catalog.Allowed(all, nil, catalog.InChat)
	assert.Equal(t, []string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "start_collaboration", "send_agent_message", "get_agent_inbox", "handoff_to",
		"consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation", "find_colleagues", "request_tool_pack"}, chat)
	assert.NotContains(t, catalog.Allowed(all, nil, catalog.InTask), "handoff_to", "a task has no conversation to hand over")

	noSessions := all
	noSessions.Sessions = false
	assert.NotContains(t, catalog.Allowed(noSessions, nil, catalog.InChat), "start_collaboration")
	assert.Contains(t, catalog.Allowed(noSessions, nil, catalog.InChat), "delegate_task")

	noDelegation := all
	noDelegation.TaskDelegation = false
	assert.Equal(t, []string{"send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation", "find_colleagues", "request_tool_pack"},
		catalog.Allowed(noDelegation, nil, catalog.InChat),
		"no delegation, no reports, and (sessions needing delegation) no sessions")

	noCollab := all
	noCollab.Collaboration = false
	assert.Empty(t, catalog.Allowed(noCollab, []string{"search_memories"}, catalog.InChat), "collaboration off: no tool at all")
	assert.Empty(t, catalog.Allowed(noCollab, []string{"search_memories"}, catalog.InTask))
}

func TestDeclaredToolsOnlyForAgentsThatDeclareThem(t *testing.T) {
	assert.NotContains(t, catalog.Allowed(all, nil, catalog.InChat), "search_memories")
	got := catalog.Allowed(all, []string{"search_memories"}, catalog.InTask)
	assert.Contains(t, got, "search_memories")
	assert.NotContains(t, got, "share_memory")
	assert.True(t, catalog.Known("share_memory"))
	assert.False(t, catalog.Known("read_file"))
	assert.Len(t, catalog.Names(), len(catalog.Catalog))
}

// Each tool's flag is its one check (Allowed): a tool without one would
// be offered with collaboration off.
func TestEveryToolHasAFlag(t *testing.T) {
	for _, tool := range catalog.Catalog {
		assert.Contains(t, settings.FlagNames, tool.Flag, "%s needs a flag", tool.Name)
	}
	assert.Empty(t, catalog.Allowed(settings.Flags{TaskDelegation: true, Sessions: true, ExpertGate: true}, []string{catalog.SearchMemories}, catalog.Anywhere),
		"collaboration off: no tool at all")
}
