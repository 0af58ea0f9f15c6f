// Package evaluationfake is the in-memory fake of evaluations.Store (the
// teams' routing evaluations), as shared/store/evaluationstore is the
// DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package evaluationfake

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ evaluations.Store = (*Evaluations)(nil)

// maxDocBytes is the adapter's bound on an evaluation's JSON (its item).
const maxDocBytes = 350 * 1024

// Evaluations is evaluations.Store on a memtable.Table: the evaluations
// as the adapter's documents, by team and id. Safe for concurrent use.
type Evaluations struct{ tb *memtable.Table }

// New returns the evaluations of tb (nil: a table of their own).
func New(tb *memtable.Table) *Evaluations {
	if tb == nil {
		tb = memtable.New()
	}
	return &Evaluations{tb: tb}
}

// docs are the evaluation documents. Call with the table locked.
func (s *Evaluations) docs() map[memtable.Key][]byte {
	return *memtable.Part(s.tb, "evaluations", func() *map[memtable.Key][]byte { m := map[memtable.Key][]byte{}; return &m })
}

// docOf encodes e as the adapter's doc does (<, > and & unescaped), and
// refuses one over an item's room as it does (EINTERNAL).
func docOf(e evaluations.Evaluation) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, memtable.Internal(err.Error())
	}
	doc := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(doc) > maxDocBytes {
		return nil, memtable.Internal("the evaluation's JSON exceeds an item")
	}
	return doc, nil
}

// evaluationOf reads a stored document; the team comes from the key, as
// from the adapter's.
func evaluationOf(teamID string, b []byte) evaluations.Evaluation {
	e := memtable.ReadDoc[evaluations.Evaluation](b)
	e.TeamID = teamID
	return e
}

// CreateEvaluation implements evaluations.Store (ECONFLICT for an id
// taken).
func (s *Evaluations) CreateEvaluation(_ context.Context, e evaluations.Evaluation) error {
	doc, err := docOf(e)
	if err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: e.TeamID, ID: e.ID}
	if _, ok := s.docs()[k]; ok {
		return apperr.New(apperr.ECONFLICT, "evaluation %s exists", e.ID)
	}
	s.docs()[k] = doc
	return nil
}

// GetEvaluation implements evaluations.Store (ENOTFOUND, for another
// team's too).
func (s *Evaluations) GetEvaluation(_ context.Context, teamID, id string) (evaluations.Evaluation, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := s.docs()[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return evaluations.Evaluation{}, apperr.NotFound("evaluation", id)
	}
	return evaluationOf(teamID, b), nil
}

// ListEvaluations implements evaluations.Store, newest first (ids sort by
// time), without their messages and results.
func (s *Evaluations) ListEvaluations(_ context.Context, teamID string, p paging.Page) ([]evaluations.Evaluation, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[evaluations.Evaluation]
	for k, b := range s.docs() {
		if k.Team == teamID {
			e := evaluationOf(teamID, b)
			e.Messages, e.Result = nil, nil
			rows = append(rows, memtable.Row[evaluations.Evaluation]{SK: k.ID, V: e})
		}
	}
	return memtable.Query(rows, true, "evaluations:"+teamID, p, nil)
}

// FinishEvaluation implements evaluations.Store: e's status, error,
// completed_at and result on the stored evaluation, only while it is
// running (ECONFLICT, reason AlreadyFinished, once it has ended;
// ENOTFOUND for an unknown id), as the adapter's condition.
func (s *Evaluations) FinishEvaluation(_ context.Context, e evaluations.Evaluation) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: e.TeamID, ID: e.ID}
	b, ok := s.docs()[k]
	if !ok {
		return apperr.NotFound("evaluation", e.ID)
	}
	cur := evaluationOf(e.TeamID, b)
	if cur.Status != evaluations.StatusRunning {
		return apperr.New(apperr.ECONFLICT, "evaluation %s is already %s", e.ID, cur.Status).WithReason("AlreadyFinished").
			WithDetail("status", cur.Status)
	}
	cur.Status, cur.Error, cur.CompletedAt, cur.Result = e.Status, e.Error, e.CompletedAt, e.Result
	doc, err := docOf(cur)
	if err != nil {
		return err
	}
	s.docs()[k] = doc
	return nil
}
