package cloud

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// Edge sits in front of the local AWS services. It serves what they cannot
// run — Lambda functions — with the real Go handlers, and forwards every other
// AWS call by service: DynamoDB (the API and its streams) to DynamoDB Local,
// the rest (Step Functions, SQS, EventBridge) to moto.
//
// There is no lock here. DynamoDB Local evaluates a condition and applies the
// write atomically, as DynamoDB does, so racing conditional writes and
// transactions need nothing from the edge (the race tests prove it). The old
// write lock over moto's DynamoDB could not hold: a caller that gave up
// released it while moto was still applying the write.
type Edge struct {
	// calls keeps the last invocations with their AWS call counts (calls.go).
	calls invocationLog

	Resources Resources
	Handlers  map[string]any // manifest function name → handler
	Log       *slog.Logger
	// RetryDelay, when set, is how soon a failed SQS message is retried
	// (see retrySooner); zero keeps the queue's visibility timeout.
	RetryDelay time.Duration
	// Bedrock, when set, answers Amazon Bedrock's runtime API (bedrock.go).
	Bedrock *Bedrock

	backends    []*backend
	invocations atomic.Int64
	// Faults are the stalls tests inject (faults.go).
	Faults Faults
	// Traces are the functions' spans (traces.go).
	Traces Traces
}

// backend is one local service process behind the edge.
type backend struct {
	name  string
	serve func(r *http.Request) bool
	proxy *httputil.ReverseProxy
	// served counts forwarded requests by AWS service, for the log and for
	// tests that check which process served what.
	mu     sync.Mutex
	served map[string]int64
}

// Backend names, as the edge's log and BackendCounts report them.
const (
	BackendDynamoDB = "dynamodb-local"
	BackendMoto     = "moto"
)

// NewEdge returns an edge forwarding DynamoDB calls to dynamoURL and every
// other AWS call to motoURL.
func NewEdge(res Resources, handlers map[string]any, dynamoURL, motoURL *url.URL, log *slog.Logger) *Edge {
	e := &Edge{Resources: res, Handlers: handlers, Log: log}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelError)
	for _, b := range []*backend{
		{name: BackendDynamoDB, serve: isDynamoDB, proxy: httputil.NewSingleHostReverseProxy(dynamoURL)},
		{name: BackendMoto, serve: func(*http.Request) bool { return true }, proxy: httputil.NewSingleHostReverseProxy(motoURL)},
	} {
		b.proxy.ErrorLog = errLog
		b.served = map[string]int64{}
		if b.name == BackendDynamoDB {
			// Connections kept alive, but never as long as DynamoDB Local
			// (Jetty) keeps an idle one: it closes them after 12 to 31 s
			// idle (measured), and a request written to one it is closing
			// fails mid-response ("use of closed network connection"); a
			// transaction must not fail for that. Closed here after 2 s
			// idle, a connection is never Jetty's to close. A connection
			// per call instead was 13 % of the edge's CPU in make test
			// (dialling), and DynamoDB Local's accepting them.
			b.proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: dynamoIdle, Proxy: nil}
			b.proxy.ModifyResponse = addCRC32
		}
		e.backends = append(e.backends, b)
	}
	return e
}

// dynamoIdle is how long the edge keeps a connection to DynamoDB Local
// idle: well under Jetty's idle timeout (see NewEdge).
const dynamoIdle = 2 * time.Second

