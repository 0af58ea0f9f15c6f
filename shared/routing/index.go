package routing

import (
	"math"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/agents"
)

// Index is the TF-IDF index of a team's skills: one document per skill
// (its name, description, keywords, domains and actions), IDF over the
// team's skills. It is built once per set of agents and reused across
// queries (the expert-gate function caches it by the agents' versions), so
// scoring a query costs a few map lookups per skill.
type Index struct {
	agents []indexedAgent
	docs   []skillDoc
	idf    map[string]float64
	// embeddings of the skill documents, when an Embedder was used.
	docEmbeddings [][]float64
}

type indexedAgent struct {
	agent agents.Agent
	docs  []int
	label string // the highest-priority skill's label
}

type skillDoc struct {
	agent    int
	name     string
	label    string // "code review"
	text     string
	vec      Vector // tf-idf, with its norm
	keywords map[string]bool
	// requiresKeyword: the skill matches only when one of its keywords is in
	// the query (agents.Skill.RequiresExplicitKeywords).
	requiresKeyword bool
	// override: an explicit keyword match beats staying with the current agent.
	override bool
	priority int
}

// userFacing reports whether a skill may be chosen for a user's message in
// a plain chat (no editor open, no image attached).
func userFacing(s agents.Skill) bool {
	return !s.InternalOnly && !s.RequiresEditor && !s.RequiresImageContext
}

// BuildIndex indexes the user-facing skills of the given agents (the caller
// passes the active ones).
func BuildIndex(list []agents.Agent) *Index {
	ix := &Index{idf: map[string]float64{}}
	df := map[string]int{}
	for ai, a := range list {
		ia := indexedAgent{agent: a}
		best := 0
		for _, s := range a.Skills {
			if !userFacing(s) {
				continue
			}
			text := strings.Join([]string{strings.ReplaceAll(s.Name, "-", " "), s.Description,
				strings.Join(s.Keywords, " "), strings.Join(s.Domains, " "), strings.Join(s.Actions, " ")}, " ")
			d := skillDoc{agent: ai, name: s.Name, label: strings.ReplaceAll(s.Name, "-", " "), text: text, vec: TermVector(text),
				keywords: map[string]bool{}, requiresKeyword: s.RequiresExplicitKeywords, override: s.OverrideContinuity, priority: s.Priority}
			for _, k := range s.Keywords {
				for _, t := range Tokens(k) {
					d.keywords[t] = true
				}
			}
			for t := range d.vec.W {
				df[t]++
			}
			if len(ia.docs) == 0 || d.priority > best {
				ia.label, best = d.label, d.priority
			}
			ia.docs = append(ia.docs, len(ix.docs))
			ix.docs = append(ix.docs, d)
		}
		ix.agents = append(ix.agents, ia)
	}
	n := float64(len(ix.docs))
	for t, c := range df {
		ix.idf[t] = math.Log(1 + n/float64(c))
	}
	for i := range ix.docs {
		v := &ix.docs[i].vec
		for t, tf := range v.W {
			v.W[t] = tf * ix.idf[t]
		}
		v.norm()
	}
	return ix
}

// Agents returns the indexed agents in input order.
func (ix *Index) Agents() []agents.Agent {
	out := make([]agents.Agent, len(ix.agents))
	for i, a := range ix.agents {
		out[i] = a.agent
	}
	return out
}

// query is a message prepared for scoring against the index.
type query struct {
	text  string
	terms Vector // tf-idf over known terms
	known float64
	// tokens present in the message, for keyword gating.
	tokens    map[string]bool
	embedding []float64
}

func (ix *Index) prepare(text string, embedding []float64) query {
	q := query{text: text, terms: Vector{W: map[string]float64{}}, tokens: map[string]bool{}, embedding: embedding}
	for _, t := range Tokens(text) {
		q.tokens[t] = true
		if idf, ok := ix.idf[t]; ok {
			if q.terms.W[t] == 0 {
				q.known += idf
			}
			q.terms.W[t] += idf
		}
	}
	q.terms.norm()
	return q
}

// SkillMatch of one skill document: 0.6 × the share of the query's known
// terms (IDF-weighted) the skill covers + 0.4 × the TF-IDF cosine. Coverage
// rewards a short question that names the skill ("review my code") that a
// cosine against a long description would under-rate; words no skill of the
// team uses are left out, so an off-topic question scores 0 everywhere.
func (ix *Index) docScore(q query, di int) float64 {
	d := &ix.docs[di]
	if q.known == 0 {
		return 0
	}
	if d.requiresKeyword && !hasAny(q.tokens, d.keywords) {
		return 0
	}
	covered := 0.0
	for t := range q.terms.W {
		if d.vec.W[t] > 0 {
			covered += ix.idf[t]
		}
	}
	if covered == 0 {
		return 0
	}
	s := 0.6*covered/q.known + 0.4*Cosine(q.terms, d.vec)
	if q.embedding != nil && ix.docEmbeddings != nil {
		s = 0.5*s + 0.5*denseCosine(q.embedding, ix.docEmbeddings[di])
	}
	return clamp01(s)
}

func hasAny(set map[string]bool, want map[string]bool) bool {
	for t := range want {
		if set[t] {
			return true
		}
	}
	return false
}

// SkillHit is one skill of an agent that matched a query.
type SkillHit struct {
	Name  string
	Label string
	Score float64
	// Explicit: one of the skill's keywords is in the query.
	Explicit bool
	Override bool
}

// agentSkills scores every skill of agent ai; hits are sorted best first
// (priority breaks ties), and the agent's skill match is the best hit.
func (ix *Index) agentSkills(q query, ai int) (float64, []SkillHit) {
	var hits []SkillHit
	best := 0.0
	for _, di := range ix.agents[ai].docs {
		s := ix.docScore(q, di)
		if s <= 0 {
			continue
		}
		d := &ix.docs[di]
		hits = append(hits, SkillHit{Name: d.name, Label: d.label, Score: s, Explicit: hasAny(q.tokens, d.keywords), Override: d.override})
		if s > best {
			best = s
		}
	}
	if len(hits) > 1 {
		sort.SliceStable(hits, func(i, j int) bool {
			if hits[i].Score != hits[j].Score {
				return hits[i].Score > hits[j].Score
			}
			return ix.priority(ai, hits[i].Name) > ix.priority(ai, hits[j].Name)
		})
	}
	return best, hits
}

func (ix *Index) priority(ai int, name string) int {
	for _, di := range ix.agents[ai].docs {
		if ix.docs[di].name == name {
			return ix.docs[di].priority
		}
	}
	return 0
}

// PrimaryLabel is the label of an agent's highest-priority user-facing
// skill ("code review"), used in attributions.
func (ix *Index) PrimaryLabel(slug string) string {
	for _, a := range ix.agents {
		if a.agent.Slug == slug {
			return a.label
		}
	}
	return ""
}

func denseCosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return clamp01(dot / math.Sqrt(na*nb))
}
