package routing

import (
	"encoding/json"
	"iter"
	"slices"
	"strings"
)

// AgentLoad is one agent's Load.
type AgentLoad struct {
	Slug string
	Load Load
}

// Loads is every agent's Load, sorted by slug. A team's load items are
// read in that order (their sort key is the slug), and the index keeps its
// agents in that order too (Index.bySlugRank): Rank lines the two
// up in one merge, a string comparison an agent, where a map cost a hash
// and a probe an agent (a seventh of a gate query at 1,000 agents, before
// anything was scored). The slice is unexported so that nothing builds an
// unsorted one; the zero Loads is every agent idle. On the wire it is the
// object {"slug": Load} it always was (encoding/json writes a map's keys
// sorted, so the bytes are the same).
type Loads struct{ list []AgentLoad }

// NewLoads returns list as Loads: sorted by slug when it is not already
// (the store's reads are), the last of a slug given twice kept. list is
// the Loads' own afterwards.
func NewLoads(list []AgentLoad) Loads {
	if !slices.IsSortedFunc(list, compareAgentLoads) {
		slices.SortStableFunc(list, compareAgentLoads)
	}
	// Duplicates are next to each other now: keep the last of each run.
	out := list[:0]
	for i, l := range list {
		if i+1 < len(list) && list[i+1].Slug == l.Slug {
			continue
		}
		out = append(out, l)
	}
	return Loads{list: out}
}

// LoadsOf returns m's loads, sorted.
func LoadsOf(m map[string]Load) Loads {
	list := make([]AgentLoad, 0, len(m))
	for slug, l := range m {
		list = append(list, AgentLoad{Slug: slug, Load: l})
	}
	return NewLoads(list)
}

func compareAgentLoads(a, b AgentLoad) int { return strings.Compare(a.Slug, b.Slug) }

// Len is the number of agents with a load.
func (l Loads) Len() int { return len(l.list) }

// Of is the load of the agent slug (the zero Load, idle, when it has
// none).
func (l Loads) Of(slug string) Load {
	if i, ok := slices.BinarySearchFunc(l.list, slug, func(a AgentLoad, s string) int { return strings.Compare(a.Slug, s) }); ok {
		return l.list[i].Load
	}
	return Load{}
}

// All yields each agent's slug and load, sorted by slug.
func (l Loads) All() iter.Seq2[string, Load] {
	return func(yield func(string, Load) bool) {
		for _, a := range l.list {
			if !yield(a.Slug, a.Load) {
				return
			}
		}
	}
}

// MarshalJSON writes the object {"slug": Load}, keys sorted.
func (l Loads) MarshalJSON() ([]byte, error) {
	m := make(map[string]Load, len(l.list))
	for _, a := range l.list {
		m[a.Slug] = a.Load
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object {"slug": Load}.
func (l *Loads) UnmarshalJSON(b []byte) error {
	var m map[string]Load
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*l = LoadsOf(m)
	return nil
}

// alignLoads writes each agent's load into out (by agent, in input
// order): the merge of loads with the agents in slug order (bySlugRank),
// both sorted. An agent without a load gets the zero Load; a load of an
// agent not in the index is skipped; agents sharing a slug (adjacent in
// that order) share its load.
func (ix *Index) alignLoads(loads Loads, out []Load) {
	list, j := loads.list, 0
	for _, ai := range ix.bySlugRank {
		slug := ix.slugs[ai]
		eq := j < len(list) && list[j].Slug == slug
		if !eq && j < len(list) {
			// Not lined up: skip the loads of agents the index does not
			// have (< stops at this agent's load or past it).
			for j < len(list) && list[j].Slug < slug {
				j++
			}
			eq = j < len(list) && list[j].Slug == slug
		}
		if !eq {
			out[ai] = Load{}
			continue
		}
		out[ai] = list[j].Load
		if ix.nextSameSlug[ai] < 0 { // the last agent with this slug
			j++
		}
	}
}
