package routing

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/conclave-ai/conclave/shared/platform/words"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Index is the ExpertGate's precomputed view of a team: the TF-IDF index of
// its skills (one document per skill: its name, description, keywords,
// domains and actions, IDF over the team's skills) as an inverted index
// from term to the skills that use it, and every per-agent input of the
// score as flat slices. It is built once per set of agents and reused
// across queries (the expert-gate function caches it by the agents'
// versions), so a query costs work in proportion to the postings of its
// terms plus one tight loop over the agents for load, personality and
// ranking, with no allocation per agent. An Index is safe for concurrent
// use once built (and embedded, when Embed is used).
type Index struct {
	agents []indexedAgent
	docs   []skillDoc

	// The vocabulary (term → id), IDF by id, and the postings: the skills
	// using term t are postings[postStart[t]:postStart[t+1]], in skill
	// order.
	terms     map[string]int32
	idf       []float64
	postStart []int32
	postings  []posting
	// Per skill, what a query reads (docHot), and its terms: skill d's are
	// docTerms[docTermStart[d]:docTermStart[d+1]], sorted by id, to score
	// one skill again without the postings (Ranking.Top).
	docHot       []docHot
	docTermStart []int32
	docTerms     []docTerm

	// Per agent, in input order: its skills are
	// docs[docStart[a]:docStart[a+1]]; its slug, name and label; its
	// personality on the three style scales.
	docStart                    []int32
	slugs, names, labels        []string
	formality, humor, techDepth []float64
	// Ranking breaks ties by slug, then input order: slugRank is an
	// agent's place in that order, bySlugRank the agent at each place.
	slugRank, bySlugRank []int32
	// bySlug is the first agent with a slug, nextSameSlug the next one
	// with the same slug (-1 at the end).
	bySlug       map[string]int32
	nextSameSlug []int32

	// The semantic signal (Embed): every skill's unit vector, dim floats
	// a skill in skill order, and how this embedder's similarities read
	// (cal). Nil vecs: lexical only.
	vecs []float32
	dim  int
	cal  Calibration
	// tokens is the queries' embedder when its vectors decompose into
	// its tokens' rows (SetEmbedder; nil otherwise).
	tokens TokenEmbedder
	// semNone is cal.semOf(-1): a skill not among a query's semantic
	// candidates blends its words with it.
	semNone float64
	// tokSims, of a two-stage index with tokens, are its tokens' cosines
	// to the centroids (tokensims.go).
	tokSims *tokenSims
	// A skill's examples (agents.Skill.Examples): skill d's are
	// examples[exStart[d]:exStart[d+1]], and their vectors follow the
	// skills' in vecs (example j is vector len(docs)+j).
	examples []string
	exStart  []int32
	// agreement is exampleAgreement, once the index has embeddings.
	agreement float64
	// classifier, when set (SetClassifier), scores every skill instead
	// of the lexical and semantic match (classifier.go). Set on an index
	// in use when a fit arrives after it was built: each query loads it
	// once.
	classifier atomic.Pointer[classified]
	// Two-stage selection (domains.go): each skill's domain, the skills
	// of domain g (domainDocs[domainStart[g]:domainStart[g+1]]), the
	// domains' unit centroids and the group of skills without a domain
	// (-1: none). Nil domainNames: one stage.
	domainNames []string
	docDomain   []int32
	domainDocs  []int32
	domainStart []int32
	centroids   []float32
	undomained  int32
	// exCentroids are the unit centroids of each skill's examples
	// (ix.dim per skill, zeros for a skill without), in a two-stage
	// index whose skills have examples: the pre-selection of the
	// candidates whose examples are compared (ExampleSkillsProbed).
	exCentroids []float32

	ratings ratingCache
	fits    fitCache
	scratch sync.Pool
}

type indexedAgent struct {
	agent agents.Agent
	label string // the highest-priority skill's label
}

type skillDoc struct {
	name     string
	label    string // "code review"
	text     string
	priority int
	// editorTypes: with an editor open, only these types (any when empty).
	editorTypes []string
	// domain groups the skill in two-stage selection (domainOf).
	domain string
	// namePriority is the priority of the agent's first skill with this
	// name: equal-scoring hits have always been ordered by it.
	namePriority int
}

// docHot is what scoring reads of a skill: the norm of its tf-idf vector,
// its agent and flags.
type docHot struct {
	norm  float64
	agent int32
	flags uint8
}

// docTerm is one term of a skill: its id, tf-idf weight and whether it is
// one of the skill's keywords.
type docTerm struct {
	id      int32
	keyword bool
	w       float64
}

