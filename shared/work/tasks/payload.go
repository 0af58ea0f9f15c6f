package tasks

import (
	"bytes"
	"encoding/json"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// MaxPayloadBytes bounds a task's input and its output, each measured as
// compact JSON (what is stored). 32 KiB, not more: a request body is at
// most 64 KiB (httpapi.MaxBodyBytes), so a larger payload could never
// arrive with the rest of its body, and the task item stays well inside
// DynamoDB's 400 KB item limit with both payloads beside its text fields
// (the create fields come in one 64 KiB body, result is at most 20,000
// characters, 80 KB of UTF-8 at worst): 2 × 32 KiB + 64 KiB + 80 KB +
// the bookkeeping is under 240 KB.
const MaxPayloadBytes = 32 << 10

// Payload checks a task's JSON payload (input or output), named field in
// errors: valid JSON, an object, an array or a string (a number, a
// boolean or null is no payload), at most MaxPayloadBytes once compact.
// It returns the compact JSON, which keeps every token as written (large
// numbers, unicode and its escapes), or nil when raw is empty (absent).
// EINVALID names field.
func Payload(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, apperr.Invalid(field, "%s must be valid JSON", field)
	}
	b := buf.Bytes()
	if len(b) == 0 || (b[0] != '{' && b[0] != '[' && b[0] != '"') {
		return nil, apperr.Invalid(field, "%s must be a JSON object, array or string", field)
	}
	if len(b) > MaxPayloadBytes {
		return nil, apperr.Invalid(field, "%s is larger than %d bytes of compact JSON", field, MaxPayloadBytes)
	}
	return json.RawMessage(bytes.Clone(b)), nil
}
