// Package grants finds the AWS actions each Lambda function's code calls,
// so a test can hold the manifest's grants (shared/platform/manifest, which the
// stack turns into the functions' IAM policies) to exactly those: no grant
// the code does not use, no call the role would refuse.
//
// It reads the code, it does not run it: every functions/<name> main
// package is loaded and built into SSA form (golang.org/x/tools), the
// functions reachable from its main and init are found (reach.go), and the
// AWS SDK for Go v2 client methods among them are the operations it calls.
// The standard library and the SDK are read from the compiler's export
// data, without their bodies: a function or an interface value handed to
// one of their functions counts as called (reach.go, external).
// Each operation maps to the IAM action that authorizes it (actions.go).
// One program is built for all the functions at once: the packages they
// share are built once, and each function's reachability is then a walk of
// a few milliseconds.
package grants

import (
	"fmt"
	"go/constant"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// sdkService is the import path prefix of the SDK's service clients.
const sdkService = "github.com/aws/aws-sdk-go-v2/service/"

// Calls is what one function's code calls.
type Calls struct {
	// Operations are the SDK client methods reachable from its main, as
	// "<service>.<Operation>" ("dynamodb.GetItem"), and the AWS calls it
	// makes without the SDK (httpCalls: "xray.PutSpans").
	Operations []string
	// Actions are the IAM actions those operations need ("dynamodb:GetItem").
	Actions []string
	// Indexes are the table's indexes it queries (see stringConstants).
	Indexes []string
	// Via explains each operation: the chain of calls that reaches it
	// from main, innermost first, the SDK's own frames left out.
	Via map[string][]string
}

// Program is the SSA form of a set of main packages.
type Program struct {
	prog  *ssa.Program
	mains map[string]*ssa.Package // by import path
}

// Load builds the program of the main packages patterns match, from dir.
func Load(dir string, patterns ...string) (*Program, error) {
	roots, err := modulePackages(dir, patterns)
	if err != nil {
		return nil, err
	}
	// The packages from source but the standard library's and the AWS
	// SDK's, which come from the compiler's export data: their functions
	// are declared without bodies. What is read of the SDK is what the
	// code calls (the client methods are the operations); no SDK body
	// calls an operation on the code's behalf (no paginator or waiter is
	// used), and a library that calls back into the code (a2a-go,
	// aws-lambda-go) keeps its bodies. TestGrantsAreExactlyTheCalls would
	// show a call lost, both ways. Type-checking the SDK and the standard
	// library from source had been most of this package's test time.
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
		packages.NeedTypesInfo | packages.NeedImports, Dir: dir}
	pkgs, err := packages.Load(cfg, roots...)
	if err != nil {
		return nil, err
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("load %v: %s", patterns, strings.Join(errs, "; "))
	}
	prog, ssaPkgs := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	p := &Program{prog: prog, mains: map[string]*ssa.Package{}}
	for _, sp := range ssaPkgs {
		if sp != nil && sp.Pkg.Name() == "main" {
			p.mains[sp.Pkg.Path()] = sp
		}
	}
	return p, nil
}

// fromExportData says whether a module's packages are read from export
// data: the AWS SDK and smithy-go, which no other dependency imports
// back (so the two kinds never mix in one package's imports) and none of
// whose bodies call an operation for the code that calls them.
func fromExportData(module string) bool {
	return module == "github.com/aws/smithy-go" || module == "github.com/aws/aws-sdk-go-v2" || strings.HasPrefix(module, "github.com/aws/aws-sdk-go-v2/")
}

// modulePackages lists the packages outside the standard library that
// patterns match or import, directly or not, but the AWS SDK's.
func modulePackages(dir string, patterns []string) ([]string, error) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedModule | packages.NeedImports | packages.NeedDeps, Dir: dir}, patterns...)
	if err != nil {
		return nil, err
	}
	var out []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Module != nil && !fromExportData(p.Module.Path) {
			out = append(out, p.PkgPath)
		}
	})
	sort.Strings(out)
	return out, nil
}

