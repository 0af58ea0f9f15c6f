package schemas_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/schemas"
)

const review = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["summary", "findings"],
  "additionalProperties": false,
  "properties": {
    "summary": {"type": "string", "minLength": 1, "pattern": "\\S"},
    "findings": {"type": "array", "minItems": 1, "items": {
      "type": "object", "required": ["title"],
      "properties": {"title": {"type": "string"}, "severity": {"type": "string", "enum": ["high", "low"]}}}},
    "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
    "score": {"type": "number", "minimum": 0, "maximum": 10}
  }
}`

// Each violation names the value that failed, array indices included, and
// says what it must be.
func TestViolationsNameTheValue(t *testing.T) {
	s, err := schemas.Compile([]byte(review))
	require.NoError(t, err)
	finding := `{"title":"t"}`
	for _, c := range []struct{ doc, want string }{
		{`{"summary":"s","findings":[` + finding + `]}`, ""},
		{`{"summary":"s","findings":[` + finding + `],"counts":{"a":1},"score":10}`, ""},
		{`[]`, "doc must be an object"},
		{`{"findings":[` + finding + `]}`, "doc.summary is required"},
		{`{"summary":"s","findings":[` + finding + `],"x":1}`, "doc.x is not allowed"},
		{`{"summary":"","findings":[` + finding + `]}`, "doc.summary must not be empty"},
		{`{"summary":"  ","findings":[` + finding + `]}`, "doc.summary must not be blank"},
		{`{"summary":"s","findings":[]}`, "doc.findings must have at least 1 item"},
		{`{"summary":"s","findings":[` + finding + `,{"title":"u","severity":"dire"}]}`, "doc.findings[1].severity must be one of high, low"},
		{`{"summary":"s","findings":[` + finding + `,{}]}`, "doc.findings[1].title is required"},
		{`{"summary":"s","findings":[` + finding + `],"counts":{"a":1,"b":1.5}}`, "doc.counts.b must be an integer"},
		{`{"summary":"s","findings":[` + finding + `],"counts":{"a":-1}}`, "doc.counts.a must be at least 0"},
		{`{"summary":"s","findings":[` + finding + `],"score":10.5}`, "doc.score must be at most 10"},
		{`{"summary":"s","findings":[` + finding + `],"score":"9"}`, "doc.score must be a number"},
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(c.doc), &v))
		err := s.Validate(v, "doc")
		if c.want == "" {
			assert.NoError(t, err, c.doc)
			continue
		}
		require.Error(t, err, c.doc)
		assert.Equal(t, c.want, err.Error(), c.doc)
		_, ok := schemas.AsViolation(err)
		assert.True(t, ok, c.doc)
	}
}

// A schema built in Go (a map) compiles the same as its JSON text, and a
// schema the library refuses is an error, not a validator that passes all.
func TestCompile(t *testing.T) {
	s := schemas.MustCompile(map[string]any{"type": "string", "enum": []string{"a"}})
	assert.NoError(t, s.Validate("a", "v"))
	assert.EqualError(t, s.Validate("b", "v"), "v must be one of a")
	_, err := schemas.Compile([]byte(`{"type": 3}`))
	assert.Error(t, err)
	_, err = schemas.Compile([]byte(`{"$ref": "#/nowhere"}`))
	assert.Error(t, err)
}
