package stack_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CloudFormation's quotas a template: resources and parameters.
const (
	maxStackResources  = 500
	maxStackParameters = 200
)

// Each stage's application stack and its nested monitoring stack stay
// under CloudFormation's quotas: a deploy past them fails. The monitoring
// stack's parameters are what it reads of the application's stack (its
// references, passed by the CDK), so they grow with the functions, queues
// and machines it watches. (Prod with CORS origins, the largest template:
// TestTheStreamingFunctionsLearnTheStagesOrigins.)
func TestTheStacksStayUnderCloudFormationsQuotas(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		// GIVEN the stage's two templates
		_, monitoring, app := synthMonitoring(t, env)
		// THEN each holds at most the quota of resources, and the nested
		// one takes at most the quota of parameters
		n, nested := len(app["Resources"].(map[string]any)), len(monitoring["Resources"].(map[string]any))
		params := len(monitoring["Parameters"].(map[string]any))
		t.Logf("%s: %d resources of %d, monitoring %d resources and %d parameters of %d", env, n, maxStackResources, nested, params, maxStackParameters)
		assert.LessOrEqual(t, n, maxStackResources, "%s: CloudFormation's quota of resources a stack", env)
		assert.LessOrEqual(t, nested, maxStackResources, "%s: the same quota, nested", env)
		assert.LessOrEqual(t, params, maxStackParameters, "%s: CloudFormation's quota of parameters a stack", env)
	}
}
