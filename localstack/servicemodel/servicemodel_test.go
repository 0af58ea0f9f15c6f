package servicemodel_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/servicemodel"
)

// A small model with each kind of constraint the validator reads.
const model = `{
  "metadata": {"protocol": "rest-json", "signingName": "demo"},
  "operations": {"Put": {"name": "Put", "http": {"method": "POST", "requestUri": "/things/{id}"}, "input": {"shape": "PutRequest"}}},
  "shapes": {
    "PutRequest": {"type": "structure", "required": ["id", "items"], "members": {
      "id": {"shape": "Id", "location": "uri", "locationName": "id"},
      "items": {"shape": "Items"}, "tags": {"shape": "Tags"}, "count": {"shape": "Count"}, "choice": {"shape": "Choice"}, "doc": {"shape": "Doc"}}},
    "Id": {"type": "string", "min": 1, "max": 8, "pattern": "[a-z]+"},
    "Items": {"type": "list", "member": {"shape": "Kind"}, "min": 1},
    "Kind": {"type": "string", "enum": ["a", "b"]},
    "Tags": {"type": "map", "key": {"shape": "Id"}, "value": {"shape": "Kind"}, "max": 2},
    "Count": {"type": "integer", "min": 1, "max": 10},
    "Choice": {"type": "structure", "members": {"x": {"shape": "Kind"}, "y": {"shape": "Count"}}, "union": true},
    "Doc": {"type": "structure", "members": {}, "document": true}
  }
}`

func mustModel(t *testing.T) *servicemodel.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "service-2.json")
	require.NoError(t, os.WriteFile(path, []byte(model), 0o644))
	m, err := servicemodel.Load(path)
	require.NoError(t, err)
	return m
}

func TestValidateInput(t *testing.T) {
	m := mustModel(t)
	ok := servicemodel.Input{URI: map[string]string{"id": "abc"}, Body: []byte(`{"items": ["a"], "tags": {"k": "b"}, "count": 3, "choice": {"y": 2}, "doc": [1, {"any": true}]}`)}
	require.NoError(t, m.ValidateInput("Put", ok))

	for name, tc := range map[string]struct {
		uri, body, want string
	}{
		"uri member required":  {"", `{"items": ["a"]}`, "id: required"},
		"pattern is anchored":  {"ab1", `{"items": ["a"]}`, "id: pattern"},
		"body member required": {"abc", `{}`, "items: required"},
		"list type":            {"abc", `{"items": "a"}`, "items: type: must be an array"},
		"list length":          {"abc", `{"items": []}`, "items: length"},
		"enum":                 {"abc", `{"items": ["c"]}`, "items[0]: enum"},
		"map key pattern":      {"abc", `{"items": ["a"], "tags": {"K": "a"}}`, "tags{key}: pattern"},
		"map length":           {"abc", `{"items": ["a"], "tags": {"a": "a", "b": "a", "c": "a"}}`, "tags: length"},
		"integer type":         {"abc", `{"items": ["a"], "count": 1.5}`, "count: type: must be an integer"},
		"integer range":        {"abc", `{"items": ["a"], "count": 11}`, "count: range"},
		"union of two":         {"abc", `{"items": ["a"], "choice": {"x": "a", "y": 1}}`, "choice: union"},
		"union of none":        {"abc", `{"items": ["a"], "choice": {}}`, "choice: union"},
		"unknown member":       {"abc", `{"items": ["a"], "extra": 1}`, "extra: unknown-member"},
		"body not JSON":        {"abc", `{"items": [`, "type: body is not valid JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			err := m.ValidateInput("Put", servicemodel.Input{URI: map[string]string{"id": tc.uri}, Body: []byte(tc.body)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestFindNamesWhatIsMissing(t *testing.T) {
	_, err := servicemodel.Find(t.TempDir(), "bedrock-runtime")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make venv")
}
