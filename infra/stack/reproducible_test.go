package stack_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
)

// TestSynthIsReproducible guards reviewable diffs: a change set must show
// what changed in the code, not the order a Go map happened to iterate in.
func TestSynthIsReproducible(t *testing.T) {
	// GIVEN one stage and one set of function binaries
	dist := mustAssetDir(t)
	cfg, err := stack.Lookup("dev")
	require.NoError(t, err)
	render := func() string {
		// encoding/json sorts object keys; arrays keep the order the
		// constructs were given, which is what this test is about. Both
		// templates: the application's and its nested monitoring stack's.
		tpl, monitoring := synthStacks(t, cfg, dist)
		raw, err := json.Marshal([]any{tpl.ToJSON(), monitoring.ToJSON()})
		require.NoError(t, err)
		return string(raw)
	}
	// WHEN it is synthesized several times in one process, each in a fresh
	// app. Go starts every range over a map at a random slot, but small maps
	// are biased: a loop over the three substitutions of the delegation
	// machine keeps its order about three times in four. Six synths (about
	// a second of CPU each, the stack tests' largest share) catch such a
	// loop about 76 times in 100; TestStackWalksMapsSorted below catches it
	// in this package every time, and this test stays for what that one
	// cannot see (an order that comes from the CDK or another package).
	const synths = 6
	first := render()
	for i := 1; i < synths; i++ {
		// THEN every template is byte-identical to the first
		if next := render(); next != first {
			t.Fatalf("synth %d differs from the first:\n%s", i+1, firstDifference(first, next))
		}
	}
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

// TestStackWalksMapsSorted is the certain half of TestSynthIsReproducible:
// it type-checks this package and fails on any range statement over a map
// (or over an iterator, which may come from one). Every walk over a map goes
// through sortedKeys instead, so construct order, grant order and therefore
// the template never follow Go's map order. (With the recommended
// @aws-cdk/aws-iam:minimizePolicies flag the CDK sorts the resources of each
// policy statement itself, but not the statements, nor anything else.)
func TestStackWalksMapsSorted(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	// GIVEN the package's sources and the export data of what it imports
	out, err := exec.Command(goTool, "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".").Output()
	require.NoError(t, err)
	exports := map[string]string{}
	for _, line := range strings.Fields(string(out)) {
		if path, file, ok := strings.Cut(line, "="); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NotEmpty(t, files)
	// WHEN it is type-checked
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})}
	_, err = conf.Check("github.com/conclave-ai/conclave/infra/stack", fset, files, info)
	require.NoError(t, err)
	// THEN no range statement walks a map or an iterator
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			r, ok := n.(*ast.RangeStmt)
			if !ok {
				return true
			}
			switch info.TypeOf(r.X).Underlying().(type) {
			case *types.Map, *types.Signature:
				t.Errorf("%s: ranges over %s in map order; range over sortedKeys(…) so the template does not change between synths",
					fset.Position(r.Pos()), types.ExprString(r.X))
			}
			return true
		})
	}
}
