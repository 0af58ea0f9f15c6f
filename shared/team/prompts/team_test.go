package prompts_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// bigTeam is n agents with long taglines and five skills each; agent07
// is the parser expert and agent03 is paused.
func bigTeam(n int) []agents.Agent {
	var out []agents.Agent
	for i := range n {
		a := agents.Agent{Slug: fmt.Sprintf("agent%02d", i), Name: fmt.Sprintf("Agent Number %d", i), Status: agents.StatusActive,
			Tagline: "a generalist who helps with many kinds of work across the whole product and its documentation"}
		for j := range 5 {
			a.Skills = append(a.Skills, agents.Skill{Name: fmt.Sprintf("skill-%d-%d", i, j), Description: strings.Repeat("words ", 40)})
		}
		switch i {
		case 7:
			a.Skills = append(a.Skills, agents.Skill{Name: "parser-review", Keywords: []string{"parser", "grammar"}})
		case 3:
			a.Status = agents.StatusPaused
		case 5:
			a.Status = agents.StatusArchived
		}
		out = append(out, a)
	}
	return out
}

// inbox is n messages, newest first: the odd ones long (shown clipped),
// the even ones short (shown whole).
func inbox(n int) []messaging.Message {
	var out []messaging.Message
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := n - 1; i >= 0; i-- {
		typ := "info_request"
		if i%3 == 0 {
			typ = "task_request"
		}
		content := fmt.Sprintf("message %d: a short note", i)
		if i%2 == 1 {
			content = fmt.Sprintf("message %d ", i) + strings.Repeat("lorem ipsum dolor ", 60)
		}
		out = append(out, messaging.Message{ID: fmt.Sprintf("amsg_%02d", i), From: fmt.Sprintf("agent%02d", 20+i%10), Channel: messaging.ChannelDirect,
			Type: typ, Content: content, CreatedAt: at.Add(time.Duration(i) * time.Minute)})
	}
	return out
}

var findColleagues = []models.Tool{{Name: prompts.FindColleaguesTool}, {Name: "delegate_task"}}

func TestTheTeamBlockOfThirtyAgentsAndAFullInboxStaysWithinItsBudget(t *testing.T) {
	team := bigTeam(30)
	block, shown := prompts.TeamBlock(prompts.Team{Self: "agent00", Agents: team, Inbox: inbox(8), Query: "review the parser please", Tools: findColleagues})
	t.Logf("%d tokens:\n%s", models.EstimateTokens(block), block)
	assert.LessOrEqual(t, models.EstimateTokens(block), prompts.TeamBudget)

	// The inbox: newest first, at most MaxInboxShown, the rest counted;
	// only the messages shown whole are to be marked read (a clipped one
	// stays unread for get_agent_inbox).
	listedInbox := strings.Count(block[:strings.Index(block, "Your team")], "\n- @")
	require.Positive(t, listedInbox)
	assert.LessOrEqual(t, listedInbox, prompts.MaxInboxShown)
	wantShown := []string{}
	for i := 7; i > 7-listedInbox; i-- {
		if i%2 == 0 {
			wantShown = append(wantShown, fmt.Sprintf("amsg_%02d", i))
		}
	}
	assert.Equal(t, wantShown, shown)
	assert.Contains(t, block, "Your inbox: 8 unread")
	assert.Contains(t, block, fmt.Sprintf("(%d older not shown:", 8-listedInbox))
	assert.Contains(t, block, "task_request (REQUEST)")
	assert.Contains(t, block, "REQUEST: asked of you")
	assert.NotContains(t, block, strings.Repeat("lorem ipsum dolor ", 20), "contents are clipped")

	// The roster: the most relevant first, the rest pointed to.
	roster := block[strings.Index(block, "Your team"):]
	lines := strings.Split(strings.TrimSpace(roster), "\n")
	require.Greater(t, len(lines), 3)
	assert.True(t, strings.HasPrefix(lines[1], "- @agent"), lines[1])
	assert.Regexp(t, `^\+\d+ more not listed: use find_colleagues`, lines[len(lines)-1])
	listed := len(lines) - 2
	assert.Contains(t, lines[len(lines)-1], fmt.Sprintf("+%d more", 30-2-listed), "everyone but itself and the archived one is counted")
	assert.NotContains(t, roster, "@agent00 ", "not itself")
	assert.NotContains(t, roster, "@agent05 ", "archived")
	// Those who wrote come first (their messages are in the summary),
	// then the parser expert.
	for i, l := range lines[1 : listedInbox+1] {
		assert.Regexp(t, `^- @agent2\d `, l, "line %d", i)
	}
	assert.True(t, strings.HasPrefix(lines[listedInbox+1], "- @agent07 "), lines[listedInbox+1])
	assert.Contains(t, lines[listedInbox+1], "skills: parser-review, ", "the matching skill first")
}

