package expertgate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Stored skill vectors (architecture decision 6b, with a remote embedder):
// Titan embeds one text per Bedrock call, so a gate that embedded every
// skill of a team on each cold start would make one call per skill. The
// vectors of each agent version are stored instead, in an item of their
// own keyed by the embedder and the agent's version (shared/store/dynamo,
// SKILLVEC#): written when the agent is written (VectorWriter, the agents
// function's hook), read by the gate when it indexes the team (one Query),
// and computed and stored by the gate for any agent that has none. They
// are never part of the API's agents, nor of the gate's request.
//
// An agent whose version changed but whose skills read the same (a pause,
// a new name) reuses its previous version's vectors: each item carries the
// hash of the texts it embeds (TextsHash), and vectors are a function of
// the texts and the embedder alone. A new embedder ID misses every item
// (it is in the key) and recomputes them.
//
// Cleanup: whoever stores an agent version's vectors deletes that agent's
// items of lower versions (never higher ones, which a concurrent writer may
// have just stored). There is no TTL: a live agent's vectors must not
// expire under it (a gate would then pay the Bedrock calls in a chat
// turn), and what stays behind (an archived agent's item, the items of an
// embedder a stage stopped using) is one item per agent and embedder.

// SkillVectors are the embeddings of one agent version's skills by one
// embedder.
type SkillVectors struct {
	TeamID string
	// Embedder is the routing.Embedder's ID.
	Embedder string
	Slug     string
	Version  int
	// Hash is TextsHash of the texts embedded.
	Hash string
	// Vectors has one vector per text of SkillTexts(agent), in order.
	Vectors [][]float32
}

// VectorStore keeps SkillVectors (shared/store/dynamo).
type VectorStore interface {
	// TeamSkillVectors returns every stored SkillVectors of the team's
	// agents for embedder (every version stored).
	TeamSkillVectors(ctx context.Context, teamID, embedder string) ([]SkillVectors, error)
	// GetSkillVectors returns one agent version's vectors, and whether
	// they are stored.
	GetSkillVectors(ctx context.Context, teamID, embedder, slug string, version int) (SkillVectors, bool, error)
	// PutSkillVectors stores v, replacing what its key held.
	PutSkillVectors(ctx context.Context, v SkillVectors) error
	// DeleteSkillVectors removes one agent version's vectors (none stored
	// is no error).
	DeleteSkillVectors(ctx context.Context, teamID, embedder, slug string, version int) error
}

// SkillTexts are the texts an embedder embeds for a's skills, in order:
// exactly the agent's run of its team index's SkillTexts (the skills a
// user's message may reach; internal_only ones are not indexed).
func SkillTexts(a agents.Agent) []string {
	return routing.BuildIndex([]agents.Agent{a}).SkillTexts()
}

// TextsHash identifies a list of texts (SHA-256 of each text, length
// first, in order).
func TextsHash(texts []string) string {
	h := sha256.New()
	var n [8]byte
	for _, t := range texts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(t)))
		h.Write(n[:])
		h.Write([]byte(t))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// VectorWriter stores an agent's skill vectors when the agent is written:
// it implements agents.VectorWriter, and the agents function wires it when
// the stage's embedder is stored (titan).
type VectorWriter struct {
	Store    VectorStore
	Embedder routing.Embedder
	// Timeout bounds the embedding and storing (0: the caller's context
	// alone), so a slow Bedrock cannot hold the API's answer: the agent
	// is stored already, and the gate computes what is missing.
	Timeout time.Duration
}

var _ agents.VectorWriter = (*VectorWriter)(nil)

// AgentWritten implements agents.VectorWriter: the vectors of a's skills
// at a.Version, reused from version previous when its skills read the same
// (no embedding call), else embedded; then previous's item is deleted.
func (w *VectorWriter) AgentWritten(ctx context.Context, a agents.Agent, previous int) error {
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	id := w.Embedder.ID()
	texts := SkillTexts(a)
	v := SkillVectors{TeamID: a.TeamID, Embedder: id, Slug: a.Slug, Version: a.Version, Hash: TextsHash(texts)}
	if len(texts) > 0 {
		if previous > 0 {
			old, ok, err := w.Store.GetSkillVectors(ctx, a.TeamID, id, a.Slug, previous)
			if err != nil {
				return err
			}
			if ok && old.Hash == v.Hash && len(old.Vectors) == len(texts) {
				v.Vectors = old.Vectors
			}
		}
		if v.Vectors == nil {
			out, err := w.Embedder.Embed(ctx, texts)
			if err != nil {
				return err
			}
			v.Vectors = float32s(out)
		}
		if err := w.Store.PutSkillVectors(ctx, v); err != nil {
			return err
		}
	}
	if previous > 0 && previous < a.Version {
		return w.Store.DeleteSkillVectors(ctx, a.TeamID, id, a.Slug, previous)
	}
	return nil
}

// embedChunk is how many skill texts the gate embeds before storing the
// agents they complete: a cold team's vectors are stored as they are
// made, so a call that runs out of time leaves the next less to do.
const embedChunk = 64

