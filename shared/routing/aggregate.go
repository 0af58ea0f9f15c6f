package routing

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// DuplicateSimilarity: a point whose similarity to one already kept is
// above this is the same point said again and is dropped.
const DuplicateSimilarity = 0.9

// ExpertReply is one agent's reply to aggregate.
type ExpertReply struct {
	Agent string
	Name  string
	Label string // primary skill, "code review"
	Text  string
	Score float64 // the gate's overall score, breaks relevance ties
}

// Contribution is what one agent brought to an aggregated reply.
type Contribution struct {
	Agent     string  `json:"agent"`
	Relevance float64 `json:"relevance"`
	Points    int     `json:"points"`
	Dropped   int     `json:"duplicates_dropped"`
}

// Aggregated is the ResponseAggregator's result.
type Aggregated struct {
	Text          string         `json:"text"`
	Contributions []Contribution `json:"contributions"`
	// Method is "merge" (deterministic) or "model" (synthesized by the
	// tier-1 model).
	Method string `json:"method"`
}

var sentenceRE = regexp.MustCompile(`[^.!?]+[.!?]*`)

// Relevance scores a reply against the query (0–1): the share of the
// query's content words the reply addresses, blended with their cosine.
func Relevance(query, reply string) float64 {
	q, r := TermVector(query), TermVector(reply)
	if len(q.W) == 0 {
		return 0
	}
	hit := 0
	for t := range q.W {
		if r.W[t] > 0 {
			hit++
		}
	}
	return round3(0.5*float64(hit)/float64(len(q.W)) + 0.5*Cosine(q, r))
}

// Best returns the most relevant reply (TOP_K keeps one); ties go to the
// higher gate score, then input order.
func Best(query string, replies []ExpertReply) (ExpertReply, float64) {
	best, bestRel := -1, -1.0
	for i, r := range replies {
		rel := Relevance(query, r.Text)
		if rel > bestRel || (rel == bestRel && r.Score > replies[best].Score) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return ExpertReply{}, 0
	}
	return replies[best], bestRel
}

// Merge is the deterministic aggregation: replies in order of relevance,
// split into points (sentences); a point too similar to one already kept
// is dropped; every contributor is named ("According to Luke (code
// review), …"), including one whose points were all said already.
func Merge(query string, replies []ExpertReply) Aggregated {
	type scored struct {
		ExpertReply
		rel float64
	}
	list := make([]scored, len(replies))
	for i, r := range replies {
		list[i] = scored{r, Relevance(query, r.Text)}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].rel != list[j].rel {
			// Unequal here, so > and >= order alike (a mutant that lives).
			return list[i].rel > list[j].rel
		}
		return list[i].Score > list[j].Score
	})
	var kept []Vector
	var b strings.Builder
	out := Aggregated{Method: "merge"}
	for i, r := range list {
		c := Contribution{Agent: r.Agent, Relevance: r.rel}
		var points []string
		for _, s := range sentenceRE.FindAllString(r.Text, -1) {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			v := TermVector(s)
			dup := false
			for _, k := range kept {
				if Cosine(v, k) > DuplicateSimilarity {
					dup = true
					break
				}
			}
			if dup {
				c.Dropped++
				continue
			}
			// A point without content words is not kept to compare with;
			// kept (>= 0), its cosine with any point would be 0, never a
			// duplicate: the same result.
			if v.Norm > 0 {
				kept = append(kept, v)
			}
			points = append(points, s)
		}
		c.Points = len(points)
		out.Contributions = append(out.Contributions, c)
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		who := r.Name
		if r.Label != "" {
			who = fmt.Sprintf("%s (%s)", r.Name, r.Label)
		}
		switch {
		case len(points) == 0:
			fmt.Fprintf(&b, "%s agrees with the points above.", who)
		case i == 0:
			fmt.Fprintf(&b, "According to %s, %s", who, lowerFirst(strings.Join(points, " ")))
		default:
			fmt.Fprintf(&b, "%s adds: %s", who, strings.Join(points, " "))
		}
	}
	out.Text = b.String()
	return out
}

func lowerFirst(s string) string {
	r := []rune(s)
	// Keep "I", acronyms and names as they are.
	if len(r) > 1 && r[0] >= 'A' && r[0] <= 'Z' && r[1] >= 'a' && r[1] <= 'z' {
		r[0] += 'a' - 'A'
	}
	return string(r)
}

// Synthesizer rewrites a merged reply with a model (the tier-1 model in
// AWS) into one coherent answer.
type Synthesizer struct {
	Model   models.Model
	ModelID string
	// Metadata attributes the call (models.Request.Metadata: the team
	// and conversation, no agent: a synthesis is the system's); a turn
	// sets it on its own copy.
	Metadata map[string]string
}

// Aggregate merges replies and, with a synthesizer, has the model write the
// final answer from the merge. Attribution is a promise: a synthesis that
// drops a contributor's name is discarded for the deterministic merge. It
// returns the model usage (zero for a merge).
func Aggregate(ctx context.Context, syn *Synthesizer, query string, replies []ExpertReply) (Aggregated, models.Response, error) {
	merged := Merge(query, replies)
	if syn == nil || syn.Model == nil || syn.ModelID == "" {
		return merged, models.Response{}, nil
	}
	resp, err := syn.Model.Converse(ctx, models.Request{
		ModelID:   syn.ModelID,
		MaxTokens: 1200,
		Metadata:  syn.Metadata,
		System: "You combine answers from several expert agents into one answer to the user's question. " +
			"Keep every distinct point, drop repetition, and attribute each point to the expert who made it by name, " +
			"as in \"According to Luke (code review), …\". Do not add facts of your own.",
		Messages: []models.Message{{Role: "user", Content: "Question: " + query + "\n\nExpert answers:\n" + merged.Text}},
	})
	if err != nil {
		return merged, models.Response{}, err
	}
	for _, r := range replies {
		if !strings.Contains(resp.Text, r.Name) {
			return merged, resp, nil
		}
	}
	merged.Text, merged.Method = resp.Text, "model"
	return merged, resp, nil
}
