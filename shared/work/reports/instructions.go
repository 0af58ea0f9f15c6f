package reports

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The instructions of a report's task carry the template in plain lines a
// model reads, one fact per line, in a fixed order: the local model (and
// the tests) read the same lines back. Keep the line prefixes stable.
const (
	lineRequest  = "Report request: "
	lineTitle    = "Title: "
	lineFormat   = "Format: "
	lineRequired = "Required sections (write every one, non-empty): "
	lineOptional = "Optional sections (only those that apply): "
	lineMax      = "At most %d sections in all."
	lineParams   = "Parameters: "
	lineSchema   = "JSON schema: "
)

// formatRule is how a format is written, as the author is told.
func formatRule(format string) string {
	switch format {
	case JSON:
		return "Answer with one JSON object and nothing else: one key per section, named exactly as listed, each value as the JSON schema says.\n"
	case BulletPoints:
		return "For each section write its name followed by a colon on a line of its own (\"summary:\"), then its points, one per line, each starting with \"- \".\n"
	}
	return "Write markdown: each section under a level-2 heading with the section's name exactly as listed (\"## summary\"), then its text.\n"
}

// Instructions are the report's task instructions: the template (sections,
// their limit, the format, for json its schema) and the parameters.
func Instructions(t Template, title, format string, maxSections int, params map[string]any) string {
	var b strings.Builder
	b.WriteString(lineRequest + t.Type + "\n")
	b.WriteString(lineTitle + title + "\n")
	b.WriteString(t.Description + "\n")
	b.WriteString(lineFormat + format + "\n")
	b.WriteString(lineRequired + strings.Join(t.Required, ", ") + "\n")
	if len(t.Optional) > 0 && maxSections > len(t.Required) {
		b.WriteString(lineOptional + strings.Join(t.Optional, ", ") + "\n")
	}
	fmt.Fprintf(&b, lineMax+"\n", maxSections)
	b.WriteString(formatRule(format))
	p, _ := json.Marshal(params)
	b.WriteString(lineParams + string(p) + "\n")
	if format == JSON {
		s, _ := json.Marshal(t.Schema)
		b.WriteString(lineSchema + string(s) + "\n")
	}
	return b.String()
}

// ExpectedOutput is the report's task expected output, one line.
func ExpectedOutput(t Template, format string) string {
	return fmt.Sprintf("a %s report in %s with the sections %s", t.Type, format, strings.Join(t.Required, ", "))
}
