package expertgate_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/words"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// bagEmbedder is a deterministic embedder that counts: each word adds one
// to one of 8 dimensions (its hash), so texts that share words are near
// and every value is exact in float32 (stored vectors read back the same).
type bagEmbedder struct {
	id    string
	mu    sync.Mutex
	calls [][]string
	fail  error
}

func (e *bagEmbedder) ID() string { return e.id }

func (e *bagEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, slices.Clone(texts))
	if e.fail != nil {
		return nil, e.fail
	}
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = make([]float64, 8)
		for _, w := range words.Tokens(t) {
			h := fnv.New32a()
			h.Write([]byte(w))
			out[i][h.Sum32()%8]++
		}
	}
	return out, nil
}

// embedded is every text embedded so far, and resets the count.
func (e *bagEmbedder) embedded() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.calls
	e.calls = nil
	return c
}

// vectorStore is expertgate.VectorStore in memory, keyed as the table is.
type vectorStore struct {
	items   map[string]expertgate.SkillVectors
	queries int
	deleted []string
}

func newVectorStore() *vectorStore { return &vectorStore{items: map[string]expertgate.SkillVectors{}} }

func vkey(team, emb, slug string, version int) string {
	return fmt.Sprintf("%s|%s|%s|%d", team, emb, slug, version)
}

func (s *vectorStore) TeamSkillVectors(_ context.Context, teamID, emb string) ([]expertgate.SkillVectors, error) {
	s.queries++
	var out []expertgate.SkillVectors
	for _, v := range s.items {
		if v.TeamID == teamID && v.Embedder == emb {
			out = append(out, v)
		}
	}
	return out, nil
}

func (s *vectorStore) GetSkillVectors(_ context.Context, teamID, emb, slug string, version int) (expertgate.SkillVectors, bool, error) {
	v, ok := s.items[vkey(teamID, emb, slug, version)]
	return v, ok, nil
}

func (s *vectorStore) PutSkillVectors(_ context.Context, v expertgate.SkillVectors) error {
	s.items[vkey(v.TeamID, v.Embedder, v.Slug, v.Version)] = v
	return nil
}

func (s *vectorStore) DeleteSkillVectors(_ context.Context, teamID, emb, slug string, version int) error {
	s.deleted = append(s.deleted, fmt.Sprintf("%s@%d", slug, version))
	delete(s.items, vkey(teamID, emb, slug, version))
	return nil
}

// versions are the stored items' "slug@version" by embedder, sorted.
func (s *vectorStore) versions() []string {
	var out []string
	for _, v := range s.items {
		out = append(out, fmt.Sprintf("%s %s@%d", v.Embedder, v.Slug, v.Version))
	}
	sort.Strings(out)
	return out
}

// vectorTeam has an internal_only skill (not indexed, not embedded).
func vectorTeam() []agents.Agent {
	list := team()
	list[0].Skills = append(list[0].Skills, agents.Skill{Name: "triage", Description: "Sort incoming bugs", InternalOnly: true})
	for i := range list {
		list[i].TeamID = "t"
	}
	return list
}

func score(t *testing.T, g *expertgate.Service, q string) expertgate.Response {
	t.Helper()
	resp, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: q})
	require.NoError(t, err)
	return resp
}

