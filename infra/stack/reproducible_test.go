package stack_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSynthIsReproducible guards reviewable diffs: a change set must show
// what changed in the code, not the order a Go map happened to iterate in.
func TestSynthIsReproducible(t *testing.T) {
	// GIVEN one stage and one set of function binaries
	dist := mustAssetDir(t)
	render := func() string {
		// encoding/json sorts object keys; arrays keep the order the
		// constructs were given, which is what this test is about.
		raw, err := json.Marshal(synthTemplate(t, "dev", dist).ToJSON())
		require.NoError(t, err)
		return string(raw)
	}
	// WHEN it is synthesized several times in one process, each in a fresh
	// app. Go starts every range over a map at a random slot, but small maps
	// are biased: a loop over the three substitutions of the delegation
	// machine keeps its order about three times in four. Sixteen synths
	// (well under a second each) catch such a loop about 98 times in 100;
	// a loop over the seven queues, all but never.
	const synths = 16
	first := render()
	for i := 1; i < synths; i++ {
		// THEN every template is byte-identical to the first
		if next := render(); next != first {
			t.Fatalf("synth %d differs from the first:\n%s", i+1, firstDifference(first, next))
		}
	}

	// AND the longest list built from a map does not depend on luck: the
	// health probe lists the queues in name order.
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(first), &m))
	queueNames := map[string]string{} // logical id → queue name
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "AWS::SQS::Queue" {
			queueNames[id] = props(r)["QueueName"].(string)
		}
	}
	var listed []string
	for _, res := range statementResources(t, m, "conclave-dev-health", "sqs:GetQueueAttributes") {
		ref := res.(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		listed = append(listed, queueNames[ref])
	}
	assert.Len(t, listed, len(queueNames))
	assert.True(t, slices.IsSorted(listed), "health lists queues in name order: %v", listed)
}

// statementResources returns the Resource list of the statement granting
// action in the role policies of the function called functionName.
func statementResources(t *testing.T, m map[string]any, functionName, action string) []any {
	t.Helper()
	role := roleOf(t, m, functionName)
	for _, p := range resources(m, "AWS::IAM::Policy") {
		attached := slices.ContainsFunc(props(p)["Roles"].([]any), func(r any) bool {
			ref, ok := r.(map[string]any)
			return ok && ref["Ref"] == role
		})
		if !attached {
			continue
		}
		for _, s := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			s := s.(map[string]any)
			actions, ok := s["Action"].([]any)
			if !ok {
				actions = []any{s["Action"]}
			}
			if slices.Contains(actions, any(action)) {
				res, ok := s["Resource"].([]any)
				if !ok {
					res = []any{s["Resource"]}
				}
				return res
			}
		}
	}
	t.Fatalf("no statement grants %s to %s", action, functionName)
	return nil
}

// firstDifference shows where two renderings of a template part, with some
// context: the templates are too long for a full diff in a test log.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	window := func(s string) string {
		return s[max(0, i-300):min(len(s), i+300)]
	}
	return fmt.Sprintf("at byte %d\nfirst: …%s…\nlater: …%s…", i, window(a), window(b))
}
