// Command clincbench measures how the ExpertGate routes everyday messages:
// CLINC150 (localstack/bench/routing/clinc150, Larson et al., EMNLP 2019)
// mapped onto a team, each test message routed as the first turn of a new
// conversation is (the cascade with the gate on, TOP_1, the default
// threshold, the generalist as the default agent), in process, with the
// embedder the expert-gate function uses.
//
// The team: one agent per domain (10), one skill per intent (150, named
// after the intent, described by its words), K messages of the intent's
// `train` split as the skill's examples (a seeded sample), and a
// generalist default agent with no examples. Routed right: the domain's
// agent answered, chosen by the gate (and, for the skill, the intent's
// skill is the one that matched). Declined: the generalist answered
// because no specialist was confident enough (the fallback).
//
//	go run ./localstack/bench/clincbench              # the table (make bench-routing)
//	go run ./localstack/bench/clincbench -fit         # the example scale, fitted on train/val/oos_val
//	go run ./localstack/bench/clincbench -api         # K = 25 through a running stage's HTTP API (make bench-routing-api)
//
// Tuning reads only `train`, `val`, `oos_train` and `oos_val`; the table
// reports `test` and `oos_test`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/localstack/bench/benchembed"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "clincbench:", err)
		os.Exit(1)
	}
}

// generalist is the team's default agent: small talk and anything no
// specialist covers, with no examples.
const generalist = "general"

