package reports

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// SectionError is a section of a format json report whose value does not
// match the template's schema.
type SectionError struct {
	Section string `json:"section"`
	Message string `json:"message"`
}

// Outcome is an answer checked against its template.
type Outcome struct {
	// Sections are the non-empty sections kept, in the answer's order.
	Sections []Section
	// Missing are the required sections absent or empty.
	Missing []string
	// Invalid are the sections of a json report its schema rejects.
	Invalid []SectionError
	// Dropped are the sections past max_sections, left out (optional ones
	// and ones the author added go first; required ones are always kept).
	Dropped []string
	// NotJSON: a json report whose answer is not a JSON object.
	NotJSON bool
}

// OK reports whether the answer follows its template.
func (o Outcome) OK() bool { return len(o.Missing) == 0 && len(o.Invalid) == 0 }

// Check parses answer in c's format and checks it against c's template:
// the required sections present and non-empty, at most c.MaxSections
// sections, and in format json every section valid against its schema.
// An unknown type checks nothing (every answer stands): requests are
// validated before a task exists, so it cannot happen short of a bug.
func Check(c workflow.ReportCheck, answer string) Outcome {
	t, ok := Templates[c.Type]
	if !ok {
		return Outcome{Sections: []Section{}}
	}
	var parsed []Section
	o := Outcome{}
	switch c.Format {
	case JSON:
		var isObject bool
		parsed, isObject = parseJSON(t, answer)
		o.NotJSON = !isObject
	case BulletPoints:
		parsed = parseBullets(t, answer)
	default:
		parsed = parseMarkdown(t, answer)
	}
	var kept []Section
	for _, s := range parsed {
		if s.Content != "" && (c.Format != JSON || !empty(s.Value)) {
			kept = append(kept, s)
		}
	}
	for _, r := range t.Required {
		if !slices.ContainsFunc(kept, func(s Section) bool { return s.Name == r }) {
			o.Missing = append(o.Missing, r)
		}
	}
	if c.Format == JSON {
		for _, s := range kept {
			if schema, ok := sectionSchemas[t.Type][s.Name]; ok {
				if err := schema.Validate(s.Value, s.Name); err != nil {
					o.Invalid = append(o.Invalid, SectionError{Section: s.Name, Message: err.Error()})
				}
			}
		}
	}
	o.Sections, o.Dropped = limit(t, kept, c.MaxSections)
	return o
}

// limit keeps at most max sections: the required ones, then the optional
// ones in template order, then those the author added in its order; the
// kept ones stay in the answer's order.
func limit(t Template, secs []Section, max int) (kept []Section, dropped []string) {
	if max <= 0 || len(secs) <= max {
		return append([]Section{}, secs...), nil
	}
	rank := func(s Section) int {
		if i := slices.Index(t.Sections(), s.Name); i >= 0 {
			return i
		}
		return len(t.Sections())
	}
	order := slices.Clone(secs)
	slices.SortStableFunc(order, func(a, b Section) int { return rank(a) - rank(b) })
	keep := map[string]bool{}
	for i, s := range order {
		if i < max || slices.Contains(t.Required, s.Name) {
			keep[s.Name] = true
		}
	}
	for _, s := range secs {
		if keep[s.Name] {
			kept = append(kept, s)
		} else {
			dropped = append(dropped, s.Name)
		}
	}
	return kept, dropped
}

// Revision is what an answer that falls short is asked to add: the
// sections to write and what the author is told. Nil when the answer
// stands.
func Revision(c workflow.ReportCheck, o Outcome) (toWrite []string, prompt string) {
	if o.OK() {
		return nil, ""
	}
	toWrite = slices.Clone(o.Missing)
	for _, e := range o.Invalid {
		if !slices.Contains(toWrite, e.Section) {
			toWrite = append(toWrite, e.Section)
		}
	}
	var b strings.Builder
	b.WriteString("Revision requested: your report does not follow its template yet.\n")
	if o.NotJSON {
		b.WriteString("Your answer was not a JSON object.\n")
	}
	if len(o.Missing) > 0 {
		fmt.Fprintf(&b, "Missing sections (absent or empty): %s\n", strings.Join(o.Missing, ", "))
	}
	for _, e := range o.Invalid {
		fmt.Fprintf(&b, "Invalid section %s: %s\n", e.Section, e.Message)
	}
	fmt.Fprintf(&b, "Sections to write: %s\n", strings.Join(toWrite, ", "))
	b.WriteString("Write exactly these sections now, each complete and non-empty, and nothing else; the sections you already wrote stand.\n")
	b.WriteString(formatRule(c.Format))
	return toWrite, b.String()
}

// Merge folds a revision's answer into the first answer: in format json
// the revision's non-empty keys replace the first answer's; otherwise the
// revision's sections are appended (a section named twice is read as one).
// Text of the revision outside any section is left out.
func Merge(c workflow.ReportCheck, answer, revised string) string {
	t := Templates[c.Type]
	if c.Format == JSON {
		rev, ok := decodeObject(revised)
		if !ok {
			return answer
		}
		first, _ := decodeObject(answer)
		merged := normalizedKeys(first)
		for k, v := range normalizedKeys(rev) {
			if !empty(v) {
				merged[k] = v
			}
		}
		b, err := json.Marshal(merged)
		if err != nil {
			return answer
		}
		return string(b)
	}
	var secs []Section
	if c.Format == BulletPoints {
		secs = parseBullets(t, revised)
	} else {
		secs = parseMarkdown(t, revised)
	}
	if len(secs) == 0 {
		return answer
	}
	return strings.TrimRight(answer, "\n") + "\n\n" + Render(c.Format, secs)
}

// Render writes sections in a text format (markdown or bullet_points).
func Render(format string, secs []Section) string {
	var b strings.Builder
	for _, s := range secs {
		if format == BulletPoints {
			fmt.Fprintf(&b, "%s:\n%s\n\n", s.Name, s.Content)
		} else {
			fmt.Fprintf(&b, "## %s\n\n%s\n\n", s.Name, s.Content)
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
