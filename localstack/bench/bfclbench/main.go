// Command bfclbench measures how well the ExpertGate routes the questions
// of the Berkeley Function Calling Leaderboard's function-selection sets
// (BFCL v4 multiple, irrelevance, live_multiple, live_irrelevance): each
// entry is a team whose agents are its functions, and the gate should rank
// the expected function's agent first, or decline when no function fits.
//
//	go run ./localstack/bench/bfclbench -data .local/bfcl
//
// localstack/bench/routing/bfcl.sh (make bench-routing) fetches the data
// and runs it beside the seed's design (seed_bfcl.py); see there for what
// the figures mean.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/localstack/bench/benchembed"
	"github.com/conclave-ai/conclave/shared/routing"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bfclbench:", err)
		os.Exit(1)
	}
}

// run parses the command line and runs the chosen benchmark.
//
// Kept whole: the command's flags and their dispatch, read as one.
func run(ctx context.Context, args []string, w io.Writer) (err error) {
	fs := flag.NewFlagSet("bfclbench", flag.ContinueOnError)
	data := fs.String("data", ".local/bfcl", "the directory bfcl.sh extracts BFCL's data files into")
	embedder := fs.String("embedder", "", "none or wordllama (default: wordllama when its weights directory exists, else none)")
	jsonOut := fs.String("json", "", "write the per-set metrics to this file")
	teamsOut := fs.String("teams", "", "write every entry as mapped (query, gold, agents' skills) to this file, as JSON lines, for seed_bfcl.py")
	only := fs.String("set", "", "comma-separated sets to run (default: all four)")
	verbose := fs.Bool("v", false, "print each set's misrouted and falsely declined questions, and the irrelevant ones accepted")
	calOverride := fs.String("cal", "", "floor,ceil,semantic,bias,match,lead: the calibration of the run (the embedder's, or with -embedder none LexicalCalibration)")
	fit := fs.Bool("fit", false, "search the calibration on the tuning sets (multiple, irrelevance) and print it with every set's figures")
	proto := fs.String("proto", "", "with -fit, structural prototypes: lex=bm25|covbm25, cos=desc|namedesc|max, extra=semlead|cosmax, single=zero")
	if err := fs.Parse(args); err != nil {
		return err
	}
	chosen, err := pickSets(*only)
	if err != nil {
		return err
	}
	model, label, err := chooseEmbedder(*embedder)
	if err != nil {
		return err
	}
	if *calOverride != "" {
		c, err := parseCal(*calOverride)
		if err != nil {
			return err
		}
		applyCal(c, model != nil)
	}
	if *fit {
		return runFit(ctx, w, *data, model, label, *proto, true)
	}

	var export *json.Encoder
	if *teamsOut != "" {
		f, cerr := os.Create(*teamsOut)
		if cerr != nil {
			return cerr
		}
		buf := bufio.NewWriter(f)
		export = json.NewEncoder(buf)
		defer func() { // the named result: a failed write fails the run
			err = errors.Join(err, buf.Flush(), f.Close())
		}()
	}

	start := time.Now()
	var all []setMetrics
	entries := 0
	for _, s := range chosen {
		teams, err := loadSet(*data, s)
		if err != nil {
			return fmt.Errorf("%w (make bench-routing fetches the data)", err)
		}
		if export != nil {
			if err := exportTeams(export, s, teams); err != nil {
				return err
			}
		}
		outs, err := routeSet(ctx, teams, model)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		entries += len(teams)
		all = append(all, measure(s, outs))
		if *verbose {
			printMisses(w, s, outs)
		}
	}
	elapsed := time.Since(start)

	fmt.Fprintf(w, "The ExpertGate (routing.Rank, decline when Confidence < threshold; embedder: %s): %d entries in %.1f s\n",
		label, entries, elapsed.Seconds())
	printTables(w, all)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(struct {
			Gate     string       `json:"gate"`
			Embedder string       `json:"embedder"`
			Seconds  float64      `json:"seconds"`
			Sets     []setMetrics `json:"sets"`
		}{"expertgate", label, elapsed.Seconds(), all}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func pickSets(only string) ([]benchSet, error) {
	if only == "" {
		return sets, nil
	}
	var out []benchSet
	for name := range strings.SplitSeq(only, ",") {
		i := slices.IndexFunc(sets, func(s benchSet) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-set: no set %q (multiple, irrelevance, live_multiple, live_irrelevance)", name)
		}
		out = append(out, sets[i])
	}
	return out, nil
}

// chooseEmbedder returns the semantic signal's model (nil for none) and
// how to name it in the table.
func chooseEmbedder(name string) (routing.Embedder, string, error) {
	switch name {
	case "none":
		return nil, "none", nil
	case "", "wordllama":
		dir, err := wordllamaDir()
		if err != nil {
			if name == "" {
				return nil, "none (no WordLlama: " + err.Error() + ")", nil
			}
			return nil, "", err
		}
		m, err := loadWordllama(dir)
		if err != nil {
			return nil, "", fmt.Errorf("wordllama in %s: %w", dir, err)
		}
		return m, "wordllama (" + dir + ")", nil
	}
	return nil, "", fmt.Errorf("-embedder: %q is neither none nor wordllama", name)
}

// routeSet ranks every team's agents for its question. With a model,
// each index embeds its skills and the question's vector joins the
// signals, as the expert-gate function does.
func routeSet(ctx context.Context, teams []team, model routing.Embedder) ([]outcome, error) {
	var m *benchembed.Memo
	var queryVecs [][]float64
	if model != nil {
		m = benchembed.New(model)
		qs := make([]string, len(teams))
		for i, t := range teams {
			qs[i] = t.Query
		}
		var err error
		if queryVecs, err = m.Embed(ctx, qs); err != nil {
			return nil, err
		}
	}
	outs := make([]outcome, len(teams))
	for i := range teams {
		t := &teams[i]
		ix := routing.BuildIndex(t.Agents)
		var qv []float64
		if m != nil && len(t.Agents) > 0 {
			if err := ix.Embed(ctx, m); err != nil {
				return nil, fmt.Errorf("%s: %w", t.ID, err)
			}
			qv = queryVecs[i]
		}
		outs[i] = rankTeam(t, ix, qv)
	}
	return outs, nil
}

// exported is one entry as seed_bfcl.py reads it: the seed is scored on
// exactly the teams the gate is.
type exported struct {
	Set    string          `json:"set"`
	ID     string          `json:"id"`
	Query  string          `json:"query"`
	Gold   string          `json:"gold"`
	Agents []exportedAgent `json:"agents"`
}

type exportedAgent struct {
	Slug        string   `json:"slug"`
	Function    string   `json:"function"`
	Skill       string   `json:"skill"`
	Description string   `json:"description"`
	Keywords    []string `json:"keywords"`
}

func exportTeams(enc *json.Encoder, s benchSet, teams []team) error {
	for _, t := range teams {
		e := exported{Set: s.name, ID: t.ID, Query: t.Query, Gold: t.Gold, Agents: []exportedAgent{}}
		for _, a := range t.Agents {
			sk := a.Skills[0]
			e.Agents = append(e.Agents, exportedAgent{Slug: a.Slug, Function: a.Name, Skill: sk.Name, Description: sk.Description, Keywords: sk.Keywords})
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// printTables writes the summary at the default threshold and the sweep.
func printTables(w io.Writer, all []setMetrics) {
	at := strconv.FormatFloat(routing.DefaultThreshold, 'g', -1, 64)
	fmt.Fprintf(w, "%-27s %5s %7s %7s  %s\n", "set", "n", "top1", "mrr", "declined@"+at+"|false-declined@"+at)
	for _, m := range all {
		last := pct(m.At.Declined) + " declined"
		if m.At.FalseDeclined != nil {
			last = pct(m.At.FalseDeclined) + " false-declined"
		}
		fmt.Fprintf(w, "%-27s %5d %7s %7s  %s\n", m.Set+" ("+m.Role+")", m.N, pct(m.Top1), fixed(m.MRR), last)
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintln(w, "sweep: declined (irrelevance sets), false-declined and routed = ranked first and not declined (answerable sets)")
	// One column per figure of each set: its short name and the figure.
	type column struct {
		set  int
		head string
		get  func(sweepPoint) *float64
	}
	var cols []column
	short := strings.NewReplacer("irrelevance", "irr", "multiple", "mult")
	for si, m := range all {
		name := short.Replace(m.Set)
		if m.At.FalseDeclined != nil {
			cols = append(cols, column{si, name + ":false", func(p sweepPoint) *float64 { return p.FalseDeclined }},
				column{si, name + ":routed", func(p sweepPoint) *float64 { return p.Routed }})
		} else {
			cols = append(cols, column{si, name + ":declined", func(p sweepPoint) *float64 { return p.Declined }})
		}
	}
	fmt.Fprintf(w, "%-5s", "thr")
	for _, c := range cols {
		fmt.Fprintf(w, " %*s", max(len(c.head), 7), c.head)
	}
	fmt.Fprintln(w)
	for i, p := range all[0].Sweep {
		fmt.Fprintf(w, "%-5.2f", p.Threshold)
		for _, c := range cols {
			fmt.Fprintf(w, " %*s", max(len(c.head), 7), pct(c.get(all[c.set].Sweep[i])))
		}
		fmt.Fprintln(w)
	}
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(100**v, 'f', 1, 64) + "%"
}

func fixed(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// printMisses lists, for tuning, the questions of a set the gate got
// wrong at the default threshold: on an answerable set those whose
// expected agent was not ranked first and those declined; on an
// irrelevance set those it did not decline.
func printMisses(w io.Writer, s benchSet, outs []outcome) {
	th := routing.DefaultThreshold
	fn := func(o outcome, slug string) string { return o.team.Functions[slug] }
	line := func(o outcome) string { return strings.Join(strings.Fields(o.team.Query), " ") }
	if !s.answerable {
		fmt.Fprintf(w, "== %s: accepted although no function fits (confidence >= %g)\n", s.name, th)
		for _, o := range outs {
			if !o.declined(th) {
				fmt.Fprintf(w, "%s  got=%s conf=%.3f  %s\n", o.team.ID, fn(o, o.best), o.confidence, line(o))
			}
		}
		return
	}
	fmt.Fprintf(w, "== %s: misrouted (expected function not ranked first)\n", s.name)
	for _, o := range outs {
		if o.rank != 1 {
			fmt.Fprintf(w, "%s  gold=%s rank=%d got=%s conf=%.3f  %s\n", o.team.ID, fn(o, o.team.Gold), o.rank, fn(o, o.best), o.confidence, line(o))
		}
	}
	fmt.Fprintf(w, "== %s: falsely declined (confidence < %g)\n", s.name, th)
	for _, o := range outs {
		if o.declined(th) {
			fmt.Fprintf(w, "%s  gold=%s rank=%d conf=%.3f  %s\n", o.team.ID, fn(o, o.team.Gold), o.rank, o.confidence, line(o))
		}
	}
}
