// Package sessionasl is the one source of the collaboration-pattern session
// machines (brainstorm.asl.json, consensus.asl.json, peer_review.asl.json,
// pipeline.asl.json, supervisor_worker.asl.json in statemachines/). The
// five share their frame — Begin, then after the pattern's own states
// Synthesize, the approval wait, Complete, the dead-letter path, MarkFailed
// and the end states — which lives once in shared.json; each pattern's
// file holds its comment, its timeout and its own states.
//
// The ASL files stay the deployed artefacts, readable as they are in the
// Step Functions console and in review: `go generate ./statemachines`
// writes them from these sources, and a test fails when a committed file
// differs from what Compose produces. So a change to the frame is made
// once, here, and lands in all five.
package sessionasl

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

//go:embed *.json
var sources embed.FS

// shared.json's placeholders: the pattern's name (the steps function's
// "machine") and its first own state (Begin's Next). They are not ASL's
// ${…} definition substitutions, which stay in the output for deploy time.
const (
	machinePlaceholder = "{{machine}}"
	firstPlaceholder   = "{{first}}"
)

// Patterns lists the patterns with a source, sorted.
func Patterns() []string {
	entries, _ := sources.ReadDir(".")
	var out []string
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".json"); name != "shared" && name != e.Name() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// File is the ASL file a pattern's machine is written to.
func File(pattern string) string { return pattern + ".asl.json" }

// Compose returns the ASL of pattern's machine: the shared Begin, the
// pattern's own states, then the rest of the shared states, indented by
// two spaces with a final newline (the layout of the committed files).
// String values are copied as written in the sources.
func Compose(pattern string) ([]byte, error) {
	own, err := sources.ReadFile(pattern + ".json")
	if err != nil {
		return nil, fmt.Errorf("sessionasl: no source for pattern %q", pattern)
	}
	var head struct {
		Comment        json.RawMessage
		TimeoutSeconds json.RawMessage
		States         json.RawMessage
	}
	if err := json.Unmarshal(own, &head); err != nil {
		return nil, fmt.Errorf("sessionasl: %s.json: %w", pattern, err)
	}
	ownStates, err := members(head.States)
	if err != nil || len(ownStates) == 0 {
		return nil, fmt.Errorf("sessionasl: %s.json: States must be a non-empty object (%v)", pattern, err)
	}
	frame, err := sources.ReadFile("shared.json")
	if err != nil {
		return nil, err
	}
	frame = bytes.ReplaceAll(frame, []byte(machinePlaceholder), []byte(pattern))
	frame = bytes.ReplaceAll(frame, []byte(firstPlaceholder), []byte(ownStates[0].name))
	shared, err := members(frame)
	if err != nil || len(shared) == 0 || shared[0].name != "Begin" {
		return nil, fmt.Errorf("sessionasl: shared.json must be an object of states starting with Begin (%v)", err)
	}

	states := append(append([]member{shared[0]}, ownStates...), shared[1:]...)
	seen := map[string]bool{}
	var b bytes.Buffer
	b.WriteString(`{"Comment":`)
	b.Write(head.Comment)
	b.WriteString(`,"StartAt":"Begin","TimeoutSeconds":`)
	b.Write(head.TimeoutSeconds)
	b.WriteString(`,"States":{`)
	for i, m := range states {
		if seen[m.name] {
			return nil, fmt.Errorf("sessionasl: %s: state %q is both shared and the pattern's own", pattern, m.name)
		}
		seen[m.name] = true
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteString("}}")
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, b.Bytes()); err != nil {
		return nil, fmt.Errorf("sessionasl: %s: %w", pattern, err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// member is one name and raw value of a JSON object, in the source's
// order (a map would sort the states, and the console shows them in the
// file's order).
type member struct {
	name  string
	value json.RawMessage
}

func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var m member
		m.name = tok.(string) // an object's keys are strings
		if err := dec.Decode(&m.value); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the object")
	}
	return out, nil
}
