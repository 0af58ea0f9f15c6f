package memtable

import (
	"context"
	"slices"
	"sort"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

var _ streams.Reader = (*Table)(nil)

// The streams' events, as the DynamoDB core stores them
// (shared/store/dynamo, streamlog.go): written with the change they tell
// of, under its conditions, each number once. The adapter's owner items
// keep the last number as event_seq; here a session keeps it on its
// record, and a conversation's or plan's is its stream's last number
// (they only ever move together, under the table's one lock). Nothing
// expires here.

// streamRow is one stream of a team: its events in order.
type streamRow struct{ events []streams.Event }

func (r *streamRow) has(seq int64) bool {
	i := sort.Search(len(r.events), func(i int) bool { return r.events[i].Seq >= seq })
	return i < len(r.events) && r.events[i].Seq == seq
}

// StreamNumbered is the adapter's check of a change's events before it
// sends the change: numbered up to head, the owner's new event_seq (else
// nothing is written). Call it before the change's conditions.
func StreamNumbered(head int64, evs []streams.Event) error {
	if err := streams.CheckNumbered(head, evs); err != nil {
		return Internal(err.Error())
	}
	return nil
}

// StreamFree is the adapter's condition on each event (attribute_not_exists
// of its number), checked where the adapter writes the events: after the
// owner's. Call with the table locked.
func StreamFree(tb *Table, teamID, stream string, evs []streams.Event) error {
	row := tb.streams[Key{teamID, stream}]
	for _, ev := range evs {
		if row != nil && row.has(ev.Seq) {
			return Internal("stream event number taken")
		}
	}
	return nil
}

// StreamAppend writes events StreamNumbered and StreamFree passed. Call
// with the table locked.
func StreamAppend(tb *Table, teamID, stream string, evs []streams.Event) {
	if len(evs) == 0 {
		return
	}
	if tb.streams == nil {
		tb.streams = map[Key]*streamRow{}
	}
	k := Key{teamID, stream}
	row := tb.streams[k]
	if row == nil {
		row = &streamRow{}
		tb.streams[k] = row
	}
	for _, ev := range evs {
		ev.At, ev.Detail = ev.At.UTC(), slices.Clone(ev.Detail)
		i := sort.Search(len(row.events), func(i int) bool { return row.events[i].Seq >= ev.Seq })
		row.events = slices.Insert(row.events, i, ev)
	}
}

// Head is a stream's last number (0: none). Call with the table locked.
func Head(tb *Table, teamID, stream string) int64 {
	row := tb.streams[Key{teamID, stream}]
	if row == nil || len(row.events) == 0 {
		return 0
	}
	return row.events[len(row.events)-1].Seq
}

// StreamEvents implements streams.Reader, as the adapter reads: after
// the number given, in order, up to limit (≤ 0: 100; at most 1,000).
func (tb *Table) StreamEvents(_ context.Context, teamID, stream string, after int64, limit int) ([]streams.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	tb.Lock()
	defer tb.Unlock()
	out := []streams.Event{}
	row := tb.streams[Key{teamID, stream}]
	if row == nil {
		return out, nil
	}
	for _, ev := range row.events {
		if ev.Seq > after && len(out) < limit {
			ev.Detail = slices.Clone(ev.Detail)
			out = append(out, ev)
		}
	}
	return out, nil
}

// StreamHead implements streams.Reader.
func (tb *Table) StreamHead(_ context.Context, teamID, stream string) (int64, error) {
	tb.Lock()
	defer tb.Unlock()
	return Head(tb, teamID, stream), nil
}
