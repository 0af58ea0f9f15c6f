package routing

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// mergeDomains gives the skills of the domains asked, sorted, as sorting
// them together does: any number of domains (past the lists it merges),
// empty ones, and a domain's skills anywhere in skill order.
func TestMergeDomainsIsTheSortedUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for round := range 300 {
		skills, domains := 1+r.IntN(300), 1+r.IntN(12)
		ix := &Index{docDomain: make([]int32, skills)}
		count := make([]int32, domains)
		for d := range ix.docDomain {
			g := int32(r.IntN(domains))
			ix.docDomain[d] = g
			count[g]++
		}
		ix.domainStart = make([]int32, domains+1)
		for g, c := range count {
			ix.domainStart[g+1] = ix.domainStart[g] + c
		}
		next := slices.Clone(ix.domainStart[:domains])
		ix.domainDocs = make([]int32, skills)
		for d, g := range ix.docDomain {
			ix.domainDocs[next[g]] = int32(d)
			next[g]++
		}
		gs := r.Perm(domains)[:1+r.IntN(min(domains, DomainsProbed+3))]
		var asked []int32
		var want []int32
		for _, g := range gs {
			asked = append(asked, int32(g))
			for d, dg := range ix.docDomain {
				if int(dg) == g {
					want = append(want, int32(d))
				}
			}
		}
		slices.Sort(want)
		prefix := []int32{-7}
		got := ix.mergeDomains(asked, prefix)
		if !slices.Equal(got[1:], want) || got[0] != -7 {
			t.Fatalf("round %d, domains %v: %v, want %v", round, asked, got, want)
		}
	}
}
