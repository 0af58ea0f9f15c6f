package localmodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// The lines of a report's instructions the local model reads, as a model
// reads its prompt (shared/work/reports writes them; a test there keeps both
// sides in step).
const (
	lineRequest  = "Report request: "
	lineTitle    = "Title: "
	lineFormat   = "Format: "
	lineRequired = "Required sections"
	lineOptional = "Optional sections"
	lineMax      = "At most "
	lineParams   = "Parameters: "
	lineSchema   = "JSON schema: "
	lineToWrite  = "Sections to write: "
)

// reportRequest is what the local model reads of a report's instructions.
type reportRequest struct {
	typ, title, format string
	required, optional []string
	max                int
	params             map[string]any
	schema             map[string]any
}

// afterColon is the comma-separated list after a line's first colon.
func afterColon(line string) []string {
	_, rest, _ := strings.Cut(line, ":")
	var out []string
	for _, s := range strings.Split(rest, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// readReport finds the report request among the user's messages.
func readReport(req models.Request) (reportRequest, bool) {
	for _, m := range req.Messages {
		if m.Role != "user" || !strings.Contains(m.Content, lineRequest) {
			continue
		}
		r := reportRequest{max: 10, params: map[string]any{}}
		for _, line := range strings.Split(m.Content, "\n") {
			switch {
			case strings.HasPrefix(line, lineRequest):
				r.typ = strings.TrimPrefix(line, lineRequest)
			case strings.HasPrefix(line, lineTitle):
				r.title = strings.TrimPrefix(line, lineTitle)
			case strings.HasPrefix(line, lineFormat):
				r.format = strings.TrimPrefix(line, lineFormat)
			case strings.HasPrefix(line, lineRequired):
				r.required = afterColon(line)
			case strings.HasPrefix(line, lineOptional):
				r.optional = afterColon(line)
			case strings.HasPrefix(line, lineMax):
				if f := strings.Fields(line); len(f) > 2 {
					r.max, _ = strconv.Atoi(f[2])
				}
			case strings.HasPrefix(line, lineParams):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, lineParams)), &r.params)
			case strings.HasPrefix(line, lineSchema):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, lineSchema)), &r.schema)
			}
		}
		return r, r.typ != ""
	}
	return reportRequest{}, false
}

// reportAnswer writes the report its instructions ask for: the required
// sections, then optional ones while max_sections allows, in the requested
// format. A revision request ("Sections to write: …") gets exactly those
// sections. The scripts omit:a,b (always) and omit-once:a,b (the first
// answer only) leave sections out, so a report's revision and its failure
// can both be tested.
func reportAnswer(req models.Request, r reportRequest, script string) string {
	kind, arg, _ := strings.Cut(script, ":")
	omitted := map[string]bool{}
	for _, s := range strings.Split(arg, ",") {
		omitted[strings.TrimSpace(s)] = kind == "omit" || kind == "omit-once"
	}
	last := lastUser(req)
	revision := strings.Contains(last, lineToWrite)
	var names []string
	if revision {
		for _, line := range strings.Split(last, "\n") {
			if strings.HasPrefix(line, lineToWrite) {
				names = afterColon(line)
			}
		}
	} else {
		names = slices.Clone(r.required)
		for _, o := range r.optional {
			if len(names) < r.max {
				names = append(names, o)
			}
		}
	}
	var keep []string
	for _, n := range names {
		if !omitted[n] || (kind == "omit-once" && revision) {
			keep = append(keep, n)
		}
	}
	if revision && len(keep) == 0 {
		return "I have nothing to add to the sections I wrote."
	}
	subject := r.subject()
	switch r.format {
	case "json":
		obj := map[string]any{}
		props, _ := r.schema["properties"].(map[string]any)
		for _, n := range keep {
			s, _ := props[n].(map[string]any)
			obj[n] = fake(s, n, subject)
		}
		b, _ := json.Marshal(obj)
		return string(b)
	case "bullet_points":
		var b strings.Builder
		for _, n := range keep {
			fmt.Fprintf(&b, "%s:\n- %s\n- %s\n\n", n, sentence(n, subject), "Next: confirm with the team.")
		}
		return strings.TrimSpace(b.String())
	}
	var b strings.Builder
	if !revision {
		fmt.Fprintf(&b, "# %s\n\n", r.title)
	}
	for _, n := range keep {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", n, sentence(n, subject))
	}
	return strings.TrimSpace(b.String())
}

// subject is what the report is about: its title and its parameters'
// text, for the sentences it writes.
func (r reportRequest) subject() string {
	keys := make([]string, 0, len(r.params))
	for k := range r.params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{r.title}
	for _, k := range keys {
		switch v := r.params[k].(type) {
		case string:
			parts = append(parts, v)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	return clip(strings.Join(parts, ", "), 160)
}

func sentence(section, subject string) string {
	label := strings.ReplaceAll(section, "_", " ")
	return fmt.Sprintf("%s%s for %s: the key points are scope, risks and next steps.", strings.ToUpper(label[:1]), label[1:], subject)
}

// fake writes a value that the schema accepts (the keywords the report
// templates use): objects with every property, lists of their minimum
// length (at least one), the first value of an enum, the minimum number.
func fake(schema map[string]any, name, subject string) any {
	switch schema["type"] {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		out := map[string]any{}
		for k, sub := range props {
			s, _ := sub.(map[string]any)
			out[k] = fake(s, k, subject)
		}
		return out
	case "array":
		n := 1
		if m, ok := schema["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		items, _ := schema["items"].(map[string]any)
		out := make([]any, n)
		for i := range out {
			out[i] = fake(items, fmt.Sprintf("%s %d", name, i+1), subject)
		}
		return out
	case "number", "integer":
		if m, ok := schema["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	return sentence(name, subject)
}
