package conversations

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// A turn (or a handoff) answers with an error only when nothing of it was
// stored: its commit, one transaction, is its last step, and it is not
// attempted unless enough of the context's deadline is left to finish it
// and answer. An HTTP function's context ends at its timeout (29 s, below
// API Gateway's 30 s); a commit that started too late would be cut off by
// the timeout, stored or not, and the client would see a 500 for a turn
// that may well be in the conversation.
const (
	// DefaultCommitReserve is the least time left before the deadline for
	// a commit to be attempted. One TransactWriteItems takes tens of
	// milliseconds; 2 s also covers a throttled attempt the SDK retries
	// (its first backoff is up to 1 s) and the answer itself, and is
	// under a tenth of the 29 s, so the models lose little of their time.
	// The models' budget ends 2 × this before the deadline (commit
	// retries after losing a race to a concurrent turn use the rest).
	DefaultCommitReserve = 2 * time.Second
	// answerReserve is kept back from the commit itself: the commit's
	// context ends this long before the deadline, so the function can
	// still answer if DynamoDB does not.
	answerReserve = 300 * time.Millisecond
	// lastReserve is what the answer keeps after a cut-off commit: the
	// time between the commit's cut and it is given to posting the
	// results the reply carried (lastContext).
	lastReserve = 50 * time.Millisecond
)

// timeLeft reports whether ctx leaves at least d before its deadline
// (always, without one).
func timeLeft(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) >= d
}

// tooLate is the answer of a turn or handoff that did not have the time
// to be stored: nothing was, so the client may send it again at once.
func tooLate(what string) error {
	return apperr.New(apperr.EUNAVAILABLE, "too little time was left to record the %s; nothing was stored, send it again", what).
		WithReason("DeadlineTooClose")
}

// commitContext is ctx for one commit: it ends answerReserve (at most a
// tenth of the reserve) before ctx's deadline.
func (s *Service) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-min(answerReserve, s.commitReserve/10)))
}

// lastContext is ctx for the writes that follow a commit cut off in
// flight (commitContext has ended): it ends lastReserve before ctx's
// deadline, what the answer itself needs, so those writes get the little
// that is left and the function still answers.
func (s *Service) lastContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-lastReserve))
}

// effectContext is the one deadline policy of what follows a commit
// (effects.go): the effects end when the commit's own context does
// (commitContext: answerReserve, at most a tenth of the reserve, before
// ctx's deadline), so the function still answers whatever they do; after
// a commit cut off in flight that context has ended, and they get what
// the answer itself does not need (lastContext). Without a deadline they
// end with ctx.
func (s *Service) effectContext(ctx context.Context, cut bool) (context.Context, context.CancelFunc) {
	if cut {
		return s.lastContext(ctx)
	}
	return s.commitContext(ctx)
}

// commitCut reports whether a commit failed because its own context ended
// while the write was in flight: whether it was applied is then unknown.
func commitCut(cctx context.Context, err error) bool {
	return err != nil && cctx.Err() != nil
}

// unknownOutcome is the answer when a commit was cut off in flight: the
// turn may or may not be stored, so the service cannot say "nothing was
// stored" (503); it answers a server fault and logs the conversation.
func unknownOutcome(what string, err error) error {
	return unknownOutcomeError{apperr.Wrap(apperr.EINTERNAL, err, "the %s's commit did not finish before the deadline; its outcome is unknown", what)}
}

// unknownOutcomeError marks unknownOutcome's errors, which are otherwise
// the EINTERNAL they wrap: what follows a failed commit may depend on
// whether the commit was certainly not applied.
type unknownOutcomeError struct{ error }

func (e unknownOutcomeError) Unwrap() error { return e.error }

func isUnknownOutcome(err error) bool {
	var u unknownOutcomeError
	return errors.As(err, &u)
}

// sleep waits d, or less when ctx ends; it reports whether it waited all
// of d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