// embedStored gives ix its skill vectors from the store, embedding and
// storing only those of agents that have none for their version (ix holds
// exactly list's skills, agents in order).
func (s *Service) embedStored(ctx context.Context, teamID string, list []agents.Agent, ix *routing.Index) error {
	id := s.Embedder.ID()
	all := ix.SkillTexts()
	own := make([][]string, len(list))
	skills := make([]int, len(list)) // how many of own[i] are skills (the rest: examples)
	for i, a := range list {
		one := routing.BuildIndex([]agents.Agent{a})
		own[i], skills[i] = one.SkillTexts(), one.Skills()
	}
	if !slices.Equal(teamOrder(own, skills), all) {
		// The index orders skills by agent, then examples by agent: a
		// change there must not give an agent another's vectors.
		return fmt.Errorf("expertgate: the index's skill texts are not its agents' in order")
	}
	stored, err := s.Vectors.TeamSkillVectors(ctx, teamID, id)
	if err != nil {
		return err
	}
	bySlug := map[string][]SkillVectors{}
	for _, v := range stored {
		bySlug[v.Slug] = append(bySlug[v.Slug], v)
	}
	mineOf := make([][][]float64, len(list)) // each agent's vectors, in own[i]'s order
	var missing []int                        // agents (by position) without vectors
	for i, a := range list {
		if len(own[i]) == 0 {
			continue
		}
		hash := TextsHash(own[i])
		v, exact := storedFor(bySlug[a.Slug], a.Version, hash, len(own[i]))
		if v == nil {
			missing = append(missing, i)
			continue
		}
		mineOf[i] = float64s(v.Vectors)
		if !exact {
			// The same skills at an earlier version: stored again under
			// this one, without embedding.
			s.storeVectors(ctx, SkillVectors{TeamID: teamID, Embedder: id, Slug: a.Slug, Version: a.Version, Hash: hash, Vectors: v.Vectors}, bySlug[a.Slug])
		}
	}
	for start := 0; start < len(missing); {
		end, n := start, 0
		for end < len(missing) && n < embedChunk {
			n += len(own[missing[end]])
			end++
		}
		var texts []string
		for _, i := range missing[start:end] {
			texts = append(texts, own[i]...)
		}
		out, err := s.Embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(out) != len(texts) {
			return fmt.Errorf("expertgate: %d vectors for %d texts", len(out), len(texts))
		}
		k := 0
		for _, i := range missing[start:end] {
			a := list[i]
			mineOf[i] = out[k : k+len(own[i])]
			k += len(own[i])
			s.storeVectors(ctx, SkillVectors{TeamID: teamID, Embedder: id, Slug: a.Slug, Version: a.Version,
				Hash: TextsHash(own[i]), Vectors: float32s(mineOf[i])}, bySlug[a.Slug])
		}
		start = end
	}
	if err := ix.SetEmbeddings(teamOrder(mineOf, skills), routing.CalibrationFor(id)); err != nil {
		return err
	}
	// The queries' embedder: wordllama's vectors decompose into its
	// tokens', which the classifier and the two stages read.
	ix.SetEmbedder(s.Embedder)
	return nil
}

// teamOrder lays each agent's items (its skills' first, skills[i] of
// them, then its examples') out in the team index's order: every agent's
// skills, then every agent's examples.
func teamOrder[T any](per [][]T, skills []int) []T {
	var head, tail []T
	for i, items := range per {
		head = append(head, items[:skills[i]]...)
		tail = append(tail, items[skills[i]:]...)
	}
	return append(head, tail...)
}

// storedFor is the stored vectors an agent at version with skills reading
// hash may use: its version's (exact), else another version's with the
// same texts (the newest); nil when none.
func storedFor(items []SkillVectors, version int, hash string, n int) (*SkillVectors, bool) {
	var best *SkillVectors
	for i := range items {
		v := &items[i]
		if v.Hash != hash || len(v.Vectors) != n {
			continue
		}
		if v.Version == version {
			return v, true
		}
		if best == nil || v.Version > best.Version {
			best = v
		}
	}
	return best, false
}

// storeVectors stores v and deletes the agent's items of lower versions
// among seen. A failure is logged, not returned: the vectors are in hand
// for this index, and the next cold start computes them again.
func (s *Service) storeVectors(ctx context.Context, v SkillVectors, seen []SkillVectors) {
	if err := s.Vectors.PutSkillVectors(ctx, v); err != nil {
		slog.WarnContext(ctx, "skill vectors not stored", "team_id", v.TeamID, "agent", v.Slug, "version", v.Version, "error", err)
		return
	}
	for _, old := range seen {
		if old.Version < v.Version {
			if err := s.Vectors.DeleteSkillVectors(ctx, v.TeamID, v.Embedder, v.Slug, old.Version); err != nil {
				slog.WarnContext(ctx, "old skill vectors not deleted", "team_id", v.TeamID, "agent", v.Slug, "version", old.Version, "error", err)
			}
		}
	}
}

func float32s(in [][]float64) [][]float32 {
	out := make([][]float32, len(in))
	for i, v := range in {
		out[i] = make([]float32, len(v))
		for j, x := range v {
			out[i][j] = float32(x)
		}
	}
	return out
}

func float64s(in [][]float32) [][]float64 {
	out := make([][]float64, len(in))
	for i, v := range in {
		out[i] = make([]float64, len(v))
		for j, x := range v {
			out[i][j] = float64(x)
		}
	}
	return out
}