func run(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("clincbench", flag.ContinueOnError)
	data := fs.String("data", "localstack/bench/routing/clinc150", "the CLINC150 directory (data_full.json, domains.json)")
	ks := fs.String("k", "10,25", "examples per skill, comma-separated (25 is the figure that counts)")
	seed := fs.Uint64("seed", 1, "the seed of the examples' sample")
	fit := fs.Bool("fit", false, "fit the example similarity's scale on train, val and oos_val, and print it")
	fitClassifier := fs.Bool("fit-classifier", false, "fit the calibration of the classifier's probabilities on train, val and oos_val, and print it")
	verbose := fs.Bool("v", false, "print the test split's misses")
	threshold := fs.Float64("threshold", routing.DefaultThreshold, "the confidence threshold of the turns")
	api := fs.Bool("api", false, "through the HTTP API of the stage of CONCLAVE_BASE_URL, CONCLAVE_EDGE_URL and CONCLAVE_STAGE, with 25 examples per skill (make bench-routing-api)")
	stride := fs.Int("stride", 3, "-api: route every stride-th message of the test splits")
	workers := fs.Int("workers", 4, "-api: turns in flight at once")
	rate := fs.Float64("rate", 50, "-api: requests per second at most (the team's rate limit is 2,000 on the local cloud, 20 on dev)")
	fitWait := fs.Duration("fit-wait", 4*time.Minute, "-api: how long the classifier-fitter may take")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set, err := load(*data)
	if err != nil {
		return err
	}
	if *api {
		return runAPI(ctx, w, set, apiOptions{seed: *seed, stride: *stride, workers: *workers, rate: *rate, fitWait: *fitWait, verbose: *verbose})
	}
	dir, err := wordllama.Dir()
	if err != nil {
		return err
	}
	model, err := wordllama.Load(dir)
	if err != nil {
		return err
	}
	em := benchembed.New(model)
	if *fit {
		return runFit(ctx, w, set, em, *seed)
	}
	if *fitClassifier {
		return runFitClassifier(ctx, w, set, em, *seed)
	}
	fmt.Fprintf(w, "CLINC150 through the chat turn's routing (cascade, gate on, TOP_1, threshold %.2f, default %q), embedder %s, calibration %+v\n",
		*threshold, generalist, model.ID(), routing.CalibrationFor(model.ID()))
	fmt.Fprintf(w, "%d test messages in scope (%d intents, %d domains), %d out of scope; each the first turn of a new conversation\n\n",
		len(set.Test), len(set.intents), len(set.Domains), len(set.OOSTest))
	fmt.Fprintln(w, "| team | examples per skill | right agent | right skill | in scope declined | out of scope declined | ms per turn |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	variants := []int{0}
	for _, k := range strings.Split(*ks, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(k), &n); err != nil || n < 1 {
			return fmt.Errorf("-k: %q is not a count", k)
		}
		variants = append(variants, n)
	}
	for _, k := range variants {
		for _, classify := range []bool{false, true} {
			if classify && k == 0 {
				continue
			}
			if err := row(ctx, w, set, em, k, classify, *seed, *threshold, *verbose); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "right agent / right skill: the share of in-scope messages the intent's domain agent (and the intent's skill) answered as the gate's choice; a decline counts as a miss. in scope declined: answered by the generalist as the fallback (lower is better). out of scope declined: the same for messages no intent fits (higher is better). The paper's baselines with a threshold and 100 training messages per intent (in-scope accuracy / out-of-scope recall): BERT 96.2 / 52.3, DialogFlow 90.8 / 26.7, Rasa NLU 90.9 / 31.2.")
	return nil
}

// row routes the test splits through the team of k examples per skill
// (0: descriptions only), with its classifier or by example similarity,
// and writes the table's row.
func row(ctx context.Context, w io.Writer, set *dataset, em routing.Embedder, k int, classify bool, seed uint64, threshold float64, verbose bool) error {
	team := set.team(k, seed)
	gate, fitted, err := teamGate(ctx, team, em, classify)
	if err != nil {
		return err
	}
	start := time.Now()
	in, err := routeAll(ctx, team, gate, set.Test, threshold)
	if err != nil {
		return err
	}
	out, err := routeAll(ctx, team, gate, set.OOSTest, threshold)
	if err != nil {
		return err
	}
	per := time.Since(start).Seconds() * 1000 / float64(len(in)+len(out))
	m := measure(in, out)
	label := "descriptions only"
	if k > 0 {
		label = fmt.Sprintf("%d, example similarity", k)
	}
	if classify {
		label = fmt.Sprintf("%d, classifier (fitted in %.1f s)", k, fitted.Seconds())
	}
	fmt.Fprintf(w, "| CLINC150 | %s | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f |\n", label, m.agent, m.skill, m.falseDeclined, m.declined, per)
	if verbose && k > 0 {
		printMisses(w, in)
	}
	return nil
}

// routed is one message's outcome.
type routed struct {
	msg        labelled
	agent      string
	skill      string
	confidence float64
	fallback   bool
}

// teamGate is the expert gate of the bench team and, with classify, the
// team's classifier fitted as the classifier-fitter function fits it
// (expertgate.Fitter, without the cross-validation) and the time it took.
func teamGate(ctx context.Context, team []agents.Agent, em routing.Embedder, classify bool) (*expertgate.Service, time.Duration, error) {
	gate := &expertgate.Service{Source: source{team: team}, Embedder: em}
	if !classify {
		return gate, 0, nil
	}
	gate.Classifiers = &classifiers{}
	start := time.Now()
	res, err := (&expertgate.Fitter{Gate: gate, Store: gate.Classifiers}).Fit(ctx, "team_clinc")
	if err != nil {
		return nil, 0, err
	}
	if res.Outcome != "fitted" {
		return nil, 0, fmt.Errorf("the classifier was not fitted: %s", res.Outcome)
	}
	return gate, time.Since(start), nil
}

// classifiers is the bench's classifier store: one team, one embedder.
type classifiers struct{ c *routing.Classifier }

func (s *classifiers) TeamClassifier(context.Context, string, string) (*routing.Classifier, bool, error) {
	return s.c, s.c != nil, nil
}

func (s *classifiers) PutClassifier(_ context.Context, _ string, c *routing.Classifier) (bool, error) {
	s.c = c
	return true, nil
}

func (s *classifiers) DeleteClassifier(context.Context, string, string) error {
	s.c = nil
	return nil
}

// routeAll routes each message as a new conversation's first turn.
func routeAll(ctx context.Context, team []agents.Agent, gate *expertgate.Service, msgs []labelled, threshold float64) ([]routed, error) {
	router := &cascade.Router{Gate: gate, Flags: cascade.Flags{Collaboration: true, ExpertGate: true},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	out := make([]routed, len(msgs))
	now := time.Now()
	for i, m := range msgs {
		p, err := router.Route(ctx, cascade.Request{TeamID: "team_clinc", Query: m.Text, Active: team, DefaultAgent: generalist,
			Options: cascade.Options{Strategy: routing.Top1, Threshold: threshold}, Start: now, At: now})
		if err != nil {
			return nil, err
		}
		d := p.Decision()
		r := routed{msg: m, agent: d.SelectedAgents[0], confidence: d.Confidence, fallback: d.Fallback}
		r.skill = d.Skill
		out[i] = r
	}
	return out, nil
}

// figures are a run's shares, in percent.
type figures struct{ agent, skill, falseDeclined, declined float64 }

func measure(in, out []routed) figures {
	var f figures
	for _, r := range in {
		switch {
		case r.fallback:
			f.falseDeclined++
		case r.agent == r.msg.agent:
			f.agent++
			if r.skill == r.msg.skill {
				f.skill++
			}
		}
	}
	for _, r := range out {
		if r.fallback || r.agent == generalist {
			f.declined++
		}
	}
	n, o := float64(len(in)), float64(len(out))
	return figures{100 * f.agent / n, 100 * f.skill / n, 100 * f.falseDeclined / n, 100 * f.declined / o}
}

func printMisses(w io.Writer, in []routed) {
	shown := 0
	for _, r := range in {
		if r.agent == r.msg.agent && !r.fallback {
			continue
		}
		if shown++; shown > 40 {
			return
		}
		fmt.Fprintf(w, "  miss: %q (%s/%s) → %s/%s %.3f fallback=%v\n", r.msg.Text, r.msg.agent, r.msg.skill, r.agent, r.skill, r.confidence, r.fallback)
	}
}

// source is the gate's view of the bench team: idle agents, no ratings.
type source struct{ team []agents.Agent }

func (s source) ActiveAgents(context.Context, string) ([]agents.Agent, error) { return s.team, nil }

func (s source) AgentLoads(context.Context, string) (routing.Loads, error) {
	return routing.Loads{}, nil
}

func (s source) RecentRatings(context.Context, string, time.Time, int) ([]routing.Rating, error) {
	return nil, nil
}

// labelled is one message with the agent and skill it belongs to ("" for
// out of scope).
type labelled struct {
	Text  string
	agent string
	skill string
}

// dataset is CLINC150 as the bench reads it.
type dataset struct {
	Domains  map[string][]string
	intents  map[string]string // intent → domain
	train    map[string][]string
	Val      []labelled
	Test     []labelled
	OOSVal   []labelled
	OOSTest  []labelled
	OOSTrain []labelled
}

func load(dir string) (*dataset, error) {
	var raw map[string][][2]string
	if err := readJSON(filepath.Join(dir, "data_full.json"), &raw); err != nil {
		return nil, err
	}
	ds := &dataset{intents: map[string]string{}, train: map[string][]string{}}
	if err := readJSON(filepath.Join(dir, "domains.json"), &ds.Domains); err != nil {
		return nil, err
	}
	for d, list := range ds.Domains {
		for _, in := range list {
			ds.intents[in] = d
		}
	}
	label := func(split string) ([]labelled, error) {
		var out []labelled
		for _, p := range raw[split] {
			if p[1] == "oos" {
				out = append(out, labelled{Text: p[0]})
				continue
			}
			d, ok := ds.intents[p[1]]
			if !ok {
				return nil, fmt.Errorf("%s: intent %q is in no domain", split, p[1])
			}
			out = append(out, labelled{Text: p[0], agent: slug(d), skill: slug(p[1])})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("data_full.json has no %s split", split)
		}
		return out, nil
	}
	for _, p := range raw["train"] {
		ds.train[p[1]] = append(ds.train[p[1]], p[0])
	}
	var err error
	for _, s := range []struct {
		name string
		to   *[]labelled
	}{{"val", &ds.Val}, {"test", &ds.Test}, {"oos_val", &ds.OOSVal}, {"oos_test", &ds.OOSTest}, {"oos_train", &ds.OOSTrain}} {
		if *s.to, err = label(s.name); err != nil {
			return nil, err
		}
	}
	if len(ds.intents) != 150 || len(ds.train) != 150 {
		return nil, errors.New("data_full.json and domains.json do not hold CLINC150's 150 intents")
	}
	return ds, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// slug is an intent's or domain's name as a slug ("credit_cards" →
// "credit-cards").
func slug(s string) string { return strings.ReplaceAll(s, "_", "-") }

// team is the bench team with k examples per skill (0: descriptions only),
// sampled from train with seed.
func (ds *dataset) team(k int, seed uint64) []agents.Agent {
	rng := rand.New(rand.NewPCG(seed, 150))
	domains := make([]string, 0, len(ds.Domains))
	for d := range ds.Domains {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	team := []agents.Agent{{Slug: generalist, Name: "General", Status: agents.StatusActive, Version: 1,
		Skills: []agents.Skill{{Name: "general-questions", Description: "Small talk, general questions and anything no specialist covers"}}}}
	for _, d := range domains {
		a := agents.Agent{Slug: slug(d), Name: strings.ReplaceAll(d, "_", " "), Status: agents.StatusActive, Version: 1}
		intents := append([]string(nil), ds.Domains[d]...)
		sort.Strings(intents)
		for _, in := range intents {
			sk := agents.Skill{Name: slug(in), Description: strings.ReplaceAll(in, "_", " ")}
			if k > 0 {
				pool := append([]string(nil), ds.train[in]...)
				rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
				sk.Examples = pool[:min(k, len(pool))]
			}
			a.Skills = append(a.Skills, sk)
		}
		team = append(team, a)
	}
	return team
}
