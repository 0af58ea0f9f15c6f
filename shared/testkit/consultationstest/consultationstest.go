// Package consultationstest holds the doubles the consultation tests
// share, in process (the in-memory store) and against DynamoDB Local: a
// specialist that holds its answers until the test lets go, so
// consultations stay active while a test looks; a store that makes n
// callers read the same version; one that loses the answers' saves, as a
// request cut off would; and the calls run in the background that a
// concurrency test waits on.
package consultationstest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// Markers a message carries for the Specialist.
const (
	// Hold keeps the answer until LetGo (or the caller gives up).
	Hold = "[hold]"
	// Fail fails the model call.
	Fail = "[fail]"
)

// within bounds every wait of this package: far above what the local
// stores take, far below a test's timeout.
const within = 10 * time.Second

// Specialist is a model that answers at once, except a message holding
// Hold (answered when the test calls LetGo) or Fail (a failed call).
type Specialist struct {
	mu      sync.Mutex
	waiting int
	calls   int
	release chan struct{}
}

// NewSpecialist returns a Specialist holding nothing yet.
func NewSpecialist() *Specialist { return &Specialist{release: make(chan struct{})} }

// Converse implements models.Model.
func (s *Specialist) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	msg := req.Messages[len(req.Messages)-1].Content
	if strings.Contains(msg, Fail) {
		return models.Response{}, models.ErrModel
	}
	if strings.Contains(msg, Hold) {
		s.mu.Lock()
		s.waiting++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.waiting--
			s.mu.Unlock()
		}()
		select {
		case <-s.release:
		case <-ctx.Done():
			return models.Response{}, ctx.Err()
		}
	}
	return models.Response{Text: `{"answer":"here it is"}`, InputTokens: 10, OutputTokens: 5, ModelID: "local-deterministic"}, nil
}

// Held waits until exactly n answers are held.
func (s *Specialist) Held(tb testing.TB, n int) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.waiting == n
	}, within, 5*time.Millisecond, "%d answers held", n)
}

// Calls is how many times the specialist was asked.
func (s *Specialist) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// LetGo answers every held message, and every later one at once.
func (s *Specialist) LetGo() { close(s.release) }

// Outcome is what a call run in the background returned.
type Outcome struct {
	Consultation consultations.Consultation
	Err          error
}

// Background runs f in a goroutine and returns where its outcome arrives.
func Background(f func() (consultations.Consultation, error)) <-chan Outcome {
	ch := make(chan Outcome, 1)
	go func() {
		c, err := f()
		ch <- Outcome{c, err}
	}()
	return ch
}

// First returns the outcome of whichever of a and b arrives first, and the
// other channel.
func First(tb testing.TB, a, b <-chan Outcome) (Outcome, <-chan Outcome) {
	tb.Helper()
	select {
	case o := <-a:
		return o, b
	case o := <-b:
		return o, a
	case <-time.After(within):
		tb.Fatal("neither returned")
	}
	return Outcome{}, nil
}

// Reason is the reason of err's application error ("" for none).
func Reason(err error) string {
	ae, _ := apperr.As(err)
	if ae == nil {
		return ""
	}
	return ae.Reason
}

// ReadGate holds the first n reads of one consultation until all n are
// made, so n callers act on the same version.
type ReadGate struct {
	consultations.Store
	id  string
	mu  sync.Mutex
	n   int
	all chan struct{}
}

// NewReadGate gates the first n reads of consultation id in store.
func NewReadGate(store consultations.Store, id string, n int) *ReadGate {
	return &ReadGate{Store: store, id: id, n: n, all: make(chan struct{})}
}

// GetConsultation implements consultations.Store.
func (g *ReadGate) GetConsultation(ctx context.Context, teamID, id string) (consultations.Consultation, error) {
	c, err := g.Store.GetConsultation(ctx, teamID, id)
	if id != g.id {
		return c, err
	}
	g.mu.Lock()
	g.n--
	if g.n == 0 {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(within):
	}
	return c, err
}

// CutOff stands for requests cut off after they took their slot (the
// function ended before the answer was saved): every save that gives a
// slot back fails, so the consultation stays active and holds its slot.
type CutOff struct{ consultations.Store }

// SaveConsultation implements consultations.Store.
func (s CutOff) SaveConsultation(ctx context.Context, sv consultations.Save) error {
	if sv.Release {
		return errors.New("the function ended")
	}
	return s.Store.SaveConsultation(ctx, sv)
}
