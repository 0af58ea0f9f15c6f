// Package xraytrace makes every AWS call of a function a subsegment of its
// X-Ray trace, so a trace shows each DynamoDB, Bedrock, Step Functions,
// SQS and EventBridge call with its operation, duration, retries, request
// id and outcome.
//
// It is a small SDK middleware, not the X-Ray SDK: that SDK pulls the
// whole AWS SDK v1 into each binary (a trivial program grows to 24 MB),
// while a subsegment is one UDP datagram to the X-Ray daemon Lambda runs
// beside every traced function. The daemon's address is in
// AWS_XRAY_DAEMON_ADDRESS and the invocation's trace header in its
// context ("x-amzn-trace-id", set by aws-lambda-go); without both, or when
// the invocation is not sampled, nothing is sent. Links no AWS service
// client.
package xraytrace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TraceHeaderKey is the context key under which aws-lambda-go puts the
// invocation's X-Ray trace header.
const TraceHeaderKey = "x-amzn-trace-id"

// Emitter sends subsegments to the X-Ray daemon.
type Emitter struct {
	conn net.Conn
}

// FromEnv is the emitter of a traced Lambda function, or nil outside one.
func FromEnv() *Emitter {
	addr := os.Getenv("AWS_XRAY_DAEMON_ADDRESS")
	if addr == "" {
		return nil
	}
	// "host:port" or "tcp:host:port udp:host:port"; segments go over UDP.
	for _, part := range strings.Fields(addr) {
		if rest, ok := strings.CutPrefix(part, "udp:"); ok {
			addr = rest
		}
	}
	e, err := Dial(addr)
	if err != nil {
		return nil
	}
	return e
}

// Dial returns an emitter sending to the daemon at addr (UDP).
func Dial(addr string) (*Emitter, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil, err
	}
	return &Emitter{conn: c}, nil
}

// Instrument adds the tracing middleware to every client built from cfg;
// a nil emitter leaves cfg as it is.
func Instrument(cfg *aws.Config, e *Emitter) {
	if e == nil {
		return
	}
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), func(s *middleware.Stack) error {
		if _, ok := s.Initialize.Get(middlewareID); ok {
			return nil
		}
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc(middlewareID, e.trace), middleware.Before)
	})
}

const middlewareID = "ConclaveXRaySubsegment"

// trace wraps one call, its retries included, in a subsegment.
func (e *Emitter) trace(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	root, parent, sampled := parseHeader(traceHeader(ctx))
	if !sampled {
		return next.HandleInitialize(ctx, in)
	}
	start := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	seg := subsegment{
		Name: awsmiddleware.GetServiceID(ctx), ID: newID(), TraceID: root, ParentID: parent, Type: "subsegment", Namespace: "aws",
		StartTime: seconds(start), EndTime: seconds(time.Now()),
		AWS: awsInfo{Operation: awsmiddleware.GetOperationName(ctx), Region: awsmiddleware.GetRegion(ctx), Retries: retries(md)},
	}
	seg.AWS.RequestID, _ = awsmiddleware.GetRequestIDMetadata(md)
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		seg.HTTP = &httpInfo{Response: httpResponse{Status: resp.StatusCode}}
	}
	seg.outcome(err)
	e.send(seg)
	return out, md, err
}

// outcome marks a failed call as AWS does: a throttle, a client error
// (4xx) or a fault (anything else), with the error's message.
func (s *subsegment) outcome(err error) {
	if err == nil {
		return
	}
	status := 0
	if s.HTTP != nil {
		status = s.HTTP.Response.Status
	}
	var api smithy.APIError
	switch {
	case status == 429 || (errors.As(err, &api) && strings.Contains(api.ErrorCode(), "Throttl")):
		s.Error, s.Throttle = true, true
	case status >= 400 && status < 500:
		s.Error = true
	default:
		s.Fault = true
	}
	s.Cause = &cause{Exceptions: []exception{{ID: newID(), Message: err.Error()}}}
}

func (e *Emitter) send(s subsegment) {
	doc, err := json.Marshal(s)
	if err != nil {
		return
	}
	// Best effort, as the X-Ray SDK: a lost datagram loses one subsegment.
	_, _ = e.conn.Write(append([]byte("{\"format\":\"json\",\"version\":1}\n"), doc...))
}

func traceHeader(ctx context.Context) string {
	if v, ok := ctx.Value(TraceHeaderKey).(string); ok && v != "" {
		return v
	}
	return ""
}

// parseHeader reads "Root=1-…;Parent=…;Sampled=1".
func parseHeader(h string) (root, parent string, sampled bool) {
	for _, part := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	return root, parent, sampled && root != "" && parent != ""
}

func retries(md middleware.Metadata) int {
	if r, ok := retry.GetAttemptResults(md); ok && len(r.Results) > 0 {
		return len(r.Results) - 1
	}
	return 0
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// subsegment is an independent subsegment document (X-Ray segment
// document schema).
type subsegment struct {
	Name      string    `json:"name"`
	ID        string    `json:"id"`
	TraceID   string    `json:"trace_id"`
	ParentID  string    `json:"parent_id"`
	Type      string    `json:"type"`
	Namespace string    `json:"namespace"`
	StartTime float64   `json:"start_time"`
	EndTime   float64   `json:"end_time"`
	AWS       awsInfo   `json:"aws"`
	HTTP      *httpInfo `json:"http,omitempty"`
	Error     bool      `json:"error,omitempty"`
	Fault     bool      `json:"fault,omitempty"`
	Throttle  bool      `json:"throttle,omitempty"`
	Cause     *cause    `json:"cause,omitempty"`
}

type awsInfo struct {
	Operation string `json:"operation"`
	Region    string `json:"region,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Retries   int    `json:"retries"`
}

type httpInfo struct {
	Response httpResponse `json:"response"`
}

type httpResponse struct {
	Status int `json:"status"`
}

type cause struct {
	Exceptions []exception `json:"exceptions"`
}

type exception struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}