func TestTheTeamBlockFitsWhateverTheTeamAndInbox(t *testing.T) {
	for _, n := range []int{0, 1, 2, 6, 15, 30, 60, 120} {
		for _, m := range []int{0, 1, 3, 5, 8, 40} {
			for _, tools := range [][]models.Tool{nil, findColleagues} {
				block, shown := prompts.TeamBlock(prompts.Team{Self: "agent01", Agents: bigTeam(n), Inbox: inbox(m), Query: "parser", Tools: tools})
				assert.LessOrEqual(t, models.EstimateTokens(block), prompts.TeamBudget, "%d agents, %d messages", n, m)
				// Every message shown whole is to be read; the long ones
				// (odd) are clipped and stay unread.
				whole := 0
				for i := m - 1; i >= max(0, m-prompts.MaxInboxShown); i-- {
					if i%2 == 0 {
						whole++
					}
				}
				assert.Len(t, shown, whole, "%d agents, %d messages", n, m)
				for _, id := range shown {
					var i int
					fmt.Sscanf(id, "amsg_%d", &i)
					assert.Zero(t, i%2, "%s was clipped: it stays unread", id)
				}
			}
		}
	}
}

func TestASmallTeamIsListedWholeWithAvailabilityAndLoad(t *testing.T) {
	team := []agents.Agent{
		luke,
		{Slug: "kyra", Name: "Kyra", Tagline: "the team lead", Status: agents.StatusActive, Skills: []agents.Skill{{Name: "planning"}, {Name: "synthesis"}}},
		{Slug: "dana", Name: "Dana", Status: agents.StatusPaused, Skills: []agents.Skill{{Name: "statistics"}}},
		{Slug: "sage", Name: "Sage", Status: agents.StatusActive},
	}
	team[0].Status = agents.StatusActive
	block, shown := prompts.TeamBlock(prompts.Team{Self: "kyra", Agents: team, ActiveTasks: map[string]int{"luke": 2, "sage": 0}, Query: "code review"})
	assert.Empty(t, shown)
	assert.Equal(t, "Your team (tools that name a colleague take its slug, without the @):\n"+
		"- @luke Luke, the team's code reviewer; skills: code-review, triage, testing; busy (2 active tasks)\n"+
		"- @sage Sage\n"+
		"- @dana Dana; skills: statistics; paused\n", block)

	block, _ = prompts.TeamBlock(prompts.Team{Self: "kyra", Agents: team[1:2]})
	assert.Empty(t, block, "alone, and nothing unread: nothing to say")
}

func TestAMessageOfOneLongWordIsClipped(t *testing.T) {
	m := messaging.Message{ID: "amsg_1", From: "kyra", Type: "notification", Content: strings.Repeat("x", 5000)}
	block, shown := prompts.TeamBlock(prompts.Team{Self: "luke", Inbox: []messaging.Message{m}})
	assert.Empty(t, shown, "shown clipped: it stays unread, get_agent_inbox gives it whole")
	assert.Less(t, len(block), 600)
	assert.Contains(t, block, "- @kyra notification: xxx")
}
