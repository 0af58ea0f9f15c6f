package expertgatefake

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ expertgate.VectorStore = (*Gate)(nil)

// maxVectorBytes is the adapter's bound on one item's vectors (float32).
const maxVectorBytes = 350 * 1024

// vectors are the stored skill vectors by team and sort key (embedder,
// slug, version, as the adapter's). Call with the table locked.
func (s *Gate) vectors() map[memtable.Key]expertgate.SkillVectors {
	return *memtable.Part(s.tb, "skillvectors", func() *map[memtable.Key]expertgate.SkillVectors {
		m := map[memtable.Key]expertgate.SkillVectors{}
		return &m
	})
}

func vecKey(teamID, embedder, slug string, version int) memtable.Key {
	return memtable.Key{Team: teamID, ID: embedder + "#" + slug + "#" + strconv.Itoa(version)}
}

// validEmbedder is the adapter's check of an embedder id, which is part
// of the key: not empty, no '#', printable ASCII.
func validEmbedder(id string) error {
	if id == "" || strings.ContainsRune(id, '#') {
		return memtable.Internal(fmt.Sprintf("embedder id %q: empty or holds '#'", id))
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return memtable.Internal(fmt.Sprintf("embedder id %q: not printable ASCII", id))
		}
	}
	return nil
}

// copyVectors copies v as the adapter stores it: float32 vectors of one
// dimension, within an item's size (EINTERNAL otherwise); none read back
// as an empty list.
func copyVectors(v expertgate.SkillVectors) (expertgate.SkillVectors, error) {
	dim := 0
	if len(v.Vectors) > 0 {
		dim = len(v.Vectors[0])
	}
	if dim*len(v.Vectors)*4 > maxVectorBytes {
		return v, memtable.Internal(fmt.Sprintf("%d vectors of %d dimensions exceed an item", len(v.Vectors), dim))
	}
	out := make([][]float32, len(v.Vectors))
	for i, vec := range v.Vectors {
		if len(vec) != dim {
			return v, memtable.Internal(fmt.Sprintf("vector %d has %d dimensions, want %d", i, len(vec), dim))
		}
		out[i] = append([]float32{}, vec...)
	}
	v.Vectors = out
	return v, nil
}

// TeamSkillVectors implements expertgate.VectorStore: the team's vectors
// by embedder, in key order (slug, then version as text).
func (s *Gate) TeamSkillVectors(_ context.Context, teamID, embedder string) ([]expertgate.SkillVectors, error) {
	if err := validEmbedder(embedder); err != nil {
		return nil, err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	var keys []string
	for k := range s.vectors() {
		if k.Team == teamID && strings.HasPrefix(k.ID, embedder+"#") {
			keys = append(keys, k.ID)
		}
	}
	sort.Strings(keys)
	var out []expertgate.SkillVectors
	for _, id := range keys {
		v, _ := copyVectors(s.vectors()[memtable.Key{Team: teamID, ID: id}])
		out = append(out, v)
	}
	return out, nil
}

// GetSkillVectors implements expertgate.VectorStore.
func (s *Gate) GetSkillVectors(_ context.Context, teamID, embedder, slug string, version int) (expertgate.SkillVectors, bool, error) {
	if err := validEmbedder(embedder); err != nil {
		return expertgate.SkillVectors{}, false, err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	v, ok := s.vectors()[vecKey(teamID, embedder, slug, version)]
	if !ok {
		return expertgate.SkillVectors{}, false, nil
	}
	v, _ = copyVectors(v)
	return v, true, nil
}

// PutSkillVectors implements expertgate.VectorStore: v replaces what its
// key held (unconditional, as the adapter's put).
func (s *Gate) PutSkillVectors(_ context.Context, v expertgate.SkillVectors) error {
	if err := validEmbedder(v.Embedder); err != nil {
		return err
	}
	c, err := copyVectors(v)
	if err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	s.vectors()[vecKey(v.TeamID, v.Embedder, v.Slug, v.Version)] = c
	return nil
}

// DeleteSkillVectors implements expertgate.VectorStore (none stored is no
// error).
func (s *Gate) DeleteSkillVectors(_ context.Context, teamID, embedder, slug string, version int) error {
	if err := validEmbedder(embedder); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	delete(s.vectors(), vecKey(teamID, embedder, slug, version))
	return nil
}
