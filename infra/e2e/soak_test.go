//go:build e2e && soak

package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSoak is `make soak`: thousands of chat turns and task create+cancel
// pairs against one running local cloud, to show it stays fast (moto's
// DynamoDB deep-copied the table on every transaction and slowed down as it
// filled; DynamoDB Local must not). It reports p50 and p99 of the first and
// the last thousand of each kind and the local cloud's memory at the end,
// and fails when the last thousand's median is more than 20% slower than the
// first's. CONCLAVE_SOAK_N sets the count of each kind (default 3000).
func TestSoak(t *testing.T) {
	me, _ := clients(t)
	n := 3000
	if v, err := strconv.Atoi(os.Getenv("CONCLAVE_SOAK_N")); err == nil && v > 0 {
		n = v
	}
	window := min(1000, n/3)
	chat := mkAgent(t, me, "soak-chat")
	worker := mkAgent(t, me, "soak-task")

	turns := make([]time.Duration, 0, n)
	pairs := make([]time.Duration, 0, n)
	var conv string
	for i := range n {
		// A fresh conversation every 50 turns, as chats come and go; the
		// table keeps growing with every one of them.
		if i%50 == 0 {
			r := me.do("POST", "/v1/conversations", map[string]any{"agent": chat})
			require.Equal(t, 201, r.Status, string(r.Body))
			conv = r.JSON(t)["id"].(string)
		}
		start := time.Now()
		r := me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": fmt.Sprintf("Can you review function %d for bugs?", i)})
		turns = append(turns, time.Since(start))
		require.Equal(t, 201, r.Status, "turn %d: %s", i, r.Body)

		start = time.Now()
		c := me.do("POST", "/v1/tasks", map[string]any{"assignee": worker, "title": fmt.Sprintf("soak %d", i)})
		require.Equal(t, 201, c.Status, "create %d: %s", i, c.Body)
		x := me.do("POST", "/v1/tasks/"+c.JSON(t)["id"].(string)+"/cancel", nil)
		pairs = append(pairs, time.Since(start))
		require.Equal(t, 200, x.Status, "cancel %d: %s", i, x.Body)
	}

	var report strings.Builder
	fmt.Fprintf(&report, "soak: %d chat turns and %d task create+cancel pairs, one local cloud\n", n, n)
	fmt.Fprintf(&report, "%-22s %10s %10s %10s %10s %8s\n", "kind", "first p50", "first p99", "last p50", "last p99", "last/first p50")
	for _, k := range []struct {
		name string
		d    []time.Duration
	}{{"chat turn", turns}, {"task create+cancel", pairs}} {
		f50, f99 := percentiles(k.d[:window])
		l50, l99 := percentiles(k.d[len(k.d)-window:])
		ratio := float64(l50) / float64(f50)
		fmt.Fprintf(&report, "%-22s %10s %10s %10s %10s %8.2f\n", k.name, ms(f50), ms(f99), ms(l50), ms(l99), ratio)
		if ratio > 1.2 {
			t.Errorf("%s: the last %d are %.0f%% slower than the first (median %s vs %s)", k.name, window, (ratio-1)*100, ms(l50), ms(f50))
		}
	}
	total := 0
	for _, v := range []string{"CONCLAVE_EDGE_PID", "CONCLAVE_DYNAMO_PID", "CONCLAVE_MOTO_PID"} {
		kb := rssKB(os.Getenv(v))
		total += kb
		fmt.Fprintf(&report, "memory %-8s %6d MB\n", strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(v, "CONCLAVE_"), "_PID")), kb/1024)
	}
	fmt.Fprintf(&report, "memory total    %6d MB\n", total/1024)
	fmt.Print(report.String())
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// rssKB is a process's resident memory from /proc (0 when unknown: the soak
// may run against a cloud on another machine).
func rssKB(pid string) int {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}
