package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// benchSet is one of BFCL v4's function-selection sets.
type benchSet struct {
	name string
	// answerable: the question needs one of the entry's functions (its
	// gold is in possible_answer/); otherwise none fits and the right
	// outcome is to decline.
	answerable bool
	// heldOut: not looked at while tuning the gate (the live_* sets,
	// user-contributed questions); multiple and irrelevance are the
	// tuning sets.
	heldOut bool
}

// sets are the four sets, in the order of the tables.
var sets = []benchSet{
	{name: "multiple", answerable: true},
	{name: "irrelevance"},
	{name: "live_multiple", answerable: true, heldOut: true},
	{name: "live_irrelevance", heldOut: true},
}

func (s benchSet) role() string {
	if s.heldOut {
		return "held out"
	}
	return "tuning"
}

// team is one BFCL entry as a Conclave team: one agent per function, each
// with one skill, and the question routed to them.
type team struct {
	ID    string
	Query string
	// Gold is the slug of the agent of the expected function ("" for the
	// irrelevance sets).
	Gold   string
	Agents []agents.Agent
	// Functions maps an agent's slug back to its function's name.
	Functions map[string]string
}

// The shapes of BFCL's JSON lines (only what the mapping reads).
type (
	bfclEntry struct {
		ID       string          `json:"id"`
		Question [][]bfclMessage `json:"question"`
		Function []bfclFunction  `json:"function"`
	}
	bfclMessage struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	bfclFunction struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  struct {
			// Properties is an object whose key order is the function's
			// parameter order: decoded by orderedParams.
			Properties json.RawMessage `json:"properties"`
		} `json:"parameters"`
	}
	bfclAnswer struct {
		ID          string                       `json:"id"`
		GroundTruth []map[string]json.RawMessage `json:"ground_truth"`
	}
)

// loadSet reads one set from dir (the layout bfcl.sh extracts:
// BFCL_v4_<set>.json and possible_answer/BFCL_v4_<set>.json) and maps
// every entry to a team.
func loadSet(dir string, s benchSet) ([]team, error) {
	var entries []bfclEntry
	if err := readLines(filepath.Join(dir, "BFCL_v4_"+s.name+".json"), &entries); err != nil {
		return nil, err
	}
	gold := map[string]string{}
	if s.answerable {
		var answers []bfclAnswer
		if err := readLines(filepath.Join(dir, "possible_answer", "BFCL_v4_"+s.name+".json"), &answers); err != nil {
			return nil, err
		}
		for _, a := range answers {
			if len(a.GroundTruth) == 0 || len(a.GroundTruth[0]) != 1 {
				return nil, fmt.Errorf("%s: answer %s: want one function in ground_truth[0], got %d", s.name, a.ID, len(a.GroundTruth))
			}
			for name := range a.GroundTruth[0] {
				gold[a.ID] = name
			}
		}
	}
	teams := make([]team, 0, len(entries))
	for _, e := range entries {
		t, err := toTeam(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.name, e.ID, err)
		}
		if s.answerable {
			name, ok := gold[e.ID]
			if !ok {
				return nil, fmt.Errorf("%s: %s has no answer", s.name, e.ID)
			}
			for slug, fn := range t.Functions {
				if fn == name {
					t.Gold = slug
				}
			}
			if t.Gold == "" {
				return nil, fmt.Errorf("%s: %s: the answer %q is none of its functions", s.name, e.ID, name)
			}
		}
		teams = append(teams, t)
	}
	return teams, nil
}

// readLines decodes a file of JSON lines into *out (a pointer to a slice).
func readLines[T any](path string, out *[]T) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		*out = append(*out, v)
	}
	return sc.Err()
}

