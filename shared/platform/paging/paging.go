// Package paging holds the request shape of every paginated listing. Tokens
// are opaque to clients; the store that issued one is the only thing that can
// read it and it rejects tokens minted for another listing or another team.
package paging

import "github.com/conclave-ai/conclave/shared/platform/apperr"

// Limits on page sizes.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// Page asks for one page of a listing.
type Page struct {
	Limit int
	Token string
}

// Normalize applies the default and checks the bounds.
func (p Page) Normalize() (Page, error) {
	if p.Limit == 0 {
		p.Limit = DefaultLimit
	}
	if p.Limit < 1 || p.Limit > MaxLimit {
		return p, apperr.Invalid("limit", "limit must be between 1 and %d", MaxLimit)
	}
	if len(p.Token) > 2048 {
		return p, apperr.Invalid("next_token", "next_token is not valid")
	}
	return p, nil
}

// Collect reads pages of size pageSize through fetch until it has limit
// items or the listing ends, and returns at most limit of them: the reads
// behind "the most recent N" that a single page cannot hold.
func Collect[T any](limit, pageSize int, fetch func(Page) ([]T, string, error)) ([]T, error) {
	var out []T
	p := Page{Limit: pageSize}
	for len(out) < limit {
		list, next, err := fetch(p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" {
			break
		}
		p.Token = next
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