// A cold gate embeds the skills of agents without stored vectors and
// stores them; the next cold gate embeds only the query. The scores are
// those of embedding everything in the function.
func TestTheGateUsesStoredSkillVectors(t *testing.T) {
	// GIVEN a team with no stored vectors
	src := &source{agents: vectorTeam()}
	store := newVectorStore()
	emb := &bagEmbedder{id: "bag/8"}
	cold := &expertgate.Service{Source: src, Embedder: emb, Vectors: store}

	// WHEN the gate scores a query
	first := score(t, cold, "review my code for bugs")

	// THEN it embedded each skill once (internal_only skills excluded),
	// then the query, and stored one item per agent version
	skills := routing.BuildIndex(src.agents).SkillTexts()
	require.Len(t, skills, 2)
	assert.Equal(t, [][]string{skills, {"review my code for bugs"}}, emb.embedded())
	assert.Equal(t, []string{"bag/8 luke@1", "bag/8 wren@1"}, store.versions())
	// AND the scores are those of the in-function path (nothing stored)
	direct := score(t, &expertgate.Service{Source: src, Embedder: &bagEmbedder{id: "bag/8"}}, "review my code for bugs")
	assert.Equal(t, direct.Scores, first.Scores)

	// WHEN another cold start scores (a new execution environment)
	again := score(t, &expertgate.Service{Source: src, Embedder: emb, Vectors: store}, "review my code for bugs")
	// THEN the only embedding is the query's, after one read of the vectors
	assert.Equal(t, [][]string{{"review my code for bugs"}}, emb.embedded())
	assert.Equal(t, 2, store.queries)
	assert.Equal(t, first.Scores, again.Scores)

	// WHEN the warm gate scores again: no read, no skill embedded
	score(t, cold, "write a blog post")
	assert.Equal(t, [][]string{{"write a blog post"}}, emb.embedded())
	assert.Equal(t, 2, store.queries)
}

// A new agent version with other skills misses its stored vectors (only
// its skills are embedded, the old item deleted); a version whose skills
// read the same (a pause and reactivation) reuses them without a call; a
// new embedder misses everything.
func TestStoredVectorsAreKeyedByVersionAndEmbedder(t *testing.T) {
	src := &source{agents: vectorTeam()}
	store := newVectorStore()
	emb := &bagEmbedder{id: "bag/8"}
	score(t, &expertgate.Service{Source: src, Embedder: emb, Vectors: store}, "write a blog")
	emb.embedded()

	// GIVEN wren at version 2 with another skill
	src.agents[1].Version = 2
	src.agents[1].Skills = []agents.Skill{{Name: "gardening", Description: "Grow plants", Keywords: []string{"garden"}}}
	// WHEN a cold gate scores
	score(t, &expertgate.Service{Source: src, Embedder: emb, Vectors: store}, "my garden plants")
	// THEN only wren's new skill was embedded, with the query
	assert.Equal(t, [][]string{expertgate.SkillTexts(src.agents[1]), {"my garden plants"}}, emb.embedded())
	assert.Equal(t, []string{"bag/8 luke@1", "bag/8 wren@2"}, store.versions(), "wren@1 deleted")

	// GIVEN luke at version 3, his skills unchanged (status changes bump it)
	src.agents[0].Version = 3
	score(t, &expertgate.Service{Source: src, Embedder: emb, Vectors: store}, "review code")
	// THEN no skill was embedded: luke@1's vectors moved to luke@3
	assert.Equal(t, [][]string{{"review code"}}, emb.embedded())
	assert.Equal(t, []string{"bag/8 luke@3", "bag/8 wren@2"}, store.versions())

	// GIVEN another embedder (its ID is in the key)
	other := &bagEmbedder{id: "bag/8-v2"}
	score(t, &expertgate.Service{Source: src, Embedder: other, Vectors: store}, "review code")
	// THEN every skill is embedded again, and stored beside the others
	assert.Equal(t, [][]string{routing.BuildIndex(src.agents).SkillTexts(), {"review code"}}, other.embedded())
	assert.Equal(t, []string{"bag/8 luke@3", "bag/8 wren@2", "bag/8-v2 luke@3", "bag/8-v2 wren@2"}, store.versions())
}

// A large cold team is embedded in chunks, each stored as it completes.
func TestAColdTeamIsEmbeddedInChunks(t *testing.T) {
	var list []agents.Agent
	for i := range 40 {
		list = append(list, agents.Agent{TeamID: "t", Slug: fmt.Sprintf("agent-%02d", i), Name: "A", Status: agents.StatusActive, Version: 1,
			Skills: []agents.Skill{{Name: "one", Description: fmt.Sprintf("first skill %d", i)}, {Name: "two", Description: fmt.Sprintf("second skill %d", i)}}})
	}
	store := newVectorStore()
	emb := &bagEmbedder{id: "bag/8"}
	score(t, &expertgate.Service{Source: &source{agents: list}, Embedder: emb, Vectors: store}, "first skill")
	calls := emb.embedded()
	require.Len(t, calls, 3, "two chunks of skills, then the query")
	assert.Len(t, calls[0], 64)
	assert.Len(t, calls[1], 16)
	assert.Equal(t, routing.BuildIndex(list).SkillTexts(), append(calls[0], calls[1]...))
	assert.Len(t, store.items, 40)
}