// addCRC32 gives a DynamoDB Local answer without an X-Amz-Crc32 header the
// one DynamoDB sends on every answer. DynamoDB Local omits it on errors
// (a failed condition, a cancelled transaction), and the Go SDK then checks
// the body against 0 and logs "failed to close HTTP response body ...
// response did not match expected checksum, 0, N" for each: thousands of
// lines per test run that buried the test report. Error bodies are small;
// answers that carry the header are streamed untouched.
func addCRC32(resp *http.Response) error {
	if resp.Header.Get("X-Amz-Crc32") != "" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// isDynamoDB tells DynamoDB's JSON protocol (X-Amz-Target
// DynamoDB_20120810.* and DynamoDBStreams_20120810.*) from every other call.
func isDynamoDB(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB")
}

// Invocations counts function invocations served, for diagnostics.
func (e *Edge) Invocations() int64 { return e.invocations.Load() }

// BackendCounts is how many requests each backend served, by AWS service.
func (e *Edge) BackendCounts() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, b := range e.backends {
		b.mu.Lock()
		m := map[string]int64{}
		for k, v := range b.served {
			m[k] = v
		}
		b.mu.Unlock()
		out[b.name] = m
	}
	if e.Bedrock != nil {
		out[BackendBedrock] = e.Bedrock.Counts()
	}
	return out
}

var invokePath = regexp.MustCompile(`^/2015-03-31/functions/([^/]+)/invocations$`)

// BackendsPath serves BackendCounts as JSON on the AWS endpoint (a local
// diagnostic; no AWS API uses the path).
const BackendsPath = "/_conclave/backends"

// AWSHandler serves the AWS endpoint: Lambda Invoke and the Bedrock
// runtime here, DynamoDB on DynamoDB Local, the rest on moto. Each forwarded call is logged with the
// backend that served it.
func (e *Edge) AWSHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == InvocationsPath && r.Method == http.MethodGet {
			e.serveInvocations(w, r)
			return
		}
		if m := invokePath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost {
			e.serveInvoke(w, r, m[1])
			return
		}
		if r.URL.Path == OTLPTracesPath && r.Method == http.MethodPost {
			e.Traces.serveOTLP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, TracesPath) && r.Method == http.MethodGet {
			e.Traces.serveTrace(w, r)
			return
		}
		if r.URL.Path == FaultsPath && r.Method == http.MethodPost {
			e.Faults.serveFaults(w, r)
			return
		}
		if r.URL.Path == BackendsPath && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(e.BackendCounts())
			return
		}
		if e.Bedrock != nil && isBedrock(r) {
			e.serveBedrock(w, r)
			return
		}
		for _, b := range e.backends {
			if b.serve(r) {
				e.forward(b, w, r)
				return
			}
		}
	})
}

// serveBedrock answers a Bedrock runtime call on the edge itself, logged as
// a forwarded call is.
func (e *Edge) serveBedrock(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	e.Bedrock.ServeHTTP(rec, r)
	service, _ := awsOperation(r)
	e.Log.Info("aws", "backend", BackendBedrock, "service", service, "operation", path.Base(r.URL.Path), "status", rec.status, "ms", time.Since(start).Milliseconds())
}

func (e *Edge) forward(b *backend, w http.ResponseWriter, r *http.Request) {
	service, op := awsOperation(r)
	b.mu.Lock()
	b.served[service]++
	b.mu.Unlock()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	b.proxy.ServeHTTP(rec, r)
	e.Log.Info("aws", "backend", b.name, "service", service, "operation", op, "status", rec.status, "ms", time.Since(start).Milliseconds())
}

// awsOperation names a call's service (from the SigV4 credential scope) and
// operation (from X-Amz-Target or the query protocol's Action).
func awsOperation(r *http.Request) (service, op string) {
	if _, scope, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		// Credential=AKID/20260101/us-east-1/dynamodb/aws4_request, ...
		if parts := strings.Split(strings.SplitN(scope, ",", 2)[0], "/"); len(parts) >= 5 {
			service = parts[3]
		}
	}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		_, op, _ = strings.Cut(t, ".")
	} else {
		op = r.URL.Query().Get("Action")
	}
	if service == "" {
		service = "unknown"
	}
	return service, op
}

// statusRecorder keeps the status a proxied response was written with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush keeps streaming responses streaming through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// functionName maps a name, partial or full ARN (with optional qualifier)
// to the manifest name.
func (e *Edge) functionName(ref string) (string, bool) {
	ref, _ = url.PathUnescape(ref)
	if i := strings.Index(ref, "function:"); i >= 0 {
		ref = ref[i+len("function:"):]
		if j := strings.Index(ref, ":"); j >= 0 {
			ref = ref[:j]
		}
	}
	name := strings.TrimPrefix(ref, e.Resources.Names.Prefix()+"-")
	if name == ref {
		return "", false
	}
	_, ok := e.Handlers[name]
	return name, ok
}

