//go:build e2e && stream

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkStreamedTurn measures what a chat client waits for on the
// streaming API (docs/streaming.md): the time to the first delta and to
// the stored turn (done), and the number of events, on a multi-sentence
// answer of the scripted model (paced as a model writes: the edge's
// Bedrock ConverseStream, 25 ms a piece), against the same turn on the
// HTTP API in the same run (the reference: the blank screen until the
// whole reply, which make bench-stream's Bedrock writes at the same pace,
// CONCLAVE_BEDROCK_PACE=1). first/http is what streaming buys; done/http
// what it costs at the end, if anything.
func BenchmarkStreamedTurn(b *testing.B) {
	t := &testing.T{}
	me, _ := clients(t)
	me.T = t
	base := os.Getenv("CONCLAVE_STREAM_URL")
	if base == "" {
		b.Fatal("CONCLAVE_STREAM_URL is not set")
	}
	slug := mkAgent(t, me, "streambench")
	r := me.do("POST", "/v1/conversations", map[string]any{"agent": slug})
	if r.Status != 201 {
		b.Fatal(string(r.Body))
	}
	conv := r.JSON(t)["id"].(string)
	const ask = "Explain how we should roll out the new billing service: the order of the steps, the risks at each one, and how we will know it worked."
	var first, full, reference time.Duration
	events := 0
	for b.Loop() {
		start := time.Now()
		if r := me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": ask}); r.Status != 201 {
			b.Fatal(string(r.Body))
		}
		reference += time.Since(start)

		body, _ := json.Marshal(map[string]any{"content": ask})
		req, _ := http.NewRequest("POST", base+"/v1/conversations/"+conv+"/messages", bytes.NewReader(body))
		req.Header.Set("X-Api-Key", me.Key)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		start = time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("stream: %v %v", err, resp)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		sawDelta := false
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "event: ") {
				continue
			}
			events++
			switch strings.TrimPrefix(line, "event: ") {
			case "delta":
				if !sawDelta {
					first += time.Since(start)
					sawDelta = true
				}
			case "done":
				full += time.Since(start)
			case "error":
				b.Fatal("error event")
			}
		}
		resp.Body.Close()
		if !sawDelta {
			b.Fatal("no delta")
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "first-delta-ms")
	b.ReportMetric(float64(full.Milliseconds())/n, "stream-done-ms")
	b.ReportMetric(float64(reference.Milliseconds())/n, "http-reply-ms")
	b.ReportMetric(first.Seconds()/reference.Seconds(), "first/http")
	b.ReportMetric(full.Seconds()/reference.Seconds(), "done/http")
	b.ReportMetric(float64(events)/n, "events/op")
}
