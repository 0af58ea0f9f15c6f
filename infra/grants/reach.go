package grants

import (
	"go/types"

	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/types/typeutil"
)

// reachable returns the functions a program may call from roots: rapid
// type analysis (Bacon and Sweeney; golang.org/x/tools/go/callgraph/rta)
// with two changes that make it fit for "which AWS operations does this
// function call":
//
//   - rta counts every exported method of every type converted to an
//     interface as reachable, since reflection could call it. The SDK
//     clients are converted to interfaces (the adapters' ports), so that
//     would call every operation of every linked client. Here a method
//     is reachable only through a call site: a static call, or an
//     interface call once a value of its type has been converted to an
//     interface. (What reflection does call, encoding/json's
//     MarshalJSON or fmt's String, makes no AWS call.)
//   - a function value converted to an interface counts as a dynamic call
//     of its signature: aws-lambda-go takes the handler as `any` and calls
//     it with reflect.Value.Call, which no call site shows.
//
// Like rta it is sound for everything but reflection (and unsafe code),
// and over-approximates: a dynamic call reaches every function of its
// signature whose address reachable code takes, an interface call every
// method of that name of every type reachable code put in an interface.
//
// It returns each reachable function with the function whose code first
// reached it (nil for a root), so a call can be explained by its chain.
func reachable(prog *ssa.Program, roots []*ssa.Function) map[*ssa.Function]*ssa.Function {
	r := &reach{prog: prog, from: map[*ssa.Function]*ssa.Function{},
		invoked: map[string][]invokeSite{}, byMethod: map[string][]types.Type{}, callers: map[*types.Func]*ssa.Function{}}
	for _, m := range []*typeutil.Map{&r.addrTaken, &r.dynSites, &r.concrete} {
		m.SetHasher(typeutil.MakeHasher())
	}
	for _, f := range roots {
		r.add(f)
	}
	for len(r.queue) > 0 {
		f := r.queue[len(r.queue)-1]
		r.queue = r.queue[:len(r.queue)-1]
		r.cur = f
		r.visit(f)
	}
	return r.from
}

type reach struct {
	prog  *ssa.Program
	queue []*ssa.Function
	// from: each reachable function -> the function that reached it.
	from map[*ssa.Function]*ssa.Function
	// cur is the function being visited; callers the function of the
	// first call of each interface method.
	cur     *ssa.Function
	callers map[*types.Func]*ssa.Function
	// addrTaken: signature -> []*ssa.Function used as values.
	addrTaken typeutil.Map
	// dynSites: signature -> true once a dynamic call of it is reachable.
	dynSites typeutil.Map
	// invoked: method name -> the interface calls of that name.
	invoked map[string][]invokeSite
	// concrete: the types converted to an interface -> true; byMethod
	// indexes them by the names of their methods.
	concrete typeutil.Map
	byMethod map[string][]types.Type
}

type invokeSite struct {
	iface *types.Interface
	m     *types.Func
}

func (r *reach) add(f *ssa.Function) {
	if _, seen := r.from[f]; f != nil && !seen {
		r.from[f] = r.cur
		r.queue = append(r.queue, f)
	}
}

// addFrom adds f as reached by caller.
func (r *reach) addFrom(caller, f *ssa.Function) {
	cur := r.cur
	r.cur = caller
	r.add(f)
	r.cur = cur
}

func (r *reach) visit(f *ssa.Function) {
	var space [32]*ssa.Value
	for _, b := range f.Blocks {
		for _, instr := range b.Instrs {
			rands := instr.Operands(space[:0])
			switch instr := instr.(type) {
			case ssa.CallInstruction:
				call := instr.Common()
				switch {
				case call.IsInvoke():
					r.invoke(call.Value.Type().Underlying().(*types.Interface), call.Method)
				case call.StaticCallee() != nil:
					r.add(call.StaticCallee())
					if call.StaticCallee().Blocks == nil {
						r.external(call.Args)
					}
				default:
					if _, builtin := call.Value.(*ssa.Builtin); !builtin {
						r.dynCall(call.Signature())
					}
				}
				rands = rands[1:] // the callee is not address-taken
			case *ssa.MakeInterface:
				// A nil constant is the compile-time assertion
				// var _ I = (*T)(nil): no value whose methods run.
				if c, ok := instr.X.(*ssa.Const); !ok || !c.IsNil() {
					r.convert(instr.X.Type())
				}
			}
			for _, op := range rands {
				if g, ok := (*op).(*ssa.Function); ok {
					r.takeAddr(g)
				}
			}
		}
	}
}

// external handles the arguments of a call of a function read without its
// body (the standard library's and the AWS SDK's come from export data,
// calls.go): it may call any function it is given (sync.Once.Do, sort,
// a goroutine's start) and any method of a value it is given in an
// interface (a handler, a sort.Interface), so those are reached, a
// superset of what its body would have shown.
func (r *reach) external(args []ssa.Value) {
	for _, a := range args {
		switch a := a.(type) {
		case *ssa.Function:
			r.add(a)
		case *ssa.MakeClosure:
			r.add(a.Fn.(*ssa.Function))
		case *ssa.MakeInterface:
			mset := r.prog.MethodSets.MethodSet(a.X.Type())
			for i := range mset.Len() {
				r.add(r.prog.MethodValue(mset.At(i)))
			}
		}
	}
}

// takeAddr records g used as a value; it is reachable once a dynamic call
// of its signature is.
func (r *reach) takeAddr(g *ssa.Function) {
	fns, _ := r.addrTaken.At(g.Signature).([]*ssa.Function)
	for _, h := range fns {
		if h == g {
			return
		}
	}
	r.addrTaken.Set(g.Signature, append(fns, g))
	if r.dynSites.At(g.Signature) != nil {
		r.add(g)
	}
}

func (r *reach) dynCall(sig *types.Signature) {
	if r.dynSites.At(sig) != nil {
		return
	}
	r.dynSites.Set(sig, true)
	fns, _ := r.addrTaken.At(sig).([]*ssa.Function)
	for _, g := range fns {
		r.add(g)
	}
}

// invoke records a call of method m on interface iface and reaches m of
// every type converted to an interface that implements iface.
func (r *reach) invoke(iface *types.Interface, m *types.Func) {
	for _, s := range r.invoked[m.Name()] {
		if s.m == m && types.Identical(s.iface, iface) {
			return
		}
	}
	r.invoked[m.Name()] = append(r.invoked[m.Name()], invokeSite{iface, m})
	if _, ok := r.callers[m]; !ok {
		r.callers[m] = r.cur
	}
	for _, t := range r.byMethod[m.Name()] {
		if types.Implements(t, iface) {
			r.add(r.prog.LookupMethod(t, m.Pkg(), m.Name()))
		}
	}
}

// convert records a value of type t put in an interface: the interface
// calls made so far and from now on may reach its methods, and a function
// value may be called through reflection.
func (r *reach) convert(t types.Type) {
	t = types.Unalias(t)
	if sig, ok := t.Underlying().(*types.Signature); ok {
		r.dynCall(sig)
	}
	if _, isIface := t.Underlying().(*types.Interface); isIface || r.concrete.At(t) != nil {
		return
	}
	r.concrete.Set(t, true)
	mset := r.prog.MethodSets.MethodSet(t)
	for i := range mset.Len() {
		name := mset.At(i).Obj().Name()
		r.byMethod[name] = append(r.byMethod[name], t)
		for _, s := range r.invoked[name] {
			if types.Implements(t, s.iface) {
				r.addFrom(r.callers[s.m], r.prog.LookupMethod(t, s.m.Pkg(), name))
			}
		}
	}
}
