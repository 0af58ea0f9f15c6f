package archtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/archtest"
)

// module prefixes the import path of every package of the module.
const module = archtest.Module + "/"

// ports must not even link net/http: they are types and interfaces, and an
// adapter speaking HTTP belongs beside them, not in them.
var ports = []string{"shared/models", "shared/team/prompts"}

// regenerate is what a failure over a generated file asks for.
const regenerate = "run `make docs` and review the diff"

// listed is go list's report of every package under shared/, read once
// for all the tests (a few seconds each time).
var listed = sync.OnceValues(func() ([]archtest.Package, error) {
	return archtest.List(archtest.Module + "/shared/...")
})

// shared returns every package under shared/ by path relative to the
// module, and their paths in order.
func shared(t *testing.T) (map[string]archtest.Package, []string) {
	t.Helper()
	pkgs := sharedList(t)
	byRel := map[string]archtest.Package{}
	var names []string
	for _, p := range pkgs {
		byRel[p.Rel()] = p
		names = append(names, p.Rel())
	}
	return byRel, names
}

func sharedList(t *testing.T) []archtest.Package {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	pkgs, err := listed()
	require.NoError(t, err)
	return pkgs
}

func linksAWS(p archtest.Package) bool { return len(archtest.AWSServices(p)) > 0 }

// via names p's direct imports through which it links the SDK, so a
// failure points at the import to remove.
func via(pkgs map[string]archtest.Package, p archtest.Package) []string {
	var out []string
	for _, i := range p.Imports {
		dep, ours := pkgs[archtest.Rel(i)]
		if strings.HasPrefix(i, archtest.AWSService) || (ours && linksAWS(dep)) {
			out = append(out, archtest.Rel(i))
		}
	}
	return out
}

// No domain package links an AWS service client: only the packages at
// archtest.AWSClientLocations do.
func TestDomainPackagesLinkNoAWSService(t *testing.T) {
	pkgs, names := shared(t)
	var allowed []string
	for _, l := range archtest.AWSClientLocations {
		allowed = append(allowed, l.Path)
	}
	for _, name := range names {
		if _, ok := archtest.AWSClientLocation(name); ok {
			continue
		}
		if services := archtest.AWSServices(pkgs[name]); len(services) > 0 {
			t.Errorf("domain package %s links AWS service clients %v through %v; move the code using them to an adapter "+
				"at one of archtest.AWSClientLocations (%s), or add a location there with the reason",
				name, services, via(pkgs, pkgs[name]), strings.Join(allowed, ", "))
		}
	}
}

// A location no package links a client at is an allowance nothing uses:
// it goes, so the rule stays as narrow as the code.
func TestEveryAWSClientLocationIsUsed(t *testing.T) {
	pkgs, names := shared(t)
	for _, l := range archtest.AWSClientLocations {
		used := false
		for _, name := range names {
			used = used || (l.Holds(name) && linksAWS(pkgs[name]))
		}
		assert.True(t, used, "no package at %s links an AWS service client: drop it from archtest.AWSClientLocations", l.Path)
	}
}

// The list of the packages that link AWS clients is generated from the
// rule: a package that starts linking one shows in its diff.
func TestAWSClientListIsCurrent(t *testing.T) {
	want := archtest.AWSClients(sharedList(t))
	got, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(archtest.AWSClientsFile)))
	require.NoError(t, err, regenerate)
	assert.Equal(t, want, string(got), "%s is out of date: %s", archtest.AWSClientsFile, regenerate)
}

func TestPortsLinkNoHTTP(t *testing.T) {
	pkgs, _ := shared(t)
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
