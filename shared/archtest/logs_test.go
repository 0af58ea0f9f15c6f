package archtest_test

import (
	"fmt"
	"go/ast"
	"go/types"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// logRoots are the trees whose code runs in a function: every line they log
// must carry the invocation's ids (docs/operations.md, "Running it in production").
var logRoots = []string{"shared/...", "functions/...", "statemachines/..."}

// contextFree are the log calls allowed without a context, by
// "<file relative to the module>:<enclosing function>". Only where no
// context exists: a cold start that failed before the runtime gave the
// function an invocation.
var contextFree = map[string]string{
	"shared/platform/lambdafn/lambdafn.go:Main":           "cold start: the AWS configuration or the wiring failed before any invocation",
	"shared/platform/lambdafn/lambdafn.go:LogConfigError": "cold start: the configuration is wrong, before any invocation",
}

// pendingPackages are packages another change converts (issue 15, item 7);
// an entry goes when that change lands.
var pendingPackages = map[string]string{}

// contextFreeLogCall names the call if it is one that logs without a
// context: the package-level slog.Debug/Info/Warn/Error, the *slog.Logger
// methods of the same names (their lines get no context, so logctx cannot
// add the request, team and work ids), and the standard log package's
// Print*, Fatal* and Panic*. slog's Log and LogAttrs take a context, as
// the *Context variants do, and pass.
func contextFreeLogCall(info *types.Info, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	name := fn.Name()
	switch fn.Pkg().Path() {
	case "log/slog":
		switch name {
		case "Debug", "Info", "Warn", "Error":
		default:
			return ""
		}
		recv := fn.Signature().Recv()
		if recv == nil {
			return "slog." + name
		}
		if ptr, ok := recv.Type().(*types.Pointer); ok {
			if named, ok := ptr.Elem().(*types.Named); ok && named.Obj().Name() == "Logger" {
				return "(*slog.Logger)." + name
			}
		}
	case "log":
		if strings.HasPrefix(name, "Print") || strings.HasPrefix(name, "Fatal") || strings.HasPrefix(name, "Panic") {
			return "log." + name
		}
	}
	return ""
}

// TestEveryLogLineHasAContext fails when code that runs in a function logs
// without a context: such a line carries neither the Lambda request id nor
// the team and task, session or conversation id (shared/platform/logctx adds them
// from the context), so it cannot be tied to its invocation.
func TestEveryLogLineHasAContext(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	root := moduleRoot(t)
	patterns := make([]string, len(logRoots))
	for i, r := range logRoots {
		patterns[i] = "./" + r
	}
	// Syntax and types of the packages themselves only; their
	// dependencies come from export data. Test files are not loaded.
	cfg := &packages.Config{Dir: root, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, patterns...)
	require.NoError(t, err)
	require.NotEmpty(t, pkgs)

	used := map[string]bool{}
	var found []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("load %s: %v", p.PkgPath, e)
		}
		rel := strings.TrimPrefix(p.PkgPath, module)
		if _, ok := pendingPackages[rel]; ok {
			used["pkg:"+rel] = true
			continue
		}
		for _, f := range p.Syntax {
			file, err := filepath.Rel(root, p.Fset.File(f.Pos()).Name())
			require.NoError(t, err)
			file = filepath.ToSlash(file)
			for _, decl := range f.Decls {
				encl := declName(decl)
				ast.Inspect(decl, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					what := contextFreeLogCall(p.TypesInfo, call)
					if what == "" {
						return true
					}
					where := file + ":" + encl
					if _, ok := contextFree[where]; ok {
						used[where] = true
						return true
					}
					pos := p.Fset.Position(call.Pos())
					found = append(found, fmt.Sprintf("%s:%d (%s) calls %s", file, pos.Line, encl, what))
					return true
				})
			}
		}
	}
	sort.Strings(found)
	assert.Empty(t, found, "these log without a context, so their lines carry no request, team or work id; "+
		"use the *Context variant with the caller's ctx:\n%s", strings.Join(found, "\n"))
	for where := range contextFree {
		assert.True(t, used[where], "%s is allowed to log without a context but no longer does: drop it from contextFree", where)
	}
	for rel := range pendingPackages {
		assert.True(t, used["pkg:"+rel], "pending package %s no longer exists: drop it", rel)
	}
}

// declName is the function a declaration declares ("Type.Method" for a
// method), or "" for other declarations.
func declName(d ast.Decl) string {
	fd, ok := d.(*ast.FuncDecl)
	if !ok {
		return ""
	}
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	gomod := strings.TrimSpace(string(out))
	require.NotEmpty(t, gomod)
	require.NotEqual(t, "/dev/null", gomod)
	return filepath.Dir(gomod)
}
