package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A function's grants are known IAM actions listed once; it queries only
// indexes the table has, with Query granted; only a queue's consumer
// dead-letters.
func TestValidateGrants(t *testing.T) {
	ok := Function{Name: "f", Trigger: TriggerSQS, Queue: "activity", Grants: []Grant{GrantGetItem, GrantQuery, GrantDeadLetter}, Indexes: []string{"gsi1"}}
	assert.NoError(t, ok.validateGrants())
	for name, f := range map[string]Function{
		"unknown grant":         {Name: "f", Grants: []Grant{"dynamodb:Scan"}},
		"listed twice":          {Name: "f", Grants: []Grant{GrantGetItem, GrantGetItem}},
		"index without query":   {Name: "f", Grants: []Grant{GrantGetItem}, Indexes: []string{"gsi1"}},
		"unknown index":         {Name: "f", Grants: []Grant{GrantQuery}, Indexes: []string{"gsi9"}},
		"dead letter, no queue": {Name: "f", Trigger: TriggerHTTP, Grants: []Grant{GrantDeadLetter}},
	} {
		assert.Error(t, f.validateGrants(), name)
	}
}

// Actions are the grants and, for a function that invokes others, Lambda
// Invoke; Clients are the SDK clients that call them.
func TestActionsAndClients(t *testing.T) {
	f := Function{Grants: []Grant{GrantQuery, GrantBusPut, GrantGetItem}, Invokes: []string{"expert-gate"}}
	assert.Equal(t, []string{"dynamodb:GetItem", "dynamodb:Query", "events:PutEvents", "lambda:InvokeFunction"}, f.Actions())
	assert.Equal(t, []string{"dynamodb", "eventbridge", "lambda"}, f.Clients())
}

// Every function is granted the span export (TracingGrants) once, after
// its own grants; no SDK client calls it, so it adds none.
func TestEveryFunctionMayExportItsSpans(t *testing.T) {
	for _, f := range Functions {
		assert.Equal(t, GrantPutSpans, f.Grants[len(f.Grants)-1], f.Name)
		assert.NoError(t, f.validateGrants(), f.Name)
		assert.NotContains(t, f.Clients(), "", f.Name)
	}
	f := Function{Grants: []Grant{GrantGetItem, GrantPutSpans}}
	assert.Equal(t, []string{"dynamodb:GetItem", "xray:PutSpans"}, f.Actions())
	assert.Equal(t, []string{"dynamodb"}, f.Clients())
}
