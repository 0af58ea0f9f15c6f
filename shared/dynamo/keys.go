package dynamo

// Key design of the single table (architecture decision 3).
//
// Every item of a team lives under the partition TEAM#<team id>, so a query
// can never cross teams and a team's data is one partition range. Items that
// must be found without knowing the team (API keys, by their hash) have their
// own partition and carry team_id.
//
//	item            pk                    sk                               gsi1pk / gsi1sk
//	team            TEAM#<team>           TEAM
//	api key         APIKEY#<sha256>       APIKEY                           TEAM#<team> / KEY#<key id>
//	agent           TEAM#<team>           AGENT#<slug>
//	idempotency     TEAM#<team>           IDEMP#<key>   (expires_at TTL)
//	activity entry  TEAM#<team>           ACTIVITY#<time>#<event id> (expires_at TTL, 90 days)
//
// Access patterns and what serves them:
//
//	resolve an API key to its team        GetItem APIKEY#<hash>
//	list a team's keys                     Query gsi1 gsi1pk=TEAM#<team>, begins_with(gsi1sk, KEY#)
//	get a team / its default agent         GetItem TEAM#<team> / TEAM
//	get an agent by slug                   GetItem TEAM#<team> / AGENT#<slug>
//	list agents by slug                    Query pk=TEAM#<team>, begins_with(sk, AGENT#)
//	replay an idempotent POST              GetItem / conditional Put TEAM#<team> / IDEMP#<key>
//	list activity newest first             Query pk=TEAM#<team>, begins_with(sk, ACTIVITY#), descending
//
// gsi2 is reserved for the task and session access patterns (by assignee,
// by status) that later features add.

const (
	attrPK     = "pk"
	attrSK     = "sk"
	attrGSI1PK = "gsi1pk"
	attrGSI1SK = "gsi1sk"

	prefixTeam     = "TEAM#"
	prefixAPIKey   = "APIKEY#"
	prefixKey      = "KEY#"
	prefixAgent    = "AGENT#"
	prefixIdem     = "IDEMP#"
	prefixActivity = "ACTIVITY#"

	skTeam   = "TEAM"
	skAPIKey = "APIKEY"
)

func teamPK(teamID string) string   { return prefixTeam + teamID }
func apiKeyPK(hash string) string   { return prefixAPIKey + hash }
func agentSK(slug string) string    { return prefixAgent + slug }
func idemSK(key string) string      { return prefixIdem + key }
func keyGSI1SK(keyID string) string { return prefixKey + keyID }
