package storetest_test

import (
	"go/types"
	"maps"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// The store contract polices a store method only if one of its cases calls
// it: a method no case calls may drift between the in-memory fakes and
// DynamoDB unnoticed. TestEveryStoreMethodIsUnderContract lists every store
// method and fails naming each one that no case calls and that no exemption
// explains.
//
// The store methods are the DynamoDB side's, the reference: every exported
// method declared on the Store type of a package under shared/store (each
// adapter's port methods, and the core's: shared/store/dynamo serves the
// streams, the idempotency records and references, the rate counter and
// the consumers' attempt counts itself), named
// "<package>.<method>". A method promoted from an embedded adapter
// (taskstore.Store embeds agentstore.Store) is its declaring package's.
//
// A case calls a method when storetest's code selects it: on a port (an
// interface such as tasks.Store) it calls that method of every adapter
// implementing the port; the calls services make for a case (f.tasks.Create
// stores through tasks.Store.CreateTask) do not count, since what a case
// asserts of them is the service's behaviour, not the store's.

// storePackages are the packages whose Store types are the DynamoDB side.
const storePackages = "./shared/store/..."

// fakePackages are the in-memory side: the fakes, their core and the
// composite Store.
const fakePackages = "./shared/testkit/memstore/..."

// exempt are the store methods no case calls, each with the reason. A
// reason says why the contract need not call it: not a port method of a
// domain, or what holds it to its behaviour instead.
var exempt = map[string]string{
	// The core's table machinery: the adapters build their reads and
	// transactions with it; no domain calls it, and every case that
	// stores anything runs it.
	"dynamo.GetItem":     "the core's item read, the adapters' machinery (not a domain port)",
	"dynamo.PutNew":      "the core's conditional put, the adapters' machinery (not a domain port)",
	"dynamo.PutNewKeyed": "the core's keyed put, the adapters' machinery behind every keyed create (keyedCreates, messageReplay)",
	"dynamo.QueryAll":    "the core's query loop, the adapters' machinery (not a domain port)",
	"dynamo.QueryPage":   "the core's paged query, the adapters' machinery (not a domain port)",
	"dynamo.Txn":         "the core's transaction builder, the adapters' machinery (not a domain port)",
	"dynamo.DueBefore":   "the core's sweeper-index read behind DueTasks, OverdueTasks, DueSessions, UnstartedSessions and DuePlans, which cases call",
	"dynamo.Ping":        "the table's health check at a cold start, not a store of any domain",
	"dynamo.QueryFill":   "the core's refilled page, the adapters' machinery behind ListWork and ListTasks by conversation, which cases call",
	"dynamo.BatchGet":    "the core's batch read, the adapters' machinery behind ListAgentConversations, which a case calls",
}

// fakeOnly are methods of the fakes that are no store method, with why the
// fake has them.
var fakeOnly = map[string]string{
	"pushfake.ListPushConfigsOfTeam": "a test helper: a2a/server's tests check that a refused push config stored none (no port lists a team's configs across tasks)",
	"memtable.Lock":                  "the table's lock, which every fake holds across a read or a write's checks and changes (the fakes' transaction)",
	"memtable.Unlock":                "the table's lock, which every fake holds across a read or a write's checks and changes (the fakes' transaction)",
}

// noCaseYet are store methods that still need a case, each with what
// holds it meanwhile: a new port's method may wait here for its case, and
// the test fails once one is called, so the list only shrinks.
var noCaseYet = map[string]string{}

// methods are declared methods by "<package>.<method>", each with the
// package declaring it.
type methods map[string]*types.Func

// declared adds the exported methods p's type name declares to into.
func declared(p *packages.Package, name string, into methods) {
	tn, ok := p.Types.Scope().Lookup(name).(*types.TypeName)
	if !ok {
		return
	}
	ms := types.NewMethodSet(types.NewPointer(tn.Type()))
	for i := range ms.Len() {
		fn := ms.At(i).Obj().(*types.Func)
		if fn.Exported() && fn.Pkg() == p.Types {
			into[p.Name+"."+fn.Name()] = fn
		}
	}
}

// called is the store methods storetest's code selects, by the rules in
// the comment above: a selection on a port counts for every store type
// implementing it, on a concrete type for the method it selects.
func called(contract *packages.Package, stores []*types.TypeName, store methods) map[string]bool {
	out := map[string]bool{}
	mark := func(fn *types.Func) {
		if fn.Pkg() == nil {
			return
		}
		k := fn.Pkg().Name() + "." + fn.Name()
		if store[k] == fn {
			out[k] = true
		}
	}
	for _, sel := range contract.TypesInfo.Selections {
		if sel.Kind() != types.MethodVal && sel.Kind() != types.MethodExpr {
			continue
		}
		fn := sel.Obj().(*types.Func)
		iface, ok := sel.Recv().Underlying().(*types.Interface)
		if !ok {
			mark(fn)
			continue
		}
		for _, st := range stores {
			ptr := types.NewPointer(st.Type())
			if !types.Implements(ptr, iface) {
				continue
			}
			if m := types.NewMethodSet(ptr).Lookup(fn.Pkg(), fn.Name()); m != nil {
				mark(m.Obj().(*types.Func))
			}
		}
	}
	return out
}

// load reads the contract (with the types of its syntax), the store
// packages and the fakes.
func load(t *testing.T) (contract *packages.Package, storePkgs, fakePkgs []*packages.Package) {
	t.Helper()
	cfg := &packages.Config{Dir: "../../..", Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax}
	pkgs, err := packages.Load(cfg, "./shared/testkit/storetest", storePackages, fakePackages)
	require.NoError(t, err)
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("load %s: %v", p.PkgPath, e)
		}
		switch {
		case strings.HasSuffix(p.PkgPath, "/shared/testkit/storetest"):
			contract = p
		case strings.Contains(p.PkgPath, "/shared/store/") && p.Name != "dynamotest":
			storePkgs = append(storePkgs, p)
		case strings.Contains(p.PkgPath, "/shared/testkit/memstore"):
			fakePkgs = append(fakePkgs, p)
		}
	}
	require.NotNil(t, contract)
	require.NotEmpty(t, storePkgs)
	require.NotEmpty(t, fakePkgs)
	return contract, storePkgs, fakePkgs
}

