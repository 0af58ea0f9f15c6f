// Package logtest reads back what a JSON slog handler wrote, for the tests
// that check which ids every log line carries (logctx's, the consumers',
// the session steps', the HTTP router's).
package logtest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Lines decodes every JSON log line in buf, in order; a line that is not
// JSON fails tb.
func Lines(tb testing.TB, buf *bytes.Buffer) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		require.NoError(tb, json.Unmarshal(l, &m), string(l))
		out = append(out, m)
	}
	return out
}
