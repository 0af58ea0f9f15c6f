package toolset_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/shared/toolset"
)

var all = settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true}

func TestEveryFlagGatesItsTools(t *testing.T) {
	chat := toolset.Allowed(all, nil, toolset.InChat)
	assert.Equal(t, []string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "start_collaboration", "send_agent_message", "get_agent_inbox", "handoff_to",
		"consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation", "find_colleagues"}, chat)
	assert.NotContains(t, toolset.Allowed(all, nil, toolset.InTask), "handoff_to", "a task has no conversation to hand over")

	noSessions := all
	noSessions.Sessions = false
	assert.NotContains(t, toolset.Allowed(noSessions, nil, toolset.InChat), "start_collaboration")
	assert.Contains(t, toolset.Allowed(noSessions, nil, toolset.InChat), "delegate_task")

	noDelegation := all
	noDelegation.TaskDelegation = false
	assert.Equal(t, []string{"send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation", "find_colleagues"},
		toolset.Allowed(noDelegation, nil, toolset.InChat),
		"no delegation, no reports, and (sessions needing delegation) no sessions")

	noCollab := all
	noCollab.Collaboration = false
	assert.Empty(t, toolset.Allowed(noCollab, []string{"search_memories"}, toolset.InChat), "collaboration off: no tool at all")
	assert.Empty(t, toolset.Allowed(noCollab, []string{"search_memories"}, toolset.InTask))
}

func TestDeclaredToolsOnlyForAgentsThatDeclareThem(t *testing.T) {
	assert.NotContains(t, toolset.Allowed(all, nil, toolset.InChat), "search_memories")
	got := toolset.Allowed(all, []string{"search_memories"}, toolset.InTask)
	assert.Contains(t, got, "search_memories")
	assert.NotContains(t, got, "share_memory")
	assert.True(t, toolset.Known("share_memory"))
	assert.False(t, toolset.Known("read_file"))
	assert.Len(t, toolset.Names(), len(toolset.Catalog))
}