func awsError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}

func (e *Edge) serveInvoke(w http.ResponseWriter, r *http.Request, ref string) {
	name, ok := e.functionName(ref)
	if !ok {
		awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+ref)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, 6<<20))
	if err != nil {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		go func() { _, _ = e.Invoke(context.Background(), name, payload) }()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := e.Invoke(r.Context(), name, payload)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if err != nil {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(functionErrorPayload(err))
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// FunctionError is a handler's failure as the Lambda runtime reports it.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (f *FunctionError) Error() string { return f.Type + ": " + f.Message }

func functionErrorPayload(err error) []byte {
	var fe *FunctionError
	if !errors.As(err, &fe) {
		fe = &FunctionError{Message: err.Error(), Type: errorType(err)}
	}
	b, _ := json.Marshal(fe)
	return b
}

// errorType names an error as aws-lambda-go does: its Go type name.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	return t.Name()
}

// Invoke runs a function with its manifest timeout, through the same
// serialization path the Lambda runtime uses.
func (e *Edge) Invoke(ctx context.Context, name string, payload []byte) ([]byte, error) {
	out, _, err := e.invoke(ctx, name, payload)
	return out, err
}

// invoke is Invoke, also returning the invocation with its AWS calls.
func (e *Edge) invoke(ctx context.Context, name string, payload []byte) ([]byte, Invocation, error) {
	e.invocations.Add(1)
	fn, _ := manifest.Lookup(name)
	h, ok := e.Handlers[name]
	if !ok {
		return nil, Invocation{}, fmt.Errorf("no handler for %s", name)
	}
	timeout := e.Faults.timeout(ctx, name, time.Duration(fn.Timeout)*time.Second)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	ctx, calls, reqID := countedContext(ctx, e.Resources.Names.Function(name))
	ctx = e.Faults.stalled(ctx, name)
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &FunctionError{Message: fmt.Sprint(p), Type: "Runtime.ExitError"}}
			}
		}()
		out, err := lambda.NewHandler(h).Invoke(ctx, payload)
		done <- result{out, err}
	}()
	select {
	case res := <-done:
		e.Log.Info("invoke", "function", name, "duration_ms", time.Since(start).Milliseconds(), "error", errString(res.err))
		return res.out, e.record(name, reqID, payload, calls, time.Since(start), res.err), res.err
	case <-ctx.Done():
		e.Log.Warn("invoke timed out", "function", name, "timeout_s", timeout.Seconds())
		err := &FunctionError{Message: fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds()), Type: "Sandbox.Timedout"}
		return nil, e.record(name, reqID, payload, calls, time.Since(start), err), err
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// APIHandler serves the HTTP API as API Gateway would: route match, the
// Lambda authorizer on X-Api-Key or a bearer token (401 without either,
// 403 when it denies; credential below), a
// payload format 2.0 event, and the function's response.
//
// Paths are handled as an HTTP API handles them: the path is percent-
// decoded once, routes are matched on the decoded path, and the event's
// rawPath and path parameters are decoded values ("API Gateway decodes
// URL-encoded request parameters before passing them to your backend
// integration", HTTP API routes guide; payload 2.0 rawPath arrives decoded).
// So an encoded slash is a slash to the router — /v1/agents/kyra%2Fload
// is /v1/agents/kyra/load, in AWS as here, and nothing behind the gateway
// can tell them apart — while '%', NUL or non-ASCII in an id reach the
// function, which refuses them in the API's error shape
// (httpapi.ValidPathID). Only a path the gateway cannot route gets its own
// bare {"message":"Not Found"}.
func (e *Edge) APIHandler() http.Handler {
	routes := compileRoutes(manifest.Routes())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqID := newRequestID()
		w.Header().Set("Apigw-Requestid", reqID)
		target, params := matchRoute(routes, r.Method, r.URL.Path)
		if target == nil {
			gatewayError(w, http.StatusNotFound, "Not Found")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20+1))
		if err != nil || len(body) > 10<<20 {
			gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return
		}
		ev := e.buildEvent(r, target, params, body, reqID)
		// The invocations of this request carry its key, for the stalls
		// tests inject for one key (faults.go).
		ctx := withAPIKey(r.Context(), ev.Headers["x-api-key"])
		if !target.public {
			if credential(ev.Headers["x-api-key"], ev.Headers["authorization"]) == "" {
				gatewayError(w, http.StatusUnauthorized, "Unauthorized")
				return
			}
			authCtx, status := e.authorize(ctx, ev, w.Header())
			if status != 0 {
				msg := map[int]string{http.StatusForbidden: "Forbidden", http.StatusInternalServerError: "Internal Server Error"}[status]
				gatewayError(w, status, msg)
				return
			}
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: authCtx}
		}
		payload, _ := json.Marshal(ev)
		out, inv, err := e.invoke(ctx, target.function, payload)
		w.Header().Set(AWSCallsHeader, callsJSON(inv.Calls))
		w.Header().Set(InvocationSeqHeader, strconv.FormatInt(inv.Seq, 10))
		if err != nil {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for k, vs := range resp.MultiValueHeaders {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		b := []byte(resp.Body)
		if resp.IsBase64Encoded {
			b, _ = base64.StdEncoding.DecodeString(resp.Body)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
	})
}

