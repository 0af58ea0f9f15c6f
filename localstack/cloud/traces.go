package cloud

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/tracing/otlp"
)

// OTLPTracesPath is where the edge takes the functions' spans (OTLP/HTTP,
// JSON encoding: what shared/platform/tracing sends, to X-Ray deployed).
const OTLPTracesPath = "/v1/traces"

// TracesPath serves one trace as a tree: GET TracesPath + trace id.
const TracesPath = "/_conclave/traces/"

// MaxTraces is how many traces the edge keeps: the oldest is dropped
// when a new one arrives.
const MaxTraces = 1000

// Traces are the spans the functions sent, by trace.
type Traces struct {
	mu sync.Mutex
	// pending are the exports acknowledged and not yet kept (begin).
	pending int
	order   []string // trace ids, oldest first
	spans   map[string][]TraceSpan
}

// TraceSpan is a span as the edge answers it: OTLP's, with its service,
// its attributes as a map and its children.
type TraceSpan struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	ParentID   string         `json:"parent_span_id,omitempty"`
	Name       string         `json:"name"`
	Service    string         `json:"service"`
	Kind       int            `json:"kind"`
	StartNanos int64          `json:"start_unix_nano"`
	EndNanos   int64          `json:"end_unix_nano"`
	DurationMS float64        `json:"duration_ms"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Events     []TraceEvent   `json:"events,omitempty"`
	Links      []TraceLink    `json:"links,omitempty"`
	Error      string         `json:"error,omitempty"`
	Failed     bool           `json:"failed,omitempty"`
	Children   []*TraceSpan   `json:"children,omitempty"`
}

// TraceEvent is a span's event.
type TraceEvent struct {
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// TraceLink is a span a span follows without being its child.
type TraceLink struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// TraceTree is GET TracesPath's answer.
type TraceTree struct {
	TraceID string       `json:"trace_id"`
	Spans   int          `json:"spans"`
	Roots   []*TraceSpan `json:"roots"`
}

// serveOTLP takes an export request: its body is read and acknowledged,
// then decoded and kept, as a collector queues what it receives (the
// function waiting on its flush waits for the read, not the decoding).
// A body that is not JSON at all is refused; one whose spans do not
// decode is dropped, as a collector's would be.
func (t *Traces) serveOTLP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 5<<20))
	if trimmed := strings.TrimSpace(string(body)); err != nil || !strings.HasPrefix(trimmed, "{") {
		http.Error(w, `{"code":3,"message":"not an OTLP JSON export"}`, http.StatusBadRequest)
		return
	}
	t.begin()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	defer t.done()
	var req otlp.Export
	if json.Unmarshal(body, &req) == nil {
		t.add(req)
	}
}

// begin and done count the exports acknowledged and not yet kept; wait
// waits (up to 2 s) until none is, so that a trace read after an answer
// has what the function flushed before it.
func (t *Traces) begin() {
	t.mu.Lock()
	t.pending++
	t.mu.Unlock()
}

func (t *Traces) done() {
	t.mu.Lock()
	t.pending--
	t.mu.Unlock()
}

func (t *Traces) wait() {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		t.mu.Lock()
		n := t.pending
		t.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

func (t *Traces) add(req otlp.Export) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spans == nil {
		t.spans = map[string][]TraceSpan{}
	}
	for _, rs := range req.ResourceSpans {
		service, _ := attrMap(rs.Resource.Attributes)["service.name"].(string)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if _, ok := t.spans[s.TraceID]; !ok {
					t.order = append(t.order, s.TraceID)
					if len(t.order) > MaxTraces {
						delete(t.spans, t.order[0])
						t.order = t.order[1:]
					}
				}
				t.spans[s.TraceID] = append(t.spans[s.TraceID], spanOf(s, service))
			}
		}
	}
}

func spanOf(s otlp.Span, service string) TraceSpan {
	start, _ := strconv.ParseInt(s.Start, 10, 64)
	end, _ := strconv.ParseInt(s.End, 10, 64)
	out := TraceSpan{TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Name: s.Name, Service: service, Kind: s.Kind,
		StartNanos: start, EndNanos: end, DurationMS: float64(end-start) / 1e6, Attributes: attrMap(s.Attributes),
		Failed: s.Status.Code == 2, Error: s.Status.Message}
	for _, e := range s.Events {
		out.Events = append(out.Events, TraceEvent{Name: e.Name, Attributes: attrMap(e.Attributes)})
	}
	for _, l := range s.Links {
		out.Links = append(out.Links, TraceLink{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: attrMap(l.Attributes)})
	}
	return out
}

func attrMap(kvs []otlp.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = valueOf(kv.Value)
	}
	return out
}

func valueOf(v otlp.Value) any {
	switch {
	case v.String != nil:
		return *v.String
	case v.Bool != nil:
		return *v.Bool
	case v.Int != nil:
		n, _ := strconv.ParseInt(*v.Int, 10, 64)
		return n
	case v.Double != nil:
		return *v.Double
	case v.Array != nil:
		out := make([]any, 0, len(v.Array.Values))
		for _, x := range v.Array.Values {
			out = append(out, valueOf(x))
		}
		return out
	}
	return nil
}

// Tree is the trace id's spans as a tree (false: no such trace): a span
// whose parent the edge does not hold is a root; siblings in start order.
func (t *Traces) Tree(id string) (TraceTree, bool) {
	t.wait()
	t.mu.Lock()
	flat := slices.Clone(t.spans[strings.ToLower(id)])
	t.mu.Unlock()
	if len(flat) == 0 {
		return TraceTree{}, false
	}
	slices.SortStableFunc(flat, func(a, b TraceSpan) int { return cmp.Compare(a.StartNanos, b.StartNanos) })
	byID := map[string]*TraceSpan{}
	for i := range flat {
		byID[flat[i].SpanID] = &flat[i]
	}
	tree := TraceTree{TraceID: id, Spans: len(flat)}
	for i := range flat {
		s := &flat[i]
		if p, ok := byID[s.ParentID]; ok && p != s {
			p.Children = append(p.Children, s)
		} else {
			tree.Roots = append(tree.Roots, s)
		}
	}
	return tree, true
}

// serveTrace answers GET TracesPath{id}.
func (t *Traces) serveTrace(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, TracesPath)
	w.Header().Set("Content-Type", "application/json")
	tree, ok := t.Tree(id)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "NotFound", "message": "no trace " + id + " (the edge keeps the last 1,000)"}})
		return
	}
	_ = json.NewEncoder(w).Encode(tree)
}
