package expertgatefake

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ expertgate.ClassifierStore = (*Gate)(nil)

// maxClassifierJSON is the adapter's bound on a classifier's JSON (its
// head item).
const maxClassifierJSON = 350 * 1024

// classifiers are the stored classifiers by team and embedder. Call with
// the table locked.
func (s *Gate) classifiers() map[memtable.Key]*routing.Classifier {
	return *memtable.Part(s.tb, "classifiers", func() *map[memtable.Key]*routing.Classifier {
		m := map[memtable.Key]*routing.Classifier{}
		return &m
	})
}

// copyClassifier copies c as the adapter stores it: everything but the
// weights through its JSON (what the adapter's head holds), the weights
// as they are. The adapter keeps them as half floats (11 significant
// bits); the fake keeps float32, so a test of the fake reads back exactly
// what it stored, and the contract allows the adapter's rounding.
func copyClassifier(c *routing.Classifier) (*routing.Classifier, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, memtable.Internal(err.Error())
	}
	if len(b) > maxClassifierJSON {
		return nil, memtable.Internal("the classifier's JSON exceeds an item")
	}
	out := &routing.Classifier{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, memtable.Internal(err.Error())
	}
	out.Weights = slices.Clone(c.Weights)
	if out.Weights == nil {
		out.Weights = []float32{} // the adapter reads no weights as an empty list
	}
	return out, nil
}

// TeamClassifier implements expertgate.ClassifierStore.
func (s *Gate) TeamClassifier(_ context.Context, teamID, embedder string) (*routing.Classifier, bool, error) {
	if err := validEmbedder(embedder); err != nil {
		return nil, false, err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	c, ok := s.classifiers()[memtable.Key{Team: teamID, ID: embedder}]
	if !ok {
		return nil, false, nil
	}
	out, err := copyClassifier(c)
	return out, err == nil, err
}

// PutClassifier implements expertgate.ClassifierStore: c replaces the
// stored one unless that one's ReadAt is later (false then), as the
// adapter's condition on read_at (compared to the nanosecond).
func (s *Gate) PutClassifier(_ context.Context, teamID string, c *routing.Classifier) (bool, error) {
	if c == nil {
		return false, memtable.Internal("no classifier")
	}
	if err := validEmbedder(c.Embedder); err != nil {
		return false, err
	}
	cp, err := copyClassifier(c)
	if err != nil {
		return false, err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: c.Embedder}
	if old, ok := s.classifiers()[k]; ok && old.ReadAt.After(c.ReadAt) {
		return false, nil
	}
	s.classifiers()[k] = cp
	return true, nil
}

// DeleteClassifier implements expertgate.ClassifierStore (none stored is
// no error).
func (s *Gate) DeleteClassifier(_ context.Context, teamID, embedder string) error {
	if err := validEmbedder(embedder); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	delete(s.classifiers(), memtable.Key{Team: teamID, ID: embedder})
	return nil
}