// Mains returns the import paths of the main packages, sorted.
func (p *Program) Mains() []string {
	out := make([]string, 0, len(p.mains))
	for path := range p.mains {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// Calls returns what the main package at path calls; indexes are the names
// of the table's indexes.
func (p *Program) Calls(path string, indexes []string) (Calls, error) {
	main, ok := p.mains[path]
	if !ok {
		return Calls{}, fmt.Errorf("no main package %s", path)
	}
	reached := reachable(p.prog, []*ssa.Function{main.Func("init"), main.Func("main")})
	ops, txItems, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
	c := Calls{Via: map[string][]string{}}
	for f := range reached {
		if op, ok := operation(f); ok && !sdkInternal[op] {
			ops[op] = true
			c.Via[op] = chain(reached, f)
		}
		if op, ok := httpCalls[f.RelString(nil)]; ok {
			ops[op] = true
			c.Via[op] = chain(reached, f)
		}
		pkg := pkgOf(f)
		if pkg == nil || strings.HasPrefix(pkg.Path(), "github.com/aws/") {
			continue
		}
		for _, field := range transactionItems(f) {
			txItems[field] = true
		}
		if importsDynamoDB(pkg) {
			for _, s := range stringConstants(f) {
				names[s] = true
			}
		}
	}
	actions := map[string]bool{}
	for op := range ops {
		c.Operations = append(c.Operations, op)
		acts, err := iamActions(op, txItems)
		if err != nil {
			return Calls{}, fmt.Errorf("%s: %w", path, err)
		}
		for _, a := range acts {
			actions[a] = true
		}
	}
	for a := range actions {
		c.Actions = append(c.Actions, a)
	}
	if ops["dynamodb.Query"] {
		for _, ix := range indexes {
			if names[ix] {
				c.Indexes = append(c.Indexes, ix)
			}
		}
	}
	sort.Strings(c.Operations)
	sort.Strings(c.Actions)
	sort.Strings(c.Indexes)
	return c, nil
}

// chain is the calls that reach f, innermost first, without the SDK's
// frames.
func chain(from map[*ssa.Function]*ssa.Function, f *ssa.Function) []string {
	var out []string
	for g := from[f]; g != nil; g = from[g] {
		if pkg := pkgOf(g); pkg == nil || !strings.HasPrefix(pkg.Path(), "github.com/aws/") {
			out = append(out, g.RelString(nil))
		}
	}
	return out
}

// pkgOf is the package f's code is in (a generic function's instance is
// in its origin's).
func pkgOf(f *ssa.Function) *types.Package {
	if o := f.Origin(); o != nil {
		f = o
	}
	if f.Pkg == nil {
		return nil
	}
	return f.Pkg.Pkg
}

// operation names f "<service>.<Operation>" when it is an exported method
// of an SDK service client (*<service>.Client).
func operation(f *ssa.Function) (string, bool) {
	recv, obj := f.Signature.Recv(), f.Object()
	if recv == nil || obj == nil || !obj.Exported() {
		return "", false
	}
	ptr, ok := recv.Type().(*types.Pointer)
	if !ok {
		return "", false
	}
	named, ok := types.Unalias(ptr.Elem()).(*types.Named)
	if !ok || named.Obj().Name() != "Client" || named.Obj().Pkg() == nil {
		return "", false
	}
	svc, ok := strings.CutPrefix(named.Obj().Pkg().Path(), sdkService)
	if !ok || strings.Contains(svc, "/") {
		return "", false
	}
	// Options returns the client's configuration: no call.
	if f.Name() == "Options" {
		return "", false
	}
	return svc + "." + f.Name(), true
}

// transactionItems returns the kinds of write ("Put", "Update", "Delete",
// "ConditionCheck") f stores into a types.TransactWriteItem: each is
// authorized as its own action inside TransactWriteItems.
func transactionItems(f *ssa.Function) []string {
	var out []string
	for _, b := range f.Blocks {
		for _, instr := range b.Instrs {
			st, ok := instr.(*ssa.Store)
			if !ok {
				continue
			}
			fa, ok := st.Addr.(*ssa.FieldAddr)
			if !ok {
				continue
			}
			ptr, ok := fa.X.Type().Underlying().(*types.Pointer)
			if !ok {
				continue
			}
			named, ok := types.Unalias(ptr.Elem()).(*types.Named)
			if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != sdkService+"dynamodb/types" || named.Obj().Name() != "TransactWriteItem" {
				continue
			}
			out = append(out, named.Underlying().(*types.Struct).Field(fa.Field).Name())
		}
	}
	return out
}

// importsDynamoDB reports whether pkg is a DynamoDB adapter (imports the
// client): only an adapter can name an index to DynamoDB.
func importsDynamoDB(pkg *types.Package) bool {
	for _, imp := range pkg.Imports() {
		if imp.Path() == sdkService+"dynamodb" {
			return true
		}
	}
	return false
}

// stringConstants returns the string constants f uses. The adapter names
// an index only by a constant (shared/store/dynamo/keys.go), so the constants of
// its reachable functions that equal an index name are the indexes the
// function queries.
func stringConstants(f *ssa.Function) []string {
	var out []string
	var space [32]*ssa.Value
	for _, b := range f.Blocks {
		for _, instr := range b.Instrs {
			for _, op := range instr.Operands(space[:0]) {
				if c, ok := (*op).(*ssa.Const); ok && c.Value != nil && c.Value.Kind() == constant.String {
					out = append(out, constant.StringVal(c.Value))
				}
			}
		}
	}
	return out
}
