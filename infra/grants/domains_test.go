package grants_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// domains are the repository's domain packages, by the name a manifest
// entry's Domains gives them, and their path under shared/: the packages
// that hold a domain's types, rules and ports. Keep the set explicit, as
// shared/archtest keeps its adapters: a new domain is a decision to write
// down here and in the Domains of the functions that serve it.
var domains = map[string]string{
	"activity": "team/activity", "agents": "team/agents", "approvals": "work/approvals",
	"budget": "team/budget", "consultations": "work/consultations", "conversations": "chat/conversations",
	"discovery": "routing/discovery", "cascade": "routing/cascade", "expertgate": "routing/expertgate",
	"a2a": "a2a/server", "memory": "team/memory", "messaging": "team/messaging", "plans": "work/plans",
	"reports": "work/reports", "results": "work/results", "routing": "routing", "sessions": "work/sessions",
	"tasks": "work/tasks", "teams": "team/teams", "identity": "team/identity",
}

// domainNames is domains inverted: a path under shared/ to its name.
var domainNames = func() map[string]string {
	out := map[string]string{}
	for name, path := range domains {
		out[path] = name
	}
	return out
}()

// linkedDomains returns, per function name, the domain packages its main
// package links (go list -deps), sorted.
func linkedDomains(t *testing.T) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", "./functions/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	linked := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		name := strings.TrimPrefix(p.ImportPath, module+"functions/")
		ds := []string{}
		for _, d := range p.Deps {
			if n, ok := domainNames[strings.TrimPrefix(d, module+"shared/")]; ok {
				ds = append(ds, n)
			}
		}
		sort.Strings(ds)
		linked[name] = ds
	}
	return linked
}

// Each function links the domains its manifest entry serves and no other:
// a store, a handler or a service of another domain in its binary fails
// here, with the line its entry would need. A domain listed but not linked
// fails too, so the entries stay the map of who serves what.
func TestFunctionsLinkOnlyTheDomainsTheyServe(t *testing.T) {
	linked := linkedDomains(t)
	for _, f := range manifest.Functions {
		t.Run(f.Name, func(t *testing.T) {
			got, ok := linked[f.Name]
			require.True(t, ok, "no functions/%s", f.Name)
			listed := append([]string{}, slices.Sorted(slices.Values(f.Domains))...)
			for _, d := range listed {
				require.Contains(t, domains, d, "Domains of %s: %q is not a domain package", f.Name, d)
			}
			assert.Equal(t, listed, got, "functions/%s links other domains than its entry lists; if it serves them, its entry reads\n\t\tDomains: %s,",
				f.Name, goList(got))
		})
	}
}

// The authorizer resolves a key to its team, or a bearer token through
// the team's identity provider, and counts the team's requests (the
// counter is the core's): it serves the teams and identity domains alone.
func TestAuthorizerServesOnlyTeamsAndIdentity(t *testing.T) {
	f, ok := manifest.Lookup("authorizer")
	require.True(t, ok)
	assert.Equal(t, []string{"identity", "teams"}, f.Domains)
	assert.Equal(t, []string{"identity", "teams"}, linkedDomains(t)["authorizer"])
}

func goList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}
