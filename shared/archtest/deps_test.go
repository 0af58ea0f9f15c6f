package archtest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	module = "github.com/conclave-ai/conclave/"
	// awsService is the prefix of every AWS service client of the SDK.
	awsService = "github.com/aws/aws-sdk-go-v2/service/"
)

// adapters are the packages under shared/ allowed to link AWS service
// clients. Every other package there is domain. Keep the list explicit: a
// new adapter is a decision to write down here, not a pattern to match.
var adapters = map[string]bool{
	"shared/store/dynamo":                  true, // the DynamoDB store's core (keys, transactions, paging, generic counters)
	"shared/store/activitystore":           true, // the team activity log
	"shared/store/agentstore":              true, // agents
	"shared/store/budgetstore":             true, // team budgets, their months and usage counters
	"shared/store/clipstore":               true, // the tool packs' clipboard
	"shared/store/approvalstore":           true, // approvals and policies
	"shared/store/consultationstore":       true, // consultations
	"shared/store/conversationstore":       true, // conversations, messages, handoffs, feedback
	"shared/store/decisionstore":           true, // routing decisions
	"shared/store/dynamotest":              true, // the DynamoDB adapters' test fakes
	"shared/store/expertgatestore":         true, // the expert gate's vectors, loads and ratings
	"shared/store/messagestore":            true, // agent messages and inboxes
	"shared/store/memorystore":             true, // memories and memory contexts
	"shared/store/reportstore":             true, // reports
	"shared/store/resultstore":             true, // results posted into conversations
	"shared/store/sessionstore":            true, // collaboration sessions
	"shared/store/planstore":               true, // compound plans
	"shared/store/mcppackstore":            true, // the teams' MCP packs
	"shared/store/pushstore":               true, // A2A push-notification configs
	"shared/tools/secretstore":             true, // Secrets Manager: the MCP packs' credentials
	"shared/store/taskstore":               true, // tasks and task slots
	"shared/store/teamstore":               true, // teams and API keys
	"shared/aws/eventbus":                  true, // the EventBridge bus
	"shared/aws/executions":                true, // the Step Functions runner of task workflows
	"shared/models/bedrock":                true, // the Bedrock Converse model adapter
	"shared/routing/expertgate/gateclient": true, // the expert gate's Lambda Invoke client
	"shared/wire":                          true, // the registry of every function's builder (edge and tests)
	"shared/wire/providers":                true, // builds the model adapters from the environment
	"shared/platform/lambdafn":             true, // the functions' bootstrap: loads the AWS configuration
	"shared/aws/queues":                    true, // the consumers' dead-letter sender (SQS)
}

// ports must not even link net/http: they are types and interfaces, and an
// adapter speaking HTTP belongs beside them, not in them.
var ports = []string{"shared/models", "shared/team/prompts"}

// pkg is what go list reports of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// list returns every package under shared/ by path relative to the module.
// Deps is the transitive closure of a package's imports (what go list -deps
// prints for it), without test files: tests may use what they like.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"shared/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

func links(p pkg, prefix string) bool {
	for _, d := range p.Deps {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	return false
}

// via names p's direct imports through which it links the SDK, so a
// failure points at the import to remove.
func via(pkgs map[string]pkg, p pkg) []string {
	var out []string
	for _, i := range p.Imports {
		dep, ours := pkgs[strings.TrimPrefix(i, module)]
		if strings.HasPrefix(i, awsService) || (ours && links(dep, awsService)) {
			out = append(out, strings.TrimPrefix(i, module))
		}
	}
	return out
}

func TestDomainPackagesLinkNoAWSService(t *testing.T) {
	pkgs := list(t)
	for a := range adapters {
		require.Contains(t, pkgs, a, "an adapter listed here no longer exists; update the list")
	}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		// shared/wire/<name>fn are the functions' wiring: each builds the
		// adapters its function is granted (shared/wire checks which).
		if adapters[name] || strings.HasPrefix(name, "shared/wire/") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var services []string
			for _, d := range pkgs[name].Deps {
				if strings.HasPrefix(d, awsService) {
					services = append(services, strings.TrimPrefix(d, awsService))
				}
			}
			if len(services) > 0 {
				t.Errorf("domain package %s links AWS service clients %v through %v; move the code using them to an adapter package",
					name, services, via(pkgs, pkgs[name]))
			}
		})
	}
}

func TestPortsLinkNoHTTP(t *testing.T) {
	pkgs := list(t)
	for _, name := range ports {
		p, ok := pkgs[name]
		require.True(t, ok, name)
		for _, d := range p.Deps {
			if d == "net/http" {
				t.Errorf("port %s links net/http", name)
			}
		}
	}
}
