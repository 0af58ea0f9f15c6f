package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
)

// The edge's call-count diagnostics (local only; API Gateway sends neither).
//
// Every function invocation the edge serves gets its own awscalls.Counter,
// made here as the Lambda service would start a fresh invocation, and the
// function's wiring (shared/platform/lambdafn.Counted) counts into it. The edge then
//
//   - returns the route function's counts on every HTTP API response in
//     AWSCallsHeader (and the authorizer's in AuthorizerCallsHeader), as a
//     JSON object {"DynamoDB.GetItem":1,…};
//   - keeps the last invocationLogSize invocations of every function —
//     HTTP routes, workflow steps, queue consumers, the gate — with their
//     counts, served as JSON at InvocationsPath on the AWS endpoint:
//     GET /_conclave/invocations?since=<seq>[&function=<name>][&team=<id>]
//     answers {"last_seq":N,"invocations":[…]} (those after since; without
//     since, none, so a test reads last_seq first and then what follows).
//
// Invocations are labelled from their payload where it says so: the team
// (a workflow or gate payload's team_id, an HTTP request's authorizer
// context, a queue batch's first event), the task and the lifecycle action
// of a workflow step, the number of records of a queue batch.
const (
	AWSCallsHeader           = "X-Conclave-Aws-Calls"
	AuthorizerCallsHeader    = "X-Conclave-Authorizer-Aws-Calls"
	InvocationSeqHeader      = "X-Conclave-Invocation-Seq"
	InvocationsPath          = "/_conclave/invocations"
	invocationLogSize        = 20000
	invocationRequestIDBytes = 16
)

// Invocation is one function invocation the edge served and the AWS calls
// it made (attempts, by "Service.Operation").
type Invocation struct {
	Seq       int64  `json:"seq"`
	Function  string `json:"function"`
	RequestID string `json:"request_id"`
	TeamID    string `json:"team_id,omitempty"`
	// Teams are every team of a queue batch's events (TeamID is the
	// first's): under parallel tests one batch carries several teams'.
	Teams     []string       `json:"teams,omitempty"`
	TaskID    string         `json:"task_id,omitempty"`
	SessionID string         `json:"session_id,omitempty"`
	Action    string         `json:"action,omitempty"`
	Route     string         `json:"route,omitempty"`
	Records   int            `json:"records,omitempty"`
	Calls     map[string]int `json:"aws_calls"`
	Total     int            `json:"aws_calls_total"`
	Retries   int            `json:"aws_retries"`
	Error     string         `json:"error,omitempty"`
	// DurationMS is how long the invocation ran: a call budget that counts
	// a periodic read (the worker's watch) sizes it from this.
	DurationMS int64     `json:"duration_ms"`
	At         time.Time `json:"at"`
}

// invocationLog is a ring of the last invocations.
type invocationLog struct {
	mu   sync.Mutex
	seq  int64
	ring []Invocation
}

func (l *invocationLog) add(inv Invocation) Invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	inv.Seq = l.seq
	if len(l.ring) == invocationLogSize {
		l.ring = append(l.ring[:0:0], l.ring[invocationLogSize/2:]...)
	}
	l.ring = append(l.ring, inv)
	return inv
}

// since returns the invocations after seq that match, and the last seq.
func (l *invocationLog) since(seq int64, match func(Invocation) bool) ([]Invocation, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Invocation{}
	for _, inv := range l.ring {
		if inv.Seq > seq && match(inv) {
			out = append(out, inv)
		}
	}
	return out, l.seq
}

// invocationLabels are the fields of a payload that say what an invocation
// was about.
type invocationLabels struct {
	TeamID    string `json:"team_id"`
	TaskID    string `json:"task_id"`
	SessionID string `json:"session_id"`
	Action    string `json:"action"`
	RouteKey  string `json:"routeKey"`
	Records   []struct {
		Body string `json:"body"`
	} `json:"Records"`
	RequestContext struct {
		Authorizer struct {
			Lambda struct {
				TeamID string `json:"team_id"`
			} `json:"lambda"`
		} `json:"authorizer"`
	} `json:"requestContext"`
}

// countedContext is ctx as a new invocation of function name starts:
// a fresh call counter and a Lambda request id.
func countedContext(ctx context.Context, name string) (context.Context, *awscalls.Counter, string) {
	b := make([]byte, invocationRequestIDBytes)
	_, _ = rand.Read(b)
	reqID := hex.EncodeToString(b)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: reqID,
		InvokedFunctionArn: "arn:aws:lambda:" + Region + ":" + Account + ":function:" + name})
	ctx, calls := awscalls.NewContext(ctx)
	return ctx, calls, reqID
}

// record logs one finished (or timed out) invocation.
func (e *Edge) record(name, reqID string, payload []byte, calls *awscalls.Counter, took time.Duration, err error) Invocation {
	var lb invocationLabels
	_ = json.Unmarshal(payload, &lb) // labels only; a payload without them is fine
	inv := Invocation{Function: name, RequestID: reqID, TeamID: lb.TeamID, TaskID: lb.TaskID, SessionID: lb.SessionID, Action: lb.Action,
		Route: lb.RouteKey, Calls: calls.Counts(), Total: calls.Total(), Retries: calls.Retries(), DurationMS: took.Milliseconds(), At: time.Now().UTC()}
	if inv.TeamID == "" {
		inv.TeamID = lb.RequestContext.Authorizer.Lambda.TeamID
	}
	if inv.Records = len(lb.Records); inv.Records > 0 && inv.TeamID == "" {
		// A queue batch: the teams of its events (bus → rule → SQS), the
		// first's as its team.
		for _, r := range lb.Records {
			var ev struct {
				Detail struct {
					TeamID string `json:"team_id"`
				} `json:"detail"`
			}
			_ = json.Unmarshal([]byte(r.Body), &ev)
			if t := ev.Detail.TeamID; t != "" && !slices.Contains(inv.Teams, t) {
				inv.Teams = append(inv.Teams, t)
			}
		}
		if len(inv.Teams) > 0 {
			inv.TeamID = inv.Teams[0]
		}
	}
	if err != nil {
		inv.Error = err.Error()
	}
	return e.calls.add(inv)
}

// serveInvocations answers GET InvocationsPath.
func (e *Edge) serveInvocations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since := int64(-1)
	if s := q.Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "since must be an integer", http.StatusBadRequest)
			return
		}
		since = n
	}
	fn, team := q.Get("function"), q.Get("team")
	list, last := e.calls.since(since, func(inv Invocation) bool {
		return since >= 0 && (fn == "" || inv.Function == fn) && (team == "" || inv.TeamID == team || slices.Contains(inv.Teams, team))
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"last_seq": last, "invocations": list})
}

// callsJSON is counts as the diagnostic headers carry them.
func callsJSON(counts map[string]int) string {
	if counts == nil {
		counts = map[string]int{}
	}
	b, _ := json.Marshal(counts)
	return string(b)
}
