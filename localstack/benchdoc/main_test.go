package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpliceReplacesOnlyTheSection(t *testing.T) {
	doc := "# M\n\nintro\n<!-- generated: gate -->\nold figures\nmore\n<!-- /generated: gate -->\nafter\n"
	out, err := Splice([]byte(doc), "gate", []byte("| a | b |\n|---|---|\n\n"))
	require.NoError(t, err)
	assert.Equal(t, "# M\n\nintro\n<!-- generated: gate -->\n| a | b |\n|---|---|\n<!-- /generated: gate -->\nafter\n", string(out))
	again, err := Splice(out, "gate", []byte("| a | b |\n|---|---|\n"))
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again), "writing the same figures twice changes nothing")

	for _, bad := range []string{
		"no section\n",
		"<!-- generated: gate -->\nno end\n",
		"<!-- generated: gate -->\n<!-- /generated: gate -->\n<!-- generated: gate -->\n<!-- /generated: gate -->\n",
	} {
		_, err := Splice([]byte(bad), "gate", []byte("x"))
		assert.Error(t, err, bad)
	}
}

// Every section a command writes is in the document once, so `make bench`
// and its parts can write their figures.
func TestTheMeasurementsDocumentHasEveryGeneratedSection(t *testing.T) {
	doc, err := os.ReadFile("../../docs/measurements.md")
	require.NoError(t, err)
	// mutation: localstack/mutation.sh (make mutation); stream-bench: make
	// bench-stream; routing-clinc150: make bench-routing, after routing;
	// routing-clinc150-api: make bench-routing-api; trace-bench: make
	// bench-trace.
	for _, s := range []string{"gate", "routing", "routing-clinc150", "routing-clinc150-api", "go-bench", "e2e-bench", "trace-bench", "stream-bench", "load", "mutation"} {
		_, err := Splice(doc, s, nil)
		assert.NoError(t, err, s)
	}
	names := regexp.MustCompile(`<!-- generated: ([a-z0-9-]+) -->`).FindAllStringSubmatch(string(doc), -1)
	assert.Len(t, names, 10, "no section nobody writes")
}