// Skill flags (docHot.flags).
const (
	// docRequiresKeyword: the skill matches only when one of its keywords
	// is in the query (agents.Skill.RequiresExplicitKeywords).
	docRequiresKeyword = 1 << iota
	// docOverride: an explicit keyword match beats staying with the
	// current agent (agents.Skill.OverrideContinuity).
	docOverride
	// docNeedsEditor, docNeedsImage, docEditorTypes: the eligibility
	// gates of the skill (see Eligible), applied per message.
	docNeedsEditor
	docNeedsImage
	docEditorTypes
)

// posting is one skill using a term: the term's tf-idf weight in the skill
// and whether the term is one of the skill's keywords.
type posting struct {
	doc     int32
	keyword bool
	w       float64
}

// BuildIndex indexes the skills of the given agents that a user's message
// may reach (every one but internal_only; the editor and image filters are
// applied per message, from its MessageContext). The caller passes the
// active agents, at most MaxAgents.
//
// Kept whole: one pass over the agents' skills fills the index's tables, and
// its steps share the pass's scratch state (term ids, counts, positions).
func BuildIndex(list []agents.Agent) *Index {
	// A team of exactly MaxAgents (16.7 million) is not unit tested: it
	// does not fit a test's memory, so the `>=` survivor here is known.
	if len(list) > MaxAgents {
		panic(fmt.Sprintf("routing: %d agents to index, more than MaxAgents (%d)", len(list), MaxAgents))
	}
	ix := &Index{terms: map[string]int32{}, bySlug: map[string]int32{}, cal: LexicalCalibration, undomained: -1}
	// Each skill's terms (first-occurrence order), counts and keyword flags,
	// kept until the IDF is known.
	type docTerms struct {
		ids []int32
		tf  []float64
		kw  []bool
	}
	var dts []docTerms
	var df []int32
	pos := map[int32]int{} // a skill's term → its place in docTerms.ids
	for ai, a := range list {
		ia := indexedAgent{agent: a}
		ix.docStart = append(ix.docStart, int32(len(ix.docs)))
		best, first := 0, len(ix.docs)
		for _, s := range a.Skills {
			if s.InternalOnly {
				continue
			}
			text := strings.Join([]string{strings.ReplaceAll(s.Name, "-", " "), s.Description,
				strings.Join(s.Keywords, " "), strings.Join(s.Domains, " "), strings.Join(s.Actions, " ")}, " ")
			d := skillDoc{name: s.Name, label: strings.ReplaceAll(s.Name, "-", " "), text: text, priority: s.Priority, namePriority: s.Priority,
				editorTypes: s.EditorTypes, domain: domainOf(s.Domains)}
			var flags uint8
			if s.RequiresEditor {
				flags |= docNeedsEditor
			}
			if s.RequiresImageContext {
				flags |= docNeedsImage
			}
			if len(s.EditorTypes) > 0 {
				flags |= docEditorTypes
			}
			if s.RequiresExplicitKeywords {
				flags |= docRequiresKeyword
			}
			if s.OverrideContinuity {
				flags |= docOverride
			}
			for _, o := range ix.docs[first:] {
				if o.name == s.Name {
					d.namePriority = o.priority
					break
				}
			}
			ix.exStart = append(ix.exStart, int32(len(ix.examples)))
			for _, e := range s.Examples {
				if e = strings.TrimSpace(e); e != "" {
					ix.examples = append(ix.examples, e)
				}
			}
			var dt docTerms
			clear(pos)
			for _, t := range words.Tokens(text) {
				id, ok := ix.terms[t]
				if !ok {
					id = int32(len(df))
					ix.terms[t] = id
					df = append(df, 0)
				}
				if p, ok := pos[id]; ok {
					dt.tf[p]++
					continue
				}
				pos[id] = len(dt.ids)
				dt.ids = append(dt.ids, id)
				dt.tf = append(dt.tf, 1)
				dt.kw = append(dt.kw, false)
				df[id]++
			}
			// A keyword's tokens are always among the skill's terms (the
			// keywords are part of its text).
			for _, k := range s.Keywords {
				for _, t := range words.Tokens(k) {
					if p, ok := pos[ix.terms[t]]; ok {
						dt.kw[p] = true
					}
				}
			}
			if len(ix.docs) == first || d.priority > best {
				ia.label, best = d.label, d.priority
			}
			ix.docs = append(ix.docs, d)
			ix.docHot = append(ix.docHot, docHot{agent: int32(ai), flags: flags})
			dts = append(dts, dt)
		}
		ix.agents = append(ix.agents, ia)
		ix.slugs = append(ix.slugs, a.Slug)
		ix.names = append(ix.names, a.Name)
		ix.labels = append(ix.labels, ia.label)
		p := a.Personality
		ix.formality = append(ix.formality, p.Formality)
		ix.humor = append(ix.humor, p.Humor)
		ix.techDepth = append(ix.techDepth, p.TechnicalDepth)
		if _, ok := ix.bySlug[a.Slug]; !ok {
			ix.bySlug[a.Slug] = int32(ai)
		}
	}
	ix.docStart = append(ix.docStart, int32(len(ix.docs)))
	ix.exStart = append(ix.exStart, int32(len(ix.examples)))

	n := float64(len(ix.docs))
	ix.idf = make([]float64, len(df))
	ix.postStart = make([]int32, len(df)+1)
	for t, c := range df {
		ix.idf[t] = math.Log(1 + n/float64(c))
		ix.postStart[t+1] = ix.postStart[t] + c
	}
	ix.postings = make([]posting, ix.postStart[len(df)])
	next := slices.Clone(ix.postStart[:len(df)])
	ix.docTermStart = make([]int32, 0, len(dts)+1)
	for di, dt := range dts {
		ix.docTermStart = append(ix.docTermStart, int32(len(ix.docTerms)))
		sum := 0.0
		for k, t := range dt.ids {
			w := dt.tf[k] * ix.idf[t]
			sum += w * w
			ix.postings[next[t]] = posting{doc: int32(di), keyword: dt.kw[k], w: w}
			next[t]++
			ix.docTerms = append(ix.docTerms, docTerm{id: t, keyword: dt.kw[k], w: w})
		}
		ix.docHot[di].norm = math.Sqrt(sum)
		slices.SortFunc(ix.docTerms[ix.docTermStart[di]:], func(a, b docTerm) int { return int(a.id - b.id) })
	}
	ix.docTermStart = append(ix.docTermStart, int32(len(ix.docTerms)))

	// Ranking breaks ties by slug, then input order: the place of each
	// agent in that order is its last sort key.
	ix.bySlugRank = make([]int32, len(list))
	for i := range ix.bySlugRank {
		ix.bySlugRank[i] = int32(i)
	}
	slices.SortStableFunc(ix.bySlugRank, func(a, b int32) int { return strings.Compare(list[a].Slug, list[b].Slug) })
	ix.slugRank = make([]int32, len(list))
	for r, ai := range ix.bySlugRank {
		ix.slugRank[ai] = int32(r)
	}
	ix.nextSameSlug = make([]int32, len(list))
	for i := range ix.nextSameSlug {
		ix.nextSameSlug[i] = -1
	}
	for r := 1; r < len(ix.bySlugRank); r++ {
		if prev, ai := ix.bySlugRank[r-1], ix.bySlugRank[r]; list[prev].Slug == list[ai].Slug {
			ix.nextSameSlug[prev] = ai
		}
	}
	ix.scratch.New = func() any { return newScratch(ix) }
	return ix
}

