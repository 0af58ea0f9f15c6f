package reports

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/conclave-ai/conclave/shared/platform/schemas"
)

// Complexities of a report; each picks the model tier of the report's task.
const (
	// Standard reports summarize and organize: the balanced tier.
	Standard = "standard"
	// Complex reports judge code, threats or data: the powerful tier.
	Complex = "complex"
)

// Model tiers (the routing package's names, so MODEL_TIERS configures them
// for reports as for chat).
const (
	TierBalanced = "tier_1"
	TierPowerful = "tier_2"
)

// Param is one parameter key a template expects.
type Param struct {
	Name string `json:"name"`
	// Kind is "string", "list" (of strings) or "object".
	Kind        string `json:"kind"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
	// MinItems is the fewest items of a required list (1 when unset).
	MinItems int `json:"min_items,omitempty"`
}

// Template is the structure of one report type: its sections, the
// parameters a request gives, its complexity (and so its model tier), the
// formats it can be written in and the JSON schema of a report written in
// format json. Templates are data: GET /v1/report-templates lists them.
type Template struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	TaskType    string   `json:"task_type"`
	Complexity  string   `json:"complexity"`
	ModelTier   string   `json:"model_tier"`
	Required    []string `json:"required_sections"`
	Optional    []string `json:"optional_sections"`
	Params      []Param  `json:"parameters"`
	Formats     []string `json:"formats"`
	// Schema is the JSON schema of a format json report: an object with
	// one property per section, the required sections required.
	Schema map[string]any `json:"json_schema"`
}

// Sections lists the template's sections, required first.
func (t Template) Sections() []string { return append(slices.Clone(t.Required), t.Optional...) }

// Known reports whether name is one of the template's sections.
func (t Template) Known(name string) bool {
	return slices.Contains(t.Required, name) || slices.Contains(t.Optional, name)
}

// Supports reports whether the template can be written in format.
func (t Template) Supports(format string) bool { return slices.Contains(t.Formats, format) }

// Formats a report can be written in.
const (
	Markdown     = "markdown"
	JSON         = "json"
	BulletPoints = "bullet_points"
)

// AllFormats lists every format, for validation.
var AllFormats = []string{Markdown, JSON, BulletPoints}

// section is one section of a template definition: its name and the JSON
// schema of its value in a format json report.
type section struct {
	name   string
	schema map[string]any
}

// Schema building blocks.
// text is a non-empty string; the pattern refuses one of spaces alone, so
// the schema the author reads says what the check enforces.
func text() map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "pattern": `\S`}
}

func list(min int) map[string]any {
	return map[string]any{"type": "array", "minItems": min, "items": text()}
}

func enum(values ...string) map[string]any {
	return map[string]any{"type": "string", "enum": values}
}

func count() map[string]any { return map[string]any{"type": "integer", "minimum": 0} }

// record is an object schema: props are name → schema; required lists the
// properties that must be present.
func record(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func records(item map[string]any) map[string]any {
	return map[string]any{"type": "array", "minItems": 1, "items": item}
}

var (
	severity = enum("critical", "high", "medium", "low", "info")
	level    = enum("low", "medium", "high")
)

// definition is a template as written below: the schema is built from the
// sections' own schemas.
type definition struct {
	typ, description, taskType, complexity string
	required, optional                     []section
	params                                 []Param
	formats                                []string
}

func (d definition) template() Template {
	t := Template{Type: d.typ, Description: d.description, TaskType: d.taskType, Complexity: d.complexity,
		ModelTier: tierOf(d.complexity), Params: d.params, Formats: d.formats}
	if t.Formats == nil {
		t.Formats = AllFormats
	}
	props := map[string]any{}
	for _, s := range d.required {
		t.Required = append(t.Required, s.name)
		props[s.name] = s.schema
	}
	for _, s := range d.optional {
		t.Optional = append(t.Optional, s.name)
		props[s.name] = s.schema
	}
	t.Schema = map[string]any{"type": "object", "properties": props, "required": slices.Clone(t.Required)}
	return t
}

func tierOf(complexity string) string {
	if complexity == Complex {
		return TierPowerful
	}
	return TierBalanced
}

// Templates are the eight report types, by type. The seed gives the
// sections of code_review, research_summary and risk_assessment; the other
// five are what a reviewer in each field expects to find.
var Templates = map[string]Template{}

// sectionSchemas are the templates' section schemas, by type and section,
// compiled once: a format json report checks each section's value on its
// own, so each violation names its section.
var sectionSchemas = map[string]map[string]*schemas.Schema{}

// Types lists the report types, sorted.
var Types []string

func init() {
	for _, d := range definitions {
		t := d.template()
		// A template whose schema cannot be encoded would fail every json
		// report; fail at start instead.
		if _, err := json.Marshal(t.Schema); err != nil {
			panic("reports: template " + t.Type + ": " + err.Error())
		}
		Templates[t.Type] = t
		sectionSchemas[t.Type] = map[string]*schemas.Schema{}
		for name, sub := range t.Schema["properties"].(map[string]any) {
			sectionSchemas[t.Type][name] = schemas.MustCompile(sub)
		}
		Types = append(Types, t.Type)
	}
	sort.Strings(Types)
}

// List returns every template, sorted by type.
func List() []Template {
	out := make([]Template, len(Types))
	for i, typ := range Types {
		out[i] = Templates[typ]
	}
	return out
}

func str(name, description string, required bool) Param {
	return Param{Name: name, Kind: "string", Required: required, Description: description}
}

func strs(name, description string, required bool) Param {
	return Param{Name: name, Kind: "list", Required: required, Description: description}
}

func obj(name, description string) Param {
	return Param{Name: name, Kind: "object", Description: description}
}

// depth is the optional parameter that makes a standard report complex
// ("comprehensive" or "deep" asks for the powerful tier).
var depth = str("depth", "brief, standard, comprehensive or deep; comprehensive and deep use the powerful model tier", false)

// ParametersFrom are the parameters of a report of type typ asked for in
// one message (a chat turn routed to a report:<type> skill): each required
// parameter holds the message (a list: MinItems copies of it, the fewest
// it takes). Nil for an unknown type.
func ParametersFrom(typ, message string) map[string]any {
	t, ok := Templates[typ]
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, p := range t.Params {
		if !p.Required {
			continue
		}
		switch p.Kind {
		case "string":
			out[p.Name] = message
		case "list":
			n := max(p.MinItems, 1)
			list := make([]string, n)
			for i := range list {
				list[i] = message
			}
			out[p.Name] = list
		}
	}
	return out
}
