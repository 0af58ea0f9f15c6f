package routing

import (
	"cmp"
	"slices"
)

// smallTeam: below it a comparison sort beats the radix sort's three
// passes over 256 buckets.
const smallTeam = 256

// rankedFirst is how many of a large team's agents a query puts in rank
// order at once: the gate builds the best ExplainedScores, and the leader
// and the agents a caller names are ordered among themselves (wanted).
// Ordering every agent is left to the Ranking's first caller that reads
// them (Ranking.list): at 1,000 agents the radix sort was a tenth of a
// gate query, a selection of the best 16 is one comparison an agent for
// most.
const rankedFirst = 16

// rank returns the agents' entries (sc.keys, by agent) best first: in
// ascending order of their top 20 bits (overall, then skill match), then
// by slug, then input order. Of a team of smallTeam agents or more only
// the first top are in that order, the others follow them in agent order
// (sortAll orders them).
func (ix *Index) rank(sc *scratch) ([]uint64, int) {
	n := len(ix.agents)
	entries, tmp, out := sc.keys[:n], sc.keys2[:n], make([]uint64, n)
	// Either sort gives the same order: where the bound sits (<, <=, or
	// turned around) is a matter of speed.
	if n < smallTeam {
		for ai, e := range entries {
			tmp[ai] = ix.orderKey(e, ai)
		}
		slices.Sort(tmp)
		for i, k := range tmp {
			out[i] = entries[ix.bySlugRank[uint32(k)]]
		}
		return out, n
	}
	var best topKeys
	for ai, e := range entries {
		best.add(ix.orderKey(e, ai))
	}
	out = out[:0]
	for _, key := range best.k[:best.len] {
		out = append(out, entries[ix.bySlugRank[uint32(key)]])
	}
	last := best.k[best.len-1]
	for ai, e := range entries {
		if ix.orderKey(e, ai) > last {
			out = append(out, e)
		}
	}
	return out, best.len
}

// topKeys keeps the rankedFirst least keys it is given, least first
// (keys are distinct: the slug rank is in them).
type topKeys struct {
	k   [rankedFirst]uint64
	len int
}

func (t *topKeys) add(key uint64) {
	if t.len == len(t.k) && key > t.k[t.len-1] {
		return
	}
	if t.len < len(t.k) {
		t.len++
	}
	i := t.len - 1
	for ; i > 0 && t.k[i-1] > key; i-- {
		t.k[i] = t.k[i-1]
	}
	t.k[i] = key
}

// orderKey is the key rank orders agent ai's entry e by.
func (ix *Index) orderKey(e uint64, ai int) uint64 {
	return e>>skillShift<<32 | uint64(ix.slugRank[ai])
}

// list is the best n entries of r, in rank order.
func (r *Ranking) list(n int) []uint64 {
	if n <= r.top {
		return r.entries[:n]
	}
	r.once.Do(r.sortAll)
	return r.all[:n]
}

// sortAll sets r.all: every entry in rank order, by the radix sort (its
// first r.top are r.entries').
func (r *Ranking) sortAll() {
	n := len(r.entries)
	byAgent, tmp, out := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for _, e := range r.entries {
		byAgent[e&agentMask] = e
	}
	r.ix.radixOrder(byAgent, tmp, out)
	r.all = out
}

// wanted are the entries of the agents of want that rank after the best
// n, in rank order. Past the ordered ones they are picked from the others
// and ordered among themselves: a leader or a named agent further down
// does not cost the whole order.
func (r *Ranking) wanted(n int, want []int32) []uint64 {
	var many []bool // many wanted: by agent (> or >=, the same list)
	if len(want) > 8 {
		many = make([]bool, len(r.entries))
		for _, ai := range want {
			many[ai] = true
		}
	}
	var out []uint64
	pick := func(es []uint64) {
		for _, e := range es {
			ai := int32(e & agentMask)
			if many != nil && many[ai] || many == nil && slices.Contains(want, ai) {
				out = append(out, e)
			}
		}
	}
	if n > r.top {
		pick(r.all[n:]) // list(n) made it
		return out
	}
	pick(r.entries[n:r.top])
	k := len(out)
	if rest := r.entries[r.top:]; many == nil {
		// The others are in agent order: each wanted agent's entry found
		// by a binary search (the leader alone was a scan of 1,000
		// entries), once however often it is wanted.
		want = slices.Clone(want)
		slices.Sort(want)
		for _, ai := range slices.Compact(want) {
			if i, ok := slices.BinarySearchFunc(rest, ai, func(e uint64, ai int32) int { return cmp.Compare(int32(e&agentMask), ai) }); ok {
				out = append(out, rest[i])
			}
		}
	} else {
		pick(rest)
	}
	slices.SortFunc(out[k:], func(a, b uint64) int {
		return cmp.Compare(r.ix.orderKey(a, int(a&agentMask)), r.ix.orderKey(b, int(b&agentMask)))
	})
	return out
}

// radixOrder writes entries (by agent) into out in rank order; tmp is
// scratch, and entries is overwritten.
func (ix *Index) radixOrder(entries, tmp, out []uint64) {
	// A least-significant-digit radix sort on the top 20 bits, 8 bits a
	// pass (bits 44–51, 52–59, 60–63), the agents taken in slug order:
	// every pass is stable, so ties keep that order.
	var cnt [3][256]int32
	for _, e := range entries {
		cnt[0][e>>44&0xff]++
		cnt[1][e>>52&0xff]++
		cnt[2][e>>60]++
	}
	for d := range cnt {
		sum := int32(0)
		for b, c := range cnt[d] {
			cnt[d][b], sum = sum, sum+c
		}
	}
	for _, ai := range ix.bySlugRank {
		e := entries[ai]
		b := e >> 44 & 0xff
		tmp[cnt[0][b]] = e
		cnt[0][b]++
	}
	for _, e := range tmp { // entries is free now
		b := e >> 52 & 0xff
		entries[cnt[1][b]] = e
		cnt[1][b]++
	}
	for _, e := range entries {
		b := e >> 60
		out[cnt[2][b]] = e
		cnt[2][b]++
	}
}