// toTeam is the mapping the issue fixes: each function is an agent with
// one skill. Its slug is the function's name made a valid slug, its skill
// is named by the name's words ("ChaDri.change_drink" → cha-dri-change-
// drink) and described by the function's description, then " Inputs: " and
// each parameter's description; the skill's keywords are the parameter
// names as words. The personality is the zero value and every agent is
// active, so skill match alone tells the agents apart.
func toTeam(e bfclEntry) (team, error) {
	t := team{ID: e.ID, Query: query(e.Question), Functions: map[string]string{}}
	for _, f := range e.Function {
		params, err := orderedParams(f.Parameters.Properties)
		if err != nil {
			return team{}, fmt.Errorf("function %s: %w", f.Name, err)
		}
		desc := f.Description
		var inputs, keywords []string
		for _, p := range params {
			if p.description != "" {
				inputs = append(inputs, p.description)
			}
			if w := splitIdent(p.name); len(w) > 0 {
				keywords = append(keywords, strings.Join(w, " "))
			}
		}
		if len(inputs) > 0 {
			desc += " Inputs: " + strings.Join(inputs, " ")
		}
		slug := slugFor(f.Name, t.Functions)
		t.Functions[slug] = f.Name
		t.Agents = append(t.Agents, agents.Agent{
			Slug: slug, Name: f.Name, Status: agents.StatusActive,
			Skills: []agents.Skill{{Name: strings.Join(splitIdent(f.Name), "-"), Description: desc, Keywords: keywords}},
		})
	}
	return t, nil
}

// query is what a router would route: the last user message of the first
// turn. Nearly every entry has exactly one; the nine live_irrelevance
// entries with more are conversations whose earlier messages (and the
// assistant's replies between them) are history, and the last is the
// request being routed.
func query(turns [][]bfclMessage) string {
	if len(turns) == 0 {
		return ""
	}
	q := ""
	for _, m := range turns[0] {
		if m.Role == "user" {
			q = m.Content
		}
	}
	return q
}

// param is one of a function's parameters.
type param struct{ name, description string }

// orderedParams decodes a JSON Schema "properties" object in its key
// order (encoding/json's maps would lose it, and the order is the
// function's own).
func orderedParams(raw json.RawMessage) ([]param, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("properties: want an object (%v)", err)
	}
	var out []param
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		var v struct {
			Description string `json:"description"`
		}
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("properties: %v: %w", tok, err)
		}
		out = append(out, param{name: tok.(string), description: v.Description})
	}
	return out, nil
}

// splitIdent splits an identifier into lower-case words: at every rune that is
// neither a letter nor a digit (".", "_", "-", spaces) and at camelCase
// boundaries, that is before an upper-case letter that follows a
// lower-case letter or a digit ("changeDrink", "v2Api") and before the
// last upper-case letter of a run when a lower-case one follows
// ("HTTPServer" → http, server).
func splitIdent(s string) []string {
	rs := []rune(s)
	var out []string
	start := -1
	cut := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			cut(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			acronymEnd := unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || acronymEnd {
				cut(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	cut(len(rs))
	return out
}

// maxSlug is the longest slug agents.ValidSlug accepts.
const maxSlug = 40

// slugFor makes a function's name a valid agent slug that taken (the
// entry's slugs so far) does not hold: its words joined by "-", only
// a–z, 0–9 and "-", starting with a letter, at most 40 characters, and
// "-2", "-3", … when two names come out the same.
func slugFor(name string, taken map[string]string) string {
	var b strings.Builder
	for _, r := range strings.Join(splitIdent(name), "-") {
		if r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	base := b.String()
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "fn-" + base
	}
	fit := func(s string, room int) string {
		if len(s) > room {
			s = s[:room]
		}
		s = strings.TrimRight(s, "-")
		for len(s) < 3 {
			s += "x"
		}
		return s
	}
	slug := fit(base, maxSlug)
	for n := 2; taken[slug] != "" || agents.Reserved[slug]; n++ {
		suffix := "-" + strconv.Itoa(n)
		slug = fit(base, maxSlug-len(suffix)) + suffix
	}
	if !agents.ValidSlug(slug) {
		panic(fmt.Sprintf("bfclbench: %q from %q is not a valid slug", slug, name))
	}
	return slug
}
