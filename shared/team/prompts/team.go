package prompts

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// Budgets of the team block (models.EstimateTokens, the estimate the task
// token budget is checked with locally). The block is in the system prompt
// of every model call of a turn or task step, so a task that makes two
// tool calls pays for it three times out of its 4,000 tokens.
const (
	// TeamBudget bounds the roster and the inbox summary together.
	TeamBudget = 400
	// InboxBudget is the most of TeamBudget the inbox summary takes: it is
	// written first (unread messages are what the agent must act on), and
	// the roster gets what it leaves, at least TeamBudget-InboxBudget.
	InboxBudget = 220
	// MaxInboxShown bounds the messages summarized; the summary counts the
	// rest, which stay unread and are shown next time.
	MaxInboxShown = 5
	// FindColleaguesTool is the tool the roster's last line points to when
	// it lists only part of the team and the tool is offered.
	FindColleaguesTool = "find_colleagues"
)

// Clipping of each entry, so one long message or tagline cannot take the
// budget of the others.
const (
	messageWords = 20
	messageRunes = 160
	taglineWords = 10
	taglineRunes = 80
	topSkills    = 3
)

// MessageTypeRequest is the message type the summary marks as a request
// the recipient answers on its next turn (docs/agents-context.md): the
// agent does the work in that answer or replies to the sender; it is not
// turned into a board task, which would bypass the delegation limits.
const MessageTypeRequest = "task_request"

// Team is what an agent is told about its team: who else is on it (the
// roster) and the unread messages addressed to it (the inbox summary).
// Callers pass what they have already read; building the block reads
// nothing.
type Team struct {
	// Self is the agent being asked: it is not in its own roster.
	Self string
	// Agents are the team's agents as the caller read them. Archived ones
	// are left out; paused ones are listed last, marked paused.
	Agents []agents.Agent
	// ActiveTasks is each agent's count of active tasks where the caller
	// has it at hand (the gate's loads in a chat turn); nil: unknown.
	ActiveTasks map[string]int
	// Query is what the agent is asked (the user's message, the task's
	// title and instructions): colleagues whose skills share its words
	// are listed first.
	Query string
	// Inbox is the agent's unread messages, newest first.
	Inbox []messaging.Message
	// Tools are the tools the agent is offered: the roster's overflow line
	// names find_colleagues only when it is one of them.
	Tools []models.Tool
}

// TeamBlock is the team's part of a system prompt and the ids of the
// inbox messages it shows whole (to mark read once the answer that saw
// them is committed; the ones not shown, or shown clipped, stay unread,
// so get_agent_inbox still gives them whole). The inbox summary comes
// first, within InboxBudget; the roster follows in what is left of
// TeamBudget, most relevant colleague first, and ends with "+N more" when
// the whole team does not fit. The whole block never exceeds TeamBudget.
func TeamBlock(t Team) (string, []string) {
	inbox, shown, listed := inboxSummary(t.Inbox)
	return inbox + rosterLines(t, inbox, senders(t.Inbox, listed)), shown
}

func senders(inbox []messaging.Message, n int) map[string]bool {
	out := map[string]bool{}
	for _, m := range inbox[:n] {
		out[m.From] = true
	}
	return out
}

// inboxSummary writes the newest messages that fit InboxBudget, each
// clipped; the header counts every unread message. It returns the ids of
// the messages shown whole and how many it listed.
func inboxSummary(inbox []messaging.Message) (string, []string, int) {
	if len(inbox) == 0 {
		return "", nil, 0
	}
	header := func(shown int) string {
		noun := "messages"
		if len(inbox) == 1 {
			noun = "message"
		}
		s := fmt.Sprintf("Your inbox: %d unread %s, newest first (read once you answer; one ending in … stays unread: get_agent_inbox gives it whole):\n", len(inbox), noun)
		if shown < len(inbox) {
			s += fmt.Sprintf("(%d older not shown: get_agent_inbox.)\n", len(inbox)-shown)
		}
		return s
	}
	const requestNote = "REQUEST: asked of you; do it in this answer, or reply to the sender (send_agent_message).\n"
	var lines []string
	var ids []string // shown whole: marked read after the commit
	requests := false
	listed := 0
	for _, m := range inbox {
		if listed == MaxInboxShown {
			break
		}
		line := "- @" + m.From + " " + m.Type
		if m.Type == MessageTypeRequest {
			line += " (REQUEST)"
		}
		if m.Channel != "" && m.Channel != messaging.ChannelDirect {
			line += " on " + m.Channel
		}
		shown := clipWords(m.Content, messageWords, messageRunes)
		// Shown in part ("…"), it stays unread: get_agent_inbox (unread
		// only by default) still gives the whole of it.
		clipped := shown != m.Content
		line += ": " + shown + "\n"
		req := requests || m.Type == MessageTypeRequest
		text := header(listed+1) + strings.Join(append(slices.Clone(lines), line), "")
		if req {
			text += requestNote
		}
		if models.EstimateTokens(text) > InboxBudget {
			break
		}
		lines, requests = append(lines, line), req
		if !clipped {
			ids = append(ids, m.ID)
		}
		listed++
	}
	if listed == 0 {
		// Not even one clipped message fits (it always does with the
		// clips above): the count alone still reaches the agent.
		return header(0), nil, 0
	}
	text := header(listed) + strings.Join(lines, "")
	if requests {
		text += requestNote
	}
	return text, ids, listed
}