func TestEveryStoreMethodIsUnderContract(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	contract, storePkgs, fakePkgs := load(t)
	store := methods{}
	var stores []*types.TypeName
	for _, p := range storePkgs {
		declared(p, "Store", store)
		if tn, ok := p.Types.Scope().Lookup("Store").(*types.TypeName); ok {
			stores = append(stores, tn)
		}
	}
	calls := called(contract, stores, store)
	require.True(t, calls["taskstore.CreateTask"], "the contract's calls through tasks.Store reach taskstore: the analysis works")

	var missing []string
	for k := range store {
		_, ex := exempt[k]
		_, pending := noCaseYet[k]
		switch {
		case calls[k] && ex:
			t.Errorf("%s is exempt (%s) but a case calls it: drop the exemption", k, exempt[k])
		case calls[k] && pending:
			t.Errorf("%s has a case now: drop it from noCaseYet", k)
		case !calls[k] && !ex && !pending:
			missing = append(missing, k)
		}
	}
	for k := range exempt {
		assert.Contains(t, store, k, "exempt names %s, which is no store method", k)
	}
	for k := range noCaseYet {
		assert.Contains(t, store, k, "noCaseYet names %s, which is no store method", k)
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "no case of the store contract (shared/testkit/storetest) calls these store methods: "+
		"write one that asserts what the domain relies on, or exempt the method with the reason:\n%s", strings.Join(missing, "\n"))
	t.Logf("store methods: %d; called by the contract: %d; exempt: %d; without a case yet: %d", len(store), len(calls), len(exempt), len(noCaseYet))

	fakeMethodsAreStoreMethods(t, fakePkgs, store)
}

// fakeMethodsAreStoreMethods fails for a method of a fake that is no store
// method (by name) and not in fakeOnly: what the fakes offer beyond the
// ports is a decision written down, not drift. The fakes are the exported
// types of the in-memory packages with at least one store method (the
// Publisher and Clock beside them are not stores).
func fakeMethodsAreStoreMethods(t *testing.T, fakePkgs []*packages.Package, store methods) {
	t.Helper()
	names := map[string]bool{}
	for k := range store {
		names[k[strings.Index(k, ".")+1:]] = true
	}
	fake := methods{}
	for _, p := range fakePkgs {
		for _, name := range p.Types.Scope().Names() {
			own := methods{}
			declared(p, name, own)
			isFake := false
			for k := range own {
				isFake = isFake || names[k[strings.Index(k, ".")+1:]]
			}
			if isFake {
				maps.Copy(fake, own)
			}
		}
	}
	var extra []string
	for k := range fake {
		_, ok := fakeOnly[k]
		if !names[k[strings.Index(k, ".")+1:]] && !ok {
			extra = append(extra, k)
		}
	}
	for k := range fakeOnly {
		assert.Contains(t, fake, k, "fakeOnly names %s, which is no method of a fake", k)
	}
	sort.Strings(extra)
	assert.Empty(t, extra, "these methods of the fakes are no store method: say in fakeOnly why the fake has them:\n%s", strings.Join(extra, "\n"))
}
