package archtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/archtest"
)

// orderRule is the rule a failure of the wing order names.
const orderRule = "a wing imports only the wings before it, and a layer only the wings and layers ranked below it " +
	"(architecture decision 11; the order is archtest.Entries)"

// No package under shared/ imports a wing or layer ranked at or above its
// own (tests aside: a test may use what it likes).
func TestImportsFollowTheWingOrder(t *testing.T) {
	pkgs, names := shared(t)
	for _, name := range names {
		from, ok := archtest.EntryOf(name)
		if !ok {
			continue // TestSharedHoldsOnlyTheEntries names it
		}
		for _, imp := range pkgs[name].Imports {
			to, ok := archtest.EntryOf(archtest.Rel(imp))
			if ok && !archtest.MayImport(from, to) {
				t.Errorf("%s imports %s: %s (rank %d) may import %s; %s ranks %d. Rule: %s",
					name, archtest.Rel(imp), from.Name, from.Rank, allowed(from), to.Name, to.Rank, orderRule)
			}
		}
	}
}

// allowed says what a package of e may import, for a failure message.
func allowed(e archtest.Entry) string {
	below := archtest.Below(e)
	if len(below) == 0 {
		return "nothing of the module but " + e.Name
	}
	return "only " + e.Name + " and " + strings.Join(below, ", ")
}

// The test kit is for tests and the local cloud: a package under shared/
// imports it only from the kit itself (or archtest), and no function's
// binary links it or the architecture tests.
func TestNoFunctionLinksTheTestKit(t *testing.T) {
	pkgs, names := shared(t)
	for _, name := range names {
		if strings.HasPrefix(name, "shared/testkit") || strings.HasPrefix(name, "shared/archtest") {
			continue
		}
		for _, imp := range pkgs[name].Imports {
			if rel := archtest.Rel(imp); strings.HasPrefix(rel, "shared/testkit/") || rel == "shared/testkit" {
				t.Errorf("%s imports %s: only tests and the local cloud may use the test kit; move what it needs out of shared/testkit", name, rel)
			}
		}
	}
	mains, err := archtest.List(module + "functions/...")
	require.NoError(t, err)
	require.NotEmpty(t, mains)
	for _, m := range mains {
		for _, d := range m.Deps {
			if rel := archtest.Rel(d); strings.HasPrefix(rel, "shared/testkit") || strings.HasPrefix(rel, "shared/archtest") {
				t.Errorf("function %s links %s: a deployed binary carries no test code "+
					"(go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./%s shows through which import)", m.Rel(), rel, m.Rel())
			}
		}
	}
}

// shared/ holds the entries of the table and nothing else, at most
// archtest.MaxEntries of them, each a Go package with a doc comment: a
// new concept finds its wing, or its place in the table with a reason.
func TestSharedHoldsOnlyTheEntries(t *testing.T) {
	pkgs, _ := shared(t)
	dir, err := os.ReadDir(filepath.Join("..", "..", "shared"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(dir), archtest.MaxEntries, "shared/ has %d entries: a new concept belongs in a wing", len(dir))
	assert.LessOrEqual(t, len(archtest.Entries), archtest.MaxEntries)
	seen := map[string]bool{}
	for _, d := range dir {
		e, ok := archtest.EntryOf("shared/" + d.Name())
		if !ok || !d.IsDir() {
			t.Errorf("shared/%s is outside the table of wings and layers (archtest.Entries): no new package outside a wing; "+
				"put it in the wing its concept belongs to, or add it to the table with its rank and reason", d.Name())
			continue
		}
		seen[e.Name] = true
		p, ok := pkgs["shared/"+e.Name]
		if assert.True(t, ok, "shared/%s is no Go package: give it a doc.go whose doc comment says what the %s holds", e.Name, kind(e)) {
			assert.NotEmpty(t, p.Doc, "shared/%s has no package doc comment: say what the %s holds and what it may import", e.Name, kind(e))
		}
	}
	for _, e := range archtest.Entries {
		assert.True(t, seen[e.Name], "archtest.Entries names shared/%s, which does not exist: drop it", e.Name)
	}
}

func kind(e archtest.Entry) string {
	if e.Layer {
		return "layer"
	}
	return "wing"
}

// docs/architecture.md's map of shared/ is what archdoc writes from the
// packages' doc comments now.
func TestArchitectureMapIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(archtest.MapDoc)))
	require.NoError(t, err)
	got, err := archtest.Section(string(doc), archtest.MapSection)
	require.NoError(t, err, "%s: its map of shared/ is a generated section", archtest.MapDoc)
	want := strings.TrimRight(archtest.Map(sharedList(t)), "\n") + "\n"
	assert.Equal(t, want, got, "%s: the map of shared/ is out of date: %s", archtest.MapDoc, regenerate)
}

// The table reads in its order: ranks never fall, the layers come after
// every wing, and each entry says why it is where it is.
func TestEntriesAreInRankOrder(t *testing.T) {
	for i, e := range archtest.Entries {
		assert.NotEmpty(t, e.Why, e.Name)
		if i == 0 {
			continue
		}
		prev := archtest.Entries[i-1]
		assert.LessOrEqual(t, prev.Rank, e.Rank, "%s comes after %s in the table", e.Name, prev.Name)
		assert.False(t, prev.Layer && !e.Layer, "wing %s comes after layer %s: the layers span the wings, above them", e.Name, prev.Name)
	}
}
