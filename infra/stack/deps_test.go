package stack_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCDKAppLinksNoRuntime keeps the CDK app to the manifest, the settings
// contract and the state machine files: the runtime (shared/wire) and the
// AWS SDK service clients belong to the functions, and linking them here
// would slow every synth and let the stack and the runtime drift apart
// through shared code instead of the contract.
//
// It checks the CDK app (infra, what cdk.json runs) and this package, not
// ./infra/...: infra/admin is an operator CLI that invokes the admin
// function through the Lambda client on purpose.
func TestCDKAppLinksNoRuntime(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	// GIVEN the packages of the CDK app
	pkgs := []string{"github.com/conclave-ai/conclave/infra", "github.com/conclave-ai/conclave/infra/stack"}
	// WHEN the go command lists everything they link
	out, err := exec.Command(goTool, append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/aws/aws-cdk-go/awscdk/v2", "the listing is the CDK app's")
	// THEN neither the runtime nor an AWS service client is among them,
	// nor the bindings of services the stack never deploys (targets.go:
	// awseventstargets and awscloudwatchactions link ECS, RDS, AppSync
	// and forty more, a quarter of the bindings' cold compile)
	for _, dep := range deps {
		assert.NotEqual(t, "github.com/conclave-ai/conclave/shared/wire", dep)
		assert.False(t, strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/"), "the CDK app links %s", dep)
		for _, unused := range []string{"awseventstargets", "awscloudwatchactions", "awsecs", "awsrds", "awsappsync"} {
			assert.NotEqual(t, "github.com/aws/aws-cdk-go/awscdk/v2/"+unused, dep, "the CDK app links the bindings of %s", unused)
		}
	}
}
