package cloud

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Fault injection (local only): a test makes one AWS service stall for
// the invocations of one function made for one API key — the function
// sees its calls hang, as when DynamoDB Local or moto is paused, while
// every other team's requests run as usual, so the fault tests run beside
// the others on the shared local cloud.
//
//	POST $CONCLAVE_EDGE_URL/_conclave/faults
//	{"api_key": "...", "function": "messages", "service": "DynamoDB", "seconds": 30}
//
// "seconds": 0 clears it. The stall is an attempt that waits until the
// fault ends or the call's context does (then the call fails with the
// context's error, as a hung connection does). "operation" narrows it to
// one operation ("TransactWriteItems"); with "answer_lost": true the call
// is made and its answer is what hangs, as when the connection drops after
// the request was sent: the write applied and the caller cannot know.

// FaultsPath is the control endpoint on the AWS endpoint.
const FaultsPath = "/_conclave/faults"

// Fault is one injected stall.
type Fault struct {
	APIKey   string `json:"api_key"`
	Function string `json:"function"`
	Service  string `json:"service"`
	Seconds  int    `json:"seconds"`
	// Operation narrows the stall to one operation ("" all of them).
	Operation string `json:"operation,omitempty"`
	// AnswerLost makes the call first and stalls its answer.
	AnswerLost bool `json:"answer_lost,omitempty"`
	// Timeout (seconds, 0 the manifest's) is the function's timeout for
	// these invocations, as if deployed with it: a test of what happens
	// at the deadline need not wait the 29 s of an HTTP function.
	Timeout int `json:"timeout,omitempty"`
}

type faultKey struct{ apiKey, function string }

type stall struct {
	service, operation string
	answerLost         bool
	timeout            time.Duration
	until              time.Time
}

// Faults are the active stalls.
type Faults struct {
	mu sync.Mutex
	m  map[faultKey]stall
}

// Set starts (or, with 0 seconds, clears) f.
func (fs *Faults) Set(f Fault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[faultKey]stall{}
	}
	k := faultKey{f.APIKey, f.Function}
	if f.Seconds <= 0 {
		delete(fs.m, k)
		return
	}
	fs.m[k] = stall{service: strings.ReplaceAll(f.Service, " ", ""), operation: f.Operation, answerLost: f.AnswerLost,
		timeout: time.Duration(f.Timeout) * time.Second,
		until:   time.Now().Add(time.Duration(f.Seconds) * time.Second)}
}

func (fs *Faults) active(apiKey, function string) (stall, bool) {
	if fs == nil || apiKey == "" {
		return stall{}, false
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s, ok := fs.m[faultKey{apiKey, function}]
	return s, ok && time.Now().Before(s.until)
}

type apiKeyCtx struct{}
type stallCtx struct{}

// withAPIKey marks the invocations made for an API request with its key.
func withAPIKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, apiKeyCtx{}, key)
}

// stalled is ctx of an invocation of function: with the stall of its
// request's key, if one is active.
func (fs *Faults) stalled(ctx context.Context, function string) context.Context {
	key, _ := ctx.Value(apiKeyCtx{}).(string)
	if s, ok := fs.active(key, function); ok {
		return context.WithValue(ctx, stallCtx{}, s)
	}
	return ctx
}

// timeout is the timeout of an invocation of function for ctx's request:
// the stall's, if it sets one, else def.
func (fs *Faults) timeout(ctx context.Context, function string, def time.Duration) time.Duration {
	key, _ := ctx.Value(apiKeyCtx{}).(string)
	if s, ok := fs.active(key, function); ok && s.timeout > 0 {
		return s.timeout
	}
	return def
}

// serveFaults is the control endpoint.
func (fs *Faults) serveFaults(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if err := json.NewDecoder(r.Body).Decode(&f); err != nil || f.APIKey == "" || f.Function == "" || f.Service == "" {
		http.Error(w, "want {api_key, function, service, seconds}", http.StatusBadRequest)
		return
	}
	fs.Set(f)
	w.WriteHeader(http.StatusNoContent)
}

const stallID = "conclave.FaultStall"

// InstrumentFaults makes the clients built from cfg honour the stalls:
// an attempt (after the SDK's retry step, so each attempt hangs) of a
// stalled service waits until the stall ends or its context does.
func InstrumentFaults(cfg *aws.Config) {
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), func(stack *middleware.Stack) error {
		if _, ok := stack.Finalize.Get(stallID); ok {
			return nil
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc(stallID, func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			s, ok := ctx.Value(stallCtx{}).(stall)
			if !ok || strings.ReplaceAll(awsmiddleware.GetServiceID(ctx), " ", "") != s.service ||
				(s.operation != "" && awsmiddleware.GetOperationName(ctx) != s.operation) {
				return next.HandleFinalize(ctx, in)
			}
			var (
				out  middleware.FinalizeOutput
				meta middleware.Metadata
				err  error
			)
			if s.answerLost {
				// Sent whatever the caller's context says: the request
				// reached the service before the connection dropped.
				out, meta, err = next.HandleFinalize(context.WithoutCancel(ctx), in)
			}
			t := time.NewTimer(time.Until(s.until))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return middleware.FinalizeOutput{}, middleware.Metadata{}, ctx.Err()
			case <-t.C:
			}
			if s.answerLost {
				return out, meta, err
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	})
}
