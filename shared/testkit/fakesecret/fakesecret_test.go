package fakesecret_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/testkit/fakesecret"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// Every fixture is of the kind it stands for: Redact removes each secret
// part and counts its kind, so a test that feeds them proves redaction.
func TestEveryFixtureIsRedactedAsItsKind(t *testing.T) {
	s := fakesecret.New("one")
	n := map[string]int{}
	text := strings.Join([]string{s.PasswordClause(), s.AuthHeader(), s.ConnectionString(), s.AccessKeyID + " denied", s.PrivateKeyBlock()}, "\n")
	out := consultations.Redact(text, n)
	for _, v := range s.Values() {
		assert.NotContains(t, out, v)
	}
	for _, kind := range []string{"credential", "bearer_token", "connection_string", "aws_access_key", "private_key"} {
		assert.Positive(t, n[kind], kind)
	}
	assert.NotEqual(t, s.Values(), fakesecret.New("two").Values(), "distinct tags, distinct fixtures")
}
