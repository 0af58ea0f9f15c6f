// Command tracecli prints one trace the local edge keeps (make trace
// ID=…): each span indented under its parent, with its service, its
// duration, whether it failed, and the attributes that tell the story
// (gen_ai.*, conclave.*, rpc.method, http.*).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/localstack/cloud"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] == "" {
		fmt.Fprintln(os.Stderr, "usage: make trace ID=<trace id> (an answer's X-Trace-Id)")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Getenv("CONCLAVE_EDGE_URL"), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, edge, id string) error {
	if edge == "" {
		return fmt.Errorf("CONCLAVE_EDGE_URL is not set: is the local cloud up (make up)?")
	}
	// A function sends its spans just after its answer: a trace asked for
	// at once may not be there yet.
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := http.Get(strings.TrimSuffix(edge, "/") + cloud.TracesPath + id)
		if err != nil {
			return err
		}
		if r.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
			resp = r
			break
		}
		r.Body.Close()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("no trace %s on the edge (it keeps the last %d)", id, cloud.MaxTraces)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the edge answered %s", resp.Status)
	}
	var tree cloud.TraceTree
	if err := json.NewDecoder(resp.Body).Decode(&tree); err != nil {
		return err
	}
	fmt.Fprintf(w, "trace %s: %d spans\n", tree.TraceID, tree.Spans)
	for _, r := range tree.Roots {
		print(w, r, 0)
	}
	return nil
}

// shown are the attribute prefixes printed beside a span.
var shown = []string{"gen_ai.", "conclave.", "rpc.method", "http.route", "http.response.status_code", "aws.retries", "error.type"}

func print(w io.Writer, s *cloud.TraceSpan, depth int) {
	status := ""
	if s.Failed {
		status = "  FAILED: " + s.Error
	}
	fmt.Fprintf(w, "%s%s [%s] %.1f ms%s\n", strings.Repeat("  ", depth), s.Name, s.Service, s.DurationMS, status)
	var keys []string
	for k := range s.Attributes {
		if slices.ContainsFunc(shown, func(p string) bool { return strings.HasPrefix(k, p) }) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s    %s=%v\n", strings.Repeat("  ", depth), k, s.Attributes[k])
	}
	for _, c := range s.Children {
		print(w, c, depth+1)
	}
}
