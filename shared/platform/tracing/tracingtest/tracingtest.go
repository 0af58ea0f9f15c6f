// Package tracingtest is what the tracing tests share: a provider whose
// spans go, through the real OTLP exporter, to an HTTP endpoint in the
// test that keeps them. No function links it.
package tracingtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/otlp"
)

// Collector is an OTLP/HTTP endpoint keeping what it was sent.
type Collector struct {
	mu      sync.Mutex
	Exports []otlp.Export
	Types   []string
}

// ServeHTTP takes one export.
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var ex otlp.Export
	if err := json.Unmarshal(raw, &ex); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.mu.Lock()
	c.Exports, c.Types = append(c.Exports, ex), append(c.Types, r.Header.Get("Content-Type"))
	c.mu.Unlock()
	_, _ = w.Write([]byte(`{}`))
}

// Spans are the spans received, by name (the last of a name).
func (c *Collector) Spans() map[string]otlp.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]otlp.Span{}
	for _, ex := range c.Exports {
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out[s.Name] = s
				}
			}
		}
	}
	return out
}

// New is a provider of the service "conversations", recording every trace
// (content: with prompt text), whose spans reach the returned collector
// when it flushes.
func New(t testing.TB, content bool) (*tracing.Provider, *Collector) {
	t.Helper()
	c := &Collector{}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	p := otlp.NewProvider(tracing.Config{Service: "conversations", SamplePercent: 100, Content: content},
		otlp.New(srv.URL+"/v1/traces", "conversations", aws.Config{}))
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p, c
}
