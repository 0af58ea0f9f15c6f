//go:build e2e && load

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkFortySessionsAtOnce is `make bench-load`: 40 collaboration
// sessions started at once on the demo agents (8 of each pattern), with 50
// chat turns and 30 board tasks beside them, over HTTP against one local
// cloud. Every session must complete: a stage whose agent holds its five
// tasks waits for a slot instead of failing (issue 26). The reference in
// the same run is one session of each pattern alone: the ratio is the 40's
// median session time over the lone sessions' median. It reports the time
// until all 40 ended, session p50 and p95, how many stages waited for a
// slot, and the chat turns' p50.
func BenchmarkFortySessionsAtOnce(b *testing.B) {
	t := &testing.T{}
	me, _ := clients(t)
	me.T = t
	for range b.N {
		// The reference: each pattern alone, one after another.
		var alone []time.Duration
		for _, p := range loadPatterns {
			d, _, _, err := runSession(me, p)
			if err != nil {
				b.Fatal(err)
			}
			alone = append(alone, d)
		}

		start := time.Now()
		var (
			wg                 sync.WaitGroup
			mu                 sync.Mutex
			durations, turns   []time.Duration
			waits, failed      int
			failures           []string
			boardOK, boardMade int
		)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, w, status, err := runSession(me, loadPatterns[i%len(loadPatterns)])
				mu.Lock()
				defer mu.Unlock()
				if err != nil || status != "completed" {
					failed++
					failures = append(failures, fmt.Sprintf("%s: %s %v", loadPatterns[i%len(loadPatterns)]["pattern"], status, err))
					return
				}
				durations, waits = append(durations, d), waits+w
			}()
		}
		for i := range 5 { // 5 conversations of 10 turns each, beside them
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := me.do("POST", "/v1/conversations", map[string]any{"agent": "kyra"})
				if r.Status != 201 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("conversation: %d", r.Status))
					mu.Unlock()
					return
				}
				conv := r.JSON(t)["id"].(string)
				for j := range 10 {
					s := time.Now()
					r := me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": fmt.Sprintf("Can you review handler %d-%d for bugs?", i, j)})
					mu.Lock()
					if r.Status == 201 {
						turns = append(turns, time.Since(s))
					} else {
						failures = append(failures, fmt.Sprintf("turn: %d %s", r.Status, r.Body))
					}
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() { // 30 board tasks, worked start to complete
			defer wg.Done()
			for i := range 30 {
				agent := []string{"luke", "sage", "archie", "wren", "dana"}[i%5]
				r := me.do("POST", "/v1/tasks", map[string]any{"assignee": agent, "title": fmt.Sprintf("board work %d", i), "priority": "high"})
				mu.Lock()
				boardMade++
				mu.Unlock()
				if r.Status != 201 {
					continue
				}
				id := r.JSON(t)["id"].(string)
				if me.do("POST", "/v1/tasks/"+id+"/start", nil).Status == 200 &&
					me.do("POST", "/v1/tasks/"+id+"/complete", map[string]any{"output": map[string]any{"done": i}}).Status == 200 {
					mu.Lock()
					boardOK++
					mu.Unlock()
				}
			}
		}()
		wg.Wait()
		all := time.Since(start)
		if failed > 0 || len(turns) != 50 || boardOK != boardMade || t.Failed() {
			b.Fatalf("%d of 40 sessions did not complete, %d of 50 turns answered, %d of %d board tasks completed: %v", failed, len(turns), boardOK, boardMade, failures)
		}
		b.ReportMetric(all.Seconds(), "s_all_40")
		b.ReportMetric(pct(durations, 50).Seconds(), "s_session_p50")
		b.ReportMetric(pct(durations, 95).Seconds(), "s_session_p95")
		b.ReportMetric(pct(alone, 50).Seconds(), "s_alone_p50")
		b.ReportMetric(pct(durations, 50).Seconds()/pct(alone, 50).Seconds(), "x_p50_vs_alone")
		b.ReportMetric(float64(waits), "stages_waited")
		b.ReportMetric(float64(pct(turns, 50).Milliseconds()), "ms_turn_p50")
	}
}

// loadPatterns are the demo agents in each pattern (the lead is kyra).
var loadPatterns = []map[string]any{
	{"pattern": "supervisor_worker", "goal": "Audit the payment service", "participants": []any{
		loadPart("luke", "worker", 0), loadPart("archie", "worker", 0), loadPart("sage", "worker", 0)}},
	{"pattern": "pipeline", "goal": "Ship the release notes", "participants": []any{
		loadPart("luke", "worker", 1), loadPart("archie", "worker", 2), loadPart("sage", "worker", 3)}},
	{"pattern": "peer_review", "goal": "Write the API docs", "max_rounds": 2, "participants": []any{
		loadPart("wren", "worker", 0), loadPart("luke", "reviewer", 0)}},
	{"pattern": "brainstorm", "goal": "Plan the launch", "participants": []any{
		loadPart("luke", "contributor", 0), loadPart("archie", "contributor", 0)}},
	{"pattern": "consensus", "goal": "Ship on Friday?", "participants": []any{
		loadPart("luke", "contributor", 0), loadPart("archie", "contributor", 0), loadPart("sage", "contributor", 0)}},
}

func loadPart(agent, role string, stage int) map[string]any {
	p := map[string]any{"agent": agent, "role": role}
	if stage > 0 {
		p["stage"] = stage
	}
	return p
}

// runSession starts a session and polls it until it ends: its duration,
// how many of its stages waited for a slot, and its final status.
func runSession(me client, body map[string]any) (time.Duration, int, string, error) {
	start := time.Now()
	body = maps.Clone(body)
	body["lead"] = "kyra"
	r := me.do("POST", "/v1/sessions", body)
	if r.Status != 201 && r.Status != 202 {
		return 0, 0, "", fmt.Errorf("start %v: %d %s", body["pattern"], r.Status, r.Body)
	}
	id := r.JSON(me.T)["id"].(string)
	for time.Since(start) < 11*time.Minute {
		time.Sleep(250 * time.Millisecond)
		s := me.do("GET", "/v1/sessions/"+id, nil)
		if s.Status != 200 {
			continue
		}
		v := s.JSON(me.T)
		switch st, _ := v["status"].(string); st {
		case "completed", "failed", "timed_out", "cancelled":
			waits, _ := v["slot_waits"].([]any)
			if st != "completed" {
				return time.Since(start), len(waits), st, fmt.Errorf("session %s: %v", id, v["convergence_reason"])
			}
			return time.Since(start), len(waits), st, nil
		}
	}
	return time.Since(start), 0, "", fmt.Errorf("session %s did not end", id)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
