// Command mutationtable turns the gremlins reports of `make mutation`
// (one JSON file per package, written with gremlins' -o) into the Markdown
// table of docs/measurements.md, one row per package in the order given:
//
//	go run ./localstack/mutationtable -dir .local/mutation routing tasks …
//
// A package without a report is listed as not run, so a partial run never
// passes for a complete one.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// report is the part of gremlins' JSON output (v0.6.0) the table reads.
type report struct {
	Coverage float64 `json:"mutations_coverage"`
	Elapsed  float64 `json:"elapsed_time"`
	Files    []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func main() {
	dir := flag.String("dir", ".local/mutation", "the directory of the reports (<package>.json)")
	flag.Parse()
	if err := write(os.Stdout, *dir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mutationtable:", err)
		os.Exit(2)
	}
}

// write prints the table of pkgs' reports in dir, then the mutants that
// lived, by package, so the next reader knows which to look at.
func write(w io.Writer, dir string, pkgs []string) error {
	fmt.Fprintln(w, "| package | generated | killed | lived | not covered | timed out | efficacy | coverage | time | commit |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	var lived []string
	for _, p := range pkgs {
		r, err := read(filepath.Join(dir, p+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "| %s | not run | | | | | | | | |\n", p)
			continue
		}
		if err != nil {
			return err
		}
		// Counted from the mutants listed: gremlins' mutants_total leaves
		// out those not covered, and its summary has no timed-out count.
		n := map[string]int{}
		for _, f := range r.Files {
			for _, m := range f.Mutations {
				n[m.Status]++
			}
		}
		generated := 0
		for _, c := range n {
			generated += c
		}
		// The commit each report was made on (mutation.sh writes it
		// beside the report): packages may be run one at a time.
		commit, _ := os.ReadFile(filepath.Join(dir, p+".commit"))
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %s | %s | %.0f s | %s |\n", p, generated, n["KILLED"], n["LIVED"], n["NOT COVERED"], n["TIMED OUT"],
			percent(n["KILLED"], n["KILLED"]+n["LIVED"]), fmt.Sprintf("%.1f %%", r.Coverage), r.Elapsed, strings.TrimSpace(string(commit)))
		for _, f := range r.Files {
			for _, m := range f.Mutations {
				if m.Status == "LIVED" {
					lived = append(lived, fmt.Sprintf("%s/%s:%d:%d %s", p, f.Name, m.Line, m.Column, m.Type))
				}
			}
		}
	}
	if len(lived) > 0 {
		fmt.Fprintf(w, "\nLived (%d):\n\n```\n%s\n```\n", len(lived), strings.Join(lived, "\n"))
	}
	return nil
}

// percent is n of of in percent; the efficacy column is killed over killed
// and lived, as gremlins computes it.
func percent(n, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of))
}

func read(path string) (report, error) {
	var r report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