// colleague is one roster candidate and how relevant it is.
type colleague struct {
	a      agents.Agent
	paused bool
	score  int
}

// rosterLines lists the colleagues that fit in TeamBudget after prefix
// (the inbox summary), most relevant first: active before paused, then those who wrote to the agent (their
// messages are in the summary), then by the words their skills share with
// the query, then by slug.
func rosterLines(t Team, prefix string, wrote map[string]bool) string {
	fits := func(s string) bool { return models.EstimateTokens(prefix+s) <= TeamBudget }
	terms := words(t.Query)
	var list []colleague
	for _, a := range t.Agents {
		if a.Slug == t.Self || a.Status == agents.StatusArchived {
			continue
		}
		c := colleague{a: a, paused: a.Status == agents.StatusPaused, score: overlap(terms, agentWords(a))}
		if wrote[a.Slug] {
			c.score += 100
		}
		list = append(list, c)
	}
	if len(list) == 0 {
		return ""
	}
	sort.SliceStable(list, func(i, j int) bool {
		x, y := list[i], list[j]
		if x.paused != y.paused {
			return !x.paused
		}
		if x.score != y.score {
			return x.score > y.score
		}
		return x.a.Slug < y.a.Slug
	})
	find := slices.ContainsFunc(t.Tools, func(tl models.Tool) bool { return tl.Name == FindColleaguesTool })
	more := func(n int) string {
		if n == 0 {
			return ""
		}
		if find {
			return fmt.Sprintf("+%d more not listed: use %s to find who fits a need.\n", n, FindColleaguesTool)
		}
		return fmt.Sprintf("+%d more not listed.\n", n)
	}
	const header = "Your team (tools that name a colleague take its slug, without the @):\n"
	text := header
	n := 0
	for i, c := range list {
		line := colleagueLine(c, terms, t.ActiveTasks)
		// The overflow line must fit too, whatever is left after this one.
		if !fits(text + line + more(len(list)-i-1)) {
			break
		}
		text += line
		n++
	}
	if n == 0 {
		if !fits(more(len(list))) {
			return ""
		}
		return more(len(list))
	}
	return text + more(len(list)-n)
}

// colleagueLine is "- @slug Name, tagline; skills: a, b, c; paused".
func colleagueLine(c colleague, terms map[string]bool, tasks map[string]int) string {
	a := c.a
	var b strings.Builder
	b.WriteString("- @" + a.Slug + " " + clipWords(a.Name, 4, 40))
	if a.Tagline != "" {
		b.WriteString(", " + clipWords(a.Tagline, taglineWords, taglineRunes))
	}
	if sk := skillNames(a, terms); len(sk) > 0 {
		b.WriteString("; skills: " + strings.Join(sk, ", "))
	}
	switch n, known := tasks[a.Slug]; {
	case c.paused:
		b.WriteString("; paused")
	case known && n > 0:
		fmt.Fprintf(&b, "; busy (%d active tasks)", n)
	}
	b.WriteString("\n")
	return b.String()
}

// skillNames are an agent's top skills for the query: those sharing its
// words first, then by priority, then in the agent's order. Internal-only
// skills are included: they are how colleagues reach the agent.
func skillNames(a agents.Agent, terms map[string]bool) []string {
	type ranked struct {
		name       string
		match, pri int
	}
	var list []ranked
	for _, sk := range a.Skills {
		ws := words(strings.Join(append(append([]string{sk.Name}, sk.Keywords...), sk.Domains...), " "))
		list = append(list, ranked{name: sk.Name, match: overlap(terms, ws), pri: sk.Priority})
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].match != list[j].match {
			return list[i].match > list[j].match
		}
		return list[i].pri > list[j].pri
	})
	var out []string
	for _, r := range list {
		if len(out) == topSkills {
			break
		}
		out = append(out, clipWords(r.name, 3, 40))
	}
	return out
}

// agentWords are the words an agent's roster relevance is judged on: its
// tagline and its skills' names, keywords and domains.
func agentWords(a agents.Agent) map[string]bool {
	parts := []string{a.Tagline}
	for _, sk := range a.Skills {
		parts = append(parts, sk.Name)
		parts = append(parts, sk.Keywords...)
		parts = append(parts, sk.Domains...)
	}
	return words(strings.Join(parts, " "))
}

func overlap(q, w map[string]bool) int {
	n := 0
	for t := range q {
		if w[t] {
			n++
		}
	}
	return n
}

// words are the lower-case words of s of three letters or more, a crude
// stem (a trailing "s") removed so "reviews" meets "review".
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(f)) < 3 || stopwords[f] {
			continue
		}
		if len(f) > 3 && strings.HasSuffix(f, "s") && !strings.HasSuffix(f, "ss") {
			f = f[:len(f)-1]
		}
		out[f] = true
	}
	return out
}

var stopwords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "this": true, "that": true, "you": true,
	"can": true, "please": true, "what": true, "how": true, "are": true, "our": true, "your": true, "from": true, "about": true}

// clipWords keeps the first n words of s (whitespace collapsed) and at
// most runes runes, marking a cut with "…": the token estimate counts
// words, a real tokenizer characters.
func clipWords(s string, n, runes int) string {
	f := strings.Fields(s)
	cut := len(f) > n
	if cut {
		f = f[:n]
	}
	out := strings.Join(f, " ")
	if r := []rune(out); len(r) > runes {
		out, cut = string(r[:runes]), true
	}
	if cut {
		out += "…"
	}
	return out
}
