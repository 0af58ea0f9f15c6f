package dynamo

import "strconv"

// Keys of the limits a team and its people have (keys.go lists them with
// the rest): the months the CostGuard reserves on, and the request
// counters of the rate limit.

// prefixRate starts a request counter's sort key.
const prefixRate = "RATE#"

// SpendSK is the sort key of a team's month (YYYY-MM) ledger.
func SpendSK(month string) string { return prefixSpend + month }

// UserSpendSK is the sort key of one person's month (per_user_usd).
func UserSpendSK(month, userID string) string { return SpendSK(month) + "#USER#" + userID }

// RateSK is the sort key of a team's request counter of a second.
func RateSK(second int64) string { return prefixRate + strconv.FormatInt(second, 10) }

// UserRateSK is the sort key of one person's request counter of a second.
func UserRateSK(second int64, userID string) string {
	return RateSK(second) + "#USER#" + userID
}
