// Package awscalls counts the AWS calls of one function invocation by
// service and operation ("DynamoDB.GetItem"), so every invocation can log
// what it cost and the integration tests can hold each API operation and
// workflow step to a budget.
//
// The count travels in the context: whoever starts an invocation (the
// function bootstrap, shared/platform/lambdafn, or the local cloud's edge standing in
// for the Lambda service) puts a Counter in it with NewContext, and the
// middleware Instrument adds to every AWS client built from an aws.Config
// adds to the Counter of the context each call is made with. A call made
// without one (outside any invocation) is not counted.
//
// What is counted is attempts: the middleware sits in the Finalize step
// after the SDK's retry middleware, so a call the SDK retried once counts
// twice, as AWS bills and throttles it. Retries() says how many of the
// attempts were retries (attempts − operations called), so a budget
// exceeded by a throttled retry is told apart from one exceeded by the
// code.
//
// The package links no AWS service client (only the SDK's core and
// smithy-go), so domain packages may import it.
package awscalls

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter is the AWS calls of one invocation. It is safe for concurrent
// use (a turn asks agents in parallel).
type Counter struct {
	mu       sync.Mutex
	attempts map[string]int
	calls    int
	// cut is the service of the first call its context ended (a stalled
	// dependency); wrote: a call that may change something was made.
	cut    string
	writes int
}

// reads are the operation prefixes that change nothing (a Lambda Invoke
// here is the gate's, a read; Bedrock's Converse and InvokeModel answer);
// every other operation is taken as a write (Put, Update, Delete,
// TransactWrite, StartExecution, SendMessage, PutEvents, …).
var reads = []string{"Get", "Query", "Scan", "BatchGet", "Describe", "List", "TransactGet", "Converse", "Invoke", "Receive"}

// Wrote reports whether a call that may change something was made (its
// outcome known or not): an invocation cut off after one cannot say
// "nothing was changed".
func (c *Counter) Wrote() bool { return c.Writes() > 0 }

// Writes counts the calls that may change something (made, answered or
// not): a caller compares two counts to tell whether a step wrote.
func (c *Counter) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// Cut returns the service of the first call that ended because its
// context did (the invocation's deadline, a stalled dependency), "" when
// none did.
func (c *Counter) Cut() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *Counter) ended(ctx context.Context, service, op string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.ContainsFunc(reads, func(p string) bool { return strings.HasPrefix(op, p) }) {
		c.writes++
	}
	if err != nil && ctx.Err() != nil && c.cut == "" {
		c.cut = strings.ReplaceAll(service, " ", "")
	}
}

// Key names an operation as counted: "<service id without spaces>.<operation>",
// for example "DynamoDB.TransactWriteItems" or "BedrockRuntime.Converse".
func Key(serviceID, operation string) string {
	return strings.ReplaceAll(serviceID, " ", "") + "." + operation
}

func (c *Counter) attempt(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attempts == nil {
		c.attempts = map[string]int{}
	}
	c.attempts[key]++
}

func (c *Counter) call() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
}

// Counts returns a copy of the attempts by operation key.
func (c *Counter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.attempts))
	for k, v := range c.attempts {
		out[k] = v
	}
	return out
}

// Total is the number of attempts of every operation.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.attempts {
		n += v
	}
	return n
}

// Retries is how many attempts were retries of a call already counted.
func (c *Counter) Retries() int {
	total := c.Total()
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, total-c.calls)
}

// Service sums the attempts of one service ("DynamoDB").
func (c *Counter) Service(service string) int {
	n := 0
	for k, v := range c.Counts() {
		if strings.HasPrefix(k, service+".") {
			n += v
		}
	}
	return n
}

// JSON is the counts as a JSON object with sorted keys ("{}" when none):
// the local edge's diagnostic header carries it.
func (c *Counter) JSON() string {
	b, _ := json.Marshal(c.Counts()) // a map[string]int always marshals
	return string(b)
}

// String lists the counts as "DynamoDB.GetItem=1 DynamoDB.Query=2".
func (c *Counter) String() string {
	counts := c.Counts()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(counts[k]))
	}
	return b.String()
}

type ctxKey struct{}

// NewContext returns ctx carrying a new Counter, and the Counter.
func NewContext(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, ctxKey{}, c), c
}

// FromContext returns the Counter of ctx, nil when there is none.
func FromContext(ctx context.Context) *Counter {
	c, _ := ctx.Value(ctxKey{}).(*Counter)
	return c
}

// Middleware IDs; Instrument adds each at most once per stack.
const (
	callID    = "conclave.AWSCallCount"
	attemptID = "conclave.AWSAttemptCount"
)

// Instrument makes every client built from cfg count its calls in the
// invocation's Counter. It is idempotent: instrumenting a configuration
// twice (the bootstrap and the edge's registry both do) counts once. It
// clones cfg.APIOptions, so copies of cfg made before are left alone.
func Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), addMiddleware)
}

func addMiddleware(stack *middleware.Stack) error {
	if _, ok := stack.Initialize.Get(callID); !ok {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(callID, func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c := FromContext(ctx)
			if c == nil {
				return next.HandleInitialize(ctx, in)
			}
			c.call()
			out, md, err := next.HandleInitialize(ctx, in)
			c.ended(ctx, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), err)
			return out, md, err
		}), middleware.After)
		if err != nil {
			return err
		}
	}
	if _, ok := stack.Finalize.Get(attemptID); ok {
		return nil
	}
	// Last in Finalize: after the retry middleware, so once per attempt.
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc(attemptID, func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if c := FromContext(ctx); c != nil {
			c.attempt(Key(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)))
		}
		return next.HandleFinalize(ctx, in)
	}), middleware.After)
}
