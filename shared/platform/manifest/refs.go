package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// RefKind is the kind of resource a substitution names.
type RefKind string

// Reference kinds: "bus", "table", "function:<name>", "queue:<name>".
const (
	RefBus      RefKind = "bus"
	RefTable    RefKind = "table"
	RefFunction RefKind = "function"
	RefQueue    RefKind = "queue"
)

// Ref is a parsed substitution value.
type Ref struct {
	Kind RefKind
	Name string // the function or queue; empty for the bus and the table
}

// ParseRef reads a substitution value of StateMachine.Substitutions. The
// CDK app, the local cloud and Validate all read references through it.
func ParseRef(ref string) (Ref, error) {
	switch ref {
	case string(RefBus):
		return Ref{Kind: RefBus}, nil
	case string(RefTable):
		return Ref{Kind: RefTable}, nil
	}
	kind, name, ok := strings.Cut(ref, ":")
	if ok && name != "" && (RefKind(kind) == RefFunction || RefKind(kind) == RefQueue) {
		return Ref{Kind: RefKind(kind), Name: name}, nil
	}
	return Ref{}, fmt.Errorf("bad reference %q", ref)
}

// SortedSubstitutions returns the machine's placeholder names in order, so
// every consumer walks them deterministically.
func (sm StateMachine) SortedSubstitutions() []string {
	keys := make([]string, 0, len(sm.Substitutions))
	for k := range sm.Substitutions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
