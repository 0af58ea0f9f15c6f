package httpapi

import (
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Wait reads ?wait=N, the whole seconds a long-poll may hold the request,
// for a route that allows at most max; absent, it is 0 (answer at once).
// It is the one parser of wait for every route, so a value one route takes
// another cannot refuse: see ParseWait for the rule. Returns EINVALID
// naming the wait field.
func (r *Request) Wait(max int) (time.Duration, error) {
	if !r.HasQuery("wait") {
		return 0, nil
	}
	n, err := ParseWait(r.Query("wait"), max)
	return time.Duration(n) * time.Second, err
}

// ParseWait reads v as the seconds of a long-poll, 0 to max. The rule is
// the one the OpenAPI document gives for every `wait` parameter: ASCII
// digits only, no sign, no leading zero ("0" itself is fine), so each
// number has one spelling and `05`, `+5`, `5.0`, `5e0` and an empty
// `wait=` are refused rather than read by whichever parser a route used.
// Returns EINVALID naming the wait field.
func ParseWait(v string, max int) (int, error) {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return 0, waitInvalid(max)
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, waitInvalid(max)
		}
		// Stopping past max keeps n from overflowing on a long string.
		if n = n*10 + int(c-'0'); n > max {
			return 0, waitInvalid(max)
		}
	}
	return n, nil
}

func waitInvalid(max int) error {
	return apperr.Invalid("wait", "wait must be a whole number of seconds from 0 to %d, in digits without a sign or a leading zero", max)
}
