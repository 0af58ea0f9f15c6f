package memtable

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
)

// token is the opaque page token: the sort key of the last item evaluated,
// bound to the listing it was issued for (as the adapter's pageToken).
type token struct {
	Scope string `json:"s"`
	Key   string `json:"k"`
}

func encodeToken(scope, last string) string {
	return base64.RawURLEncoding.EncodeToString(Doc(token{Scope: scope, Key: last}))
}

func decodeToken(scope, tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	bad := apperr.Invalid("next_token", "next_token is not valid for this listing")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", bad
	}
	var t token
	if err := json.Unmarshal(b, &t); err != nil || t.Scope != scope || t.Key == "" {
		return "", bad
	}
	return t.Key, nil
}

// PageAll reads a whole listing (an adapter's loop over every page).
var PageAll = paging.Page{}

// Row is one item of a listing: its sort key and its value.
type Row[T any] struct {
	SK string
	V  T
}

// Query is one page of a DynamoDB Query, mirrored: rows in key order
// (descending when desc), starting after the token's key; Limit counts the
// rows evaluated *before* the filter keep, so a filtered page may hold
// fewer than Limit items while a next token is still returned; and a full
// page always returns a next token, even when nothing follows (the next
// page is then empty), as DynamoDB returns LastEvaluatedKey whenever it
// stops at Limit. The token is bound to scope (EINVALID for another
// listing's). A limit of 0 or less reads everything.
func Query[T any](rows []Row[T], desc bool, scope string, p paging.Page, keep func(T) bool) ([]T, string, error) {
	after, err := decodeToken(scope, p.Token)
	if err != nil {
		return nil, "", err
	}
	sort.Slice(rows, func(i, j int) bool {
		if desc {
			return rows[i].SK > rows[j].SK
		}
		return rows[i].SK < rows[j].SK
	})
	out := []T{}
	evaluated, last := 0, ""
	for _, r := range rows {
		if after != "" && ((!desc && r.SK <= after) || (desc && r.SK >= after)) {
			continue
		}
		if p.Limit > 0 && evaluated == p.Limit {
			break
		}
		evaluated++
		last = r.SK
		if keep == nil || keep(r.V) {
			out = append(out, r.V)
		}
	}
	next := ""
	if p.Limit > 0 && evaluated == p.Limit {
		next = encodeToken(scope, last)
	}
	return out, next, nil
}

// FillQueries is the adapter's bound on the queries of one filled page
// (dynamo.FillQueries).
const FillQueries = 4

// QueryFill is one page of the adapter's QueryFill, mirrored: Query pages
// of as many rows as the page still misses, while keep left it short and
// rows remain, at most FillQueries of them; the token is where the last
// one stopped.
func QueryFill[T any](rows []Row[T], desc bool, scope string, p paging.Page, keep func(T) bool) ([]T, string, error) {
	out := []T{}
	q := p
	next := ""
	for range FillQueries {
		if p.Limit > 0 {
			q.Limit = p.Limit - len(out)
		}
		list, tok, err := Query(rows, desc, scope, q, keep)
		if err != nil {
			return nil, "", err
		}
		out = append(out, list...)
		next, q.Token = tok, tok
		if tok == "" || p.Limit <= 0 || len(out) >= p.Limit {
			break
		}
	}
	return out, next, nil
}

// DueKey is a sweeper index's sort key of a time: millisecond precision,
// UTC, as dynamo.DueKey.
func DueKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// WorkKey is the sort key of a piece of work on its conversation's index
// (dynamo.ConvWorkGSI4SK): when it was created (nanoseconds, fixed width,
// UTC), then its id.
func WorkKey(createdAt time.Time, id string) string {
	return createdAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + id
}

// DueRow is an entry of a sweeper's index: the time it is due at, the
// team and id that follow it in the key, and the reference listed.
type DueRow[R any] struct {
	At       time.Time
	Team, ID string
	Ref      R
}

// DueRefs lists rows as the adapter's DueBefore reads a sweeper's index
// partition: the keys (DueKey, then team and id) before before's, in key
// order, up to limit (0: all).
func DueRefs[R any](rows []DueRow[R], before time.Time, limit int) []R {
	bound := DueKey(before)
	var keyed []Row[R]
	for _, r := range rows {
		if sk := DueKey(r.At) + "#" + r.Team + "#" + r.ID; sk < bound {
			keyed = append(keyed, Row[R]{SK: sk, V: r.Ref})
		}
	}
	sort.Slice(keyed, func(i, j int) bool { return keyed[i].SK < keyed[j].SK })
	var out []R
	for i, r := range keyed {
		if limit > 0 && i == limit {
			break
		}
		out = append(out, r.V)
	}
	return out
}