// credential is the request's API key, or else its Authorization header:
// the stages' authorizers have no identity source (either header may
// carry the credential, and an identity source would require each), so
// the gateway calls the authorizer on every request. The local edge still
// answers 401 to a request with neither, as the gateway did while the key
// was the identity source; a deployed HTTP API's authorizer denies it
// (403) — docs/api.md.
func credential(key, authorization string) string {
	if key != "" {
		return key
	}
	return authorization
}

func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *Edge) buildEvent(r *http.Request, rt *route, params map[string]string, body []byte, reqID string) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	// API Gateway adds the forwarding headers (the A2A card's URL reads
	// the scheme from them); the edge serves plain HTTP.
	headers["x-forwarded-proto"] = "http"
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	now := time.Now()
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: rt.key, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: headers, QueryStringParameters: query, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: rt.key, AccountID: Account, Stage: "$default", RequestID: reqID, APIID: "local",
			DomainName: r.Host, Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
	if len(query) == 0 {
		ev.QueryStringParameters = nil
	}
	if len(params) == 0 {
		ev.PathParameters = nil
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// authorize runs the authorizer function; status is 0 when authorized. Its
// AWS calls go in h (AuthorizerCallsHeader).
func (e *Edge) authorize(ctx context.Context, ev events.APIGatewayV2HTTPRequest, h http.Header) (map[string]any, int) {
	req := events.APIGatewayV2CustomAuthorizerV2Request{
		Version: "2.0", Type: "REQUEST",
		RouteArn:       fmt.Sprintf("arn:aws:execute-api:%s:%s:local/$default/%s%s", Region, Account, ev.RequestContext.HTTP.Method, ev.RawPath),
		IdentitySource: []string{credential(ev.Headers["x-api-key"], ev.Headers["authorization"])},
		RouteKey:       ev.RouteKey, RawPath: ev.RawPath, RawQueryString: ev.RawQueryString,
		Headers: ev.Headers, QueryStringParameters: ev.QueryStringParameters, PathParameters: ev.PathParameters,
		RequestContext: ev.RequestContext,
	}
	payload, _ := json.Marshal(req)
	out, inv, err := e.invoke(ctx, "authorizer", payload)
	h.Set(AuthorizerCallsHeader, callsJSON(inv.Calls))
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	var resp events.APIGatewayV2CustomAuthorizerSimpleResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, http.StatusInternalServerError
	}
	if !resp.IsAuthorized {
		return nil, http.StatusForbidden
	}
	return resp.Context, 0
}
