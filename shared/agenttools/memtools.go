package agenttools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// MemoryTools is what the memory tools need (memory.Service).
type MemoryTools interface {
	Visible(ctx context.Context, teamID, agent string) ([]memory.Memory, error)
	Create(ctx context.Context, teamID, author string, in memory.CreateInput) (memory.Memory, error)
}

// maxRecall bounds what search_memories returns.
const maxRecall = 10

type searchInput struct {
	Query string `json:"query" jsonschema:"words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many memories at most (default 5)"`
}

func (searchInput) constrain(c constraints) {
	c.length("query", 1, memory.MaxContent)
	c.between("limit", 1, maxRecall)
}

type shareInput struct {
	Content string `json:"content" jsonschema:"what the team should remember"`
	Type    string `json:"type,omitempty" jsonschema:"what kind of memory it is (default fact)"`
}

func (shareInput) constrain(c constraints) {
	c.length("content", 1, memory.MaxContent)
	// The user profile is written by the API, not by an agent's tool.
	c.enum("type", slices.DeleteFunc(slices.Clone(memory.Types), func(t string) bool { return t == "user_profile" })...)
}

// searchMemories returns the memories the agent can see that share the
// most words with the query, best first (newest first among equals).
func (t *Tools) searchMemories(ctx context.Context, c caller, in searchInput) (result, error) {
	if t.Memories == nil {
		return text("memories are not available")
	}
	words := wordSet(in.Query)
	if len(words) == 0 {
		return text("rejected: a query is required")
	}
	limit := in.Limit
	if limit <= 0 || limit > maxRecall {
		limit = 5
	}
	list, err := t.Memories.Visible(ctx, c.teamID, c.agent)
	if err != nil {
		return refused(err)
	}
	type hit struct {
		m     memory.Memory
		score int
	}
	var hits []hit
	for _, m := range list {
		if !m.ReadableFor("") {
			continue // a person's profile reaches only their own prompt
		}
		n := 0
		for w := range wordSet(m.Content) {
			if words[w] {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, hit{m, n})
		}
	}
	// Visible is newest first; a stable sort keeps that among equals.
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) == 0 {
		return text("no memory matches")
	}
	var b strings.Builder
	for i, h := range hits {
		if i == limit {
			break
		}
		fmt.Fprintf(&b, "[%s %s by %s, %s] %s\n", h.m.Visibility, h.m.Type, h.m.Author, h.m.CreatedAt.Format("2006-01-02"), h.m.Content)
	}
	return text(b.String())
}

// shareMemory stores a memory shared with the team (the memory bus: every
// agent's next context holds it).
func (t *Tools) shareMemory(ctx context.Context, c caller, in shareInput) (result, error) {
	if t.Memories == nil {
		return text("memories are not available")
	}
	m, err := t.Memories.Create(ctx, c.teamID, c.agent, memory.CreateInput{Type: in.Type, Visibility: memory.Shared, Content: in.Content})
	if err != nil {
		return refused(err)
	}
	worker.Produced(ctx, m.ID)
	return text(fmt.Sprintf("shared memory %s with the team", m.ID))
}

// wordSet is the lower-cased words of s longer than two letters.
func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		if len(w) > 2 {
			out[w] = true
		}
	}
	return out
}
