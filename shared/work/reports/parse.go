package reports

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// Section is one section of a report: its name (a template section, or one
// the author added), its text and, in a format json report, its value as
// written.
type Section struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Value   any    `json:"value,omitempty"`
}

var (
	heading   = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	bulleted  = regexp.MustCompile(`^\s*(?:[-*•+]|\d+[.)])\s+\S`)
	labelled  = regexp.MustCompile(`^\s*[*_]*([A-Za-z][A-Za-z0-9 _/&-]{0,60}?)[*_]*\s*:[*_]*\s*(.*)$`)
	numbering = regexp.MustCompile(`^\d+[.)]?\s+`)
	aside     = regexp.MustCompile(`\s*\([^)]*\)\s*:?$`)
	nonWord   = regexp.MustCompile(`[^a-z0-9]+`)
)

// normalize turns a heading or label ("2. Severity Breakdown", "**Risk
// matrix**", "Findings (3)") into a section name ("severity_breakdown",
// "risk_matrix", "findings").
func normalize(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "*_`")
	s = numbering.ReplaceAllString(s, "")
	s = aside.ReplaceAllString(s, "")
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "_"), "_")
}

// sectionList gathers sections in order of appearance; a name seen again
// continues its section (a revision's section completes the first one).
type sectionList struct {
	list  []Section
	index map[string]int
	cur   int
	lines map[int][]string
}

func newSectionList() *sectionList {
	return &sectionList{index: map[string]int{}, cur: -1, lines: map[int][]string{}}
}

func (l *sectionList) open(name string) {
	i, ok := l.index[name]
	if !ok {
		i = len(l.list)
		l.index[name] = i
		l.list = append(l.list, Section{Name: name})
	}
	l.cur = i
}

func (l *sectionList) add(line string) {
	if l.cur >= 0 {
		l.lines[l.cur] = append(l.lines[l.cur], line)
	}
}

func (l *sectionList) sections() []Section {
	for i := range l.list {
		l.list[i].Content = strings.TrimSpace(strings.Join(l.lines[i], "\n"))
	}
	return l.list
}

// startsSection reports whether a heading names a section: one of the
// template's at any level, or any name at level 2 (a section the author
// added). Other headings are the title or sub-headings inside a section.
func startsSection(t Template, level int, name string) bool {
	return name != "" && (t.Known(name) || level == 2)
}

// parseMarkdown reads "## name" sections; text before the first one (a
// title, a preamble) belongs to none.
func parseMarkdown(t Template, answer string) []Section {
	l := newSectionList()
	for _, line := range strings.Split(answer, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			if name := normalize(m[2]); startsSection(t, len(m[1]), name) {
				l.open(name)
				continue
			}
		}
		l.add(line)
	}
	return l.sections()
}

// parseBullets reads "name:" labels (or headings) each followed by its
// points. A label the template does not know starts a section only when it
// stands alone on its line and is short, so a sentence ending in a colon
// stays text.
func parseBullets(t Template, answer string) []Section {
	l := newSectionList()
	for _, line := range strings.Split(answer, "\n") {
		if bulleted.MatchString(line) {
			l.add(line)
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			if name := normalize(m[2]); startsSection(t, len(m[1]), name) {
				l.open(name)
				continue
			}
		}
		if m := labelled.FindStringSubmatch(line); m != nil {
			name, rest := normalize(m[1]), strings.TrimSpace(m[2])
			if t.Known(name) || (rest == "" && len(strings.Fields(m[1])) <= 4) {
				l.open(name)
				if rest != "" {
					l.add(rest)
				}
				continue
			}
		}
		l.add(line)
	}
	return l.sections()
}

// decodeObject reads a JSON object from an answer, tolerating a code fence
// or text around it (models add both).
func decodeObject(answer string) (map[string]any, bool) {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s[strings.IndexByte(s+"\n", '\n'):], "\n")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) == nil && m != nil {
		return m, true
	}
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if i >= 0 && j > i && json.Unmarshal([]byte(s[i:j+1]), &m) == nil && m != nil {
		return m, true
	}
	return nil, false
}

// normalizedKeys returns m with its keys as section names; of two keys
// with the same name the non-empty value wins.
func normalizedKeys(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		n := normalize(k)
		if prev, ok := out[n]; !ok || (empty(prev) && !empty(v)) {
			out[n] = v
		}
	}
	return out
}

// parseJSON reads one section per key of the answer's object: the
// template's sections in template order, then the others by name.
func parseJSON(t Template, answer string) ([]Section, bool) {
	m, ok := decodeObject(answer)
	if !ok {
		return nil, false
	}
	m = normalizedKeys(m)
	var names []string
	for _, n := range t.Sections() {
		if _, ok := m[n]; ok {
			names = append(names, n)
		}
	}
	var extra []string
	for k := range m {
		if !t.Known(k) && k != "" {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	out := []Section{}
	for _, n := range append(names, extra...) {
		out = append(out, Section{Name: n, Value: m[n], Content: contentOf(m[n])})
	}
	return out, true
}

// contentOf is a JSON value as text: a string as it is, a list of strings
// as bullet points, anything else as compact JSON.
func contentOf(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case nil:
		return ""
	case []any:
		if items := stringsOf(x); len(items) == len(x) && len(x) > 0 {
			return "- " + strings.Join(items, "\n- ")
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// empty reports whether a JSON value holds nothing: null, blank text, an
// empty list or object.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// stringsOf returns the strings of a decoded JSON list, leaving out what
// is not one (callers compare the lengths to tell a list of strings).
func stringsOf(x []any) []string {
	out := make([]string, 0, len(x))
	for _, e := range x {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