// exampled reports whether agent ai has a skill with examples.
func (ix *Index) exampled(ai int32) bool {
	return ix.exStart[ix.docStart[ai]] < ix.exStart[ix.docStart[ai+1]]
}

// Agents returns the indexed agents in input order.
func (ix *Index) Agents() []agents.Agent {
	out := make([]agents.Agent, len(ix.agents))
	for i, a := range ix.agents {
		out[i] = a.agent
	}
	return out
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

// agentSkills returns agent ai's matching skills, best first, and its
// skill match (the best hit), after scoreSkills.
func (ix *Index) agentSkills(ai int, sc *scratch) (float64, []SkillHit) {
	var h []hit
	for d := ix.docStart[ai]; d < ix.docStart[ai+1]; d++ {
		if s := sc.acc[d].score; s > 0 {
			h = append(h, hit{d, s})
		}
	}
	ix.sortHits(h)
	var hits []SkillHit
	for _, x := range h {
		d := &ix.docs[x.doc]
		hits = append(hits, SkillHit{Name: d.name, Label: d.label, Score: x.score, Explicit: sc.acc[x.doc].explicit,
			Override: ix.docHot[x.doc].flags&docOverride != 0})
	}
	return sc.best[ai], hits
}

// PrimaryLabel is the label of an agent's highest-priority user-facing
// skill ("code review"), used in attributions.
func (ix *Index) PrimaryLabel(slug string) string {
	if ai, ok := ix.bySlug[slug]; ok {
		return ix.agents[ai].label
	}
	return ""
}
