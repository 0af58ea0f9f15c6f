package stack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// configFrom is what infra/main.go synthesizes for a deploy given context
// (`cdk deploy -c key=value` hands every value over as a string; cdk.json
// may hold numbers and lists) and CONCLAVE_ENV fallback.
func configFrom(t *testing.T, context map[string]any, fallback string) (stack.EnvConfig, error) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &context})
	return stack.ConfigFromContext(app.Node(), fallback)
}

// The stage comes from -c env, else CONCLAVE_ENV, else dev; alarm
// subscribers and log retention come from the deploy's context over the
// stage's own.
func TestConfigFromContextTakesTheDeploysChoices(t *testing.T) {
	for _, c := range []struct {
		name      string
		context   map[string]any
		fallback  string
		stage     string
		emails    []string
		retention int
	}{
		{name: "nothing set is dev as configured", context: map[string]any{}, stage: "dev", retention: 14},
		{name: "CONCLAVE_ENV names the stage", context: map[string]any{}, fallback: "prod", stage: "prod", retention: 365},
		{name: "-c env wins over CONCLAVE_ENV", context: map[string]any{"env": "staging"}, fallback: "prod", stage: "staging", retention: 30},
		{name: "comma-separated emails, spaces and empty entries dropped",
			context: map[string]any{"env": "prod", "alarmEmails": " oncall@example.com, lead@example.org ,"}, stage: "prod",
			emails: []string{"oncall@example.com", "lead@example.org"}, retention: 365},
		{name: "a list of emails from cdk.json", context: map[string]any{"alarmEmails": []any{"ops@example.com"}}, stage: "dev",
			emails: []string{"ops@example.com"}, retention: 14},
		{name: "an empty list keeps no subscriber", context: map[string]any{"env": "prod", "alarmEmails": ""}, stage: "prod", retention: 365},
		{name: "retention as -c gives it", context: map[string]any{"env": "prod", "logRetentionDays": "45"}, stage: "prod", retention: 45},
		{name: "retention as a cdk.json number", context: map[string]any{"logRetentionDays": 400}, stage: "dev", retention: 400},
		{name: "the longest finite retention", context: map[string]any{"logRetentionDays": "3653"}, stage: "dev", retention: 3653},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configFrom(t, c.context, c.fallback)
			require.NoError(t, err)
			assert.Equal(t, c.stage, cfg.Name)
			assert.Equal(t, c.emails, cfg.AlarmEmails)
			assert.Equal(t, c.retention, cfg.LogRetentionDays)
		})
	}
}

// A value that cannot be what the deploy meant stops the synth: a typo must
// not keep logs for another period than chosen or page nobody.
func TestConfigFromContextRefusesWhatItCannotMean(t *testing.T) {
	for _, c := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{"env": "qa-typo"}, "unknown environment"},
		{map[string]any{"env": 3}, "-c env must be a stage name"},
		{map[string]any{"logRetentionDays": "0"}, "logRetentionDays"},
		{map[string]any{"logRetentionDays": "-7"}, "logRetentionDays"},
		{map[string]any{"logRetentionDays": "30d"}, "logRetentionDays"},
		{map[string]any{"logRetentionDays": "3654"}, "logRetentionDays"},
		{map[string]any{"logRetentionDays": 1.5}, "logRetentionDays"},
		{map[string]any{"alarmEmails": "oncall"}, "alarmEmails"},
		{map[string]any{"alarmEmails": "oncall@example.com,lead@"}, "alarmEmails"},
		{map[string]any{"alarmEmails": "Ops <ops@example.com>"}, "alarmEmails"},
		{map[string]any{"alarmEmails": "ops@example"}, "alarmEmails"},
		{map[string]any{"alarmEmails": 3}, "alarmEmails"},
	} {
		_, err := configFrom(t, c.context, "")
		assert.ErrorContains(t, err, c.want, "%v", c.context)
	}
}

