package archtest

import "strings"

// Entry is one top-level entry of shared/: a domain wing or a layer that
// spans domains.
type Entry struct {
	Name string
	// Rank orders the entries: a package may import its own entry and the
	// entries of lower rank, never one of its rank or above. Two layers
	// of one rank (store and api) import neither the other.
	Rank int
	// Layer is true for a layer that spans domains, false for a wing.
	Layer bool
	// Why is the entry's place in the order, in one line.
	Why string
}

// Entries are the entries of shared/ in their order, the story of a
// request (architecture decision 11): written here once, held by the
// tests of this package and printed in docs/architecture.md (make docs).
// A new top-level package of shared/ is a new line here, or a package in
// one of these.
var Entries = []Entry{
	{"platform", 0, false, "what every function runs on (errors, ids, settings, the bootstrap, the HTTP plumbing): it imports nothing of the module"},
	{"models", 1, false, "the one port agents answer through and its adapters: a model call needs only the platform"},
	{"aws", 2, false, "the AWS adapters every domain shares (bus, executions, queues): they carry events and names, not domain types"},
	{"tools", 3, false, "what an agent's tools are made of (the catalog, tool packs, MCP packs): they need models and aws, not the team"},
	{"team", 4, false, "the team and its members, their messages, memory and budget: who is there, before anyone is chosen"},
	{"routing", 5, false, "which agent answers a message: it reads the team, and no turn"},
	{"chat", 6, false, "the chat turn, routed, answered and committed: it reaches the work it starts through ports"},
	{"work", 7, false, "the work agents do beyond one reply (tasks, sessions, reports, plans), started from a turn"},
	{"agenttools", 8, false, "what a model may call, built over the services of work, chat and the team"},
	{"a2a", 9, false, "the team as an A2A agent and external agents as members: the protocol reaches every other wing"},
	{"store", 10, true, "the DynamoDB adapters of every domain: one transaction writes several domains"},
	{"api", 10, true, "the HTTP handlers of every domain, beside store: neither imports the other"},
	{"testkit", 11, true, "what tests share (in-memory stores, the store contract, the demo team): no function links it"},
	{"wire", 12, true, "each function's builder: it wires the wings and the store and api layers together"},
	{"archtest", 13, true, "this order and the tests that hold it: nothing under shared/ imports it"},
}

// MaxEntries is how many entries shared/ may have: a reader holds its
// map in mind, and a new concept finds its wing rather than a folder of
// its own.
const MaxEntries = 16

// EntryOf returns the entry of a path relative to the module
// ("shared/chat/conversations" → chat), false outside shared/ or for a
// name the table does not hold.
func EntryOf(rel string) (Entry, bool) {
	rest, ok := strings.CutPrefix(rel, "shared/")
	if !ok {
		return Entry{}, false
	}
	name, _, _ := strings.Cut(rest, "/")
	for _, e := range Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// MayImport reports whether a package of entry from may import one of
// entry to.
func MayImport(from, to Entry) bool { return from.Name == to.Name || to.Rank < from.Rank }

// Below names the entries a package of e may import besides its own, for
// a failure message.
func Below(e Entry) []string {
	var out []string
	for _, o := range Entries {
		if o.Rank < e.Rank {
			out = append(out, o.Name)
		}
	}
	return out
}
