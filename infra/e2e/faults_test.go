//go:build e2e && faults

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestFaults is `make faults` (issue 31): against its own local cloud,
// 20 chat turns, 3 collaboration sessions and 10 agent messages are sent
// at once while DynamoDB Local, then moto (Step Functions, SQS,
// EventBridge), is paused (SIGSTOP, only the processes this cloud
// started) for 8 s and for 30 s. Every create carries an Idempotency-Key;
// one that answered an error is sent again once with the same key after
// the pause, as a client following the docs would. It prints one table
// row per run: turns by status with their latency, answers later than the
// function's deadline, bare gateway 500s (no code, no request id),
// sessions by final status, messages delivered, duplicated and lost, and
// anything stored inconsistently (a turn stored twice, a message in an
// inbox twice, a create answered 201 whose item is missing).
func TestFaults(t *testing.T) {
	me, _ := clients(t)
	pids := map[string]int{}
	for engine, v := range map[string]string{"DynamoDB Local": "CONCLAVE_DYNAMO_PID", "moto": "CONCLAVE_MOTO_PID"} {
		pid, err := strconv.Atoi(os.Getenv(v))
		if err != nil || pid <= 0 {
			t.Fatalf("%s is not set: run make faults (it starts its own local cloud)", v)
		}
		pids[engine] = pid
	}
	var rows []string
	for _, engine := range []string{"DynamoDB Local", "moto"} {
		for _, pause := range []time.Duration{8 * time.Second, 30 * time.Second} {
			rows = append(rows, faultRun(t, me, engine, pids[engine], pause))
			fmt.Println("run:", rows[len(rows)-1])
		}
	}
	fmt.Println("| paused | for | turns (status: count) | turn p50 / max | later than the deadline | bare 500 | sessions | messages delivered / duplicated / lost | inconsistent |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// answer is one HTTP answer as the client saw it.
type answer struct {
	status int
	body   map[string]any
	took   time.Duration
	bare   bool // no error code or request id: the gateway's own 5xx
}

// send is a request that never fails the test: a transport error is
// status 0 (the client gave up at 60 s).
func send(me client, method, path string, body any, key string) answer {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, me.Base+path, rd)
	req.Header.Set("X-Api-Key", me.Key)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	a := answer{took: time.Since(start)}
	if err != nil {
		return a
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a.status = resp.StatusCode
	_ = json.Unmarshal(b, &a.body)
	if a.status >= 500 {
		e, _ := a.body["error"].(map[string]any)
		a.bare = e["code"] == nil || a.body["request_id"] == nil
	}
	return a
}

func faultRun(t *testing.T, me client, engine string, pid int, pause time.Duration) string {
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	// The conversations, before anything is paused.
	var convs []string
	for range 5 {
		a := send(me, "POST", "/v1/conversations", map[string]any{"agent": "kyra"}, "")
		if a.status != 201 {
			t.Fatalf("conversation: %d %v", a.status, a.body)
		}
		convs = append(convs, a.body["id"].(string))
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		turns    = map[string]answer{} // marker → answer
		messages = map[string]answer{}
		sessions = map[string]answer{}
	)
	fire := func(kind, marker, method, path string, body any, into map[string]answer) {
		defer wg.Done()
		a := send(me, method, path, body, kind+"-"+marker)
		mu.Lock()
		into[marker] = a
		mu.Unlock()
	}
	turnBody := func(m string) map[string]any {
		return map[string]any{"content": "Can you review this handler for bugs? (" + m + ")"}
	}
	msgBody := func(m string) map[string]any {
		return map[string]any{"to": "dana", "content": "fault check " + m}
	}
	sesBody := map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the release",
		"participants": []any{faultPart("luke"), faultPart("archie")}}
	for i := range 20 {
		m := fmt.Sprintf("t%s-%d", run, i)
		wg.Add(1)
		go fire("turn", m, "POST", "/v1/conversations/"+convs[i%5]+"/messages", turnBody(m), turns)
	}
	for i := range 10 {
		m := fmt.Sprintf("m%s-%d", run, i)
		wg.Add(1)
		go fire("msg", m, "POST", "/v1/agents/luke/messages", msgBody(m), messages)
	}
	for i := range 3 {
		m := fmt.Sprintf("s%s-%d", run, i)
		wg.Add(1)
		go fire("ses", m, "POST", "/v1/sessions", sesBody, sessions)
	}
	time.Sleep(300 * time.Millisecond)
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	time.Sleep(pause)
	_ = syscall.Kill(pid, syscall.SIGCONT)
	wg.Wait()

	// Turns: status, latency, deadline, bare 500s. The conversations
	// function's deadline is 29 s.
	status := map[int]int{}
	var took []time.Duration
	late, bare := 0, 0
	seen := map[string]bool{}
	for kind, all := range map[string]map[string]answer{"turn": turns, "message": messages, "session": sessions} {
		for _, a := range all {
			if a.status != 201 {
				// One line per kind of answer, for the reader of the run.
				e, _ := a.body["error"].(map[string]any)
				line := fmt.Sprintf("%s %d %v %v %.0fs", kind, a.status, e["code"], e["reason"], a.took.Seconds())
				if a.body["message"] != nil {
					line += fmt.Sprintf(" gateway: %v", a.body["message"])
				}
				if !seen[line] {
					seen[line] = true
					t.Logf("%s %s: %s", engine, pause, line)
				}
			}
			if a.bare {
				bare++
			}
			if a.took > 30*time.Second {
				late++
			}
		}
	}
	for _, a := range turns {
		status[a.status]++
		took = append(took, a.took)
	}
	// A client that got an error sends again once with the same key.
	retry := func(kind string, all map[string]answer, path func(string) string, body func(string) any) {
		for m, a := range all {
			if a.status >= 500 || a.status == 0 || a.status == 409 {
				for range 10 { // a claim still pending answers 409 for up to 35 s
					b := send(me, "POST", path(m), body(m), kind+"-"+m)
					if b.status != 409 && b.status < 500 && b.status != 0 {
						all[m] = b
						break
					}
					time.Sleep(5 * time.Second)
				}
			}
		}
	}
	retry("turn", turns, func(m string) string {
		for i := range 20 {
			if m == fmt.Sprintf("t%s-%d", run, i) {
				return "/v1/conversations/" + convs[i%5] + "/messages"
			}
		}
		return ""
	}, func(m string) any { return turnBody(m) })
	retry("msg", messages, func(string) string { return "/v1/agents/luke/messages" }, func(m string) any { return msgBody(m) })
	retry("ses", sessions, func(string) string { return "/v1/sessions" }, func(string) any { return sesBody })

	// Sessions: their final status (up to 4 minutes).
	sesStatus := map[string]int{}
	for _, a := range sessions {
		id, _ := a.body["id"].(string)
		if id == "" {
			sesStatus[fmt.Sprintf("not created (%d)", a.status)]++
			continue
		}
		final := "unfinished"
		for start := time.Now(); time.Since(start) < 4*time.Minute; time.Sleep(time.Second) {
			g := send(me, "GET", "/v1/sessions/"+id, nil, "")
			if g.status != 200 && g.status < 500 {
				t.Fatalf("GET session %s: %d %v", id, g.status, g.body)
			}
			if st, _ := g.body["status"].(string); st == "completed" || st == "failed" || st == "timed_out" || st == "cancelled" {
				final = st
				break
			}
		}
		sesStatus[final]++
	}

	// Stored: each turn's user message in its conversation, each message
	// in dana's inbox.
	inconsistent := 0
	for i, c := range convs {
		g := send(me, "GET", "/v1/conversations/"+c+"/messages?limit=100", nil, "")
		items, _ := g.body["items"].([]any)
		for j := range 20 {
			if j%5 != i {
				continue
			}
			m := fmt.Sprintf("t%s-%d", run, j)
			n := 0
			for _, it := range items {
				msg, _ := it.(map[string]any)
				if msg["role"] == "user" && strings.Contains(fmt.Sprint(msg["content"]), "("+m+")") {
					n++
				}
			}
			if n > 1 || (n == 0 && turns[m].status == 201) {
				inconsistent++
			}
		}
	}
	// Delivery is asynchronous (message-fanout): read the inbox until it
	// holds every message sent, or for a minute.
	var items []any
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(time.Second) {
		g := send(me, "GET", "/v1/agents/dana/inbox?all=true&peek=true&limit=100", nil, "")
		items, _ = g.body["items"].([]any)
		n := 0
		for _, it := range items {
			msg, _ := it.(map[string]any)
			if strings.Contains(fmt.Sprint(msg["content"]), "m"+run) {
				n++
			}
		}
		if n >= 10 {
			time.Sleep(3 * time.Second) // and a little more, for duplicates
			g = send(me, "GET", "/v1/agents/dana/inbox?all=true&peek=true&limit=100", nil, "")
			items, _ = g.body["items"].([]any)
			break
		}
	}
	delivered, duplicated, lost := 0, 0, 0
	for i := range 10 {
		m := fmt.Sprintf("m%s-%d", run, i)
		n := 0
		for _, it := range items {
			msg, _ := it.(map[string]any)
			if strings.HasSuffix(fmt.Sprint(msg["content"]), " "+m) {
				n++
			}
		}
		switch {
		case n == 1:
			delivered++
		case n > 1:
			duplicated++
		default:
			lost++
		}
	}
	if duplicated > 0 {
		inconsistent += duplicated
	}
	slices.Sort(took)
	return fmt.Sprintf("| %s | %s | %s | %.1f s / %.1f s | %d | %d | %s | %d / %d / %d | %d |", engine, pause, counts(status),
		took[len(took)/2].Seconds(), took[len(took)-1].Seconds(), late, bare, countsS(sesStatus), delivered, duplicated, lost, inconsistent)
}

// counts is "201: 17, 503: 3" (0: no answer within 60 s).
func counts(m map[int]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func countsS(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func faultPart(agent string) map[string]any {
	return map[string]any{"agent": agent, "role": "contributor"}
}