// cloudWatchRetentions are the retention periods CloudWatch Logs accepts
// (PutRetentionPolicy's RetentionInDays), by the CDK's names for them.
var cloudWatchRetentions = map[string]int{
	"ONE_DAY": 1, "THREE_DAYS": 3, "FIVE_DAYS": 5, "ONE_WEEK": 7, "TWO_WEEKS": 14, "ONE_MONTH": 30, "TWO_MONTHS": 60,
	"THREE_MONTHS": 90, "FOUR_MONTHS": 120, "FIVE_MONTHS": 150, "SIX_MONTHS": 180, "ONE_YEAR": 365, "THIRTEEN_MONTHS": 400,
	"EIGHTEEN_MONTHS": 545, "TWO_YEARS": 731, "THREE_YEARS": 1096, "FIVE_YEARS": 1827, "SIX_YEARS": 2192, "SEVEN_YEARS": 2557,
	"EIGHT_YEARS": 2922, "NINE_YEARS": 3288, "TEN_YEARS": 3653,
}

// Every number of days a deploy may choose is kept at least that long, in
// the shortest period CloudWatch Logs offers that is not shorter.
func TestRetentionRoundsUpToTheNextCloudWatchPeriod(t *testing.T) {
	for days := 1; days <= 3653; days++ {
		got := string(stack.NewStage(stack.EnvConfig{Name: "dev", LogRetentionDays: days}).LogRetention)
		kept, valid := cloudWatchRetentions[got]
		require.True(t, valid, "%d days: %s is no CloudWatch period", days, got)
		require.GreaterOrEqual(t, kept, days, "%d days kept only %d", days, kept)
		for name, p := range cloudWatchRetentions {
			require.False(t, p >= days && p < kept, "%d days: %s (%d) is shorter than %s and long enough", days, name, p, got)
		}
	}
}

// A retention the deploy chooses (-c logRetentionDays=45) is every log
// group's, rounded up to two months: each function's, each state
// machine's and each API's access log.
func TestChosenRetentionIsEveryLogGroups(t *testing.T) {
	// GIVEN prod deployed with -c logRetentionDays=45
	cfg, err := configFrom(t, map[string]any{"env": "prod", "logRetentionDays": "45"}, "")
	require.NoError(t, err)
	// WHEN it is synthesized
	raw, err := json.Marshal(synthConfig(t, cfg, assetDir).ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	groups := map[string]any{}
	for _, r := range resources(m, "AWS::Logs::LogGroup") {
		groups[props(r)["LogGroupName"].(string)] = props(r)["RetentionInDays"]
	}
	// THEN every log group keeps 60 days, the stage's 365 nowhere
	kinds := map[string]int{}
	for name, days := range groups {
		assert.EqualValues(t, 60, days, name)
		for _, prefix := range []string{"/aws/lambda/", "/aws/vendedlogs/states/", "/aws/apigateway/"} {
			if strings.HasPrefix(name, prefix) {
				kinds[prefix]++
			}
		}
	}
	assert.Equal(t, map[string]int{
		"/aws/lambda/": len(manifest.Functions), "/aws/vendedlogs/states/": len(manifest.StateMachines), "/aws/apigateway/": 2,
	}, kinds)
	assert.Len(t, groups, len(manifest.Functions)+len(manifest.StateMachines)+2, "no other log group")
}

// The tier-0 router model decides where the gate decides (dev, staging),
// and only with the tier-0 model granted; prod and the LocalStack stage
// route by the gate alone.
func TestRouterModelFlagPerStage(t *testing.T) {
	for stage, want := range map[string]bool{"dev": true, "staging": true, "prod": false, "localstack": false} {
		// GIVEN the stage WHEN its configuration is looked up
		c, err := stack.Lookup(stage)
		require.NoError(t, err)
		// THEN router_model is as written down, needs the gate, and the
		// stage's Bedrock grants name the tier-0 model when it is on
		assert.Equal(t, want, c.Flags.RouterModel, stage)
		assert.Equal(t, want, c.Flags.On("router_model"), stage)
		assert.Contains(t, c.Flags.String(), "router_model=", stage)
		if want {
			assert.Contains(t, c.Models(), "amazon.nova-micro-v1:0", stage)
		}
	}
}
