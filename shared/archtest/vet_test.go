package archtest_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// make test vets every package: the patterns of localstack/test.sh's vet
// (no_cdk) and, once the unit tests have compiled them, the two CDK
// packages (its vet-cdk step). A package outside both (a new top-level
// directory) would be vetted by neither.
func TestMakeTestVetsEveryPackage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	script, err := os.ReadFile("../../localstack/test.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^no_cdk=\(([^)]*)\)`).FindSubmatch(script)
	require.NotNil(t, m, "localstack/test.sh names its vet's packages in no_cdk=(…)")
	patterns := strings.Fields(string(m[1]))
	require.Regexp(t, `(?m)^\s*step vet-cdk go vet -tags integration,e2e,soak,load,faults \./infra \./infra/stack( &)?$`, string(script),
		"localstack/test.sh vets the two CDK packages in its vet-cdk step")
	tags := []string{"-tags", "integration,e2e,soak,load,faults"}
	listed := func(args ...string) []string {
		cmd := exec.Command("go", append(append([]string{"list"}, tags...), args...)...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
	vetted := append(listed(patterns...), module+"infra", module+"infra/stack")
	for _, p := range listed("./...") {
		assert.True(t, slices.Contains(vetted, p), "%s is vetted by neither make test's vet nor its vet-cdk step", p)
	}
}
