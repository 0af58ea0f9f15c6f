// Package ids makes identifiers that sort by creation time (so listings by id
// are chronological) and cannot be guessed (so knowing one id tells nothing
// about another team's).
package ids

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// last is the most recent id made in this process: ids made within one
// millisecond increase from it instead of being random among themselves,
// so the messages of one chat turn (made in one process) keep their order.
var (
	mu   sync.Mutex
	last [16]byte
)

// New returns prefix_ followed by 48 bits of millisecond time and 80 random
// bits; within one millisecond in one process, ids strictly increase.
func New(prefix string) string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	mu.Lock()
	if bytes.Compare(b[:6], last[:6]) <= 0 {
		// Same (or an earlier, if the clock stepped back) millisecond: the
		// previous id plus one, carrying through the random bytes.
		b = last
		for i := 15; i >= 6; i-- {
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	last = b
	mu.Unlock()
	return prefix + "_" + strings.ToLower(enc.EncodeToString(b[:]))
}

// Floor returns the smallest id with prefix made at t: ids made at or after
// t sort at or after it, so it bounds key ranges by time.
func Floor(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	return prefix + "_" + strings.ToLower(enc.EncodeToString(b[:]))
}

// Secret returns n random bytes encoded in base32, for API keys.
func Secret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return enc.EncodeToString(b)
}

// idLen is the length of the encoded part of an id: 128 bits in base32.
var idLen = enc.EncodedLen(16)

// Valid reports whether id is one New(prefix) could have made: prefix,
// '_' and 26 characters of the id alphabet. It says nothing of whether
// the id exists; it lets a caller refuse a malformed one before it
// reaches a key.
func Valid(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(rest) != idLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !strings.ContainsRune("0123456789abcdefghjkmnpqrstvwxyz", rune(rest[i])) {
			return false
		}
	}
	return true
}