// When the embedder fails, a gate told to degrades to words alone (and
// tries again on the next call); otherwise the call fails, as before.
func TestAFailingEmbedderDegradesToWordsWhenAllowed(t *testing.T) {
	src := &source{agents: vectorTeam()}
	emb := &bagEmbedder{id: "bag/8", fail: errors.New("ThrottlingException")}
	strict := &expertgate.Service{Source: src, Embedder: emb, Vectors: newVectorStore()}
	_, err := strict.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code"})
	assert.True(t, apperr.Is(err, apperr.EINTERNAL), "%v", err)

	store := newVectorStore()
	g := &expertgate.Service{Source: src, Embedder: emb, Vectors: store, LexicalOnEmbedFailure: true}
	resp := score(t, g, "review my code for bugs")
	lexical := score(t, &expertgate.Service{Source: src}, "review my code for bugs")
	assert.Equal(t, lexical.Scores, resp.Scores, "scored by words alone")
	assert.Empty(t, store.items)

	// The embedder is back: the next call embeds (the lexical index was
	// not kept).
	emb.mu.Lock()
	emb.fail = nil
	emb.mu.Unlock()
	emb.embedded()
	score(t, g, "review my code for bugs")
	assert.Len(t, emb.embedded(), 2, "the skills, then the query")
	assert.Len(t, store.items, 2)

	// A query that cannot be embedded is scored by its words.
	emb.mu.Lock()
	emb.fail = errors.New("ModelTimeoutException")
	emb.mu.Unlock()
	resp = score(t, g, "review my code for bugs")
	assert.Equal(t, lexical.Scores, resp.Scores)
}

// The agents function's hook stores an agent's vectors when it is
// written: the texts the gate's index embeds for it, reused from the
// previous version when its skills read the same, the previous version's
// item deleted. A gate then embeds no skill of it.
func TestTheVectorWriterStoresWhatTheGateReads(t *testing.T) {
	ctx := context.Background()
	store := newVectorStore()
	emb := &bagEmbedder{id: "bag/8"}
	w := &expertgate.VectorWriter{Store: store, Embedder: emb}
	list := vectorTeam()

	for _, a := range list {
		require.NoError(t, w.AgentWritten(ctx, a, 0))
	}
	luke := routing.BuildIndex(list[:1]).SkillTexts()
	assert.Equal(t, [][]string{luke, routing.BuildIndex(list[1:]).SkillTexts()}, emb.embedded())
	assert.NotContains(t, strings.Join(luke, " "), "incoming", "internal_only skills are not embedded")

	// A new name only: the vectors move to version 2 without a call.
	list[0].Name, list[0].Version = "Luke S.", 2
	require.NoError(t, w.AgentWritten(ctx, list[0], 1))
	assert.Empty(t, emb.embedded())
	// New skills: embedded.
	list[1].Skills[0].Description, list[1].Version = "Write essays", 2
	require.NoError(t, w.AgentWritten(ctx, list[1], 1))
	assert.Equal(t, [][]string{routing.BuildIndex(list[1:]).SkillTexts()}, emb.embedded())
	assert.Equal(t, []string{"bag/8 luke@2", "bag/8 wren@2"}, store.versions())

	// The gate embeds the query only.
	score(t, &expertgate.Service{Source: &source{agents: list}, Embedder: emb, Vectors: store}, "write an essay")
	assert.Equal(t, [][]string{{"write an essay"}}, emb.embedded())

	// A failing embedder is the hook's error (the service logs it).
	emb.fail = errors.New("AccessDeniedException")
	list[1].Skills[0].Description, list[1].Version = "Write poems", 3
	assert.ErrorIs(t, w.AgentWritten(ctx, list[1], 2), emb.fail)
}
